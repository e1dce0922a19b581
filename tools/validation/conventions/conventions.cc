#include "tools/validation/conventions/conventions.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "core/error.h"

namespace clustersim::conventions {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<std::string> note_value(const std::string& notes, std::string_view key) {
  const size_t at = notes.find(key);
  if (at == std::string::npos) return std::nullopt;
  size_t end = notes.find(';', at);
  if (end == std::string::npos) end = notes.size();
  return notes.substr(at + key.size(), end - at - key.size());
}

bool only_layer_metrics(const PublishedConfig& c) {
  return !c.metrics.empty() &&
         std::all_of(c.metrics.begin(), c.metrics.end(), [](const auto& m) { return m.name.starts_with("layer_"); });
}

void ConventionContext::assume(std::string field, std::string why) {
  out.assumed.push_back(fmt::format("{} ({})", std::move(field), std::move(why)));
}

void assume_unsplit(ConventionContext& ctx, std::string why) {
  const PublishedConfig& c = ctx.config;
  ctx.assume(fmt::format("{}{}", c.tp ? "" : "tp = 1 ", c.pp ? "" : "pp = 1"), std::move(why));
}

// GPT as Megatron-LM builds it: GeLU MLP, LayerNorm, learned positions, tied embeddings, biases.
ModelSpec gpt_model(const PublishedConfig& c, int64_t seq_len) {
  ModelSpec m;
  m.name = c.model;
  m.layers = *c.layers;
  m.hidden = *c.hidden;
  m.heads = *c.heads;
  m.ffn_hidden = c.ffn_hidden.value_or(4 * m.hidden);
  m.vocab = c.vocab.value_or(0);
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.position_embedding = PositionEmbedding::kLearned;
  m.max_position_embeddings = seq_len;
  m.tied_embeddings = true;
  m.linear_bias = true;
  return m;
}

// Llama: SwiGLU, RMSNorm, RoPE, untied LM head, no biases.
ModelSpec llama_model(std::string name, int64_t layers, int64_t hidden, int64_t heads, int64_t ffn, int64_t vocab) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.position_embedding = PositionEmbedding::kRope;
  m.tied_embeddings = false;
  m.linear_bias = false;
  return m;
}

FlopShape flop_shape(const PublishedScenario& ps) {
  const ModelSpec& m = ps.scenario.model;
  const TrainingSpec& t = ps.scenario.training;
  FlopShape f{};
  f.global_batch = static_cast<double>(t.global_batch);
  f.seq_len = static_cast<double>(t.seq_len);
  f.layers = static_cast<double>(m.layers);
  f.hidden = static_cast<double>(m.hidden);
  f.vocab = static_cast<double>(m.vocab);
  f.heads = static_cast<double>(m.heads);
  f.kv_heads = static_cast<double>(m.kv_head_count());
  f.head_size = static_cast<double>(m.head_size());
  f.ffn_hidden = static_cast<double>(m.ffn_hidden);
  f.swiglu = m.mlp == MlpKind::kSwiglu;
  f.recompute = t.recompute;
  return f;
}

namespace {

// The order in which a source text is matched: the first that describes it wins (a text naming
// two publications gets the earlier); generic, which describes every source, comes last.
const std::array<const PublicationConventions*, 8>& registry() {
  static const std::array<const PublicationConventions*, 8> all = {
      &sc21_conventions(),        &korthikanti_conventions(), &megatron_bridge_conventions(),
      &megatron_readme_conventions(), &llm_foundry_conventions(), &hagemann_conventions(),
      &bigscience_conventions(),  &generic_conventions()};
  return all;
}

}  // namespace

const PublicationConventions& conventions_of(const std::string& source) {
  for (const PublicationConventions* c : registry()) {
    if (c->describes(source)) return *c;
  }
  return generic_conventions();
}

const PublicationConventions& conventions_for(SourceConvention id) {
  for (const PublicationConventions* c : registry()) {
    if (c->id() == id) return *c;
  }
  throw InternalError(fmt::format("published runs: no conventions for convention {}", static_cast<int>(id)));
}

}  // namespace clustersim::conventions
