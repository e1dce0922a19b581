#include "workloads/model_spec.h"

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

std::string_view name_of(MlpKind kind) { return kind == MlpKind::kGelu ? "gelu" : "swiglu"; }
std::string_view name_of(NormKind kind) { return kind == NormKind::kLayerNorm ? "layernorm" : "rmsnorm"; }
std::string_view name_of(PositionEmbedding kind) { return kind == PositionEmbedding::kLearned ? "learned" : "rope"; }

MlpKind parse_mlp_kind(std::string_view text) {
  if (text == "gelu") return MlpKind::kGelu;
  if (text == "swiglu") return MlpKind::kSwiglu;
  throw InputError(fmt::format("unknown mlp \"{}\" (valid: gelu, swiglu)", text));
}

NormKind parse_norm_kind(std::string_view text) {
  if (text == "layernorm") return NormKind::kLayerNorm;
  if (text == "rmsnorm") return NormKind::kRmsNorm;
  throw InputError(fmt::format("unknown norm \"{}\" (valid: layernorm, rmsnorm)", text));
}

PositionEmbedding parse_position_embedding(std::string_view text) {
  if (text == "learned") return PositionEmbedding::kLearned;
  if (text == "rope") return PositionEmbedding::kRope;
  throw InputError(fmt::format("unknown position_embedding \"{}\" (valid: learned, rope)", text));
}

void ModelSpec::validate() const {
  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) {
      throw InputError(fmt::format("model.{} must be a positive integer (got {}) in model \"{}\"", key, value, name));
    }
  };
  positive("layers", layers);
  positive("hidden", hidden);
  positive("ffn_hidden", ffn_hidden);
  positive("heads", heads);
  positive("vocab", vocab);
  if (kv_heads < 0 || kv_heads > heads || (kv_heads > 0 && heads % kv_heads != 0)) {
    throw InputError(fmt::format(
        "model.kv_heads = {} must divide model.heads = {} (each KV head serves a whole group of query heads); "
        "use 0 for multi-head attention",
        kv_heads, heads));
  }
  if (head_dim < 0) throw InputError(fmt::format("model.head_dim must be positive (got {})", head_dim));
  if (head_dim == 0 && hidden % heads != 0) {
    throw InputError(fmt::format(
        "model.hidden = {} is not divisible by model.heads = {}; give model.head_dim explicitly", hidden, heads));
  }
  if (make_vocab_size_divisible_by <= 0) {
    throw InputError(fmt::format("model.make_vocab_size_divisible_by must be a positive integer (got {}; default 128)",
                                 make_vocab_size_divisible_by));
  }
  if (position_embedding == PositionEmbedding::kLearned && max_position_embeddings <= 0) {
    throw InputError(fmt::format(
        "model.max_position_embeddings must be positive for learned position embeddings (got {}); "
        "set it to the longest sequence (e.g. 2048 for GPT-3) or use position_embedding: rope",
        max_position_embeddings));
  }
  if (moe.num_experts != 0 || moe.top_k != 0 || moe.moe_ffn_hidden != 0 || moe.shared_experts != 0 ||
      moe.first_dense_layers != 0) {
    throw InputError(fmt::format("model \"{}\": mixture-of-experts fields (model.moe.*) are not supported yet; "
                                 "only dense transformers can be simulated",
                                 name));
  }
  if (mla.q_lora_rank != 0 || mla.kv_lora_rank != 0 || mla.rope_head_dim != 0) {
    throw InputError(fmt::format("model \"{}\": multi-head latent attention (model.mla.*) is not supported yet", name));
  }
}

}  // namespace clustersim
