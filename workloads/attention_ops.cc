// The attention ops of a Megatron layer (workloads/attention_ops.h) and the sliding window's tile
// count (windowed_tile_pairs, workloads/transformer.h).

#include "workloads/attention_ops.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/error.h"
#include "workloads/layer_kernels.h"
#include "workloads/transformer.h"

namespace clustersim {

int64_t windowed_tile_pairs(int64_t seq_len, int64_t window) {
  if (seq_len <= 0 || window <= 0) {
    throw InputError(fmt::format("windowed_tile_pairs: sequence {} and window {} must be positive", seq_len, window));
  }
  int64_t pairs = 0;
  for (int64_t first = 0; first < seq_len; first += kAttentionTile) {
    const int64_t last = std::min(seq_len, first + kAttentionTile) - 1;
    const int64_t first_key = std::max<int64_t>(0, first - window + 1);
    const int64_t tiles = last / kAttentionTile - first_key / kAttentionTile + 1;
    pairs += (last - first + 1) * tiles * kAttentionTile;
  }
  return pairs;
}

namespace megatron {

namespace {

// FLOPs of QKᵀ over d_qk and ·V over d_v for `pairs` query-key pairs per head and sequence, 2 per
// multiply-add.
double pair_flops(const LayerSizes& z, double pairs) {
  return 2.0 * static_cast<double>(z.b) * pairs * static_cast<double>(z.heads) * static_cast<double>(z.dqk + z.dv);
}

// Model FLOPs of the attention core: the full s_q × s score matrix (the Megatron-LM / PaLM
// convention), or s_q × min(window, s) with a sliding window (every query against its window).
double core_flops(const LayerSizes& z) {
  const int64_t keys = z.window > 0 ? std::min(z.window, z.s) : z.s;
  return pair_flops(z, static_cast<double>(z.s_q) * static_cast<double>(keys));
}

// FLOPs a causal fused kernel executes forward: half the score matrix (it skips the masked upper
// triangle), or with a window w (no context parallelism) the whole kAttentionTile × kAttentionTile
// tiles its queries' windows touch (windowed_tile_pairs), at most the causal half.
double causal_kernel_flops(const LayerSizes& z) {
  if (z.window == 0) return core_flops(z) / 2;
  const double s = static_cast<double>(z.s);
  return pair_flops(z, std::min(static_cast<double>(windowed_tile_pairs(z.s, z.window)), s * s / 2));
}

// A FlashAttention-2-class kernel is priced per call shape (ComputeCostModel::attention_time); the
// cuDNN default and FlashAttention v1 by the op's kernel FLOPs.
void set_kernel(Op& op, const LayerSizes& z) {
  op.attention_kernel = z.flash_kernel;
  if (z.flash_kernel != FusedAttentionKernel::kSdpaFlash) return;
  op.attention = AttentionShape{z.b, z.heads, z.k / z.dqk, z.s, z.dqk, z.act};
}

}  // namespace

// Forward attention-core ops (used by the layer forward and by selective recompute).
void attention_core_forward(OpListBuilder& add, const LayerSizes& z, SavePolicy policy) {
  const bool keep_inputs = policy == SavePolicy::kAll || policy == SavePolicy::kSelective;
  const bool keep_scores = policy == SavePolicy::kAll;
  const double flops = core_flops(z);
  if (z.flash) {
    const int64_t inputs = z.tokens * (z.q + z.k + z.v) * z.e;
    Op& op = add.fused_attention("flash_attention", inputs, z.tokens * z.o * z.e, keep_inputs ? inputs : 0, z.act,
                                 flops, causal_kernel_flops(z));
    set_kernel(op, z);
    return;
  }
  // Naive: K and V expanded to every query head (grouped-query attention repeats them).
  const int64_t batch = z.b * z.heads;
  Op& scores = add.gemm("attention_scores", z.s_q, z.s, z.dqk, z.act, keep_inputs ? 2 * z.tokens * z.q * z.e : 0,
                        batch);
  scores.attention_core = true;
  if (z.fused_softmax) {
    add.memory("softmax", z.scores() * z.e, z.scores() * z.e, keep_scores ? z.scores() * z.e : 0).attention_core = true;
  } else {
    // Autograd keeps softmax's output, as the fused kernel does (the mask is shared and small).
    append_aten(add, "softmax", masked_softmax_forward_kernels(z.scores(), z.e), keep_scores ? z.scores() * z.e : 0,
                true);
  }
  if (z.attention_mask) {
    Op& dropout =
        add.memory("attention_dropout", z.scores() * z.e, z.scores() * (z.e + 1), keep_scores ? z.scores() : 0);
    dropout.attention_core = true;
  }
  const int64_t values_saved =
      (keep_inputs ? z.tokens * z.o * z.e : 0) + (keep_scores && z.attention_mask ? z.scores() * z.e : 0);
  Op& values = add.gemm("attention_values", z.s_q, z.dv, z.s, z.act, values_saved, batch);
  values.attention_core = true;
}

namespace {

void attention_core_backward(OpListBuilder& add, const LayerSizes& z) {
  const double flops = core_flops(z);
  if (z.flash) {
    // Reads Q, K, V, O, dO; writes dQ, dK, dV.
    // FlashAttention's benchmark: backward = 2.5 × forward.
    Op& op = add.fused_attention("flash_attention.backward", z.tokens * (z.q + z.k + z.v + 2 * z.o) * z.e,
                                 z.tokens * (z.q + z.k + z.v) * z.e, 0, z.act, 2 * flops,
                                 2.5 * causal_kernel_flops(z));
    set_kernel(op, z);
    return;
  }
  const int64_t batch = z.b * z.heads;
  add.gemm("attention_values.dgrad", z.s_q, z.s, z.dv, z.act, 0, batch).attention_core = true;  // dP = dO·Vᵀ
  add.gemm("attention_values.wgrad", z.s, z.dv, z.s_q, z.act, 0, batch, true).attention_core = true;  // dV = Pᵀ·dO
  if (z.attention_mask) {
    add.memory("attention_dropout.backward", z.scores() * (z.e + 1), z.scores() * z.e).attention_core = true;
  }
  if (z.fused_softmax) {
    add.memory("softmax.backward", 2 * z.scores() * z.e, z.scores() * z.e).attention_core = true;
  } else {
    append_aten(add, "softmax.backward", masked_softmax_backward_kernels(z.scores(), z.e), 0, true);
  }
  add.gemm("attention_scores.dgrad", z.s_q, z.dqk, z.s, z.act, 0, batch).attention_core = true;  // dQ = dS·K
  add.gemm("attention_scores.wgrad", z.s, z.dqk, z.s_q, z.act, 0, batch, true).attention_core = true;  // dK = dSᵀ·Q
}

// The attention core with its context-parallel communication.
void attention_block_forward(OpListBuilder& add, const LayerSizes& z, SavePolicy policy) {
  if (z.cp && !z.ulysses) {
    // One K/V block per ring step: (s/cp) tokens × (keys + values) — GQA's KV heads, not the query heads.
    add.comm("attention.cp_kv_exchange", CommKind::kCpKvExchange, z.tokens * (z.k + z.v) * z.e, z.cp_size - 1);
  }
  if (z.ulysses) add.comm("attention.cp_all_to_all", CommKind::kCpAllToAll, z.tokens * (z.q + z.k + z.v) * z.e);
  attention_core_forward(add, z, policy);
  if (z.ulysses) add.comm("attention.cp_all_to_all_output", CommKind::kCpAllToAll, z.tokens * z.o * z.e);
}

void attention_block_backward(OpListBuilder& add, const LayerSizes& z) {
  if (z.ulysses) {
    add.comm("attention.cp_all_to_all_output.backward", CommKind::kCpAllToAll, z.tokens * z.o * z.e);
  }
  if (z.cp && !z.ulysses) {
    // K, V and their gradients travel the ring in backward.
    add.comm("attention.cp_kv_exchange.backward", CommKind::kCpKvExchange, 2 * z.tokens * (z.k + z.v) * z.e,
             z.cp_size - 1);
  }
  attention_core_backward(add, z);
  if (z.ulysses) {
    add.comm("attention.cp_all_to_all.backward", CommKind::kCpAllToAll, z.tokens * (z.q + z.k + z.v) * z.e);
  }
}

// RoPE on the layer's queries and keys (forward, or its backward): one fused kernel, or the ATen
// kernels per tensor.
void rope_ops(OpListBuilder& add, const LayerSizes& z, bool backward) {
  const std::string_view name = backward ? "rope.backward" : "rope";
  if (z.fused_rope) {
    add.memory(name, z.tokens * (z.q + z.k) * z.e, z.tokens * (z.q + z.k) * z.e);
    return;
  }
  for (int64_t width : {z.q, z.k}) {
    append_aten(add, name, backward ? rope_backward_kernels(z.tokens * width) : rope_forward_kernels(z.tokens * width),
                0);
  }
}

}  // namespace

// input_norm through attention_residual.
void attention_forward(OpListBuilder& add, const LayerSizes& z, SavePolicy policy) {
  const bool all = policy == SavePolicy::kAll || policy == SavePolicy::kSelective;
  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t column_input = z.sp ? seq_hidden : z.full_hidden();  // with sp the saved copy is sharded
  const int64_t mask = z.seq_tokens * z.h;

  norm_forward(add, z, "input_norm", policy == SavePolicy::kNothing ? 0 : seq_hidden, all);
  if (z.sp) add.comm("attention.tp_all_gather", CommKind::kTpAllGather, z.full_hidden());
  if (z.mla) {
    // Down-projections are replicated over tp (each rank computes them on all T tokens); the
    // up-projections are column-parallel.
    const int64_t q_in = z.q_lora > 0 ? z.q_lora : z.h;
    if (z.q_lora > 0) {
      add.gemm("q_down", z.tokens, z.q_lora, z.h, z.gemm, all ? column_input : 0);
      add.memory("q_norm", z.tokens * z.q_lora * z.e, z.tokens * z.q_lora * z.e, all ? z.tokens * z.q_lora * z.e : 0);
    }
    add.gemm("q_up", z.tokens, z.q, q_in, z.gemm, all ? (z.q_lora > 0 ? z.tokens * q_in * z.e : column_input) : 0);
    // kv_down reads the same input as q_down (or q_up), saved once there.
    add.gemm("kv_down", z.tokens, z.kv_lora + z.rope_dim, z.h, z.gemm);
    add.memory("kv_norm", z.tokens * z.kv_lora * z.e, z.tokens * z.kv_lora * z.e, all ? z.tokens * z.kv_lora * z.e : 0);
    add.gemm("kv_up", z.tokens, z.heads * (z.dqk - z.rope_dim + z.dv), z.kv_lora, z.gemm,
             all ? z.tokens * z.kv_lora * z.e : 0);
    // RoPE on each head's query part and the shared key part, then K = [k_nope, k_rope] per head.
    add.memory("rope", z.tokens * (z.heads + 1) * z.rope_dim * z.e,
               z.tokens * (z.heads * z.rope_dim + z.k) * z.e);
  } else {
    add.gemm("qkv", z.tokens, z.q + z.k + z.v, z.h, z.gemm, all ? column_input : 0);
    if (z.rope) rope_ops(add, z, /*backward=*/false);
  }
  attention_block_forward(add, z, policy);
  add.gemm("proj", z.tokens, z.h, z.o, z.gemm, all ? z.tokens * z.o * z.e : 0);
  if (z.tp) {
    add.comm(z.sp ? "attention.tp_reduce_scatter" : "attention.tp_all_reduce",
             z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
  }
  add.memory("attention_residual", 2 * seq_hidden, seq_hidden + (z.hidden_mask ? mask : 0),
             all && z.hidden_mask ? mask : 0);
}

void attention_backward(OpListBuilder& add, const LayerSizes& z) {
  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t mask = z.hidden_mask ? z.seq_tokens * z.h : 0;
  add.memory("attention_residual.backward", seq_hidden + mask, seq_hidden);
  if (z.sp) add.comm("attention.tp_all_gather.backward", CommKind::kTpAllGather, z.full_hidden());
  add.gemm("proj.dgrad", z.tokens, z.o, z.h, z.gemm);
  add.gemm("proj.wgrad", z.h, z.o, z.tokens, z.gemm, 0, 1, true);
  attention_block_backward(add, z);
  if (z.mla) {
    const int64_t q_in = z.q_lora > 0 ? z.q_lora : z.h;
    const int64_t kv_up_out = z.heads * (z.dqk - z.rope_dim + z.dv);
    add.memory("rope.backward", z.tokens * (z.heads * z.rope_dim + z.k) * z.e,
               z.tokens * (z.heads + 1) * z.rope_dim * z.e);
    add.gemm("kv_up.dgrad", z.tokens, z.kv_lora, kv_up_out, z.gemm);
    add.gemm("kv_up.wgrad", kv_up_out, z.kv_lora, z.tokens, z.gemm, 0, 1, true);
    add.memory("kv_norm.backward", 3 * z.tokens * z.kv_lora * z.e, z.tokens * z.kv_lora * z.e);
    add.gemm("q_up.dgrad", z.tokens, q_in, z.q, z.gemm);
    add.gemm("q_up.wgrad", z.q, q_in, z.tokens, z.gemm, 0, 1, true);
    if (z.q_lora > 0) add.memory("q_norm.backward", 3 * z.tokens * z.q_lora * z.e, z.tokens * z.q_lora * z.e);
    if (z.sp) add.comm("qkv.input_all_gather", CommKind::kTpAllGather, z.full_hidden());
    add.gemm("kv_down.dgrad", z.tokens, z.h, z.kv_lora + z.rope_dim, z.gemm);
    add.gemm("kv_down.wgrad", z.kv_lora + z.rope_dim, z.h, z.tokens, z.gemm, 0, 1, true);
    if (z.q_lora > 0) {
      add.gemm("q_down.dgrad", z.tokens, z.h, z.q_lora, z.gemm);
      add.gemm("q_down.wgrad", z.q_lora, z.h, z.tokens, z.gemm, 0, 1, true);
    }
  } else {
    const int64_t qkv_out = z.q + z.k + z.v;
    if (z.rope) rope_ops(add, z, /*backward=*/true);
    add.gemm("qkv.dgrad", z.tokens, z.h, qkv_out, z.gemm);
    if (z.sp) add.comm("qkv.input_all_gather", CommKind::kTpAllGather, z.full_hidden());
    add.gemm("qkv.wgrad", qkv_out, z.h, z.tokens, z.gemm, 0, 1, true);
  }
  if (z.tp) {
    add.comm(z.sp ? "attention.tp_reduce_scatter.backward" : "attention.tp_all_reduce.backward",
             z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
  }
  norm_backward(add, z, "input_norm.backward", 3);
}

}  // namespace megatron

}  // namespace clustersim
