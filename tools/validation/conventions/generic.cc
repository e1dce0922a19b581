// clustersim's own conventions: what a source that clustersim knows nothing about gets for the
// fields it leaves empty, and the defaults of PublicationConventions that the other publications'
// files override. FLOPs are counted as clustersim counts them (workloads/model_flops.h: model FLOPs,
// and hardware FLOPs with the recomputation, which its achieved TFLOP/s count).

#include <fmt/format.h>

#include "scenarios/hardware_presets.h"
#include "tools/validation/conventions/conventions.h"

namespace clustersim::conventions {

bool PublicationConventions::model_parallel(ConventionContext& ctx, int64_t& /*tp*/, int64_t& /*pp*/) const {
  const PublishedConfig& c = ctx.config;
  if (!c.tp || !c.pp) assume_unsplit(ctx, "not given");
  return true;
}

std::optional<int64_t> PublicationConventions::unstated_global_batch(ConventionContext& ctx, int64_t /*seq_len*/,
                                                                     int64_t micro_batch, int64_t dp) const {
  // A single-layer table times one microbatch per data-parallel rank.
  if (ctx.layer_only) return micro_batch * dp;
  return std::nullopt;
}

DataType PublicationConventions::unstated_precision(ConventionContext& ctx) const {
  ctx.assume("precision = bf16", "not stated");
  return DataType::kBf16;
}

Recompute PublicationConventions::unstated_recompute(ConventionContext& ctx) const {
  ctx.assume("recompute = none", "not stated");
  return Recompute::kNone;
}

std::optional<ModelSpec> PublicationConventions::model_from_columns(ConventionContext& ctx, int64_t seq_len) const {
  const PublishedConfig& c = ctx.config;
  PublishedScenario& out = ctx.out;
  if (contains(c.model, "DeepSeek-V3")) {
    // The report gives the architecture in words (notes: 1 shared + 256 routed experts of 2048,
    // top-8, first 3 layers dense, MLA ranks) but not the vocabulary; the preset holds the released
    // config.
    ModelSpec m = load_model_preset("deepseek-v3");
    m.name = c.model;
    ctx.assume("model = preset deepseek-v3", "the released config.json the report describes; vocabulary 129,280");
    return m;
  }
  if (!c.layers || !c.hidden || !c.heads) {
    out.missing = fmt::format("model \"{}\": dimensions (layers, hidden, heads) not given and no preset known", c.model);
    return std::nullopt;
  }
  const bool llama = contains(lower(c.model), "llama");
  std::optional<UnstatedVocab> vocab;
  if (!c.vocab) {
    vocab = unstated_vocab(ctx);
    if (!vocab) {
      out.missing = fmt::format("model \"{}\": vocabulary not given", c.model);
      return std::nullopt;
    }
  }
  if (llama) {
    ModelSpec m = llama_model(c.model, *c.layers, *c.hidden, *c.heads, c.ffn_hidden.value_or(0), c.vocab.value_or(0));
    if (!c.ffn_hidden) {
      out.missing = fmt::format("model \"{}\": ffn_hidden not given", c.model);
      return std::nullopt;
    }
    if (c.kv_heads) m.kv_heads = *c.kv_heads;
    return m;
  }
  ModelSpec m = gpt_model(c, seq_len);
  if (c.kv_heads) m.kv_heads = *c.kv_heads;
  if (!c.ffn_hidden) ctx.assume(fmt::format("ffn_hidden = 4h = {}", m.ffn_hidden), "GPT");
  if (vocab) {
    m.vocab = vocab->vocab;
    ctx.assume(fmt::format("vocab = {}", vocab->vocab), vocab->why);
  }
  return m;
}

namespace {

class GenericConventions final : public PublicationConventions {
 public:
  SourceConvention id() const override { return SourceConvention::kGeneric; }
  std::string_view name() const override { return "generic"; }
  bool describes(const std::string&) const override { return true; }
};

}  // namespace

const PublicationConventions& generic_conventions() {
  static const GenericConventions conventions;
  return conventions;
}

}  // namespace clustersim::conventions
