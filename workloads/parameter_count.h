#pragma once

#include <cstdint>

#include "workloads/model_spec.h"
#include "workloads/shard_spec.h"

namespace clustersim {

// Parameters of one transformer layer, as one rank holds them (tp = ep = etp = 1: the whole layer).
// Column-parallel layers (QKV, fc1, MLA up-projections) split their output features, row-parallel
// layers (proj, fc2) their input features; their biases stay whole (added after the reduction), and
// norms are replicated (Shoeybi et al. 2019). With fewer KV heads than tp ranks each rank holds one
// KV head, replicated tp/kv times, so its K/V projection weights are h × head_dim × 2
// (docs/cases/layouts.md L2).
//
// Multi-head latent attention (Megatron-Core multi_latent_attention.py) replaces qkv_weight by the
// down-projections h → q_lora_rank and h → kv_lora_rank + rope_head_dim (replicated over tp:
// "duplicated" linear layers), two latent RMSNorms, and the column-parallel up-projections
// q_lora_rank → heads·(head_dim + rope_head_dim) and kv_lora_rank → heads·(head_dim + v_head_dim).
//
// A mixture-of-experts layer replaces fc1/fc2 by the router (E × h, replicated), the shared experts
// (one MLP of the shared size, tensor-parallel like the dense MLP) and the routed experts this rank
// holds: num_experts / ep experts of moe_ffn_hidden / etp (Megatron-Core GroupedMLP/TEGroupedMLP).
struct LayerParameters {
  int64_t input_norm = 0;           // h (RMSNorm) or 2h (LayerNorm)
  int64_t qkv_weight = 0;           // h × (heads_per_rank + 2·kv_heads_per_rank) × head_dim (standard attention)
  int64_t qkv_bias = 0;             // (heads_per_rank + 2·kv_heads_per_rank) × head_dim
  int64_t q_down_weight = 0;        // MLA: h × q_lora_rank
  int64_t q_up_weight = 0;          // MLA: q_lora_rank (or h without it) × heads_per_rank·(head_dim + rope)
  int64_t kv_down_weight = 0;       // MLA: h × (kv_lora_rank + rope_head_dim)
  int64_t kv_up_weight = 0;         // MLA: kv_lora_rank × heads_per_rank·(head_dim + v_head_dim)
  int64_t latent_norms = 0;         // MLA: q_lora_rank + kv_lora_rank (RMSNorm weights)
  int64_t proj_weight = 0;          // heads_per_rank × v_head_dim × h
  int64_t proj_bias = 0;            // h
  int64_t attention_sinks = 0;      // heads_per_rank (model.attention_sinks: one sink logit per head)
  int64_t post_attention_norm = 0;  // h or 2h
  int64_t fc1_weight = 0;           // dense MLP: h × ffn/tp (× 2 for SwiGLU: gate and up)
  int64_t fc1_bias = 0;             // ffn/tp (× 2)
  int64_t fc2_weight = 0;           // ffn/tp × h
  int64_t fc2_bias = 0;             // h
  int64_t router_weight = 0;        // MoE: num_experts × h
  int64_t shared_fc1_weight = 0;    // MoE: h × shared_ffn/tp (× 2 for SwiGLU)
  int64_t shared_fc2_weight = 0;    // MoE: shared_ffn/tp × h
  int64_t expert_weights = 0;       // MoE: (E/ep) × (h × moe_ffn/etp × (2 or 3))
  int64_t expert_biases = 0;        // MoE with linear biases: (E/ep) × (moe_ffn/etp (× 2) + h)

  // Parameters of the routed experts (sharded by the expert data-parallel group).
  int64_t expert() const { return expert_weights + expert_biases; }
  int64_t total() const {
    return input_norm + qkv_weight + qkv_bias + q_down_weight + q_up_weight + kv_down_weight + kv_up_weight +
           latent_norms + proj_weight + proj_bias + attention_sinks + post_attention_norm + fc1_weight + fc1_bias +
           fc2_weight + fc2_bias + router_weight + shared_fc1_weight + shared_fc2_weight + expert();
  }
  // Everything else (sharded by the data-parallel group).
  int64_t dense() const { return total() - expert(); }
};

// Parameters of a pipeline stage, split by the group that shards their optimizer state.
struct StageParameters {
  int64_t dense = 0;   // data-parallel (× context-parallel) group
  int64_t expert = 0;  // expert data-parallel group
  int64_t total() const { return dense + expert; }
};

// Parameters of a model (or of one rank of it), by part.
struct ParameterCounts {
  LayerParameters layer;           // one layer with a dense MLP
  LayerParameters moe_layer;       // one layer with a mixture-of-experts MLP (all zero for a dense model)
  int64_t layers = 0;              // all layers
  int64_t moe_layers = 0;          // of which mixture-of-experts
  int64_t word_embedding = 0;      // padded vocab (/tp) × h
  int64_t position_embedding = 0;  // learned: max_position_embeddings × h, replicated; rope: 0
  int64_t final_norm = 0;          // h or 2h
  int64_t lm_head = 0;             // padded vocab (/tp) × h; 0 with tied embeddings

  int64_t dense_layers() const { return layers - moe_layers; }
  // All layers, embeddings, final norm and LM head (tied embeddings counted once).
  int64_t total() const;
  // The routed experts of every layer.
  int64_t expert_total() const { return moe_layers * moe_layer.expert(); }
  // What one pipeline stage holds: its layers; the first stage the embeddings; the last stage the
  // final norm and the LM head. With tied embeddings and more than one stage, Megatron keeps a copy of
  // the word embedding on the last stage for the output layer (its gradient is all-reduced with the
  // first stage's), so that stage counts it too.
  StageParameters stage(int64_t dense_layers_in_stage, int64_t moe_layers_in_stage, bool first_stage,
                        bool last_stage, bool pipeline_parallel) const;
  // The same for a stage of dense layers only.
  int64_t stage(int64_t layers_in_stage, bool first_stage, bool last_stage, bool pipeline_parallel) const {
    return stage(layers_in_stage, 0, first_stage, last_stage, pipeline_parallel).total();
  }
};

// Whole-model counts (tp = 1; the vocabulary padded to make_vocab_size_divisible_by). Llama-2-7B:
// 32 × (4h² + 3·h·ffn + 2h) + 2·V·h + h = 6,738,415,616. Throws InputError for an invalid model.
ParameterCounts count_parameters(const ModelSpec& model);
// Counts for one rank (the vocabulary padded for shard.tp; shard.ep and etp split the experts).
// Throws InputError when the model does not shard (see shard_model).
ParameterCounts count_parameters(const ModelSpec& model, const ShardSpec& shard);

// Parameters a token passes through (whole model): total() with each MoE layer's routed experts
// replaced by top_k of them. Publishers differ on the input embedding (a row lookup, not a matrix
// product): Mistral counts it (Mixtral-8x7B: 12.9 B active of 46.7 B, which this reproduces with it
// and misses by 1.2 % without), DeepSeek does not (DeepSeek-V2: 21 B of 236 B, V3: 37 B of 671 B;
// with the input embedding V3 would be 37.55 B, which does not round to 37). Throws InputError for an
// invalid model.
int64_t count_active_parameters(const ModelSpec& model, bool count_input_embedding = true);

}  // namespace clustersim
