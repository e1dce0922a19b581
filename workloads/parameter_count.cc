#include "workloads/parameter_count.h"

namespace clustersim {

int64_t ParameterCounts::total() const {
  return layers * layer.total() + word_embedding + position_embedding + final_norm + lm_head;
}

int64_t ParameterCounts::stage(int64_t layers_in_stage, bool first_stage, bool last_stage,
                               bool pipeline_parallel) const {
  int64_t n = layers_in_stage * layer.total();
  if (first_stage) n += word_embedding + position_embedding;
  if (last_stage) {
    n += final_norm + lm_head;
    if (lm_head == 0 && pipeline_parallel && !first_stage) n += word_embedding;  // tied: the last stage's copy
  }
  return n;
}

ParameterCounts count_parameters(const ModelSpec& model) { return count_parameters(model, ShardSpec{}); }

ParameterCounts count_parameters(const ModelSpec& model, const ShardSpec& shard) {
  const ShardedDims d = shard_model(model, shard);
  const int64_t h = model.hidden;
  const int64_t norm = model.norm == NormKind::kLayerNorm ? 2 * h : h;
  const int64_t qkv_out = (d.heads_per_rank + 2 * d.kv_heads_per_rank) * d.head_dim;
  const int64_t fc1_out = d.ffn_per_rank * (model.mlp == MlpKind::kSwiglu ? 2 : 1);
  const bool bias = model.linear_bias;
  ParameterCounts c;
  c.layers = model.layers;
  c.layer.input_norm = norm;
  c.layer.qkv_weight = h * qkv_out;
  c.layer.qkv_bias = bias || model.qkv_bias ? qkv_out : 0;
  c.layer.proj_weight = d.heads_per_rank * d.head_dim * h;
  c.layer.proj_bias = bias ? h : 0;
  c.layer.post_attention_norm = norm;
  c.layer.fc1_weight = h * fc1_out;
  c.layer.fc1_bias = bias ? fc1_out : 0;
  c.layer.fc2_weight = d.ffn_per_rank * h;
  c.layer.fc2_bias = bias ? h : 0;
  c.word_embedding = d.vocab_per_rank * h;
  c.position_embedding =
      model.position_embedding == PositionEmbedding::kLearned ? model.max_position_embeddings * h : 0;
  c.final_norm = norm;
  c.lm_head = model.tied_embeddings ? 0 : d.vocab_per_rank * h;
  return c;
}

}  // namespace clustersim
