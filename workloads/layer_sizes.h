#pragma once

// What the builders of the Megatron-LM op lists (workloads/transformer.h) share: one rank's sizes
// of a layer for one micro-batch (LayerSizes, from the model, the training spec and the sharding)
// and what a forward op list saves for backward (SavePolicy). Internal to workloads/: the op lists
// are read through Transformer.

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/units.h"
#include "workloads/model_spec.h"
#include "workloads/shard_spec.h"
#include "workloads/training_spec.h"

namespace clustersim::megatron {

// What a forward op list saves for backward.
enum class SavePolicy {
  kAll,        // no recompute
  kSelective,  // attention-core s² tensors dropped (recomputed)
  kInputOnly,  // full recompute: only the layer input
  kNothing,    // a recompute pass: what it re-materialises is transient
};

// Per-rank sizes of one layer for one micro-batch, shared by the builders of the Megatron op lists
// (workloads/transformer.h gives the shapes): token counts, widths per rank, dtypes and element
// bytes, the fusion and kernel choices, and the MoE routing of the busiest expert-parallel rank.
struct LayerSizes {
  int64_t b, s, s_q, tokens, seq_tokens;  // seq_tokens: tokens in the sequence-parallel regions
  int64_t h, heads;
  int64_t dqk, dv;     // query/key and value sizes per head
  int64_t q, k, v, o;  // per-rank widths: queries, keys, values, attention output (proj input)
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
  bool sequential_experts;  // training.moe_experts sequential: one MLP per local expert (SequentialMLP)
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

// The sizes of `model` under `training` and `dims` for one rank; `rank_shares` is each expert-
// parallel rank's share of the routed token slots (expert_rank_shares; empty for a dense model).
// With the deepep dispatcher and ep > 1 it throws InputError unless the shares are even
// (require_even_shares_for_deepep).
LayerSizes layer_sizes(const ModelSpec& model, const TrainingSpec& training, const ShardedDims& dims,
                       const std::vector<double>& rank_shares);

// The transpose of an n × n row-major matrix (empty stays empty).
std::vector<int64_t> transposed_matrix(const std::vector<int64_t>& matrix);

}  // namespace clustersim::megatron
