// Kernel-level choices of the Megatron op lists: Transformer Engine's FP8 casts ahead of FP8 GEMMs,
// the fused attention kernel (cuDNN, FlashAttention-2 class or FlashAttention v1) and fused or
// PyTorch-operation RMSNorm, RoPE, SwiGLU and softmax.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "cost_models/compute_cost_model.h"
#include "cost_models/test_support.h"
#include "workloads/op_cost.h"
#include "workloads/test_models.h"
#include "workloads/aten_kernels.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace kernel_choice_test {

TrainingSpec fp8_training(int64_t seq_len) {
  TrainingSpec t = testing::training(seq_len, 1, Recompute::kNone, AttentionKernel::kFlash);
  t.compute_dtype = DataType::kFp8;
  return t;
}

// The op before `name` in `ops`.
const Op& before(const std::vector<Op>& ops, std::string_view name, size_t back = 1) {
  for (size_t i = back; i < ops.size(); ++i) {
    if (ops[i].name == name) return ops[i - back];
  }
  throw std::runtime_error("no op " + std::string(name));
}

// The op after `name` in `ops`.
const Op& after(const std::vector<Op>& ops, std::string_view name) {
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    if (ops[i].name == name) return ops[i + 1];
  }
  throw std::runtime_error("no op after " + std::string(name));
}

const Op& find(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  throw std::runtime_error("no op " + std::string(name));
}

int count(const std::vector<Op>& ops, std::string_view name) {
  int n = 0;
  for (const Op& op : ops) n += op.name == name;
  return n;
}

TEST(Fp8Casts, EveryFp8GemmQuantizesItsActivationOperandOnce) {
  // Llama-3-8B, s = 4096, tp 1: T = 4096 tokens. Forward: the inputs of qkv [T, 4096], proj [T, 4096],
  // fc1 [T, 4096] and fc2 [T, 14336]; backward: the output gradients before each data-gradient GEMM
  // (the weight gradients use the transposed copies). Cast-transpose: 2 bytes read, 2 written (FP8 +
  // its transpose) per element.
  const Transformer t(testing::llama3_8b(), fp8_training(4096));
  const int64_t tokens = 4096;
  const auto& f = t.layer_forward();
  EXPECT_EQ(count(f, "fp8_cast"), 4);
  for (auto [gemm, k] : {std::pair{"qkv", 4096}, std::pair{"proj", 4096}, std::pair{"fc1", 4096},
                         std::pair{"fc2", 14336}}) {
    const Op& cast = before(f, gemm);
    EXPECT_EQ(cast.name, "fp8_cast") << gemm;
    EXPECT_EQ(cast.bytes_read, Bytes::of(tokens * k * 2)) << gemm;
    EXPECT_EQ(cast.bytes_written, Bytes::of(tokens * k * 2)) << gemm;
    EXPECT_EQ(cast.flops, 0);
  }
  const auto& b = t.layer_backward();
  EXPECT_EQ(count(b, "fp8_cast"), 4);
  // fc2.dgrad reads the [T, 4096] output gradient; fc1.dgrad the [T, 2·14336] one (gate and up).
  EXPECT_EQ(before(b, "fc2.dgrad").bytes_read, Bytes::of(tokens * 4096 * 2));
  EXPECT_EQ(before(b, "fc1.dgrad").bytes_read, Bytes::of(tokens * 2 * 14336 * 2));
  EXPECT_NE(before(b, "fc2.wgrad").name, "fp8_cast");
  // The LM head and attention stay in 16 bits: no casts outside the layers' linear GEMMs.
  EXPECT_EQ(count(t.head_forward(), "fp8_cast"), 0);
  // A bf16 model casts nothing.
  const Transformer bf16(testing::llama3_8b(), testing::training(4096, 1, Recompute::kNone, AttentionKernel::kFlash));
  EXPECT_EQ(count(bf16.layer_forward(), "fp8_cast"), 0);
  EXPECT_EQ(count(bf16.layer_backward(), "fp8_cast"), 0);
}

TEST(Fp8Casts, SequenceParallelGathersTheFp8Shard) {
  // tp 4 with sequence parallelism: the rank casts its T/4 rows, then all-gathers one byte per
  // element of the [T, h] input.
  const int64_t tp = 4, tokens = 4096, hidden = 4096;
  const Transformer t(testing::llama3_8b(), fp8_training(4096), ShardSpec{.tp = tp, .sequence_parallel = true});
  const auto& f = t.layer_forward();
  const Op& gather = before(f, "qkv");
  ASSERT_EQ(gather.comm, CommKind::kTpAllGather);
  EXPECT_EQ(gather.comm_bytes, Bytes::of(tokens * hidden));
  const Op& cast = before(f, "qkv", 2);
  EXPECT_EQ(cast.name, "fp8_cast");
  EXPECT_EQ(cast.bytes_read, Bytes::of(tokens / tp * hidden * 2));
  // The reduce-scatter after proj carries the 16-bit output.
  const Op& scatter = after(f, "proj");
  ASSERT_EQ(scatter.comm, CommKind::kTpReduceScatter);
  EXPECT_EQ(scatter.comm_bytes, Bytes::of(tokens * hidden * 2));
}

TEST(FlashKernel, FlashAttentionTwoIsPricedPerCallShape) {
  // Llama-3-8B, b = 2, s = 4096, tp 2: 16 query and 4 KV heads of 128 per rank.
  TrainingSpec t = testing::training(4096, 2, Recompute::kNone, AttentionKernel::kFlash);
  t.flash_kernel = FusedAttentionKernel::kSdpaFlash;
  const Transformer tr(testing::llama3_8b(), t, ShardSpec{.tp = 2});
  const Op& fwd = find(tr.layer_forward(), "flash_attention");
  const Op& bwd = find(tr.layer_backward(), "flash_attention.backward");
  const AttentionShape shape{2, 16, 4, 4096, 128, DataType::kBf16};
  EXPECT_EQ(fwd.attention_kernel, FusedAttentionKernel::kSdpaFlash);
  EXPECT_EQ(fwd.attention, shape);
  EXPECT_EQ(bwd.attention, shape);
  // The shape's causal FLOPs are the op's kernel FLOPs (half the full score matrix's).
  EXPECT_DOUBLE_EQ(shape.forward_flops(), fwd.kernel_flops);
  EXPECT_DOUBLE_EQ(shape.backward_flops(), bwd.kernel_flops);
  const ComputeCostModel cost(testing::h100());
  EXPECT_EQ(op_duration(fwd, cost), cost.attention_time(shape, FusedAttentionKernel::kSdpaFlash,
                                                        fwd.bytes_read + fwd.bytes_written,
                                                        AttentionDirection::kForward));
  // At the default efficiencies (0.255 of the peak against cuDNN's 0.47) the kernel is slower.
  const Transformer cudnn(testing::llama3_8b(), testing::training(4096, 2, Recompute::kNone, AttentionKernel::kFlash),
                          ShardSpec{.tp = 2});
  EXPECT_GT(op_duration(fwd, cost), op_duration(find(cudnn.layer_forward(), "flash_attention"), cost));
}

TEST(FlashKernel, NeedsFusedAttentionAndNoContextParallelism) {
  TrainingSpec naive = testing::training(4096, 1, Recompute::kNone, AttentionKernel::kNaive);
  naive.flash_kernel = FusedAttentionKernel::kSdpaFlash;
  EXPECT_THROW(Transformer(testing::llama3_8b(), naive), InputError);
  TrainingSpec flash = testing::training(4096, 1, Recompute::kNone, AttentionKernel::kFlash);
  flash.flash_kernel = FusedAttentionKernel::kSdpaFlash;
  try {
    const Transformer ring(testing::llama3_8b(), flash, ShardSpec{.cp = 2});
    FAIL() << "sdpa-flash with context parallelism was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("flash_kernel"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_fused_attention_kernel("sdpa-flash"), FusedAttentionKernel::kSdpaFlash);
  EXPECT_THROW(parse_fused_attention_kernel("triton"), InputError);
}

TEST(FlashKernel, FlashAttentionOneRunsAtHalfTheFusedRate) {
  TrainingSpec t = testing::training(4096, 2, Recompute::kNone, AttentionKernel::kFlash);
  const Transformer cudnn(testing::llama3_8b(), t);
  t.flash_kernel = FusedAttentionKernel::kFlashV1;
  const Transformer v1(testing::llama3_8b(), t);
  const ComputeCostModel cost(testing::h100());
  for (auto [list_a, list_b, name] : {std::tuple{&cudnn.layer_forward(), &v1.layer_forward(), "flash_attention"},
                                       std::tuple{&cudnn.layer_backward(), &v1.layer_backward(),
                                                  "flash_attention.backward"}}) {
    const Op& fast = find(*list_a, name);
    const Op& slow = find(*list_b, name);
    EXPECT_EQ(slow.attention_kernel, FusedAttentionKernel::kFlashV1);
    EXPECT_DOUBLE_EQ(slow.kernel_flops, fast.kernel_flops);  // the same work, counted the same
    // Compute-bound at s = 4096: the kernel time (launch gap aside) doubles.
    const Duration gap = cost.kernel_gap();
    EXPECT_NEAR((op_duration(slow, cost) - gap).to_seconds() / (op_duration(fast, cost) - gap).to_seconds(),
                ComputeDefaults::kFlashV1Slowdown, 1e-3);
  }
  // flash-attn 1.x supports head dimensions up to 128.
  ModelSpec wide = testing::llama3_8b();
  wide.head_dim = 256;
  try {
    const Transformer refused(wide, t);
    FAIL() << "flash-v1 with head_dim 256 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("up to 128"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_fused_attention_kernel("flash-v1"), FusedAttentionKernel::kFlashV1);
  EXPECT_EQ(name_of(FusedAttentionKernel::kFlashV1), "flash-v1");
}

Bytes moved(const std::vector<Op>& ops, std::string_view name) {
  Bytes total;
  for (const Op& op : ops) {
    if (op.name == name) total += op.bytes_read + op.bytes_written;
  }
  return total;
}

TEST(KernelFusion, UnfusedNormRopeAndSwigluAreTheirAtenKernels) {
  // Llama-2-7B, s = 2048, b = 1, tp 2 without sequence parallelism: the norms see all 2048 tokens.
  const TrainingSpec fused = testing::training(2048, 1, Recompute::kNone, AttentionKernel::kFlash);
  TrainingSpec unfused = fused;
  unfused.fused_norm = false;
  unfused.fused_rope = false;
  unfused.fused_swiglu = false;
  const Transformer a(testing::llama2_7b(), fused, ShardSpec{.tp = 2});
  const Transformer b(testing::llama2_7b(), unfused, ShardSpec{.tp = 2});
  const int64_t tokens = 2048, hidden = 4096, ffn = 11008 / 2, q = 16 * 128;
  EXPECT_EQ(count(a.layer_forward(), "input_norm"), 1);
  EXPECT_EQ(count(b.layer_forward(), "input_norm"), 8);
  EXPECT_EQ(count(b.layer_backward(), "post_attention_norm.backward"), 13);
  EXPECT_EQ(count(b.layer_forward(), "rope"), 6);  // three kernels for q, three for k
  EXPECT_EQ(count(b.layer_forward(), "activation"), 2);
  EXPECT_EQ(count(b.layer_backward(), "activation.backward"), 4);
  // Bytes as workloads/aten_kernels.h counts them: 13× the bf16 input (+ per-token terms) against 2×.
  const int64_t x = tokens * hidden * 2;
  EXPECT_EQ(moved(a.layer_forward(), "input_norm"), Bytes::of(2 * x));
  EXPECT_EQ(moved(b.layer_forward(), "input_norm"), Bytes::of(13 * x + 6 * tokens * 2));
  EXPECT_EQ(moved(b.layer_forward(), "rope"), Bytes::of(9 * 2 * tokens * q * 2));
  EXPECT_EQ(moved(b.layer_forward(), "activation"), Bytes::of(5 * 2 * tokens * ffn));
  // Autograd keeps each norm's normalised output and SiLU's output on top of the fused kernels' saves.
  EXPECT_EQ(b.layer_activation_bytes() - a.layer_activation_bytes(), Bytes::of(2 * x + tokens * ffn * 2));
  // Under full recompute only the layer input is kept either way.
  TrainingSpec full = fused;
  full.recompute = Recompute::kFull;
  TrainingSpec full_unfused = unfused;
  full_unfused.recompute = Recompute::kFull;
  EXPECT_EQ(Transformer(testing::llama2_7b(), full).layer_activation_bytes(),
            Transformer(testing::llama2_7b(), full_unfused).layer_activation_bytes());
  // The unfused kernels take PyTorch's memory paths, so they cost more than their bytes at copy rate.
  const ComputeCostModel cost(testing::h100());
  Duration fused_time, unfused_time;
  for (const Op& op : a.layer_forward()) fused_time += op.cost == OpCost::kMemoryBound ? op_duration(op, cost) : Duration{};
  for (const Op& op : b.layer_forward()) unfused_time += op.cost == OpCost::kMemoryBound ? op_duration(op, cost) : Duration{};
  EXPECT_GT(unfused_time, fused_time * 3);
}

TEST(KernelFusion, UnfusedSoftmaxKeepsWhatTheFusedOneKeeps) {
  const TrainingSpec fused = testing::training(2048, 1, Recompute::kNone, AttentionKernel::kNaive);
  TrainingSpec unfused = fused;
  unfused.fused_softmax = false;
  const Transformer a(testing::llama2_7b(), fused);
  const Transformer b(testing::llama2_7b(), unfused);
  const int64_t scores = 32LL * 2048 * 2048;  // heads × s × s
  EXPECT_EQ(count(b.layer_forward(), "softmax"), 3);
  EXPECT_EQ(moved(b.layer_forward(), "softmax"), Bytes::of(13 * scores));  // 6 × 2 bytes + the mask byte
  EXPECT_EQ(moved(b.layer_backward(), "softmax.backward"), Bytes::of(11 * scores));
  for (const Op& op : b.layer_forward()) {
    if (op.name == "softmax") {
      EXPECT_TRUE(op.attention_core);
    }
  }
  EXPECT_EQ(a.layer_activation_bytes(), b.layer_activation_bytes());
}

TEST(KernelFusion, RefusesWhatTheModelOrFrameworkDoesNotHave) {
  auto message = [](const ModelSpec& m, const TrainingSpec& t) {
    try {
      const Transformer tr(m, t);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const TrainingSpec base = testing::training(2048, 1, Recompute::kNone, AttentionKernel::kFlash);
  TrainingSpec norm = base;
  norm.fused_norm = false;
  EXPECT_NE(message(testing::gpt3_175b(), norm).find("training.fused_norm"), std::string::npos);  // LayerNorm
  TrainingSpec rope = base;
  rope.fused_rope = false;
  EXPECT_NE(message(testing::gpt3_175b(), rope).find("training.fused_rope"), std::string::npos);  // learned positions
  TrainingSpec glu = base;
  glu.fused_swiglu = false;
  EXPECT_NE(message(testing::gpt3_175b(), glu).find("training.fused_swiglu"), std::string::npos);  // GeLU
  TrainingSpec softmax = base;
  softmax.fused_softmax = false;
  EXPECT_NE(message(testing::llama2_7b(), softmax).find("attention: naive"), std::string::npos);
  TrainingSpec eager = norm;
  eager.framework = Framework::kPytorchEager;
  EXPECT_NE(message(testing::llama2_7b(), eager).find("framework"), std::string::npos);
}

}  // namespace kernel_choice_test
}  // namespace clustersim
