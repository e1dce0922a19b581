#include "workloads/model_spec.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {

std::string_view name_of(MlpKind kind) { return kind == MlpKind::kGelu ? "gelu" : "swiglu"; }
std::string_view name_of(NormKind kind) { return kind == NormKind::kLayerNorm ? "layernorm" : "rmsnorm"; }
std::string_view name_of(PositionEmbedding kind) {
  switch (kind) {
    case PositionEmbedding::kLearned: return "learned";
    case PositionEmbedding::kRope: return "rope";
    case PositionEmbedding::kAlibi: return "alibi";
  }
  return "learned";
}

MlpKind parse_mlp_kind(std::string_view text) {
  if (text == "gelu") return MlpKind::kGelu;
  if (text == "swiglu") return MlpKind::kSwiglu;
  throw InputError(fmt::format("unknown mlp \"{}\" (valid: gelu, swiglu)", excerpt(text)));
}

NormKind parse_norm_kind(std::string_view text) {
  if (text == "layernorm") return NormKind::kLayerNorm;
  if (text == "rmsnorm") return NormKind::kRmsNorm;
  throw InputError(fmt::format("unknown norm \"{}\" (valid: layernorm, rmsnorm)", excerpt(text)));
}

std::string_view name_of(MoeBalancing balancing) {
  switch (balancing) {
    case MoeBalancing::kAuxLoss: return "aux_loss";
    case MoeBalancing::kAuxLossFree: return "aux_loss_free";
    case MoeBalancing::kNone: return "none";
  }
  return "?";
}

MoeBalancing parse_moe_balancing(std::string_view text) {
  for (auto b : {MoeBalancing::kAuxLoss, MoeBalancing::kAuxLossFree, MoeBalancing::kNone}) {
    if (name_of(b) == text) return b;
  }
  throw InputError(
      fmt::format("unknown model.moe.load_balancing \"{}\" (valid: aux_loss, aux_loss_free, none)", excerpt(text)))
      .about({"model.moe.load_balancing"});
}

PositionEmbedding parse_position_embedding(std::string_view text) {
  if (text == "learned") return PositionEmbedding::kLearned;
  if (text == "rope") return PositionEmbedding::kRope;
  if (text == "alibi") return PositionEmbedding::kAlibi;
  throw InputError(fmt::format("unknown position_embedding \"{}\" (valid: learned, rope, alibi)", excerpt(text)));
}

void ModelSpec::validate() const {
  auto positive = [&](const char* key, int64_t value) {
    if (value <= 0) {
      throw InputError(fmt::format("model.{} must be a positive integer (got {}) in model \"{}\"", key, value, name))
          .about({fmt::format("model.{}", key)});
    }
  };
  positive("layers", layers);
  positive("hidden", hidden);
  positive("ffn_hidden", ffn_hidden);
  positive("heads", heads);
  positive("vocab", vocab);
  if (kv_heads < 0 || kv_heads > heads || (kv_heads > 0 && heads % kv_heads != 0)) {
    throw InputError(
        fmt::format(
            "model.kv_heads = {} must divide model.heads = {} (each KV head serves a whole group of query heads); "
            "use 0 for multi-head attention",
            kv_heads, heads))
        .about({"model.kv_heads", "model.heads"});
  }
  if (head_dim < 0)
    throw InputError(fmt::format("model.head_dim must be positive (got {})", head_dim)).about({"model.head_dim"});
  if (head_dim == 0 && hidden % heads != 0) {
    throw InputError(
        fmt::format("model.hidden = {} is not divisible by model.heads = {}; give model.head_dim explicitly", hidden,
                    heads))
        .about({"model.hidden", "model.heads", "model.head_dim"});
  }
  if (make_vocab_size_divisible_by <= 0) {
    throw InputError(fmt::format("model.make_vocab_size_divisible_by must be a positive integer (got {}; default 128)",
                                 make_vocab_size_divisible_by))
        .about({"model.make_vocab_size_divisible_by"});
  }
  if (position_embedding == PositionEmbedding::kLearned && max_position_embeddings <= 0) {
    throw InputError(
        fmt::format("model.max_position_embeddings must be positive for learned position embeddings (got {}); "
                    "set it to the longest sequence (e.g. 2048 for GPT-3) or use position_embedding: rope",
                    max_position_embeddings))
        .about({"model.max_position_embeddings"});
  }
  if (sliding_window < 0) {
    throw InputError(fmt::format("model.sliding_window must be >= 0 (got {}; 0 = full attention)", sliding_window))
        .about({"model.sliding_window"});
  }
  if (full_attention_every < 0) {
    throw InputError(
        fmt::format("model.full_attention_every must be >= 0 (got {}; 0 = every layer windowed)", full_attention_every))
        .about({"model.full_attention_every"});
  }
  if (full_attention_every > 0 && sliding_window == 0) {
    throw InputError(fmt::format("model.full_attention_every = {} needs model.sliding_window > 0 (without a window "
                                 "every layer already attends to the whole sequence)",
                                 full_attention_every))
        .about({"model.full_attention_every", "model.sliding_window"});
  }
  if (full_attention_every == 1) {
    throw InputError(
        "model.full_attention_every = 1 makes every layer attend to the whole sequence, which leaves "
        "model.sliding_window unused; use sliding_window: 0, or full_attention_every 0 (every layer "
        "windowed) or >= 2")
        .about({"model.full_attention_every", "model.sliding_window"});
  }
  if (full_attention_every > layers && layers > 0) {
    throw InputError(fmt::format("model.full_attention_every = {} exceeds model.layers = {}: no layer would attend to "
                                 "the whole sequence; use 0 for every layer windowed, or a value in 2..{}",
                                 full_attention_every, layers, layers))
        .about({"model.full_attention_every", "model.layers"});
  }
  if (sliding_window > 0 && mla.enabled()) {
    throw InputError("model.sliding_window with multi-head latent attention (model.mla) is not modelled")
        .about({"model.sliding_window", "model.mla"});
  }
  validate_moe();
  validate_mla();
}

void ModelSpec::validate_moe() const {
  if (!moe.enabled()) {
    if (moe.num_experts < 0) {
      throw InputError(fmt::format("model.moe.num_experts must be >= 0 (got {}; 0 = dense)", moe.num_experts))
          .about({"model.moe.num_experts"});
    }
    if (moe.top_k != 0 || moe.moe_ffn_hidden != 0 || moe.shared_experts != 0 || moe.shared_ffn_hidden != 0 ||
        moe.first_dense_layers != 0 || moe.router_num_groups != 0 || moe.router_group_topk != 0) {
      throw InputError(fmt::format("model \"{}\": model.moe.* fields are set but model.moe.num_experts = 0; give the "
                                   "number of routed experts (or remove the moe section for a dense model)",
                                   name))
          .about({"model.moe", "model.moe.num_experts"});
    }
    return;
  }
  if (moe.top_k < 1 || moe.top_k > moe.num_experts) {
    throw InputError(fmt::format("model.moe.top_k = {} must be between 1 and model.moe.num_experts = {}", moe.top_k,
                                 moe.num_experts))
        .about({"model.moe.top_k", "model.moe.num_experts"});
  }
  if (moe.moe_ffn_hidden <= 0) {
    throw InputError(fmt::format("model.moe.moe_ffn_hidden must be a positive integer (got {}): the intermediate size "
                                 "of one routed expert (Mixtral-8x7B: 14336, DeepSeek-V3: 2048)",
                                 moe.moe_ffn_hidden))
        .about({"model.moe.moe_ffn_hidden"});
  }
  if (moe.shared_experts < 0 || moe.shared_ffn_hidden < 0) {
    throw InputError(fmt::format("model.moe.shared_experts = {} and shared_ffn_hidden = {} must be >= 0",
                                 moe.shared_experts, moe.shared_ffn_hidden))
        .about({"model.moe.shared_experts"});
  }
  if (moe.shared_ffn_hidden > 0 && moe.shared_experts == 0) {
    throw InputError(
        fmt::format("model.moe.shared_ffn_hidden = {} needs model.moe.shared_experts >= 1", moe.shared_ffn_hidden))
        .about({"model.moe.shared_ffn_hidden", "model.moe.shared_experts"});
  }
  if ((moe.router_num_groups == 0) != (moe.router_group_topk == 0)) {
    throw InputError(fmt::format("model.moe.router_num_groups = {} and router_group_topk = {} go together: set both "
                                 "(DeepSeek-V3: 8 and 4) or both to 0 for routing without a group limit",
                                 moe.router_num_groups, moe.router_group_topk))
        .about({"model.moe.router_num_groups"});
  }
  if (moe.router_num_groups != 0 || moe.router_group_topk != 0) {
    if (moe.router_num_groups < 1 || moe.num_experts % moe.router_num_groups != 0) {
      throw InputError(
          fmt::format("model.moe.router_num_groups = {} must divide model.moe.num_experts = {} (DeepSeek-V3: "
                      "8 groups of 32 experts)",
                      moe.router_num_groups, moe.num_experts))
          .about({"model.moe.router_num_groups", "model.moe.num_experts"});
    }
    if (moe.router_group_topk < 1 || moe.router_group_topk > moe.router_num_groups ||
        moe.router_group_topk * (moe.num_experts / moe.router_num_groups) < moe.top_k) {
      throw InputError(
          fmt::format("model.moe.router_group_topk = {} must be in 1..router_num_groups = {} and its groups "
                      "must hold at least top_k = {} experts ({} per group)",
                      moe.router_group_topk, moe.router_num_groups, moe.top_k, moe.num_experts / moe.router_num_groups))
          .about({"model.moe.router_group_topk"});
    }
  }
  if (moe.first_dense_layers < 0 || moe.first_dense_layers >= layers) {
    throw InputError(fmt::format("model.moe.first_dense_layers = {} must be in 0..{} (layers = {}; at least one layer "
                                 "must have experts)",
                                 moe.first_dense_layers, layers - 1, layers))
        .about({"model.moe.first_dense_layers"});
  }
}

void ModelSpec::validate_mla() const {
  if (!mla.enabled()) {
    if (mla.kv_lora_rank < 0 || mla.q_lora_rank != 0 || mla.rope_head_dim != 0 || mla.v_head_dim != 0) {
      throw InputError(fmt::format("model \"{}\": model.mla.* fields need model.mla.kv_lora_rank > 0 (the key/value "
                                   "latent rank; DeepSeek-V3: 512)",
                                   name))
          .about({"model.mla", "model.mla.kv_lora_rank"});
    }
    return;
  }
  if (mla.q_lora_rank < 0 || mla.v_head_dim < 0) {
    throw InputError(fmt::format("model.mla.q_lora_rank = {} and v_head_dim = {} must be >= 0 (0: no query "
                                 "compression; value heads of head_dim)",
                                 mla.q_lora_rank, mla.v_head_dim))
        .about({"model.mla.q_lora_rank"});
  }
  if (mla.rope_head_dim <= 0 || position_embedding != PositionEmbedding::kRope) {
    throw InputError(fmt::format("model.mla.rope_head_dim = {}: multi-head latent attention carries position in a "
                                 "decoupled RoPE part; give rope_head_dim > 0 (DeepSeek-V3: 64) and "
                                 "position_embedding: rope",
                                 mla.rope_head_dim))
        .about({"model.mla.rope_head_dim"});
  }
  if (kv_heads != 0 && kv_heads != heads) {
    throw InputError(fmt::format("model.kv_heads = {}: multi-head latent attention has one key/value head per query "
                                 "head; use kv_heads 0 (or {})",
                                 kv_heads, heads))
        .about({"model.kv_heads"});
  }
}

}  // namespace clustersim
