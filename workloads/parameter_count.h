#pragma once

#include <cstdint>

#include "workloads/model_spec.h"
#include "workloads/shard_spec.h"

namespace clustersim {

// Parameters of one transformer layer, as one tensor-parallel rank holds them (tp = 1: the whole
// layer). Column-parallel layers (QKV, fc1) split their output features, row-parallel layers (proj,
// fc2) their input features; their biases stay whole (added after the reduction), and norms are
// replicated (Shoeybi et al. 2019). With fewer KV heads than tp ranks each rank holds one KV head,
// replicated tp/kv times, so its K/V projection weights are h × head_dim × 2 (../shared/cases/
// layouts.md L2).
struct LayerParameters {
  int64_t input_norm = 0;           // h (RMSNorm) or 2h (LayerNorm)
  int64_t qkv_weight = 0;           // h × (heads_per_rank + 2·kv_heads_per_rank) × head_dim
  int64_t qkv_bias = 0;             // (heads_per_rank + 2·kv_heads_per_rank) × head_dim
  int64_t proj_weight = 0;          // heads_per_rank × head_dim × h
  int64_t proj_bias = 0;            // h
  int64_t post_attention_norm = 0;  // h or 2h
  int64_t fc1_weight = 0;           // h × ffn/tp (× 2 for SwiGLU: gate and up)
  int64_t fc1_bias = 0;             // ffn/tp (× 2)
  int64_t fc2_weight = 0;           // ffn/tp × h
  int64_t fc2_bias = 0;             // h

  int64_t total() const {
    return input_norm + qkv_weight + qkv_bias + proj_weight + proj_bias + post_attention_norm + fc1_weight +
           fc1_bias + fc2_weight + fc2_bias;
  }
};

// Parameters of a model (or of one tensor-parallel rank of it), by part.
struct ParameterCounts {
  LayerParameters layer;           // one transformer layer
  int64_t layers = 0;
  int64_t word_embedding = 0;      // padded vocab (/tp) × h
  int64_t position_embedding = 0;  // learned: max_position_embeddings × h, replicated; rope: 0
  int64_t final_norm = 0;          // h or 2h
  int64_t lm_head = 0;             // padded vocab (/tp) × h; 0 with tied embeddings

  // All layers, embeddings, final norm and LM head (tied embeddings counted once).
  int64_t total() const;
  // What one pipeline stage holds: its layers; the first stage the embeddings; the last stage the
  // final norm and the LM head. With tied embeddings and more than one stage, Megatron keeps a copy of
  // the word embedding on the last stage for the output layer (its gradient is all-reduced with the
  // first stage's), so that stage counts it too.
  int64_t stage(int64_t layers_in_stage, bool first_stage, bool last_stage, bool pipeline_parallel) const;
};

// Whole-model counts (tp = 1; the vocabulary padded to make_vocab_size_divisible_by). Llama-2-7B:
// 32 × (4h² + 3·h·ffn + 2h) + 2·V·h + h = 6,738,415,616. Throws InputError for an invalid model.
ParameterCounts count_parameters(const ModelSpec& model);
// Counts for one tensor-parallel rank (the vocabulary padded for shard.tp). Throws InputError when the
// model does not shard (see shard_model).
ParameterCounts count_parameters(const ModelSpec& model, const ShardSpec& shard);

}  // namespace clustersim
