#include "workloads/transformer.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/error.h"
#include "workloads/aten_kernels.h"
#include "workloads/deepep_traffic.h"
#include "workloads/op_list_builder.h"
#include "workloads/pytorch_eager_ops.h"

namespace clustersim {

namespace {

// What a forward op list saves for backward.
enum class SavePolicy {
  kAll,        // no recompute
  kSelective,  // attention-core s² tensors dropped (recomputed)
  kInputOnly,  // full recompute: only the layer input
  kNothing,    // a recompute pass: what it re-materialises is transient
};

// Per-rank sizes shared by the builders.
struct Sizes {
  int64_t b, s, s_q, tokens, seq_tokens;  // seq_tokens: tokens in the sequence-parallel regions
  int64_t h, heads;
  int64_t dqk, dv;       // query/key and value sizes per head
  int64_t q, k, v, o;    // per-rank widths: queries, keys, values, attention output (proj input)
  int64_t ffn, fc1_out, vocab;
  int64_t e;             // activation element bytes
  DataType act;          // activation dtype
  DataType gemm;         // linear-layer GEMM dtype
  bool tp, sp, cp, ulysses, flash, rope, swiglu, learned;
  bool fused_norm, fused_rope, fused_swiglu, fused_softmax;  // TrainingSpec's fusion (false: ATen kernels)
  FusedAttentionKernel flash_kernel;  // which fused kernel prices the flash path
  bool hidden_mask, attention_mask;
  int64_t cp_size;
  int64_t tp_size;
  int64_t window;  // sliding-window attention: keys per query (0 = full causal attention)
  // Multi-head latent attention.
  bool mla;
  int64_t q_lora, kv_lora, rope_dim;
  // Mixture of experts.
  int64_t experts, top_k, ep, etp, local_experts;
  int64_t routed;         // tokens routed per rank (T_r)
  int64_t expert_tokens;  // tokens the busiest rank's experts process (R, after the etp gather)
  int64_t dispatched;     // tokens the busiest rank receives from the dispatch (R / etp)
  double kept;            // routed slots kept after capacity dropping (1 = dropless)
  int64_t fe, fe_out;     // expert intermediate size per rank, and fc1's output (× 2 for SwiGLU)
  int64_t fs, fs_out;     // shared experts' intermediate size per rank, and fc1's output
  bool allgather;         // allgather token dispatcher
  // deepep dispatcher: the one permutation of Megatron's flex dispatcher (moe.permute stands for it:
  // it expands tokens to their expert copies, on the receiving side there) and no chunk sort.
  bool deepep;
  MoeBalancing balancing;
  std::vector<int64_t> dispatch_matrix;  // bytes, [sender][receiver]; empty when balanced
  // The combine's [sender][receiver] bytes when they are not the dispatch's transpose (deepep: the
  // dispatch in fp8, the combine in the activation dtype).
  std::vector<int64_t> combine_matrix;

  int64_t hidden_tokens() const { return seq_tokens * h * e; }  // a [T(/tp), h] activation in bytes
  int64_t full_hidden() const { return tokens * h * e; }        // a [T, h] activation in bytes
  int64_t scores() const { return b * heads * s_q * s; }        // elements of the s×s tensors per rank
  int64_t permuted() const {                                    // the k copies of the routed tokens, bytes
    return static_cast<int64_t>(std::ceil(static_cast<double>(routed * top_k) * kept)) * h * e;
  }
};

std::vector<int64_t> transposed(const std::vector<int64_t>& matrix) {
  if (matrix.empty()) return {};
  const size_t n = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(matrix.size()))));
  std::vector<int64_t> out(matrix.size());
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) out[j * n + i] = matrix[i * n + j];
  }
  return out;
}

Sizes sizes_of(const ModelSpec& model, const TrainingSpec& training, const ShardedDims& dims,
               const std::vector<double>& rank_shares) {
  Sizes z{};
  z.b = training.micro_batch;
  z.s = training.seq_len;
  z.cp_size = dims.cp;
  z.tp_size = dims.tp;
  z.s_q = training.seq_len / dims.cp;
  z.tokens = z.b * z.s_q;
  z.sp = dims.sequence_parallel;
  z.seq_tokens = z.sp ? z.tokens / dims.tp : z.tokens;
  z.h = model.hidden;
  z.heads = dims.heads_per_rank;
  z.dqk = dims.qk_head_dim;
  z.dv = dims.head_dim;
  z.mla = model.mla.enabled();
  const int64_t kv_heads = z.mla ? dims.heads_per_rank : dims.kv_heads_per_rank;
  z.q = z.heads * z.dqk;
  z.k = kv_heads * z.dqk;
  z.v = kv_heads * z.dv;
  z.o = z.heads * z.dv;
  z.q_lora = model.mla.q_lora_rank;
  z.kv_lora = model.mla.kv_lora_rank;
  z.rope_dim = model.mla.rope_head_dim;
  z.ffn = dims.ffn_per_rank;
  z.swiglu = model.mlp == MlpKind::kSwiglu;
  z.fused_norm = training.fused_norm;
  z.fused_rope = training.fused_rope;
  z.fused_swiglu = training.fused_swiglu;
  z.fused_softmax = training.fused_softmax;
  const int64_t gates = z.swiglu ? 2 : 1;
  z.fc1_out = z.ffn * gates;
  z.vocab = dims.vocab_per_rank;
  z.act = training.activation_dtype();
  z.gemm = training.compute_dtype;
  z.e = bytes_per_element(z.act);
  z.tp = dims.tp > 1;
  z.cp = dims.cp > 1;
  z.ulysses = z.cp && dims.cp_comm == ContextParallelComm::kAllToAll;
  z.flash = training.attention == AttentionKernel::kFlash;
  z.flash_kernel = training.flash_kernel;
  z.rope = model.position_embedding == PositionEmbedding::kRope;
  z.learned = model.position_embedding == PositionEmbedding::kLearned;
  z.hidden_mask = training.hidden_dropout > 0;
  z.attention_mask = training.attention_dropout > 0;
  if (model.moe.enabled()) {
    z.experts = model.moe.num_experts;
    z.top_k = model.moe.top_k;
    z.ep = dims.ep;
    z.etp = dims.etp;
    z.local_experts = dims.experts_per_rank;
    z.routed = z.seq_tokens;
    z.fe = dims.expert_ffn_per_rank;
    z.fe_out = z.fe * gates;
    z.fs = dims.shared_ffn_per_rank;
    z.fs_out = z.fs * gates;
    z.allgather = dims.dispatcher == MoeDispatcher::kAllGather;
    z.deepep = dims.dispatcher == MoeDispatcher::kDeepEp;
    z.balancing = model.moe.balancing;
    double kept = 0;
    for (double share : rank_shares) kept += share;
    z.kept = kept;
    const double busiest = *std::max_element(rank_shares.begin(), rank_shares.end());
    // Every rank of the group routes routed · top_k slots; the busiest rank takes `busiest` of them.
    const double slots = static_cast<double>(z.routed * z.top_k * z.ep);
    z.dispatched = static_cast<int64_t>(std::ceil(slots * busiest - 1e-9));
    z.expert_tokens = z.dispatched * z.etp;
    const bool even = even_rank_shares(rank_shares);
    if (dims.dispatcher == MoeDispatcher::kDeepEp && z.ep > 1) {
      require_even_shares_for_deepep(rank_shares);
      // Known when the expert-parallel group's layout over the nodes is (simulate_training); memory
      // estimates do not need it.
      if (dims.ep_ranks_per_node > 0) {
        const double dispatch_element = z.gemm == DataType::kFp8 ? 1.0 + 4.0 / 128.0 : static_cast<double>(z.e);
        z.dispatch_matrix = deepep_dispatch_matrix(model.moe, z.ep, dims.ep_ranks_per_node, z.routed,
                                                   static_cast<double>(z.h) * dispatch_element);
        z.combine_matrix = transposed(deepep_dispatch_matrix(model.moe, z.ep, dims.ep_ranks_per_node, z.routed,
                                                             static_cast<double>(z.h * z.e)));
      }
    } else if (!even && z.ep > 1 && !z.allgather) {
      // Every sender routes its tokens in the group's proportions (all expert-parallel groups alike).
      const size_t n = rank_shares.size();
      const double sent = static_cast<double>(z.routed * z.top_k * z.h * z.e);
      z.dispatch_matrix.assign(n * n, 0);
      for (size_t src = 0; src < n; ++src) {
        for (size_t dst = 0; dst < n; ++dst) {
          z.dispatch_matrix[src * n + dst] = static_cast<int64_t>(std::llround(sent * rank_shares[dst]));
        }
      }
    }
  }
  return z;
}

// The bytes one rank sends in a dispatch-direction (or combine-direction) all-to-all: its row of
// the matrix when there is one, else `balanced`.
int64_t row_bytes(const std::vector<int64_t>& matrix, int64_t balanced) {
  if (matrix.empty()) return balanced;
  const size_t n = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(matrix.size()))));
  int64_t sum = 0;
  for (size_t j = 0; j < n; ++j) sum += matrix[j];
  return sum;
}

// The combine's matrix: its own (deepep) or the dispatch's transpose.
std::vector<int64_t> combine_matrix_of(const Sizes& z) {
  return z.combine_matrix.empty() ? transposed(z.dispatch_matrix) : z.combine_matrix;
}

// FLOPs of QKᵀ over d_qk and ·V over d_v for `pairs` query-key pairs per head and sequence, 2 per
// multiply-add.
double pair_flops(const Sizes& z, double pairs) {
  return 2.0 * static_cast<double>(z.b) * pairs * static_cast<double>(z.heads) * static_cast<double>(z.dqk + z.dv);
}

// Model FLOPs of the attention core: the full s_q × s score matrix (the Megatron-LM / PaLM
// convention), or s_q × min(window, s) with a sliding window (every query against its window).
double core_flops(const Sizes& z) {
  const int64_t keys = z.window > 0 ? std::min(z.window, z.s) : z.s;
  return pair_flops(z, static_cast<double>(z.s_q) * static_cast<double>(keys));
}

// FLOPs a causal fused kernel executes forward: half the score matrix (it skips the masked upper
// triangle), or with a window w (no context parallelism) the whole kAttentionTile × kAttentionTile
// tiles its queries' windows touch (windowed_tile_pairs), at most the causal half.
double causal_kernel_flops(const Sizes& z) {
  if (z.window == 0) return core_flops(z) / 2;
  const double s = static_cast<double>(z.s);
  return pair_flops(z, std::min(static_cast<double>(windowed_tile_pairs(z.s, z.window)), s * s / 2));
}

// Appends an unfused step's ATen kernels (workloads/aten_kernels.h) as memory-bound ops, each its
// own launch, all named `name`; `saved` goes on the first. `attention_core` marks them as part of
// the attention core (Op::attention_core).
void append_aten(OpListBuilder& add, std::string_view name, const std::vector<AtenKernel>& kernels, int64_t saved,
                 bool attention_core = false) {
  for (size_t i = 0; i < kernels.size(); ++i) {
    Op& op = add.kernel(name, kernels[i], i == 0 ? saved : 0);
    op.attention_core = attention_core;
  }
}

// A FlashAttention-2-class kernel is priced per call shape (ComputeCostModel::attention_time); the
// cuDNN default and FlashAttention v1 by the op's kernel FLOPs.
void set_kernel(Op& op, const Sizes& z) {
  op.attention_kernel = z.flash_kernel;
  if (z.flash_kernel != FusedAttentionKernel::kSdpaFlash) return;
  op.attention = AttentionShape{z.b, z.heads, z.k / z.dqk, z.s, z.dqk, z.act};
}

// Forward attention-core ops (used by the layer forward and by selective recompute).
void attention_core_forward(OpListBuilder& add, const Sizes& z, SavePolicy policy) {
  const bool keep_inputs = policy == SavePolicy::kAll || policy == SavePolicy::kSelective;
  const bool keep_scores = policy == SavePolicy::kAll;
  const double flops = core_flops(z);
  if (z.flash) {
    const int64_t inputs = z.tokens * (z.q + z.k + z.v) * z.e;
    Op& op = add.memory("flash_attention", inputs, z.tokens * z.o * z.e, keep_inputs ? inputs : 0);
    op.cost = OpCost::kFlashAttention;
    op.gemm.dtype = z.act;
    op.flops = flops;
    op.kernel_flops = causal_kernel_flops(z);
    op.attention_core = true;
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

void attention_core_backward(OpListBuilder& add, const Sizes& z) {
  const double flops = core_flops(z);
  if (z.flash) {
    // Reads Q, K, V, O, dO; writes dQ, dK, dV.
    Op& op = add.memory("flash_attention.backward", z.tokens * (z.q + z.k + z.v + 2 * z.o) * z.e,
                        z.tokens * (z.q + z.k + z.v) * z.e);
    op.cost = OpCost::kFlashAttention;
    op.gemm.dtype = z.act;
    op.flops = 2 * flops;
    op.kernel_flops = 2.5 * causal_kernel_flops(z);  // FlashAttention's benchmark: backward = 2.5 × forward
    op.attention_core = true;
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
void attention_block_forward(OpListBuilder& add, const Sizes& z, SavePolicy policy) {
  if (z.cp && !z.ulysses) {
    // One K/V block per ring step: (s/cp) tokens × (keys + values) — GQA's KV heads, not the query heads.
    add.comm("attention.cp_kv_exchange", CommKind::kCpKvExchange, z.tokens * (z.k + z.v) * z.e, z.cp_size - 1);
  }
  if (z.ulysses) add.comm("attention.cp_all_to_all", CommKind::kCpAllToAll, z.tokens * (z.q + z.k + z.v) * z.e);
  attention_core_forward(add, z, policy);
  if (z.ulysses) add.comm("attention.cp_all_to_all_output", CommKind::kCpAllToAll, z.tokens * z.o * z.e);
}

void attention_block_backward(OpListBuilder& add, const Sizes& z) {
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

// A norm over the layer's [T(/tp), h] activations: one fused kernel (reads x, writes y) saving
// `saved` bytes, or with training.fused_norm false RMSNorm's ATen kernels, which also keep the
// normalised output for the weight's gradient when `saves_output`.
void norm_forward(OpListBuilder& add, const Sizes& z, std::string_view name, int64_t saved, bool saves_output) {
  const int64_t seq_hidden = z.hidden_tokens();
  if (z.fused_norm) {
    add.memory(name, seq_hidden, seq_hidden, saved);
    return;
  }
  append_aten(add, name, rms_norm_forward_kernels(z.seq_tokens, z.h, z.e), saved + (saves_output ? seq_hidden : 0));
}

// Its backward: fused, reads `reads` activations' worth (x, dy, and the residual gradient it adds
// in the layers) and writes dx; unfused, RMSNorm's autograd kernels.
void norm_backward(OpListBuilder& add, const Sizes& z, std::string_view name, int64_t reads) {
  const int64_t seq_hidden = z.hidden_tokens();
  if (z.fused_norm) {
    add.memory(name, reads * seq_hidden, seq_hidden);
    return;
  }
  append_aten(add, name, rms_norm_backward_kernels(z.seq_tokens, z.h, z.e), 0);
}

// RoPE on the layer's queries and keys (forward, or its backward): one fused kernel, or the ATen
// kernels per tensor.
void rope_ops(OpListBuilder& add, const Sizes& z, bool backward) {
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

// The MLP activation over `tokens` rows of fc1's `fc1_out` outputs into `ffn` inputs of fc2: one
// fused kernel (bias-GeLU, bias-SwiGLU), or for SwiGLU with training.fused_swiglu false the ATen
// kernels of silu(a)·g, which also keep silu(a) for the product's gradient.
void activation_forward(OpListBuilder& add, const Sizes& z, std::string_view name, int64_t tokens, int64_t ffn,
                        int64_t fc1_out, bool all) {
  if (z.swiglu && !z.fused_swiglu) {
    append_aten(add, name, swiglu_forward_kernels(tokens * ffn), all ? tokens * (fc1_out + ffn) * z.e : 0);
    return;
  }
  add.memory(name, tokens * fc1_out * z.e, tokens * ffn * z.e, all ? tokens * fc1_out * z.e : 0);
}

void activation_backward(OpListBuilder& add, const Sizes& z, std::string_view name, int64_t tokens, int64_t ffn,
                         int64_t fc1_out) {
  if (z.swiglu && !z.fused_swiglu) {
    append_aten(add, name, swiglu_backward_kernels(tokens * ffn), 0);
    return;
  }
  add.memory(name, tokens * (ffn + fc1_out) * z.e, tokens * fc1_out * z.e);
}

// input_norm through attention_residual.
void attention_forward(OpListBuilder& add, const Sizes& z, SavePolicy policy) {
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

void attention_backward(OpListBuilder& add, const Sizes& z) {
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

// A tensor-parallel MLP of `ffn` (per rank) on the layer's tokens: the dense MLP ("fc1", ...) or the
// shared experts ("shared.fc1", ...).
struct MlpNames {
  std::string_view gather, fc1, activation, fc2, scatter_rs, scatter_ar;
};
constexpr MlpNames kDenseMlp{"mlp.tp_all_gather", "fc1", "activation", "fc2", "mlp.tp_reduce_scatter",
                             "mlp.tp_all_reduce"};
constexpr MlpNames kSharedMlp{"shared.tp_all_gather", "shared.fc1", "shared.activation", "shared.fc2",
                              "shared.tp_reduce_scatter", "shared.tp_all_reduce"};

void mlp_forward(OpListBuilder& add, const Sizes& z, bool all, const MlpNames& names, int64_t ffn, int64_t fc1_out) {
  const int64_t column_input = z.sp ? z.hidden_tokens() : z.full_hidden();
  if (z.sp) add.comm(names.gather, CommKind::kTpAllGather, z.full_hidden());
  add.gemm(names.fc1, z.tokens, fc1_out, z.h, z.gemm, all ? column_input : 0);
  activation_forward(add, z, names.activation, z.tokens, ffn, fc1_out, all);
  add.gemm(names.fc2, z.tokens, z.h, ffn, z.gemm, all ? z.tokens * ffn * z.e : 0);
  if (z.tp) {
    add.comm(z.sp ? names.scatter_rs : names.scatter_ar, z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce,
             z.full_hidden());
  }
}

struct MlpBackwardNames {
  std::string_view gather, fc2_dgrad, fc2_wgrad, activation, fc1_dgrad, input_gather, fc1_wgrad, scatter_rs,
      scatter_ar;
};
constexpr MlpBackwardNames kDenseMlpBackward{"mlp.tp_all_gather.backward", "fc2.dgrad", "fc2.wgrad",
                                             "activation.backward", "fc1.dgrad", "fc1.input_all_gather",
                                             "fc1.wgrad", "mlp.tp_reduce_scatter.backward",
                                             "mlp.tp_all_reduce.backward"};
constexpr MlpBackwardNames kSharedMlpBackward{"shared.tp_all_gather.backward", "shared.fc2.dgrad",
                                              "shared.fc2.wgrad", "shared.activation.backward", "shared.fc1.dgrad",
                                              "shared.fc1.input_all_gather", "shared.fc1.wgrad",
                                              "shared.tp_reduce_scatter.backward", "shared.tp_all_reduce.backward"};

void mlp_backward(OpListBuilder& add, const Sizes& z, const MlpBackwardNames& names, int64_t ffn, int64_t fc1_out) {
  if (z.sp) add.comm(names.gather, CommKind::kTpAllGather, z.full_hidden());
  add.gemm(names.fc2_dgrad, z.tokens, ffn, z.h, z.gemm);
  add.gemm(names.fc2_wgrad, z.h, ffn, z.tokens, z.gemm, 0, 1, true);
  activation_backward(add, z, names.activation, z.tokens, ffn, fc1_out);
  add.gemm(names.fc1_dgrad, z.tokens, z.h, fc1_out, z.gemm);
  if (z.sp) add.comm(names.input_gather, CommKind::kTpAllGather, z.full_hidden());
  add.gemm(names.fc1_wgrad, fc1_out, z.h, z.tokens, z.gemm, 0, 1, true);
  if (z.tp) {
    add.comm(z.sp ? names.scatter_rs : names.scatter_ar, z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce,
             z.full_hidden());
  }
}

// Tokens per local expert in the grouped GEMMs of the busiest rank.
int64_t tokens_per_expert(const Sizes& z) { return (z.expert_tokens + z.local_experts - 1) / z.local_experts; }

void moe_forward(OpListBuilder& add, const Sizes& z, bool all) {
  const int64_t logits = z.routed * z.experts * 4;  // fp32 router scores [T_r, E]
  add.gemm("router", z.routed, z.experts, z.h, z.act, all ? z.routed * z.h * z.e : 0);
  if (z.balancing == MoeBalancing::kAuxLossFree) {
    add.memory("router.expert_bias", logits, logits);  // scores + per-expert bias, for the top-k choice only
  }
  // Softmax (or sigmoid) over the E scores and the top-k choice; probabilities kept for backward.
  add.memory("router.topk", logits, z.routed * z.top_k * 12, all ? logits : 0);
  if (z.balancing == MoeBalancing::kAuxLoss) add.memory("router.aux_loss", logits, z.experts * 4);
  const int64_t tm = tokens_per_expert(z);
  const int64_t received = z.dispatched * z.h * z.e;
  const int64_t experts_in = z.expert_tokens * z.h * z.e;
  if (z.allgather) {
    add.comm("moe.dispatch_all_gather", CommKind::kEpAllGather, z.ep * z.routed * z.h * z.e);
    add.memory("moe.permute", z.ep * z.routed * z.h * z.e, received);
  } else {
    add.memory("moe.permute", z.routed * z.h * z.e, z.permuted());
    if (z.ep > 1) {
      add.comm("moe.dispatch", CommKind::kEpAllToAll, row_bytes(z.dispatch_matrix, z.routed * z.top_k * z.h * z.e))
          .comm_matrix = z.dispatch_matrix;
      if (z.local_experts > 1 && !z.deepep) add.memory("moe.sort_chunks", received, received);
    }
  }
  if (z.etp > 1) add.comm("moe.etp_all_gather", CommKind::kEtpAllGather, experts_in);
  add.gemm("experts.fc1", tm, z.fe_out, z.h, z.gemm, all ? experts_in : 0, z.local_experts);
  activation_forward(add, z, "experts.activation", z.expert_tokens, z.fe, z.fe_out, all);
  add.gemm("experts.fc2", tm, z.h, z.fe, z.gemm, all ? z.expert_tokens * z.fe * z.e : 0, z.local_experts);
  if (z.etp > 1) add.comm("moe.etp_reduce_scatter", CommKind::kEtpReduceScatter, experts_in);
  if (z.allgather) {
    add.memory("moe.unpermute", received, z.ep * z.routed * z.h * z.e, all ? received : 0);
    add.comm("moe.combine_reduce_scatter", CommKind::kEpReduceScatter, z.ep * z.routed * z.h * z.e);
  } else {
    if (z.ep > 1) {
      if (z.local_experts > 1 && !z.deepep) add.memory("moe.unsort_chunks", received, received);
      const std::vector<int64_t> combine = combine_matrix_of(z);
      add.comm("moe.combine", CommKind::kEpAllToAll, row_bytes(combine, z.routed * z.top_k * z.h * z.e)).comm_matrix =
          combine;
    }
    // The weighted sum of each token's k expert outputs; the outputs are kept for the gradient of
    // the routing probabilities.
    add.memory("moe.unpermute", z.permuted() + z.routed * z.top_k * 4, z.routed * z.h * z.e, all ? z.permuted() : 0);
  }
  if (z.fs > 0) mlp_forward(add, z, all, kSharedMlp, z.fs, z.fs_out);
}

void moe_backward(OpListBuilder& add, const Sizes& z) {
  if (z.fs > 0) mlp_backward(add, z, kSharedMlpBackward, z.fs, z.fs_out);
  const int64_t tm = tokens_per_expert(z);
  const int64_t received = z.dispatched * z.h * z.e;
  const int64_t experts_in = z.expert_tokens * z.h * z.e;
  const int64_t logits = z.routed * z.experts * 4;
  if (z.allgather) {
    add.comm("moe.combine_reduce_scatter.backward", CommKind::kEpAllGather, z.ep * z.routed * z.h * z.e);
    add.memory("moe.unpermute.backward", z.ep * z.routed * z.h * z.e + received, received);
  } else {
    add.memory("moe.unpermute.backward", z.routed * z.h * z.e + z.permuted(), z.permuted() + z.routed * z.top_k * 4);
    if (z.ep > 1) {
      add.comm("moe.combine.backward", CommKind::kEpAllToAll,
               row_bytes(z.dispatch_matrix, z.routed * z.top_k * z.h * z.e))
          .comm_matrix = z.dispatch_matrix;
      if (z.local_experts > 1 && !z.deepep) add.memory("moe.unsort_chunks.backward", received, received);
    }
  }
  if (z.etp > 1) add.comm("moe.etp_reduce_scatter.backward", CommKind::kEtpAllGather, experts_in);
  add.gemm("experts.fc2.dgrad", tm, z.fe, z.h, z.gemm, 0, z.local_experts);
  add.gemm("experts.fc2.wgrad", z.h, z.fe, tm, z.gemm, 0, z.local_experts, true);
  activation_backward(add, z, "experts.activation.backward", z.expert_tokens, z.fe, z.fe_out);
  add.gemm("experts.fc1.dgrad", tm, z.h, z.fe_out, z.gemm, 0, z.local_experts);
  add.gemm("experts.fc1.wgrad", z.fe_out, z.h, tm, z.gemm, 0, z.local_experts, true);
  if (z.etp > 1) add.comm("moe.etp_all_gather.backward", CommKind::kEtpReduceScatter, experts_in);
  if (z.allgather) {
    add.memory("moe.permute.backward", received, z.ep * z.routed * z.h * z.e);
    add.comm("moe.dispatch_all_gather.backward", CommKind::kEpReduceScatter, z.ep * z.routed * z.h * z.e);
  } else {
    if (z.ep > 1) {
      if (z.local_experts > 1 && !z.deepep) add.memory("moe.sort_chunks.backward", received, received);
      const std::vector<int64_t> combine = combine_matrix_of(z);
      add.comm("moe.dispatch.backward", CommKind::kEpAllToAll, row_bytes(combine, z.routed * z.top_k * z.h * z.e))
          .comm_matrix = combine;
    }
    add.memory("moe.permute.backward", z.permuted(), z.routed * z.h * z.e);
  }
  if (z.balancing == MoeBalancing::kAuxLoss) add.memory("router.aux_loss.backward", logits, logits);
  add.memory("router.topk.backward", 2 * logits, logits);
  add.gemm("router.dgrad", z.routed, z.h, z.experts, z.act);
  add.gemm("router.wgrad", z.experts, z.h, z.routed, z.act, 0, 1, true);
}

std::vector<Op> layer_forward_ops(const Sizes& z, Pass pass, SavePolicy policy, LayerKind kind) {
  std::vector<Op> ops;
  ops.reserve(40);
  OpListBuilder add(ops, pass, Fp8Casts::kTransformerEngine, z.tp_size);
  const bool all = policy == SavePolicy::kAll || policy == SavePolicy::kSelective;
  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t mask = z.seq_tokens * z.h;
  attention_forward(add, z, policy);
  norm_forward(add, z, "post_attention_norm", all ? seq_hidden : 0, all);
  if (kind == LayerKind::kMoe) {
    moe_forward(add, z, all);
  } else {
    mlp_forward(add, z, all, kDenseMlp, z.ffn, z.fc1_out);
  }
  add.memory("mlp_residual", 2 * seq_hidden, seq_hidden + (z.hidden_mask ? mask : 0), all && z.hidden_mask ? mask : 0);
  return ops;
}

std::vector<Op> layer_backward_ops(const Sizes& z, LayerKind kind) {
  std::vector<Op> ops;
  ops.reserve(48);
  OpListBuilder add(ops, Pass::kBackward, Fp8Casts::kTransformerEngine, z.tp_size);
  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t mask = z.hidden_mask ? z.seq_tokens * z.h : 0;
  add.memory("mlp_residual.backward", seq_hidden + mask, seq_hidden);
  if (kind == LayerKind::kMoe) {
    moe_backward(add, z);
  } else {
    mlp_backward(add, z, kDenseMlpBackward, z.ffn, z.fc1_out);
  }
  // Norm backward reads its input and output gradient and adds the residual branch's gradient.
  norm_backward(add, z, "post_attention_norm.backward", 3);
  attention_backward(add, z);
  return ops;
}

Bytes sum_saved(const std::vector<Op>& ops) {
  Bytes total;
  for (const Op& op : ops) total += op.saved;
  return total;
}

}  // namespace

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

Transformer::Transformer(ModelSpec model, TrainingSpec training, ShardSpec shard)
    : model_(std::move(model)), training_(std::move(training)), shard_(shard) {
  validate_sharding(model_, training_, shard_);
  dims_ = shard_model(model_, shard_);
  parameters_ = count_parameters(model_, shard_);
  if (training_.framework == Framework::kPytorchEager && shard_.tp > 1) {
    // train_step.py's tensor parallelism splits the layers only: each rank holds the whole
    // (unsplit) embedding and LM head (workloads/pytorch_eager_ops.h).
    const int64_t table = checked_mul(padded_vocab_size(model_.vocab, model_.make_vocab_size_divisible_by, 1),
                                      model_.hidden, "embedding parameters");
    parameters_.word_embedding = table;
    if (parameters_.lm_head != 0) parameters_.lm_head = table;
  }
  if (model_.moe.enabled()) {
    expert_rank_shares_ = clustersim::expert_rank_shares(expert_token_shares(model_, training_.moe_routing), dims_.ep);
  }
  const Sizes z = sizes_of(model_, training_, dims_, expert_rank_shares_);
  tokens_ = z.tokens;
  expert_tokens_ = z.expert_tokens;

  if (training_.framework == Framework::kPytorchEager) {
    PytorchEagerOps ops = pytorch_eager_ops(model_, training_, dims_);
    dense_.forward = std::move(ops.layer_forward);
    dense_.recompute = std::move(ops.layer_recompute);
    dense_.backward = std::move(ops.layer_backward);
    embedding_forward_ = std::move(ops.embedding_forward);
    embedding_backward_ = std::move(ops.embedding_backward);
    head_forward_ = std::move(ops.head_forward);
    head_backward_ = std::move(ops.head_backward);
    dense_.activation_bytes = sum_saved(dense_.forward);
    embedding_activation_bytes_ = sum_saved(embedding_forward_);
    head_activation_bytes_ = sum_saved(head_forward_);
    return;
  }

  // Layers: forward with the recompute policy's savings; the recompute pass; backward.
  SavePolicy policy = SavePolicy::kAll;
  if (training_.recompute == Recompute::kFull) policy = SavePolicy::kInputOnly;
  if (training_.recompute == Recompute::kSelective && !z.flash) policy = SavePolicy::kSelective;
  auto build = [&](const Sizes& sz, LayerKind kind) {
    LayerOps ops;
    ops.forward = layer_forward_ops(sz, Pass::kForward, policy, kind);
    if (training_.recompute == Recompute::kFull) {
      ops.recompute = layer_forward_ops(sz, Pass::kRecompute, SavePolicy::kNothing, kind);
    } else if (policy == SavePolicy::kSelective) {
      OpListBuilder add(ops.recompute, Pass::kRecompute, Fp8Casts::kTransformerEngine, sz.tp_size);
      attention_core_forward(add, sz, SavePolicy::kNothing);
    }
    ops.backward = layer_backward_ops(sz, kind);
    ops.activation_bytes = sum_saved(ops.forward);
    return ops;
  };
  dense_ = build(z, LayerKind::kDense);
  if (model_.moe.enabled()) moe_ = build(z, LayerKind::kMoe);
  if (model_.sliding_window > 0) {
    // The same layers attending through the window (Sizes::window); parameters are unchanged.
    Sizes windowed = z;
    windowed.window = model_.sliding_window;
    dense_window_ = build(windowed, LayerKind::kDense);
    if (model_.moe.enabled()) moe_window_ = build(windowed, LayerKind::kMoe);
  }

  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t mask = z.hidden_mask ? z.seq_tokens * z.h : 0;
  {
    // Vocabulary-parallel lookup: each rank gathers the rows of its vocabulary shard, then the
    // partial embeddings are summed over tp (reduce-scattered along the sequence with sp).
    OpListBuilder add(embedding_forward_, Pass::kForward, Fp8Casts::kTransformerEngine);
    add.memory("embedding", z.tokens * (z.h * z.e + 8), z.full_hidden());
    if (z.tp) {
      add.comm(z.sp ? "embedding.tp_reduce_scatter" : "embedding.tp_all_reduce",
               z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
    }
    add.memory("embedding_dropout", (z.learned ? 2 : 1) * seq_hidden, seq_hidden + mask, mask);
    OpListBuilder back(embedding_backward_, Pass::kBackward, Fp8Casts::kTransformerEngine);
    back.memory("embedding_dropout.backward", seq_hidden + mask, seq_hidden);
    if (z.sp) back.comm("embedding.tp_all_gather.backward", CommKind::kTpAllGather, z.full_hidden());
    // Dense gradient of the [vocab/tp, h] table, accumulated into the main gradient.
    const int64_t table = z.vocab * z.h;
    back.memory("embedding.backward", z.full_hidden() + table * training_.precision.grad_bytes(),
                table * (z.e + training_.precision.grad_bytes()));
    embedding_activation_bytes_ = sum_saved(embedding_forward_);
  }
  {
    OpListBuilder add(head_forward_, Pass::kForward, Fp8Casts::kTransformerEngine);
    norm_forward(add, z, "final_norm", seq_hidden, true);
    if (z.sp) add.comm("head.tp_all_gather", CommKind::kTpAllGather, z.full_hidden());
    add.gemm("lm_head", z.tokens, z.vocab, z.h, z.act, z.sp ? seq_hidden : z.full_hidden());
    // Megatron-Core's vocab-parallel cross entropy (tensor_parallel/cross_entropy.py), one
    // unfused PyTorch kernel per step over the [tokens, vocab/tp] logits: .float() (read e, write
    // 4), max (read 4), in-place subtraction of the max (read 4, write 4), exp in place (read 4,
    // write 4), sum (read 4) and the in-place division into the softmax it saves for backward (read
    // 4, write 4; counted in logits_bytes()): e + 20 bytes read and 16 written per logit.
    const int64_t logits = z.tokens * z.vocab;
    add.memory("cross_entropy", logits * (z.e + 20), logits * 16);
    if (z.tp) {
      for (std::string_view name : {"cross_entropy.max_all_reduce", "cross_entropy.target_all_reduce",
                                    "cross_entropy.sum_all_reduce"}) {
        add.comm(name, CommKind::kTpAllReduce, z.tokens * 4);
      }
    }
    OpListBuilder back(head_backward_, Pass::kBackward, Fp8Casts::kTransformerEngine);
    back.memory("cross_entropy.backward", logits * 8, logits * (4 + z.e));
    back.gemm("lm_head.dgrad", z.tokens, z.h, z.vocab, z.act);
    if (z.sp) back.comm("head.input_all_gather", CommKind::kTpAllGather, z.full_hidden());
    back.gemm("lm_head.wgrad", z.vocab, z.h, z.tokens, z.act, 0, 1, true);
    if (z.tp) {
      back.comm(z.sp ? "head.tp_reduce_scatter.backward" : "head.tp_all_reduce.backward",
                z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
    }
    norm_backward(back, z, "final_norm.backward", 2);
    head_activation_bytes_ = sum_saved(head_forward_);
  }
}

const LayerOps& Transformer::layer(LayerKind kind, bool window) const {
  if (window && model_.sliding_window == 0) {
    throw InputError(fmt::format("model \"{}\" has no sliding-window layers (model.sliding_window = 0)", model_.name));
  }
  if (kind == LayerKind::kDense) return window ? dense_window_ : dense_;
  if (!model_.moe.enabled()) {
    throw InputError(fmt::format("model \"{}\" has no mixture-of-experts layers (model.moe.num_experts = 0)",
                                 model_.name));
  }
  return window ? moe_window_ : moe_;
}

const LayerOps& Transformer::layer_at(int64_t index) const {
  return layer(layer_kind(index), model_.is_window_layer(index));
}

LayerKind Transformer::layer_kind(int64_t index) const {
  return model_.is_moe_layer(index) ? LayerKind::kMoe : LayerKind::kDense;
}

Bytes Transformer::logits_bytes() const { return Bytes::of(tokens_ * dims_.vocab_per_rank * 6); }

std::vector<Op> optimizer_step_ops(int64_t params, int64_t tensors, const TrainingSpec& training) {
  if (training.framework == Framework::kPytorchEager) return pytorch_eager_optimizer_ops(params, tensors);
  return optimizer_step_ops(params, training.precision, training.optimizer);
}

std::vector<Op> optimizer_step_ops(int64_t params, const PrecisionPolicy& precision, OptimizerKind optimizer) {
  if (params < 0) throw InputError(fmt::format("optimizer shard cannot hold a negative parameter count ({})", params));
  std::vector<Op> ops;
  OpListBuilder add(ops, Pass::kForward);
  const int64_t p = precision.param_bytes();
  const int64_t g = precision.grad_bytes();
  const int64_t states = optimizer_state_count(optimizer) * bytes_per_element(precision.optimizer_state_dtype);
  int64_t grad_read = g;
  if (precision.fp32_grad_copy) {
    add.memory("optimizer.grad_copy", checked_mul(params, g, "optimizer bytes"), checked_mul(params, 4, "optimizer bytes"));
    grad_read = 4;
  }
  add.memory("optimizer.grad_norm", checked_mul(params, grad_read, "optimizer bytes"), 0);
  const int64_t master = precision.master_weights ? 4 : 0;
  // With a master copy the 16-bit weights are only written; without one they are read and written.
  const int64_t read = grad_read + states + (master > 0 ? master : p);
  const int64_t written = states + p + master;
  add.memory("optimizer.step", checked_mul(params, read, "optimizer bytes"),
             checked_mul(params, written, "optimizer bytes"));
  return ops;
}

}  // namespace clustersim
