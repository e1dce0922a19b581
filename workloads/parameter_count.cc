#include "workloads/parameter_count.h"

namespace clustersim {

int64_t ParameterCounts::total() const {
  return dense_layers() * layer.total() + moe_layers * moe_layer.total() + word_embedding + position_embedding +
         final_norm + lm_head;
}

StageParameters ParameterCounts::stage(int64_t dense_layers_in_stage, int64_t moe_layers_in_stage, bool first_stage,
                                       bool last_stage, bool pipeline_parallel) const {
  StageParameters p;
  p.dense = dense_layers_in_stage * layer.total() + moe_layers_in_stage * moe_layer.dense();
  p.expert = moe_layers_in_stage * moe_layer.expert();
  if (first_stage) p.dense += word_embedding + position_embedding;
  if (last_stage) {
    p.dense += final_norm + lm_head;
    if (lm_head == 0 && pipeline_parallel && !first_stage) p.dense += word_embedding;  // tied: the last stage's copy
  }
  return p;
}

ParameterCounts count_parameters(const ModelSpec& model) { return count_parameters(model, ShardSpec{}); }

namespace {

// Attention and norms of one layer (shared by dense and MoE layers).
LayerParameters attention_parameters(const ModelSpec& model, const ShardedDims& d) {
  const int64_t h = model.hidden;
  const int64_t norm = model.norm == NormKind::kLayerNorm ? 2 * h : h;
  const bool bias = model.linear_bias;
  LayerParameters p;
  p.input_norm = norm;
  if (model.mla.enabled()) {
    const MlaSpec& mla = model.mla;
    const int64_t q_out = d.heads_per_rank * d.qk_head_dim;
    const int64_t q_in = mla.q_lora_rank > 0 ? mla.q_lora_rank : h;
    p.q_down_weight = mla.q_lora_rank > 0 ? h * mla.q_lora_rank : 0;
    p.q_up_weight = q_in * q_out;
    p.kv_down_weight = h * (mla.kv_lora_rank + mla.rope_head_dim);
    p.kv_up_weight = mla.kv_lora_rank * d.heads_per_rank * (model.head_size() + d.head_dim);
    p.latent_norms = mla.q_lora_rank + mla.kv_lora_rank;
  } else {
    const int64_t qkv_out = (d.heads_per_rank + 2 * d.kv_heads_per_rank) * d.head_dim;
    p.qkv_weight = h * qkv_out;
    p.qkv_bias = bias || model.qkv_bias ? qkv_out : 0;
  }
  p.proj_weight = d.heads_per_rank * d.head_dim * h;
  p.proj_bias = bias ? h : 0;
  p.attention_sinks = model.attention_sinks ? d.heads_per_rank : 0;
  p.post_attention_norm = norm;
  return p;
}

}  // namespace

ParameterCounts count_parameters(const ModelSpec& model, const ShardSpec& shard) {
  const ShardedDims d = shard_model(model, shard);
  const int64_t h = model.hidden;
  const int64_t norm = model.norm == NormKind::kLayerNorm ? 2 * h : h;
  const int64_t gates = model.mlp == MlpKind::kSwiglu ? 2 : 1;  // fc1 holds gate and up for SwiGLU
  const bool bias = model.linear_bias;
  ParameterCounts c;
  c.layers = model.layers;
  c.moe_layers = model.moe_layer_count();
  c.layer = attention_parameters(model, d);
  const int64_t fc1_out = d.ffn_per_rank * gates;
  c.layer.fc1_weight = h * fc1_out;
  c.layer.fc1_bias = bias ? fc1_out : 0;
  c.layer.fc2_weight = d.ffn_per_rank * h;
  c.layer.fc2_bias = bias ? h : 0;
  if (model.moe.enabled()) {
    LayerParameters& m = c.moe_layer;
    m = attention_parameters(model, d);
    m.router_weight = model.moe.num_experts * h;
    m.shared_fc1_weight = h * d.shared_ffn_per_rank * gates;
    m.shared_fc2_weight = d.shared_ffn_per_rank * h;
    const int64_t expert_fc1 = d.expert_ffn_per_rank * gates;
    m.expert_weights = d.experts_per_rank * (h * expert_fc1 + d.expert_ffn_per_rank * h);
    m.expert_biases = bias ? d.experts_per_rank * (expert_fc1 + h) : 0;
  }
  c.word_embedding = d.vocab_per_rank * h;
  c.position_embedding =
      model.position_embedding == PositionEmbedding::kLearned ? model.max_position_embeddings * h : 0;
  c.final_norm = norm;
  c.lm_head = model.tied_embeddings ? 0 : d.vocab_per_rank * h;
  return c;
}

int64_t count_active_parameters(const ModelSpec& model, bool count_input_embedding) {
  const ParameterCounts c = count_parameters(model);
  int64_t active = c.total();
  // A tied table is also the output layer's matrix: it stays.
  if (!count_input_embedding) active -= (model.tied_embeddings ? 0 : c.word_embedding) + c.position_embedding;
  if (!model.moe.enabled()) return active;
  const int64_t per_expert = c.moe_layer.expert() / model.moe.num_experts;
  return active - c.moe_layers * (model.moe.num_experts - model.moe.top_k) * per_expert;
}

}  // namespace clustersim
