#include "workloads/pytorch_eager_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "workloads/flash_attention_splits.h"
#include "workloads/host_costs.h"
#include "workloads/test_models.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace pytorch_eager_ops_test {

// tools/reference/train_step.py's precision: fp32 parameters and gradients, no master copy, AMP bf16.
TrainingSpec eager(int64_t seq_len, int64_t micro_batch, Recompute recompute) {
  TrainingSpec t = testing::training(seq_len, micro_batch, recompute, AttentionKernel::kFlash);
  t.framework = Framework::kPytorchEager;
  t.flash_kernel = FusedAttentionKernel::kSdpaFlash;  // SDPA restricted to its flash backend
  t.precision = PrecisionPolicy::pure_fp32();
  t.hidden_dropout = 0;
  t.attention_dropout = 0;
  return t;
}

// GPT-3 1.3B as the reference configuration "gpt-1.3b" (tools/reference/configs.json): 24 × 2048,
// 16 heads, ffn 8192, GPT-2 vocabulary unpadded.
ModelSpec gpt_1_3b() {
  ModelSpec m = testing::gpt3_175b();
  m.name = "gpt-1.3b";
  m.layers = 24;
  m.hidden = 2048;
  m.ffn_hidden = 8192;
  m.heads = 16;
  m.vocab = 50257;
  m.make_vocab_size_divisible_by = 1;
  return m;
}

const Op& find(const std::vector<Op>& ops, std::string_view name) {
  auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; });
  if (it == ops.end()) throw std::runtime_error("no op " + std::string(name));
  return *it;
}

bool has(const std::vector<Op>& ops, std::string_view name) {
  return std::any_of(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; });
}

TEST(PytorchEagerOps, GptLayerSavesWhatAutogradKeeps) {
  const ModelSpec m = gpt_1_3b();
  const Transformer t(m, eager(2048, 4, Recompute::kNone));
  const int64_t T = 4 * 2048;
  const int64_t h = 2048;
  // fp32 norm inputs 2·4Th, bf16 QKV and fc1 inputs 2·2Th, QKV output 6Th, attention output 2Th,
  // GeLU input and output 2·8Th (ffn = 4h): 36 bytes per token and hidden unit.
  EXPECT_EQ(t.layer_activation_bytes(), Bytes::of(36 * T * h));
  EXPECT_EQ(pytorch_eager_layer_saved_bytes(m, t.training(), t.dims(), false), 36 * T * h);
  // With biases the row-parallel bias (fp32) promotes the residual stream to fp32: no .float() copy
  // before the norms, a broadcast bias add after proj and fc2, fp32 residual adds (8Th read, 4Th written).
  EXPECT_FALSE(has(t.layer_forward(), "input_norm.to_fp32"));
  EXPECT_EQ(find(t.layer_forward(), "proj.bias_add").access, MemoryAccess::kBroadcast);
  EXPECT_EQ(find(t.layer_forward(), "attention_residual").bytes_read, Bytes::of(8 * T * h));
  // Autocast casts each linear weight every forward: 4 bytes read, 2 written per weight.
  EXPECT_EQ(find(t.layer_forward(), "fc1.weight_cast").bytes_read, Bytes::of(4 * h * 4 * h));
  EXPECT_EQ(find(t.layer_forward(), "fc1.weight_cast").bytes_written, Bytes::of(2 * h * 4 * h));
  // ...and the cast's backward turns the bf16 weight gradient into the fp32 one (unrolled path).
  const Op& grad_cast = find(t.layer_backward(), "fc1.weight_grad_cast");
  EXPECT_EQ(grad_cast.access, MemoryAccess::kWideningCast);
  EXPECT_EQ(grad_cast.bytes_read + grad_cast.bytes_written, Bytes::of(6 * h * 4 * h));
  // The GEMMs are Megatron's shapes; attention is PyTorch's flash kernel with the call's shape.
  EXPECT_EQ(find(t.layer_forward(), "qkv").gemm, (GemmShape{T, 3 * h, h, 1, DataType::kBf16, false}));
  EXPECT_EQ(find(t.layer_backward(), "fc2.wgrad").gemm, (GemmShape{h, 4 * h, T, 1, DataType::kBf16, true}));
  const Op& flash = find(t.layer_forward(), "sdpa_flash");
  EXPECT_EQ(flash.attention_kernel, FusedAttentionKernel::kSdpaFlash);
  EXPECT_EQ(flash.attention, (AttentionShape{4, 16, 16, 2048, 128, DataType::kBf16}));
  EXPECT_TRUE(t.layer_recompute().empty());
}

// FSDP's mixed precision (param_dtype bf16, reduce_dtype fp32): the gathered weights are already
// bf16, so no forward weight casts and no autocast weight copies in memory; the bf16 weight
// gradients are still cast to fp32 for the reduction. SDPA's backend follows training.flash_kernel.
TEST(PytorchEagerOps, FsdpMixedPrecisionDropsTheWeightCasts) {
  const ModelSpec m = gpt_1_3b();
  TrainingSpec fsdp = eager(2048, 4, Recompute::kNone);
  fsdp.precision = PrecisionPolicy::megatron_mixed();
  fsdp.flash_kernel = FusedAttentionKernel::kCudnn;
  const Transformer t(m, fsdp);
  const Transformer autocast(m, eager(2048, 4, Recompute::kNone));
  for (const char* cast : {"qkv.weight_cast", "proj.weight_cast", "fc1.weight_cast", "fc2.weight_cast",
                           "qkv.bias_cast", "fc1.bias_cast"}) {
    EXPECT_FALSE(has(t.layer_forward(), cast)) << cast;
    EXPECT_TRUE(has(autocast.layer_forward(), cast)) << cast;
  }
  // The bias casts are small (the bias, not the weight) but each is a launch.
  EXPECT_EQ(find(autocast.layer_forward(), "qkv.bias_cast").bytes_read.count(), 4 * 3 * m.hidden);
  EXPECT_TRUE(has(autocast.layer_backward(), "qkv.bias_grad_cast"));
  EXPECT_TRUE(has(autocast.layer_backward(), "fc1.bias_grad_cast"));
  EXPECT_FALSE(has(t.head_forward(), "lm_head.weight_cast"));
  EXPECT_TRUE(has(t.layer_backward(), "fc1.weight_grad_cast"));
  EXPECT_EQ(find(t.layer_forward(), "sdpa_flash").attention_kernel, FusedAttentionKernel::kCudnn);
  EXPECT_EQ(t.layer_forward().size() + 6, autocast.layer_forward().size());
  const int64_t P = t.parameters().total();
  const PytorchEagerMemory with = pytorch_eager_peak_memory(m, autocast.training(), autocast.dims(), P);
  const PytorchEagerMemory without = pytorch_eager_peak_memory(m, fsdp, t.dims(), P);
  EXPECT_LT(without.peak.params + without.peak.param_copies, with.peak.params + with.peak.param_copies);
  EXPECT_LT(without.peak.param_copies, with.peak.param_copies);  // the bf16 copies are the difference
  // 16-bit gradients (reduce_dtype bf16): no gradient casts either.
  TrainingSpec pure = fsdp;
  pure.precision.grad_dtype = DataType::kBf16;
  EXPECT_FALSE(has(Transformer(m, pure).layer_backward(), "fc1.weight_grad_cast"));
}

// ALiBi (MPT, BLOOM): no position parameters and no position ops; its biases are added inside the
// attention kernel. The Megatron op model likewise drops the position-embedding add.
TEST(PytorchEagerOps, AlibiHasNoPositionParametersOrOps) {
  ModelSpec learned = gpt_1_3b();
  ModelSpec alibi = learned;
  alibi.position_embedding = PositionEmbedding::kAlibi;
  alibi.max_position_embeddings = 0;
  ModelSpec rope = alibi;
  rope.position_embedding = PositionEmbedding::kRope;
  const Transformer a(alibi, eager(2048, 1, Recompute::kNone));
  const Transformer r(rope, eager(2048, 1, Recompute::kNone));
  const Transformer l(learned, eager(2048, 1, Recompute::kNone));
  EXPECT_EQ(a.parameters().total(), r.parameters().total());
  EXPECT_EQ(l.parameters().total(), a.parameters().total() + learned.max_position_embeddings * learned.hidden);
  EXPECT_FALSE(has(a.embedding_forward(), "position_embedding.add"));
  EXPECT_TRUE(has(l.embedding_forward(), "position_embedding.add"));
  for (const Op& op : a.layer_forward()) EXPECT_EQ(op.name.find("rope"), std::string::npos) << op.name;
  EXPECT_TRUE(has(r.layer_forward(), "rope.q.x1_cos"));
  EXPECT_LT(a.layer_forward().size(), r.layer_forward().size());
}

TEST(PytorchEagerOps, LlamaLayerWithRopeSwigluAndGqa) {
  ModelSpec m = testing::llama2_7b();
  m.kv_heads = 8;
  m.make_vocab_size_divisible_by = 1;
  const Transformer t(m, eager(4096, 1, Recompute::kNone));
  const int64_t T = 4096;
  const int64_t h = 4096;
  const int64_t q = h;
  const int64_t kv = 8 * 128;
  const int64_t f = 11008;
  // Norm inputs 8Th, QKV/fc1 inputs 4Th, QKV output 2T(q+2kv), rotated q and k 2T(q+kv), attention
  // output and its copy 4Tq, fc1 output 4Tf, SiLU output 2Tf, product 2Tf.
  const int64_t expected = 8 * T * h + 4 * T * h + 2 * T * (q + 2 * kv) + 2 * T * (q + kv) + 4 * T * q +
                           4 * T * f + 2 * T * f + 2 * T * f;
  EXPECT_EQ(t.layer_activation_bytes(), Bytes::of(expected));
  // No biases: the residual stream stays bf16 and each norm starts with a widening copy.
  EXPECT_EQ(find(t.layer_forward(), "input_norm.to_fp32").access, MemoryAccess::kWideningCast);
  EXPECT_FALSE(has(t.layer_forward(), "proj.bias_add"));
  EXPECT_EQ(find(t.layer_forward(), "activation.silu").access, MemoryAccess::kStrided);
  EXPECT_TRUE(has(t.layer_forward(), "rope.k.concatenate"));
  EXPECT_EQ(find(t.layer_forward(), "sdpa_flash").attention.kv_heads, 8);
}

struct HostCalls {
  int modules = 0, views = 0, splits = 0, pieces = 0;
};
HostCalls host_calls(const std::vector<Op>& ops) {
  HostCalls c;
  for (const Op& op : ops) {
    c.modules += op.host_module_calls;
    c.views += op.host_view_calls;
    c.splits += op.host_split_calls;
    c.pieces += op.host_split_pieces;
  }
  return c;
}

// train_step.py's Block: Block, 2 x (Fp32Norm, norm), Attention, Mlp, 4 x (parallel linear, nn.Linear)
// = 15 module calls; qkv.split into q, k, v, their view and transpose, the output's transpose and,
// without RoPE, its reshape; SwiGLU's chunk. Priced by the overheads measured in
// tools/data/h200-2026-12-02-overheads.
TEST(PytorchEagerOps, LayerForwardListsTheModulesViewsAndSplitsOfTrainStep) {
  const Transformer gpt(gpt_1_3b(), eager(2048, 4, Recompute::kNone));
  const HostCalls g = host_calls(gpt.layer_forward());
  EXPECT_EQ(g.modules, 15);
  EXPECT_EQ(g.views, 8);
  EXPECT_EQ(g.splits, 1);
  EXPECT_EQ(g.pieces, 3);
  EXPECT_EQ(host_calls(gpt.layer_backward()).modules, 0);  // autograd's engine calls no module

  ModelSpec m = testing::llama2_7b();
  m.make_vocab_size_divisible_by = 1;
  const Transformer llama(m, eager(4096, 1, Recompute::kFull));
  const HostCalls l = host_calls(llama.layer_forward());
  EXPECT_EQ(l.modules, 15);
  EXPECT_EQ(l.views, 7);  // the output's reshape copies after RoPE: a kernel, not a view
  EXPECT_EQ(l.splits, 2);
  EXPECT_EQ(l.pieces, 5);
  EXPECT_EQ(host_calls(llama.layer_recompute()).modules, 15);  // checkpoint reruns the forward

  const HostCosts costs = host_costs(eager(2048, 4, Recompute::kNone));
  const Op& sdpa = find(gpt.layer_forward(), "sdpa_flash");
  EXPECT_NEAR(host_cost(sdpa, costs).to_microseconds(), HostCostDefaults::kLibraryUs + 6 * 2.3 + 1.08 + 3 * 1.57, 1e-5);
  // The module calls of qkv come before its weight cast, the first kernel nn.Linear launches.
  const Op& cast = find(gpt.layer_forward(), "qkv.weight_cast");
  // The 2048 x 6144 bf16 weight cast writes 25 MB: an elementwise output above 1 MiB.
  EXPECT_NEAR(host_cost(cast, costs).to_microseconds(),
              HostCostDefaults::kElementwiseUs + HostCostDefaults::kLargeElementwiseUs + 3 * 0.87, 1e-5);
  EXPECT_EQ(host_cost(find(gpt.layer_forward(), "qkv"), costs), Duration::microseconds(HostCostDefaults::kLinearUs));
}

// The kernel-free backward nodes of views, per layer as a profiled PyTorch 2.11 step runs them
// (tools/data/h200-2026-12-02-kernels: gpt-125m 10 ViewBackward0, 2 UnsafeViewBackward0 and 4
// TransposeBackward0 per layer; llama-220m with RoPE 5, 5 and 4; 2 + 1 outside the layers), each
// priced at the measured 7.16 µs.
TEST(PytorchEagerOps, BackwardCountsTheKernelFreeNodesOfViews) {
  auto nodes = [](const std::vector<Op>& ops) {
    int n = 0;
    for (const Op& op : ops) n += op.host_grad_view_nodes;
    return n;
  };
  const Transformer gpt(gpt_1_3b(), eager(2048, 4, Recompute::kNone));
  EXPECT_EQ(nodes(gpt.layer_backward()), 16);
  EXPECT_EQ(nodes(gpt.layer_forward()), 0);
  EXPECT_EQ(nodes(gpt.head_backward()), 3);
  ModelSpec m = testing::llama2_7b();
  m.make_vocab_size_divisible_by = 1;
  const Transformer llama(m, eager(4096, 1, Recompute::kNone));
  EXPECT_EQ(nodes(llama.layer_backward()), 14);
  const HostCosts costs = host_costs(eager(2048, 4, Recompute::kNone));
  EXPECT_NEAR(host_cost(find(gpt.layer_backward(), "qkv.dgrad"), costs).to_microseconds(),
              HostCostDefaults::kBackwardGemmUs + 2 * HostCostDefaults::kGradViewNodeUs, 1e-9);
}

// A normalisation is a library call on the host (F.layer_norm's measured 34.1 µs forward, 33.2 µs
// for its input-gradient kernel; tools/data/h200-2026-12-02-host/README.md), not an elementwise op
// (14.1 / 20.0 µs); its weight-gradient reduction stays a backward elementwise kernel. Plus the
// module calls before it (Block, Fp32Norm, the norm: 3 x 0.87 µs before the first norm).
TEST(PytorchEagerOps, NormalisationsCostALibraryCallOnTheHost) {
  const Transformer gpt(gpt_1_3b(), eager(2048, 4, Recompute::kNone));
  const HostCosts costs = host_costs(eager(2048, 4, Recompute::kNone));
  EXPECT_NEAR(host_cost(find(gpt.layer_forward(), "input_norm"), costs).to_microseconds(),
              HostCostDefaults::kLibraryUs + 3 * HostCostDefaults::kModuleCallUs, 1e-9);
  EXPECT_NEAR(host_cost(find(gpt.layer_forward(), "post_attention_norm"), costs).to_microseconds(),
              HostCostDefaults::kLibraryUs + 2 * HostCostDefaults::kModuleCallUs, 1e-9);
  EXPECT_EQ(host_cost(find(gpt.layer_backward(), "input_norm.backward"), costs),
            Duration::microseconds(HostCostDefaults::kBackwardNormUs));
  EXPECT_EQ(host_cost(find(gpt.layer_backward(), "input_norm.weight_grad"), costs),
            Duration::microseconds(HostCostDefaults::kBackwardElementwiseUs));
}

TEST(PytorchEagerOps, CheckpointKeepsTheLayerInputAndStopsRecomputingAtFc2) {
  ModelSpec m = gpt_1_3b();
  m.max_position_embeddings = 4096;  // the reference's gpt-1.3b-4k-recompute
  const Transformer t(m, eager(4096, 4, Recompute::kFull));
  const int64_t Th = int64_t{4} * 4096 * 2048;
  EXPECT_EQ(t.layer_activation_bytes(), Bytes::of(4 * Th));  // the fp32 residual entering the layer
  ASSERT_FALSE(t.layer_recompute().empty());
  EXPECT_EQ(t.layer_recompute().back().name, "fc2.weight_cast");  // early stop before the fc2 GEMM
  EXPECT_TRUE(std::all_of(t.layer_recompute().begin(), t.layer_recompute().end(),
                          [](const Op& op) { return op.pass == Pass::kRecompute && op.saved.count() == 0; }));
}

TEST(PytorchEagerOps, PeakMemoryIsTheLargestOfTheStepsMoments) {
  const ModelSpec m = gpt_1_3b();
  const TrainingSpec training = eager(2048, 4, Recompute::kNone);
  const Transformer t(m, training);
  const int64_t P = t.parameters().total();
  const int64_t T = 4 * 2048;
  const int64_t h = 2048;
  const int64_t V = 50257;
  const PytorchEagerMemory mem = pytorch_eager_peak_memory(m, training, t.dims(), P);
  // Start of backward: fp32 params and moments 12P, the bf16 copies of every linear weight
  // (24 layers × 12h² plus the tied LM head V·h, 2 B each), 24 layers × 36Th, the final norm's 6Th,
  // and 10TV of loss tensors — larger than the 16P at the end of backward.
  const int64_t bf16 = 2 * (24 * 12 * h * h + V * h);
  const int64_t expected = 12 * P + bf16 + 24 * 36 * T * h + 6 * T * h + 10 * T * V;
  EXPECT_EQ(mem.moment, "backward (start)");
  EXPECT_EQ(mem.peak.allocated(), Bytes::of(expected));
  EXPECT_EQ(mem.peak.grads, Bytes::zero());
  EXPECT_EQ(mem.peak.logits, Bytes::of(10 * T * V));
  // With one sequence the activations are small: the 16 B/param at the end of backward win.
  const TrainingSpec small = eager(256, 1, Recompute::kNone);
  const PytorchEagerMemory end = pytorch_eager_peak_memory(m, small, Transformer(m, small).dims(), P);
  EXPECT_EQ(end.moment, "backward (end)");
  EXPECT_EQ(end.peak.allocated(), Bytes::of(16 * P));
}

// GPipe stages (train_step.py --parallel pp): every micro-batch's forward keeps its own activations
// and bf16 weight copies (one autocast region each) until its backward.
TEST(PytorchEagerOps, PipelineStageKeepsEveryMicroBatchInFlight) {
  const ModelSpec m = gpt_1_3b();
  const TrainingSpec training = eager(2048, 4, Recompute::kNone);
  const Transformer t(m, training);
  const int64_t T = 4 * 2048;
  const int64_t h = 2048;
  const int64_t V = 50257;
  const int64_t Th = T * h;
  const int64_t P = 700'000'000;  // the stage's parameters (any count: they scale 12 B each)
  const int64_t n = 4;
  const int64_t layer_bf16 = 2 * 12 * h * h;
  // First stage, 12 layers: per micro-batch 12 × 36Th of layer activations, the fp32 stage output
  // kept for out.backward (4Th) and the 12 layers' bf16 weights; at the end of the forward all n.
  EagerStageShare first{12, true, false, n};
  const PytorchEagerMemory a = pytorch_eager_peak_memory(m, training, t.dims(), P, nullptr, first);
  EXPECT_EQ(a.moment, "forward (end)");
  EXPECT_EQ(a.peak.allocated(), Bytes::of(12 * P + n * (12 * 36 * Th + 4 * Th + 12 * layer_bf16)));
  EXPECT_EQ(a.peak.logits, Bytes::zero());
  // Last stage: the received bf16 input (2Th) and the head's 6Th per micro-batch, the LM head's
  // bf16 copy in each graph, 6TV of loss tensors per earlier micro-batch and 10TV for the one whose
  // backward starts.
  EagerStageShare last{12, false, true, n};
  const PytorchEagerMemory b = pytorch_eager_peak_memory(m, training, t.dims(), P, nullptr, last);
  EXPECT_EQ(b.moment, "backward (start)");
  EXPECT_EQ(b.peak.logits, Bytes::of((n - 1) * 6 * T * V + 10 * T * V));
  EXPECT_EQ(b.peak.allocated(), Bytes::of(12 * P + n * (12 * 36 * Th + 6 * Th + 2 * Th + 12 * layer_bf16 + 2 * V * h) +
                                          (n - 1) * 6 * T * V + 10 * T * V));
  // One micro-batch and the whole model: the one-GPU step.
  const PytorchEagerMemory whole = pytorch_eager_peak_memory(m, training, t.dims(), P);
  const PytorchEagerMemory one = pytorch_eager_peak_memory(m, training, t.dims(), P, nullptr, EagerStageShare{24, true, true, 1});
  EXPECT_EQ(one.peak.allocated(), whole.peak.allocated());
  EXPECT_EQ(one.moment, whole.moment);
  EXPECT_THROW(pytorch_eager_peak_memory(m, training, t.dims(), P, nullptr, EagerStageShare{25, true, true, 1}), InputError);
  EXPECT_THROW(pytorch_eager_peak_memory(m, training, t.dims(), P, nullptr, EagerStageShare{12, true, false, 0}), InputError);
}

// train_step.py --parallel tp: the layers split as Megatron splits them, four blocking all-reduces
// per layer (bf16 outputs of proj and fc2 forward, fp32 norm-output gradients backward), the
// embedding, LM head and loss whole on every rank.
TEST(PytorchEagerOps, TensorParallelSplitsTheLayersOnly) {
  const ModelSpec m = gpt_1_3b();
  const TrainingSpec training = eager(2048, 4, Recompute::kNone);
  const Transformer one(m, training);
  const Transformer two(m, training, ShardSpec{2, false, 1});
  const int64_t Th = int64_t{4} * 2048 * 2048;
  auto all_reduces = [](const std::vector<Op>& ops) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const Op& op : ops) {
      if (op.cost == OpCost::kCommunication) {
        EXPECT_EQ(op.comm, CommKind::kTpAllReduce) << op.name;
        out.emplace_back(op.name, op.comm_bytes.count());
      }
    }
    return out;
  };
  using Expected = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(all_reduces(two.layer_forward()), (Expected{{"proj.tp_all_reduce", 2 * Th}, {"fc2.tp_all_reduce", 2 * Th}}));
  EXPECT_EQ(all_reduces(two.layer_backward()),
            (Expected{{"fc1.input_grad.tp_all_reduce", 4 * Th}, {"qkv.input_grad.tp_all_reduce", 4 * Th}}));
  EXPECT_TRUE(all_reduces(one.layer_forward()).empty());
  EXPECT_TRUE(all_reduces(one.layer_backward()).empty());
  // Half the heads and half the MLP width per rank; the LM head GEMM whole (50,257 columns).
  EXPECT_EQ(find(two.layer_forward(), "qkv").gemm.n, 3 * 2048 / 2);
  EXPECT_EQ(find(two.layer_forward(), "fc1").gemm.n, 8192 / 2);
  EXPECT_EQ(find(two.head_forward(), "lm_head").gemm.n, 50257);
  // Parameters per rank: half of each layer's weight matrices (biases of the row-parallel layers and
  // norms whole), the whole tied embedding and the position table.
  const ParameterCounts& p1 = one.parameters();
  const ParameterCounts& p2 = two.parameters();
  EXPECT_EQ(p2.word_embedding, p1.word_embedding);
  EXPECT_EQ(p2.position_embedding, p1.position_embedding);
  EXPECT_EQ(p2.layer.qkv_weight * 2, p1.layer.qkv_weight);
  EXPECT_EQ(p2.layer.fc2_weight * 2, p1.layer.fc2_weight);
  EXPECT_EQ(p2.layer.fc2_bias, p1.layer.fc2_bias);
}

int64_t count_named(const std::vector<Op>& ops, std::string_view name) {
  return std::count_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; });
}

// Fused AdamW as multi_tensor_apply launches it: at most 320 chunks of 65,536 elements and 36
// tensors a launch, after _foreach_add_ on the step counters (110 tensors a launch). The launch
// counts of the profiled steps (PyTorch 2.11, one H200): llama-220m 98 tensors, 11 + 1 launches;
// gpt-125m 148 tensors, 7 + 2.
TEST(PytorchEagerOps, FusedAdamwLaunchesAsMultiTensorApplyAndMovesTwentyEightBytesPerParameter) {
  struct Case {
    int64_t params, tensors, adamw, steps;
  };
  for (const Case& c : {Case{213'156'864, 98, 11, 1}, Case{123'849'984, 148, 7, 2}, Case{1000, 1, 1, 1}}) {
    const std::vector<Op> ops = pytorch_eager_optimizer_ops(c.params, c.tensors);
    EXPECT_EQ(count_named(ops, "optimizer.fused_adamw"), c.adamw) << c.params;
    EXPECT_EQ(count_named(ops, "optimizer.step_count"), c.steps) << c.params;
    ASSERT_EQ(static_cast<int64_t>(ops.size()), c.adamw + c.steps);
    Bytes adamw = Bytes::of(0);
    Bytes steps = Bytes::of(0);
    for (const Op& op : ops) {
      EXPECT_EQ(op.access, MemoryAccess::kFusedOptimizer);
      (op.name == "optimizer.fused_adamw" ? adamw : steps) += op.bytes_read + op.bytes_written;
    }
    EXPECT_EQ(adamw, Bytes::of(28 * c.params));
    EXPECT_EQ(steps, Bytes::of(8 * c.tensors));  // each fp32 step counter read and written
  }
  EXPECT_EQ(optimizer_step_ops(1000, 1, eager(2048, 1, Recompute::kNone)).front().name, "optimizer.step_count");
  EXPECT_THROW(pytorch_eager_optimizer_ops(-1, 1), InputError);
  EXPECT_THROW(pytorch_eager_optimizer_ops(1, -1), InputError);
}

// FlashAttention-2's num_splits_heuristic on an H200 (132 SMs): the profiled llama-220m forward
// (b 1, 16 heads, s 512, d 64: 128 tiles of 264 block slots, 2 key blocks) takes 2 splits; gpt-125m's
// (12 heads, s 256: one key block) and a full GPU's worth of tiles take 1; so does an unknown GPU.
TEST(PytorchEagerOps, FlashForwardSplitsTheKeysWhenTheTilesLeaveTheGpuIdle) {
  EXPECT_EQ(flash_forward_kv_splits(1, 16, 512, 512, 64, 132), 2);
  EXPECT_EQ(flash_forward_kv_splits(1, 12, 256, 256, 64, 132), 1);
  EXPECT_EQ(flash_forward_kv_splits(4, 16, 2048, 2048, 128, 132), 1);  // 512 tiles ≥ 0.8 · 264
  EXPECT_EQ(flash_forward_kv_splits(1, 16, 512, 512, 64, 0), 1);
  // 1 × 4 heads × 2 query blocks = 8 tiles over 264 slots, 16 key blocks of 128 (d 128): 16 splits
  // have the best wave efficiency (128 / 264); no eligible count below reaches 85 % of it (8 splits:
  // 64 / 264; 9 to 15 leave ceil(16 / splits) at 2 and are not eligible).
  EXPECT_EQ(flash_forward_kv_splits(1, 4, 128, 2048, 128, 132), 16);
}

ModelSpec llama_220m() {
  ModelSpec m = testing::llama2_7b();
  m.name = "llama-220m";
  m.layers = 16;
  m.hidden = 1024;
  m.ffn_hidden = 2816;
  m.heads = 16;
  m.kv_heads = 4;
  m.tied_embeddings = true;
  m.make_vocab_size_divisible_by = 1;
  return m;
}

// The kernels of the profiled llama-220m-s512-b1 step on one H200 (PyTorch 2.11), per layer:
// forward 39 (RoPE 9 per tensor, flash's split kernel and its combine), backward 59 (flash's 3
// kernels, GQA's 2 group sums, RoPE 12 per tensor, 2 gradient transposes).
TEST(PytorchEagerOps, LlamaLayerLaunchesTheProfiledKernels) {
  ShardSpec shard;
  shard.gpu_sm_count = 132;
  const Transformer t(llama_220m(), eager(512, 1, Recompute::kNone), shard);
  EXPECT_EQ(t.layer_forward().size(), 39u);
  EXPECT_EQ(t.layer_backward().size(), 59u);
  const int64_t T = 512;
  const int64_t q = 1024;
  const int64_t kv = 256;
  const Op& combine = find(t.layer_forward(), "sdpa_flash.splitkv_combine");
  EXPECT_EQ(combine.bytes_read, Bytes::of(2 * (4 * T * q + 4 * 16 * T)));  // 2 splits' fp32 outputs and LSEs
  EXPECT_EQ(combine.bytes_written, Bytes::of(2 * T * q + 4 * 16 * T));
  EXPECT_EQ(find(t.layer_backward(), "sdpa_flash.backward.dot_do_o").bytes_read, Bytes::of(4 * T * q));
  EXPECT_EQ(find(t.layer_backward(), "sdpa_flash.backward.convert_dq").bytes_written, Bytes::of(2 * T * q));
  EXPECT_EQ(find(t.layer_backward(), "sdpa_flash.backward.dk_group_sum").bytes_written, Bytes::of(2 * T * kv));
  // RoPE reads the [s, d/2] tables cast to bf16 in every call.
  EXPECT_EQ(find(t.layer_forward(), "rope.k.cos_cast").bytes_read, Bytes::of(4 * 512 * 32));
  EXPECT_EQ(find(t.layer_forward(), "rope.q.x1_cos").bytes_read, Bytes::of(T * q + 2 * 512 * 32));
  EXPECT_EQ(find(t.layer_backward(), "rope.q.backward.x1.slice_backward.zero_fill").bytes_written,
            Bytes::of(2 * T * q));
  // Head and loss 8 + 12 kernels (the profile's 9 + 14 less cuBLAS's two memsets and its split-K
  // reduction), embedding 2 + 4.
  EXPECT_EQ(t.head_forward().size(), 8u);
  EXPECT_EQ(t.head_backward().size(), 12u);
  EXPECT_EQ(t.embedding_forward().size(), 2u);
  EXPECT_EQ(t.embedding_backward().size(), 4u);
  // Without a known GPU the flash forward is one kernel.
  EXPECT_FALSE(has(Transformer(llama_220m(), eager(512, 1, Recompute::kNone)).layer_forward(),
                   "sdpa_flash.splitkv_combine"));
}

// The profiled gpt-125m-s256-b1 step (PyTorch 2.11, one H200): 20 forward and 33 backward kernels per
// layer (flash's backward 3, its forward one kernel); the embedding 6 + 9 with the position ids, the
// position gather, the tables' zero fills and the first layer's casts of its bf16 input (the
// residual stream is fp32 with biases).
TEST(PytorchEagerOps, GptLayerAndEmbeddingLaunchTheProfiledKernels) {
  ModelSpec m = gpt_1_3b();
  m.layers = 12;
  m.hidden = 768;
  m.ffn_hidden = 3072;
  m.heads = 12;
  ShardSpec shard;
  shard.gpu_sm_count = 132;
  const Transformer t(m, eager(256, 1, Recompute::kNone), shard);
  EXPECT_EQ(t.layer_forward().size(), 20u);
  EXPECT_EQ(t.layer_backward().size(), 33u);
  EXPECT_FALSE(has(t.layer_backward(), "sdpa_flash.backward.dk_group_sum"));  // no GQA
  EXPECT_EQ(t.embedding_forward().size(), 6u);
  EXPECT_EQ(t.embedding_backward().size(), 9u);
  EXPECT_EQ(find(t.embedding_forward(), "position_embedding.position_ids").bytes_written, Bytes::of(8 * 256));
  EXPECT_EQ(find(t.embedding_forward(), "first_layer.input_norm.to_fp32").bytes_written, Bytes::of(4 * 256 * 768));
  EXPECT_EQ(find(t.embedding_backward(), "embedding.backward.zero_fill").bytes_written, Bytes::of(4 * 50257 * 768));
}

TEST(PytorchEagerOps, RejectsWhatTheOpModelDoesNotCover) {
  const ModelSpec m = gpt_1_3b();
  // fp32 parameters with a master copy, or 16-bit ones without: neither autocast's nor FSDP's.
  TrainingSpec master = eager(2048, 1, Recompute::kNone);
  master.precision.master_weights = true;
  EXPECT_THROW(master.validate(m), InputError);
  TrainingSpec no_master = eager(2048, 1, Recompute::kNone);
  no_master.precision.param_dtype = DataType::kBf16;
  EXPECT_THROW(no_master.validate(m), InputError);
  // FSDP's mixed precision (bf16 params over an fp32 master) is valid here; the layout must be ZeRO-3.
  TrainingSpec fsdp = eager(2048, 1, Recompute::kNone);
  fsdp.precision = PrecisionPolicy::megatron_mixed();
  EXPECT_NO_THROW(fsdp.validate(m));
  TrainingSpec selective = eager(2048, 1, Recompute::kSelective);
  EXPECT_THROW(selective.validate(m), InputError);
  TrainingSpec dropout = eager(2048, 1, Recompute::kNone);
  dropout.hidden_dropout = 0.1;
  EXPECT_THROW(dropout.validate(m), InputError);
  try {
    Transformer(m, eager(2048, 1, Recompute::kNone), ShardSpec{2, true, 1});
    FAIL() << "sequence parallelism accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no sequence parallelism"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Transformer(m, eager(2048, 1, Recompute::kNone), ShardSpec{1, false, 2}), InputError);
  EXPECT_THROW(parse_framework("jax"), InputError);
  EXPECT_EQ(parse_framework(name_of(Framework::kPytorchEager)), Framework::kPytorchEager);
}

}  // namespace pytorch_eager_ops_test
}  // namespace clustersim
