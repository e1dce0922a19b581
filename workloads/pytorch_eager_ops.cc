#include "workloads/pytorch_eager_ops.h"

#include <algorithm>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "workloads/aten_kernels.h"
#include "workloads/flash_attention_splits.h"
#include "workloads/op_list_builder.h"

namespace clustersim {

namespace {

// Per-rank sizes (tp = cp = 1) in elements; byte counts are written out where ops are built.
struct Dims {
  int64_t b, s, T, h, q, kv, ffn, fc1_out, vocab, heads, kv_heads, head_dim;
  int64_t layers;
  int64_t tp;  // tensor-parallel ranks splitting each layer's heads and MLP width
  int64_t r;  // residual-stream element bytes: 4 (fp32, promoted by the row-parallel biases) or 2
  bool bias, rope, swiglu, learned, tied, recompute;
  // fp32 parameters: autocast casts each linear weight to bf16 in every forward. With 16-bit
  // parameters (FSDP's mixed precision, param_dtype bf16) the gathered weights are already bf16.
  bool weight_casts;
  // fp32 gradients: each bf16 weight gradient is cast to fp32 (autocast's cast backward, or FSDP's
  // reduce_dtype fp32); with 16-bit gradients it stays as it is.
  bool grad_casts;
  DataType gemm;
  FusedAttentionKernel attention;  // SDPA's backend: flash (FlashAttention-2) or cuDNN
  int64_t sm_count;  // the GPU's streaming multiprocessors (0: unknown), for flash's KV splits

  int64_t qkv_out() const { return q + 2 * kv; }
  // SDPA's call shape: q [b, heads, s, d], k and v [b, kv_heads, s, d] in bf16.
  AttentionShape attention_shape() const { return AttentionShape{b, heads, kv_heads, s, head_dim, DataType::kBf16}; }
  // Weights of one layer's linear layers (each cast to bf16 by autocast in every forward).
  int64_t layer_linear_weights() const { return h * qkv_out() + q * h + h * fc1_out + ffn * h; }
};

Dims dims_of(const ModelSpec& model, const TrainingSpec& training, const ShardedDims& dims) {
  if (dims.cp != 1 || dims.sequence_parallel) {
    throw InputError(fmt::format("training.framework pytorch-eager models tools/reference/train_step.py's steps: it "
                                 "needs cp = 1 and no sequence parallelism (got cp {}); use training.framework: "
                                 "megatron for context or sequence parallelism",
                                 dims.cp));
  }
  Dims z{};
  z.b = training.micro_batch;
  z.s = training.seq_len;
  z.T = z.b * z.s;
  z.h = model.hidden;
  z.head_dim = dims.head_dim;
  z.heads = dims.heads_per_rank;
  z.kv_heads = dims.kv_heads_per_rank;
  z.q = z.heads * z.head_dim;
  z.kv = z.kv_heads * z.head_dim;
  z.ffn = dims.ffn_per_rank;
  z.swiglu = model.mlp == MlpKind::kSwiglu;
  z.fc1_out = z.ffn * (z.swiglu ? 2 : 1);
  // Tensor parallelism splits the layers only: every rank holds the whole embedding and LM head and
  // computes the whole loss (train_step.py --parallel tp), so the vocabulary is not split.
  z.vocab = padded_vocab_size(model.vocab, model.make_vocab_size_divisible_by, 1);
  z.tp = dims.tp;
  z.layers = model.layers;
  z.bias = model.linear_bias;
  z.r = z.bias ? 4 : 2;
  z.rope = model.position_embedding == PositionEmbedding::kRope;
  z.learned = model.position_embedding == PositionEmbedding::kLearned;
  z.tied = model.tied_embeddings;
  z.recompute = training.recompute == Recompute::kFull;
  z.gemm = training.compute_dtype;
  z.weight_casts = training.precision.param_dtype == DataType::kFp32;
  z.grad_casts = training.precision.grad_dtype == DataType::kFp32;
  z.attention = training.flash_kernel;
  z.sm_count = dims.gpu_sm_count;
  return z;
}

// Marks `op` a helper kernel of the layer's SDPA call (Op::within_attention_call).
void within_call(Op& op, const Dims& z) {
  op.within_attention_call = true;
  op.attention = z.attention_shape();
  op.attention_kernel = z.attention;
}

// Forward attention core: SDPA on the flash backend (bf16 q, k, v; causal).
void attention_forward(OpListBuilder& add, const Dims& z, int64_t saved) {
  // Model FLOPs over the full s × s score matrix (Megatron/PaLM); the causal kernel executes half.
  const double flops =
      4.0 * static_cast<double>(z.b) * static_cast<double>(z.s) * static_cast<double>(z.s) * static_cast<double>(z.q);
  Op& op = add.fused_attention("sdpa_flash", 2 * z.T * z.qkv_out(), 2 * z.T * z.q, saved, DataType::kBf16, flops,
                               z.attention_shape().forward_flops());
  op.attention = z.attention_shape();
  op.attention_kernel = z.attention;
  // FlashAttention-2 splitting the keys (workloads/flash_attention_splits.h): the split kernel keeps
  // the cost above; the combine kernel reads each split's fp32 partial output [b, heads, s, d] and
  // log-sum-exp [b, heads, s] and writes the bf16 output and the fp32 log-sum-exp (priced within the
  // call where samples time it whole: Op::within_attention_call). cuDNN's kernel does not split.
  if (z.attention != FusedAttentionKernel::kSdpaFlash) return;
  const int64_t splits = flash_forward_kv_splits(z.b, z.heads, z.s, z.s, z.head_dim, z.sm_count);
  if (splits > 1) {
    const int64_t lse = 4 * z.b * z.heads * z.s;
    within_call(add.memory("sdpa_flash.splitkv_combine", MemoryAccess::kStream, splits * (4 * z.T * z.q + lse),
                           2 * z.T * z.q + lse),
                z);
  }
}

// Op names (static: Op::name is a view) of apply_rotary's kernels (workloads/aten_kernels.h), per tensor.
constexpr std::string_view kRopeQForward[] = {"rope.q.cos_cast", "rope.q.sin_cast", "rope.q.x1_cos",
                                              "rope.q.x2_sin",   "rope.q.subtract", "rope.q.x2_cos",
                                              "rope.q.x1_sin",   "rope.q.add",      "rope.q.concatenate"};
constexpr std::string_view kRopeKForward[] = {"rope.k.cos_cast", "rope.k.sin_cast", "rope.k.x1_cos",
                                              "rope.k.x2_sin",   "rope.k.subtract", "rope.k.x2_cos",
                                              "rope.k.x1_sin",   "rope.k.add",      "rope.k.concatenate"};
constexpr std::string_view kRopeQBackward[] = {
    "rope.q.backward.x1_sin.backward",        "rope.q.backward.x2_cos.backward",
    "rope.q.backward.subtract.backward",      "rope.q.backward.x2_sin.backward",
    "rope.q.backward.x2.accumulate",          "rope.q.backward.x1_cos.backward",
    "rope.q.backward.x1.accumulate",          "rope.q.backward.x2.slice_backward.zero_fill",
    "rope.q.backward.x2.slice_backward.copy", "rope.q.backward.x1.slice_backward.zero_fill",
    "rope.q.backward.x1.slice_backward.copy", "rope.q.backward.accumulate"};
constexpr std::string_view kRopeKBackward[] = {
    "rope.k.backward.x1_sin.backward",        "rope.k.backward.x2_cos.backward",
    "rope.k.backward.subtract.backward",      "rope.k.backward.x2_sin.backward",
    "rope.k.backward.x2.accumulate",          "rope.k.backward.x1_cos.backward",
    "rope.k.backward.x1.accumulate",          "rope.k.backward.x2.slice_backward.zero_fill",
    "rope.k.backward.x2.slice_backward.copy", "rope.k.backward.x1.slice_backward.zero_fill",
    "rope.k.backward.x1.slice_backward.copy", "rope.k.backward.accumulate"};

// Appends `kernels` (workloads/aten_kernels.h) under `names`, one per kernel; `saved[i]` (when
// given) is what kernel i keeps for backward.
void append_kernels(OpListBuilder& add, const std::vector<AtenKernel>& kernels,
                    std::initializer_list<std::string_view> names, std::initializer_list<int64_t> saved = {}) {
  if (names.size() != kernels.size() || (saved.size() != 0 && saved.size() != kernels.size())) {
    throw InternalError("pytorch-eager op list: kernel names do not match the kernels");
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    const AtenKernel& k = kernels[i];
    add.kernel(names.begin()[i], k, saved.size() == 0 ? 0 : saved.begin()[i]);
  }
}

// The kernels of `kernels` as ops named by `names` (each ending in its kernel's step); the last one
// keeps `saved_last` for backward.
void append_named(OpListBuilder& add, const std::vector<AtenKernel>& kernels, std::span<const std::string_view> names,
                  int64_t saved_last = 0) {
  if (names.size() != kernels.size()) {
    throw InternalError("pytorch-eager op list: kernel names do not match the kernels");
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    const AtenKernel& k = kernels[i];
    if (!names[i].ends_with(k.step)) {
      throw InternalError(fmt::format("pytorch-eager op list: op {} is not kernel {}", names[i], k.step));
    }
    add.kernel(names[i], k, i + 1 == kernels.size() ? saved_last : 0);
  }
}

std::vector<Op> layer_forward(const Dims& z, Pass pass, bool early_stop) {
  std::vector<Op> ops;
  OpListBuilder add(ops, pass);
  const bool save = pass == Pass::kForward && !z.recompute;
  auto saved = [save](int64_t bytes) { return save ? bytes : 0; };
  const int64_t Th = z.T * z.h;
  // Full recompute: the checkpoint keeps the layer input (the residual stream, r bytes).
  const int64_t layer_input = pass == Pass::kForward && z.recompute ? z.r * Th : 0;

  if (z.r == 2) add.memory("input_norm.to_fp32", MemoryAccess::kWideningCast, 2 * Th, 4 * Th, layer_input);
  add.memory("input_norm", MemoryAccess::kNormalization, 4 * Th, 4 * Th, saved(4 * Th) + (z.r == 2 ? 0 : layer_input));
  if (z.weight_casts) add.memory("qkv.weight_cast", MemoryAccess::kElementwise, 4 * z.h * z.qkv_out(), 2 * z.h * z.qkv_out());
  if (z.weight_casts && z.bias) add.memory("qkv.bias_cast", MemoryAccess::kElementwise, 4 * z.qkv_out(), 2 * z.qkv_out());
  add.memory("qkv.input_cast", MemoryAccess::kElementwise, 4 * Th, 2 * Th, saved(2 * Th));
  add.gemm("qkv", z.T, z.qkv_out(), z.h, z.gemm, saved(2 * z.T * z.qkv_out()));
  if (z.rope) {
    // cos and sin [s, d/2] (fp32, cached by the model), broadcast over the batch and the heads.
    const int64_t table = z.s * (z.head_dim / 2);
    append_named(add, apply_rotary_forward_kernels(z.T * z.q, table), kRopeQForward, saved(2 * z.T * z.q));
    append_named(add, apply_rotary_forward_kernels(z.T * z.kv, table), kRopeKForward, saved(2 * z.T * z.kv));
  }
  attention_forward(add, z, saved(2 * z.T * z.q));
  // With RoPE the attention output is [b, heads, s, d] contiguous; reshaping it to [b, s, h] copies.
  if (z.rope) add.memory("attention.output_copy", MemoryAccess::kStrided, 2 * z.T * z.q, 2 * z.T * z.q, saved(2 * z.T * z.q));
  if (z.weight_casts) add.memory("proj.weight_cast", MemoryAccess::kElementwise, 4 * z.q * z.h, 2 * z.q * z.h);
  add.gemm("proj", z.T, z.h, z.q, z.gemm);
  // Blocking all-reduces over the tensor-parallel group: train_step.py's _ReduceFromTensorParallel
  // here and after fc2, _CopyToTensorParallel's backward before each norm's backward (Megatron's g and f).
  if (z.tp > 1) add.comm("proj.tp_all_reduce", CommKind::kTpAllReduce, 2 * Th);
  if (z.bias) add.memory("proj.bias_add", MemoryAccess::kBroadcast, 2 * Th, 4 * Th);
  add.memory("attention_residual", MemoryAccess::kElementwise, 2 * z.r * Th, z.r * Th);
  if (z.r == 2) add.memory("post_attention_norm.to_fp32", MemoryAccess::kWideningCast, 2 * Th, 4 * Th);
  add.memory("post_attention_norm", MemoryAccess::kNormalization, 4 * Th, 4 * Th, saved(4 * Th));
  if (z.weight_casts) add.memory("fc1.weight_cast", MemoryAccess::kElementwise, 4 * z.h * z.fc1_out, 2 * z.h * z.fc1_out);
  if (z.weight_casts && z.bias) add.memory("fc1.bias_cast", MemoryAccess::kElementwise, 4 * z.fc1_out, 2 * z.fc1_out);
  add.memory("fc1.input_cast", MemoryAccess::kElementwise, 4 * Th, 2 * Th, saved(2 * Th));
  add.gemm("fc1", z.T, z.fc1_out, z.h, z.gemm, saved(2 * z.T * z.fc1_out));
  const int64_t Tf = z.T * z.ffn;
  if (z.swiglu) {
    append_kernels(add, swiglu_forward_kernels(Tf), {"activation.silu", "activation.multiply"},
                   {saved(2 * Tf), saved(2 * Tf)});
  } else {
    add.memory("activation", MemoryAccess::kElementwise, 2 * Tf, 2 * Tf, saved(2 * Tf));
  }
  if (z.weight_casts) add.memory("fc2.weight_cast", MemoryAccess::kElementwise, 4 * z.ffn * z.h, 2 * z.ffn * z.h);
  if (early_stop) return ops;  // checkpoint's recomputation stops once fc2's input is saved again
  add.gemm("fc2", z.T, z.h, z.ffn, z.gemm);
  if (z.tp > 1) add.comm("fc2.tp_all_reduce", CommKind::kTpAllReduce, 2 * Th);
  if (z.bias) add.memory("fc2.bias_add", MemoryAccess::kBroadcast, 2 * Th, 4 * Th);
  add.memory("mlp_residual", MemoryAccess::kElementwise, 2 * z.r * Th, z.r * Th);
  return ops;
}

// The gradient of the residual stream at a norm's input: the norm's input gradient (fp32) plus the
// gradient arriving along the residual branch.
void residual_join(OpListBuilder& add, const Dims& z, std::string_view cast_name, std::string_view add_name) {
  const int64_t Th = z.T * z.h;
  if (z.r == 2) {
    add.memory(cast_name, MemoryAccess::kElementwise, 4 * Th, 2 * Th);  // fp32 → bf16 (the .float() copy's backward)
    add.memory(add_name, MemoryAccess::kElementwise, 4 * Th, 2 * Th);
  } else {
    add.memory(add_name, MemoryAccess::kElementwise, 8 * Th, 4 * Th);
  }
}

std::vector<Op> layer_backward(const Dims& z) {
  std::vector<Op> ops;
  OpListBuilder add(ops, Pass::kBackward);
  const int64_t Th = z.T * z.h;
  const int64_t Tf = z.T * z.ffn;
  if (z.bias) {
    add.memory("fc2.bias_grad", MemoryAccess::kReduction, 4 * Th, 0);
    add.memory("fc2.output_grad_cast", MemoryAccess::kWideningCast, 4 * Th, 2 * Th);
  }
  // Each linear layer on the [b, s, h] stream: the kernel-free backward nodes of its output view
  // (ViewBackward0 after addmm, UnsafeViewBackward0 after matmul's mm) and of its input's flatten
  // (ViewBackward0), as a profiled PyTorch 2.11 step runs them (tools/data/h200-2026-12-02-kernels).
  add.gemm("fc2.dgrad", z.T, z.ffn, z.h, z.gemm).host_grad_view_nodes = 2;
  add.gemm("fc2.wgrad", z.h, z.ffn, z.T, z.gemm, 0, 1, true);
  if (z.grad_casts) add.memory("fc2.weight_grad_cast", MemoryAccess::kWideningCast, 2 * z.ffn * z.h, 4 * z.ffn * z.h);
  if (z.swiglu) {
    append_kernels(add, swiglu_backward_kernels(Tf),
                   {"activation.multiply.backward.up", "activation.multiply.backward.silu", "activation.silu.backward",
                    "activation.chunk.backward"});
  } else {
    add.memory("activation.backward", MemoryAccess::kElementwise, 4 * Tf, 2 * Tf);
  }
  add.gemm("fc1.dgrad", z.T, z.h, z.fc1_out, z.gemm).host_grad_view_nodes = 2;
  add.gemm("fc1.wgrad", z.fc1_out, z.h, z.T, z.gemm, 0, 1, true);
  if (z.grad_casts) add.memory("fc1.weight_grad_cast", MemoryAccess::kWideningCast, 2 * z.h * z.fc1_out, 4 * z.h * z.fc1_out);
  if (z.bias) add.memory("fc1.bias_grad", MemoryAccess::kReduction, 2 * z.T * z.fc1_out, 0);
  if (z.bias && z.grad_casts) add.memory("fc1.bias_grad_cast", MemoryAccess::kWideningCast, 2 * z.fc1_out, 4 * z.fc1_out);
  add.memory("fc1.input_cast.backward", MemoryAccess::kWideningCast, 2 * Th, 4 * Th);
  if (z.tp > 1) add.comm("fc1.input_grad.tp_all_reduce", CommKind::kTpAllReduce, 4 * Th);  // the norm's fp32 output gradient
  add.memory("post_attention_norm.backward", MemoryAccess::kNormalizationBackward, 8 * Th, 4 * Th);
  add.memory("post_attention_norm.weight_grad", MemoryAccess::kReduction, 8 * Th, 0);
  residual_join(add, z, "post_attention_norm.to_fp32.backward", "attention_residual.backward");
  if (z.bias) {
    add.memory("proj.bias_grad", MemoryAccess::kReduction, 4 * Th, 0);
    add.memory("proj.output_grad_cast", MemoryAccess::kWideningCast, 4 * Th, 2 * Th);
  }
  add.gemm("proj.dgrad", z.T, z.q, z.h, z.gemm).host_grad_view_nodes = 2;
  add.gemm("proj.wgrad", z.h, z.q, z.T, z.gemm, 0, 1, true);
  if (z.grad_casts) add.memory("proj.weight_grad_cast", MemoryAccess::kWideningCast, 2 * z.q * z.h, 4 * z.q * z.h);
  if (z.rope) add.memory("attention.output_copy.backward", MemoryAccess::kStrided, 2 * z.T * z.q, 2 * z.T * z.q);
  {
    // Reads q, k, v, the output and its gradient; writes dq, dk, dv.
    const double flops =
        8.0 * static_cast<double>(z.b) * static_cast<double>(z.s) * static_cast<double>(z.s) * static_cast<double>(z.q);
    Op& op = add.fused_attention("sdpa_flash.backward", 2 * z.T * (3 * z.q + 2 * z.kv), 2 * z.T * z.qkv_out(), 0,
                                 DataType::kBf16, flops, z.attention_shape().backward_flops());
    op.attention = z.attention_shape();
    op.attention_kernel = z.attention;
    // The output's transpose and reshape: TransposeBackward0 and ViewBackward0 (UnsafeViewBackward0
    // where the reshape copied, after RoPE), no kernel.
    op.host_grad_view_nodes = 2;
  }
  if (z.attention == FusedAttentionKernel::kSdpaFlash) {
    // FlashAttention-2's backward (flash-attention csrc/flash_attn/src/flash_bwd_launch_template.h,
    // run_flash_bwd_seqk_parallel) runs three kernels; the main one above keeps the whole cost, and
    // these two are priced by their bytes (within the call where samples time it whole:
    // Op::within_attention_call). Assumed from the source: flash_bwd_dot_do_o_kernel reads
    // dO and O (bf16 [b, s, heads, d]), writes D = rowsum(dO ∘ O) ([b, heads, s] fp32) and zeroes the
    // fp32 dq accumulator [b, s, heads, d] (Clear_dQaccum); flash_bwd_convert_dq_kernel reads that
    // accumulator and writes dq in bf16.
    within_call(add.memory("sdpa_flash.backward.dot_do_o", MemoryAccess::kStream, 4 * z.T * z.q,
                           4 * z.b * z.heads * z.s + 4 * z.T * z.q),
                z);
    within_call(add.memory("sdpa_flash.backward.convert_dq", MemoryAccess::kStream, 4 * z.T * z.q, 2 * z.T * z.q), z);
  }
  if (z.attention == FusedAttentionKernel::kSdpaFlash && z.kv_heads < z.heads) {
    // Grouped-query attention on flash: the kernel writes dk and dv per query head ([b, s, heads, d] bf16),
    // and SDPA sums each over its group of heads / kv_heads query heads (aten::sum).
    const int64_t per_head = 2 * z.T * z.q;  // bf16 [b, s, heads, d]
    within_call(add.memory("sdpa_flash.backward.dk_group_sum", MemoryAccess::kReduction, per_head, 2 * z.T * z.kv), z);
    within_call(add.memory("sdpa_flash.backward.dv_group_sum", MemoryAccess::kReduction, per_head, 2 * z.T * z.kv), z);
  }
  if (z.rope) {
    // Autograd reaches k's RoPE before q's (k was rotated last).
    const int64_t table = z.s * (z.head_dim / 2);
    append_named(add, apply_rotary_backward_kernels(z.T * z.kv, table), kRopeKBackward);
    append_named(add, apply_rotary_backward_kernels(z.T * z.q, table), kRopeQBackward);
    // dk and dq come back as [b, heads, s, d]; the split's backward needs them as [b, s, heads·d]:
    // one reshape copy each.
    add.memory("rope.k.grad_transpose", MemoryAccess::kStrided, 2 * z.T * z.kv, 2 * z.T * z.kv);
    add.memory("rope.q.grad_transpose", MemoryAccess::kStrided, 2 * z.T * z.q, 2 * z.T * z.q);
  }
  // q, k and v's transposes (TransposeBackward0) and views (ViewBackward0) run no kernel, but for
  // RoPE's q and k, whose gradients arrive strided: their views copy (rope.*.grad_transpose above).
  add.memory("qkv.split.backward", MemoryAccess::kConcatenation, 2 * z.T * z.qkv_out(), 2 * z.T * z.qkv_out())
      .host_grad_view_nodes = 3 + (z.rope ? 1 : 3);
  add.gemm("qkv.dgrad", z.T, z.h, z.qkv_out(), z.gemm).host_grad_view_nodes = 2;
  add.gemm("qkv.wgrad", z.qkv_out(), z.h, z.T, z.gemm, 0, 1, true);
  if (z.grad_casts) add.memory("qkv.weight_grad_cast", MemoryAccess::kWideningCast, 2 * z.h * z.qkv_out(), 4 * z.h * z.qkv_out());
  if (z.bias) add.memory("qkv.bias_grad", MemoryAccess::kReduction, 2 * z.T * z.qkv_out(), 0);
  if (z.bias && z.grad_casts) add.memory("qkv.bias_grad_cast", MemoryAccess::kWideningCast, 2 * z.qkv_out(), 4 * z.qkv_out());
  add.memory("qkv.input_cast.backward", MemoryAccess::kWideningCast, 2 * Th, 4 * Th);
  if (z.tp > 1) add.comm("qkv.input_grad.tp_all_reduce", CommKind::kTpAllReduce, 4 * Th);
  add.memory("input_norm.backward", MemoryAccess::kNormalizationBackward, 8 * Th, 4 * Th);
  add.memory("input_norm.weight_grad", MemoryAccess::kReduction, 8 * Th, 0);
  residual_join(add, z, "input_norm.to_fp32.backward", "mlp_residual.backward");
  return ops;
}

}  // namespace

int64_t pytorch_eager_layer_saved_bytes(const ModelSpec& model, const TrainingSpec& training, const ShardedDims& dims,
                                        bool recompute) {
  const Dims z = dims_of(model, training, dims);
  const int64_t Th = z.T * z.h;
  if (recompute) return z.r * Th;
  int64_t bytes = 2 * 4 * Th + 2 * 2 * Th + 2 * z.T * z.qkv_out() + 2 * z.T * z.q + 2 * z.T * z.fc1_out +
                  2 * z.T * z.ffn;
  if (z.rope) bytes += 2 * z.T * (z.q + z.kv) + 2 * z.T * z.q;
  if (z.swiglu) bytes += 2 * z.T * z.ffn;
  return bytes;
}

// The first op of `ops` named one of `names` (in that order of preference), or nullptr.
Op* first_named(std::vector<Op>& ops, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; });
    if (it != ops.end()) return &*it;
  }
  return nullptr;
}

// The host-only calls of one layer's forward in tools/reference/train_step.py's modules, attached to
// the first kernel that follows them: Block, Fp32Norm and the norm (3 module calls) before the first
// norm's kernels; Attention, ColumnParallelLinear and nn.Linear before qkv's casts; qkv.split
// (3 pieces), three view and three transpose before RoPE or SDPA; the output's transpose and, without
// RoPE, its reshape (a view then: SDPA's output keeps the query's strides; with RoPE it is the copy
// kernel attention.output_copy), RowParallelLinear and nn.Linear before proj; Fp32Norm and the norm
// before the second norm; Mlp, ColumnParallelLinear and nn.Linear before fc1; SwiGLU's chunk
// (2 pieces) before its SiLU; RowParallelLinear and nn.Linear before fc2 (not reached when
// checkpoint's recomputation stops before fc2's first kernel: it stops inside nn.Linear).
void attribute_host_calls(std::vector<Op>& ops, const Dims& z) {
  auto at = [&](std::initializer_list<std::string_view> names) -> Op& {
    Op* op = first_named(ops, names);
    if (op == nullptr) throw InternalError("attribute_host_calls: no op " + std::string(*names.begin()));
    return *op;
  };
  if (ops.empty()) return;
  at({"input_norm.to_fp32", "input_norm"}).host_module_calls += 3;
  at({"qkv.weight_cast", "qkv.input_cast", "qkv"}).host_module_calls += 3;
  Op& views = at({"rope.q.cos_cast", "sdpa_flash"});
  views.host_view_calls += 6;
  views.host_split_calls += 1;
  views.host_split_pieces += 3;
  at({"attention.output_copy", "proj.weight_cast", "proj"}).host_view_calls += z.rope ? 1 : 2;
  at({"proj.weight_cast", "proj"}).host_module_calls += 2;
  at({"post_attention_norm.to_fp32", "post_attention_norm"}).host_module_calls += 2;
  at({"fc1.weight_cast", "fc1.input_cast", "fc1"}).host_module_calls += 3;
  if (z.swiglu) {
    Op& silu = at({"activation.silu"});
    silu.host_split_calls += 1;
    silu.host_split_pieces += 2;
  }
  // Absent when the recomputation stops at fc2 and there is no weight cast: no kernel follows them.
  if (Op* fc2 = first_named(ops, {"fc2.weight_cast", "fc2"})) fc2->host_module_calls += 2;
}

PytorchEagerOps pytorch_eager_ops(const ModelSpec& model, const TrainingSpec& training, const ShardedDims& dims) {
  const Dims z = dims_of(model, training, dims);
  const int64_t Th = z.T * z.h;
  const int64_t TV = z.T * z.vocab;
  const int64_t Vh = z.vocab * z.h;
  PytorchEagerOps out;
  out.layer_forward = layer_forward(z, Pass::kForward, false);
  if (z.recompute) out.layer_recompute = layer_forward(z, Pass::kRecompute, true);
  attribute_host_calls(out.layer_forward, z);
  attribute_host_calls(out.layer_recompute, z);
  out.layer_backward = layer_backward(z);
  {
    OpListBuilder add(out.embedding_forward, Pass::kForward);
    add.memory("embedding", MemoryAccess::kElementwise, 4 * Th + 8 * z.T, 4 * Th);
    if (z.learned) {
      // torch.arange's position ids (int64 [s]), the gather of their rows [s, h] fp32, the broadcast add.
      add.memory("position_embedding.position_ids", MemoryAccess::kElementwise, 0, 8 * z.s);
      add.memory("position_embedding", MemoryAccess::kElementwise, 4 * z.s * z.h + 8 * z.s, 4 * z.s * z.h);
      add.memory("position_embedding.add", MemoryAccess::kBroadcast, 4 * Th + 4 * z.s * z.h, 4 * Th);
    }
    add.memory("embedding.to_bf16", MemoryAccess::kElementwise, 4 * Th, 2 * Th);
    // With an fp32 residual stream (r = 4) the first layer alone receives a bf16 input: its Fp32Norm's
    // .float() copies it (a no-op in later layers), and in backward that copy's backward and the
    // attention residual's add cast the fp32 gradients of the input to bf16. They run at the seams
    // with the first layer, so they are listed here.
    if (z.r == 4) add.memory("first_layer.input_norm.to_fp32", MemoryAccess::kWideningCast, 2 * Th, 4 * Th);
    OpListBuilder back(out.embedding_backward, Pass::kBackward);
    if (z.r == 4) {
      back.memory("first_layer.attention_residual.input_grad_cast", MemoryAccess::kElementwise, 4 * Th, 2 * Th);
      back.memory("first_layer.input_norm.to_fp32.backward", MemoryAccess::kElementwise, 4 * Th, 2 * Th);
    }
    back.memory("embedding.to_bf16.backward", MemoryAccess::kWideningCast, 2 * Th, 4 * Th);
    if (z.learned) {
      // The add's batch sum, then the position table's dense gradient: a zero fill of its s rows
      // used and the rows' gradients added (embedding_backward_feature_kernel).
      back.memory("position_embedding.backward", MemoryAccess::kReduction, 4 * Th, 4 * z.s * z.h);
      back.memory("position_embedding.table_grad.zero_fill", MemoryAccess::kElementwise, 0, 4 * z.s * z.h);
      back.memory("position_embedding.table_grad", MemoryAccess::kReduction, 4 * z.s * z.h + 8 * z.s, 4 * z.s * z.h);
    }
    // Dense gradient of the table: zero-filled [V, h] fp32, then the token rows' gradients added.
    back.memory("embedding.backward.zero_fill", MemoryAccess::kElementwise, 0, 4 * Vh);
    back.memory("embedding.backward", MemoryAccess::kReduction, 4 * Th + 8 * z.T, 4 * Th);
    if (z.tied) back.memory("embedding.tied_grad_accumulate", MemoryAccess::kElementwise, 8 * Vh, 4 * Vh);
  }
  {
    OpListBuilder add(out.head_forward, Pass::kForward);
    if (z.r == 2) add.memory("final_norm.to_fp32", MemoryAccess::kWideningCast, 2 * Th, 4 * Th);
    add.memory("final_norm", MemoryAccess::kNormalization, 4 * Th, 4 * Th, 4 * Th);
    add.memory("lm_head.input_cast", MemoryAccess::kElementwise, 4 * Th, 2 * Th, 2 * Th);
    if (z.weight_casts) add.memory("lm_head.weight_cast", MemoryAccess::kElementwise, 4 * Vh, 2 * Vh);
    add.gemm("lm_head", z.T, z.vocab, z.h, z.gemm);
    // The loss tensors (bf16 log-probabilities and their fp32 copy) are counted by the memory model.
    add.memory("log_softmax", MemoryAccess::kSoftmax, 2 * TV, 2 * TV);
    add.memory("nll_loss.input_cast", MemoryAccess::kWideningCast, 2 * TV, 4 * TV);
    // Gathers each token's target log-probability (fp32) by its int64 target; writes the mean.
    add.memory("nll_loss", MemoryAccess::kReduction, 4 * z.T + 8 * z.T, 4);
    OpListBuilder back(out.head_backward, Pass::kBackward);
    back.memory("loss.ones_like", MemoryAccess::kElementwise, 0, 4);  // backward()'s seed gradient
    // The [T, V] fp32 input gradient zero-filled, then −1/T scattered at each token's target.
    back.memory("nll_loss.backward.zero_fill", MemoryAccess::kElementwise, 0, 4 * TV);
    back.memory("nll_loss.backward", MemoryAccess::kElementwise, 8 * z.T + 4, 4 * z.T);
    back.memory("nll_loss.input_cast.backward", MemoryAccess::kElementwise, 4 * TV, 2 * TV);
    back.memory("log_softmax.backward", MemoryAccess::kSoftmax, 4 * TV, 2 * TV);
    // The logits' view to [T, V] and F.linear's output and input views: three kernel-free nodes.
    back.gemm("lm_head.dgrad", z.T, z.h, z.vocab, z.gemm).host_grad_view_nodes = 3;
    back.gemm("lm_head.wgrad", z.vocab, z.h, z.T, z.gemm, 0, 1, true);
    if (z.grad_casts) back.memory("lm_head.weight_grad_cast", MemoryAccess::kWideningCast, 2 * Vh, 4 * Vh);
    back.memory("lm_head.input_cast.backward", MemoryAccess::kWideningCast, 2 * Th, 4 * Th);
    back.memory("final_norm.backward", MemoryAccess::kNormalizationBackward, 8 * Th, 4 * Th);
    back.memory("final_norm.weight_grad", MemoryAccess::kReduction, 8 * Th, 0);
    if (z.r == 2) back.memory("final_norm.to_fp32.backward", MemoryAccess::kElementwise, 4 * Th, 2 * Th);
  }
  return out;
}

PytorchEagerMemory pytorch_eager_peak_memory(const ModelSpec& model, const TrainingSpec& training,
                                             const ShardedDims& dims, int64_t parameters, const FsdpSharding* fsdp,
                                             const EagerStageShare& share) {
  const Dims z = dims_of(model, training, dims);
  const int64_t layers = share.layers < 0 ? z.layers : share.layers;
  if (layers > z.layers || share.inflight_microbatches < 1) {
    throw InputError(fmt::format("pytorch-eager stage of {} layers with {} micro-batches in flight: a stage holds "
                                 "0 to {} layers and at least one micro-batch",
                                 layers, share.inflight_microbatches, z.layers));
  }
  const int64_t n = share.inflight_microbatches;
  const int64_t Th = z.T * z.h;
  const int64_t TV = z.T * z.vocab;
  const int64_t layer_weights_bf16 = z.weight_casts ? 2 * z.layer_linear_weights() : 0;
  const int64_t all_layer_weights_bf16 = layers * layer_weights_bf16;
  const int64_t head_weight_bf16 = share.head && z.weight_casts ? 2 * z.vocab * z.h : 0;
  // One micro-batch's saved activations: its layers', the head's (final norm input, fp32, and its
  // bf16 output) or the stage output kept for out.backward(grad), and the received input.
  const int64_t saved = layers * pytorch_eager_layer_saved_bytes(model, training, dims, z.recompute) +
                        (share.head ? 6 * Th : z.r * Th) + (share.embedding ? 0 : 2 * Th);
  const int64_t loss_saved = share.head ? 6 * TV : 0;  // per earlier micro-batch
  const int64_t others = n - 1;
  // Parameters whose fp32 states this rank holds, and the 16-bit weights it holds gathered.
  const int64_t shards = fsdp != nullptr ? std::max<int64_t>(1, fsdp->shards) : 1;
  const int64_t states = (parameters + shards - 1) / shards;
  const int64_t gathered = fsdp != nullptr ? fsdp->gathered_bytes : 0;
  const int64_t accumulated = fsdp != nullptr ? fsdp->accumulated_grad_bytes : 0;

  struct Moment {
    const char* name;
    int64_t params_extra;  // bf16 copies alive
    int64_t grads;
    int64_t activations;
    int64_t logits;
  };
  // The bf16 copies the earlier micro-batches' graphs hold: with full recompute a checkpointed
  // layer keeps none (its re-run casts again), the LM head's stays.
  const int64_t held_weights = (z.recompute ? 0 : all_layer_weights_bf16) + head_weight_bf16;
  const int64_t earlier_weights = others * held_weights;
  std::vector<Moment> moments{
      {share.head ? "forward (loss)" : "forward (end)", earlier_weights + all_layer_weights_bf16 + head_weight_bf16,
       accumulated, n * saved, others * loss_saved + (share.head ? 8 * TV : 0)},
      {"backward (end)", 0, std::max(4 * states, accumulated), 0, 0},
  };
  if (share.head) {
    moments.push_back(
        {"backward (start)", earlier_weights + held_weights, accumulated, n * saved, others * loss_saved + 10 * TV});
  }
  if (n > 1) {
    moments.push_back({"backward (first micro-batch done)", earlier_weights, 4 * states, others * saved,
                       others * loss_saved});
  }
  if (z.recompute && layers > 0) {
    moments.push_back({"backward (first recomputed layer)", earlier_weights + layer_weights_bf16,
                       // The LM head's gradient, into the unsharded accumulated ones or beside the shards.
                       accumulated >= 4 * parameters ? accumulated
                                                     : accumulated + (share.head ? 4 * z.vocab * z.h : int64_t{0}),
                       n * saved + pytorch_eager_layer_saved_bytes(model, training, dims, false), others * loss_saved});
  }
  const Moment* peak = &moments.front();
  auto total = [](const Moment& m) { return m.params_extra + m.grads + m.activations + m.logits; };
  for (const Moment& m : moments) {
    if (total(m) > total(*peak)) peak = &m;
  }
  PytorchEagerMemory out;
  out.moment = peak->name;
  out.peak.params = Bytes::of(checked_mul(states, 4, "parameter bytes"));
  out.peak.param_copies = Bytes::of(checked_add(gathered, peak->params_extra, "parameter bytes"));
  out.peak.grads = Bytes::of(peak->grads);
  out.peak.optimizer_state = Bytes::of(checked_mul(states, 8, "optimizer bytes"));
  out.peak.activations = Bytes::of(peak->activations);
  out.peak.logits = Bytes::of(peak->logits);
  out.peak.runtime_overhead = MemoryModel::default_runtime_overhead();
  return out;
}

std::vector<Op> pytorch_eager_optimizer_ops(int64_t params, int64_t tensors) {
  if (params < 0) throw InputError(fmt::format("optimizer cannot hold a negative parameter count ({})", params));
  if (tensors < 0) throw InputError(fmt::format("optimizer cannot hold a negative tensor count ({})", tensors));
  std::vector<Op> ops;
  OpListBuilder add(ops, Pass::kForward);
  // ATen's multi_tensor_apply (aten/src/ATen/native/cuda/MultiTensorApply.cuh) cuts each tensor into
  // chunks of 65,536 elements and ends a launch at 320 chunks or at depth_to_max_tensors tensors
  // (110 at depth 1, 36 at depth 4). Each tensor wastes at most one partial chunk, so the chunks
  // are at most ceil(params / 65536) + tensors: exact for the profiled llama-220m (98 tensors, 11
  // launches) and gpt-125m (148 tensors, 7 launches; PyTorch 2.11 on one H200, 2026-12-02).
  const int64_t step_launches = (tensors + 109) / 110;
  for (int64_t i = 0; i < step_launches; ++i) {
    const int64_t n = std::min<int64_t>(110, tensors - 110 * i);
    add.memory("optimizer.step_count", MemoryAccess::kFusedOptimizer, 4 * n, 4 * n);  // _foreach_add_(steps, 1)
  }
  const int64_t chunks = (params + 65535) / 65536 + tensors;
  const int64_t launches = std::max<int64_t>({1, (chunks + 319) / 320, (tensors + 35) / 36});
  // Reads parameter, gradient, exp_avg, exp_avg_sq; writes parameter, exp_avg, exp_avg_sq (fp32),
  // split evenly over the launches (the remainder on the first).
  const int64_t read = checked_mul(params, 16, "optimizer bytes");
  const int64_t written = checked_mul(params, 12, "optimizer bytes");
  for (int64_t i = 0; i < launches; ++i) {
    add.memory("optimizer.fused_adamw", MemoryAccess::kFusedOptimizer, read / launches + (i == 0 ? read % launches : 0),
               written / launches + (i == 0 ? written % launches : 0));
  }
  return ops;
}

}  // namespace clustersim
