#pragma once

#include <cstdint>
#include <vector>

#include "core/units.h"
#include "cost_models/precision_policy.h"
#include "workloads/model_spec.h"
#include "workloads/op.h"
#include "workloads/optimizer_ops.h"
#include "workloads/parameter_count.h"
#include "workloads/shard_spec.h"
#include "workloads/training_spec.h"

namespace clustersim {

// A decoder transformer as the ops one rank runs for one micro-batch, in Megatron-LM's order.
//
// Shapes are per rank: tokens T = micro_batch · seq_len / cp; column-parallel GEMMs (QKV, fc1, LM
// head) have N = out/tp, row-parallel ones (proj, fc2) K = in/tp; with sequence parallelism the
// norms, dropouts and residuals work on T/tp tokens. One dense layer's forward:
//   input_norm, [tp_all_gather (sp)], qkv, [rope], attention core, proj,
//   [tp_all_reduce, or tp_reduce_scatter (sp)], attention_residual (bias-dropout-add),
//   post_attention_norm, [tp_all_gather (sp)], fc1, activation, fc2,
//   [tp_all_reduce or tp_reduce_scatter (sp)], mlp_residual
// with the attention core either one fused kernel ("flash_attention") or, naive, "attention_scores"
// (QKᵀ, batched over heads), "softmax" (scale, causal mask, softmax), "attention_dropout",
// "attention_values" (·V). Context parallelism adds before the core either "cp_kv_exchange" (ring
// attention, zig-zag sharded: rank r holds sequence chunks r and 2·cp−1−r of 2·cp, so every rank has
// the same causal work, docs/cases/moe_cp.md E2; the program builder overlaps each ring step
// with the attention of the block in hand) or, with cp_comm a2a, "cp_all_to_all" before and
// "cp_all_to_all_output" after the core (Ulysses).
// Backward runs in reverse with, per forward GEMM, a data-gradient GEMM ("x.dgrad": M = T, N = in,
// K = out) and a weight-gradient GEMM ("x.wgrad": M = out, N = in, K = T, A transposed); the tensor-
// parallel collectives mirror the forward ones (all-reduce of the input gradient of QKV and fc1
// without sp; with sp an all-gather of the output gradient before proj/fc2 and a reduce-scatter after
// QKV/fc1, plus the re-all-gather of the saved sequence-sharded input for the QKV/fc1 weight
// gradient, as Megatron's sequence-parallel linear layers do). Collectives appear only when tp > 1.
//
// Multi-head latent attention (model.mla) replaces qkv by "q_down" (h → q_lora_rank, replicated over
// tp), "q_norm", "q_up" (→ heads·(head_dim + rope_head_dim), column-parallel), "kv_down" (h →
// kv_lora_rank + rope_head_dim), "kv_norm", "kv_up" (→ heads·(head_dim + v_head_dim)); the core then
// has query/key heads of head_dim + rope_head_dim and value heads of v_head_dim (Megatron-Core
// multi_latent_attention.py, DeepSeek-V2 arXiv:2405.04434 §2.1).
//
// A mixture-of-experts layer (model.moe, layers from first_dense_layers on) keeps the attention and
// replaces the MLP (Megatron-Core MoELayer with the alltoall token dispatcher and grouped GEMMs):
//   post_attention_norm, "router" (GEMM [T_r, h]×[h, E]), "router.topk" (softmax or sigmoid and
//   top-k over [T_r, E] in fp32), ["router.aux_loss" | "router.expert_bias"], "moe.permute" (gather
//   each token's k copies into expert order), "moe.dispatch" (all-to-all on the expert-parallel
//   group), ["moe.sort_chunks" (received tokens by local expert)], ["moe.etp_all_gather"],
//   "experts.fc1", "experts.activation", "experts.fc2" (grouped GEMMs over E/ep local experts of
//   moe_ffn/etp each), ["moe.etp_reduce_scatter"], "moe.combine" (the reverse all-to-all),
//   "moe.unpermute" (weighted sum of each token's k outputs), [shared experts: "shared.fc1",
//   "shared.activation", "shared.fc2" with their tensor-parallel collectives], mlp_residual.
// With training.moe_experts sequential (Megatron-Core's SequentialMLP, the local spec without
// Transformer Engine) the experts are a loop: per local expert "experts.fc1", "experts.activation",
// "experts.fc2" over its tokens (backward: "experts.fc2.dgrad", "experts.fc2.wgrad",
// "experts.activation.backward", "experts.activation.probs_grad" for the weighted fused SwiGLU,
// "experts.fc1.dgrad", "experts.fc1.wgrad"), "moe.sort_chunks" / "moe.unsort_chunks" run at ep 1 too,
// and the host prices each expert and the router and dispatcher as measured calls (Op::host_path).
// T_r = T/tp (sequence parallelism is required with tp > 1) tokens are routed per rank; each sends
// T_r · top_k · h · bytes in its dispatch. The experts of the busiest expert-parallel rank process
// R = T_r · top_k · ep · (its share of the routed slots) tokens (× etp after the etp all-gather): the
// expert-parallel group meets at every all-to-all, so the busiest rank sets the pace; the dispatch's
// matrix sends every rank's tokens to the ranks in proportion to their shares, so its busiest
// receiver sets the all-to-all time (docs/cases/collectives.md C4). With the allgather dispatcher
// the two all-to-alls become an all-gather and a reduce-scatter of [ep · T_r, h] on the same group.
//
// Saved activations per op follow Korthikanti et al. 2022, Sec. 4 (16-bit activations, 1-byte
// dropout masks): without parallelism a layer saves sbh(34 + 5as/h) bytes — norms' inputs 4sbh, QKV
// input 2sbh, Q and K 4sbh, softmax output 2as²b, its dropout mask as²b and output 2as²b, V 2sbh,
// proj input 2sbh, attention dropout mask sbh, fc1 input 2sbh, GeLU input 8sbh, fc2 input 8sbh, MLP
// dropout mask sbh. Tensor parallelism divides the parts inside the parallel region by t, sequence
// parallelism the rest; selective recompute drops the s² tensors; full recompute keeps only the layer
// input; a fused attention kernel never stores the s² tensors (so selective recompute changes nothing
// with it, docs/cases/memory.md M4). Generalised here: SwiGLU saves its 2·ffn input and the ffn
// product; GQA with the fused kernel saves K and V with kv_heads (per rank: kv_heads_per_rank), while
// the naive path expands K and V to all query heads before QKᵀ (Megatron's unfused attention) and saves
// them at full size; zero dropout stores no mask; MLA saves the inputs of its down- and up-projections
// and latent norms; a MoE layer saves the router input and its fp32 probabilities, the inputs of the
// expert GEMMs and activation (R tokens: top_k · s · b · moe_ffn / tp scaled, since expert
// parallelism moves tokens between ranks but does not reduce them, docs/cases/moe_cp.md E1) and
// the k expert outputs of each token kept by the unpermute for the probabilities' gradient. Omitted,
// as in the paper: O(s·b) normalisation statistics and the O(a·s·b) softmax log-sum-exp of the fused
// kernel (< 0.2 % for h ≥ 4096), and the routing indices (O(s·b·top_k) integers).
//
// FP8 compute (Transformer Engine's FP8 linear layers): every FP8 GEMM is preceded by "fp8_cast",
// the fused cast-transpose of its activation operand (the layer input in forward, the output gradient
// before a data-gradient GEMM; the weight gradient uses the transposed copy): 2 bytes read and 2
// written per element; behind a sequence-parallel all-gather the rank casts its 1/tp of the rows first
// and the gather moves the FP8 copy (1 byte per element). Weights are cast once per step, not per
// microbatch, and are not listed; saved activations stay counted in 16 bits.
//
// The fused attention kernel (training.flash_kernel): cuDNN's, priced by the op's kernel FLOPs at
// ComputeDefaults' efficiencies, or a FlashAttention-2-class kernel whose op carries its call shape
// [b, heads/tp, s, d] (KV heads/tp) and is priced as ComputeCostModel prices kSdpaFlash.
//
// FLOPs: 2·M·N·K per GEMM; attention core 2·b·s_q·s·a·(d_qk + d_v) forward over the full score matrix
// (4·b·s_q·s·a·d for standard attention: Megatron's and PaLM's convention), executed by a causal fused
// kernel at half that (`kernel_flops`). The router GEMM counts; top-k, permutation and the
// auxiliary loss are memory-bound (0 FLOPs).
//
// With training.framework pytorch-eager the lists are PyTorch eager mode's instead
// (workloads/pytorch_eager_ops.h): same GEMMs, PyTorch's elementwise kernels, casts and launch
// paths, SDPA flash attention, and the activations PyTorch saves; logits_bytes() then stays the
// Megatron figure and the step's memory comes from pytorch_eager_peak_memory().
enum class LayerKind { kDense, kMoe };

// The ops of one layer for one micro-batch on one rank.
struct LayerOps {
  std::vector<Op> forward;
  // Forward ops re-run before `backward`: the whole layer (full recompute), the attention core
  // (selective recompute with naive attention), or nothing.
  std::vector<Op> recompute;
  std::vector<Op> backward;
  Bytes activation_bytes;  // sum of forward's `saved`
};

class Transformer {
 public:
  // Validates the model, the training spec and the sharding (InputError naming fields and valid
  // values) and builds every op list once; accessors are then free.
  Transformer(ModelSpec model, TrainingSpec training, ShardSpec shard = {});

  const ModelSpec& model() const { return model_; }
  const TrainingSpec& training() const { return training_; }
  const ShardSpec& shard() const { return shard_; }
  const ShardedDims& dims() const { return dims_; }
  // Parameters held by one rank (tensor-, expert- and expert-tensor-parallel shares).
  const ParameterCounts& parameters() const { return parameters_; }
  // Tokens of one micro-batch on this rank: micro_batch · seq_len / cp.
  int64_t tokens() const { return tokens_; }

  // The ops of a layer of `kind`, attending through the model's sliding window when `window`.
  // Throws InputError for kMoe when the model has no experts, for `window` when it has no window.
  const LayerOps& layer(LayerKind kind, bool window = false) const;
  // The ops of layer `index` (0-based): its kind and whether it attends through the window.
  const LayerOps& layer_at(int64_t index) const;
  // The kind of layer `index` (0-based): kMoe from model.moe.first_dense_layers on.
  LayerKind layer_kind(int64_t index) const;
  // The share of its expert-parallel group's routed token slots each expert-parallel rank processes
  // (training.moe_routing over the experts each rank holds; sums to 1 without token dropping); empty
  // for a dense model.
  const std::vector<double>& expert_rank_shares() const { return expert_rank_shares_; }
  // Tokens the experts of the busiest expert-parallel rank process per micro-batch (R above, after
  // the etp all-gather); 0 for a dense model.
  int64_t expert_tokens() const { return expert_tokens_; }

  // One dense-MLP transformer layer, one micro-batch, this rank (layer(LayerKind::kDense)).
  const std::vector<Op>& layer_forward() const { return dense_.forward; }
  // Forward ops re-run before layer_backward(): the whole layer (full recompute), the attention core
  // (selective recompute with naive attention), or nothing.
  const std::vector<Op>& layer_recompute() const { return dense_.recompute; }
  const std::vector<Op>& layer_backward() const { return dense_.backward; }
  // First pipeline stage: token (and learned position) embedding with embedding dropout.
  const std::vector<Op>& embedding_forward() const { return embedding_forward_; }
  const std::vector<Op>& embedding_backward() const { return embedding_backward_; }
  // Last pipeline stage: final norm, LM head GEMM (padded vocabulary, column-parallel) and the
  // vocabulary-parallel cross-entropy in fp32 (three all-reduces of [T] fp32 over tp: max, predicted
  // logit, sum of exponentials, as Megatron's _VocabParallelCrossEntropy).
  const std::vector<Op>& head_forward() const { return head_forward_; }
  const std::vector<Op>& head_backward() const { return head_backward_; }

  // Activation bytes one dense layer keeps per micro-batch (sum of layer_forward()'s `saved`).
  Bytes layer_activation_bytes() const { return dense_.activation_bytes; }
  Bytes embedding_activation_bytes() const { return embedding_activation_bytes_; }
  // Final-norm and LM-head inputs; the logits are counted by logits_bytes().
  Bytes head_activation_bytes() const { return head_activation_bytes_; }
  // The most Megatron-Core's cross-entropy holds per micro-batch, T × vocab/tp × 6 bytes: the fp32
  // softmax it keeps from forward to backward (4 B per logit), in which its backward computes the
  // gradient in place, plus that gradient cast to the bf16 logits' dtype (2 B). Measured on an H200
  // with Megatron-Core's vocab_parallel_cross_entropy: 4.000 kept, 6.000 peak at 4,096–16,384
  // tokens and vocabularies of 32,000–128,256 (tools/data/h200-2026-12-02-cross-entropy/; the
  // --cross-entropy-loss-fusion variant peaks at 10). Alive for one micro-batch at a time on the
  // last stage (MemoryBreakdown::logits).
  Bytes logits_bytes() const;

 private:
  ModelSpec model_;
  TrainingSpec training_;
  ShardSpec shard_;
  ShardedDims dims_;
  ParameterCounts parameters_;
  int64_t tokens_ = 0;
  std::vector<double> expert_rank_shares_;
  int64_t expert_tokens_ = 0;
  LayerOps dense_;
  LayerOps moe_;
  LayerOps dense_window_;  // model.sliding_window > 0 only
  LayerOps moe_window_;
  std::vector<Op> embedding_forward_;
  std::vector<Op> embedding_backward_;
  std::vector<Op> head_forward_;
  std::vector<Op> head_backward_;
  Bytes embedding_activation_bytes_;
  Bytes head_activation_bytes_;
};

// Query-key tiles of fused attention kernels: FlashAttention-2 works on blocks of {64, 128} query
// rows × {64, 128} keys, tuned per head dimension (Dao 2023, arXiv:2307.08691 §3.3 "Tuning block
// sizes"); FlexAttention's block masks default to 128 × 128 (the kernel measured in
// tools/reference/window_attention.py). A tile the window cuts is computed whole.
inline constexpr int64_t kAttentionTile = 128;

// Query-key pairs a causal sliding-window kernel computes for one head of a sequence of `seq_len`
// tokens with a `window`-token window: for each tile of kAttentionTile queries, every key tile from
// the one holding its first query's earliest key (first − window + 1) to its own diagonal tile, each
// kAttentionTile keys wide. H200 FlexAttention (tools/data/h200-2026-11-30/
// window_attention.jsonl) runs windows of 2,048 in the time this count gives and windows of 128 and
// 512 up to 2× slower (per-tile overheads). Throws InputError for a non-positive length or window.
int64_t windowed_tile_pairs(int64_t seq_len, int64_t window);


}  // namespace clustersim
