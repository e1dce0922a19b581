// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
// (arXiv:2205.05198): Table 4 (times of one layer), Table 5 (end-to-end runs of 22B to 1T with
// selective recomputation and sequence parallelism). FLOPs as its appendix counts them
// (tools/validation/published_flops.h).

#include <fmt/format.h>

#include "tools/validation/conventions/megatron_2021.h"

namespace clustersim::conventions {
namespace {

class KorthikantiConventions final : public Megatron2021Conventions {
 public:
  SourceConvention id() const override { return SourceConvention::kKorthikanti; }
  std::string_view name() const override { return "Korthikanti et al. 2022"; }
  bool describes(const std::string& source) const override {
    return contains(source, "Korthikanti") || contains(source, "2205.05198");
  }

  std::string unstated_micro_batch_reason() const override { return "Table 5's 530B run"; }

  std::optional<int64_t> unstated_global_batch(ConventionContext& ctx, int64_t seq_len, int64_t micro_batch,
                                               int64_t dp) const override {
    if (ctx.layer_only) return PublicationConventions::unstated_global_batch(ctx, seq_len, micro_batch, dp);
    const int64_t global_batch = 280 * dp;
    ctx.assume(fmt::format("global_batch = {}", global_batch), "Table 5's 280 sequences per pipeline");
    return global_batch;
  }

  std::optional<UnstatedVocab> unstated_vocab(ConventionContext& ctx) const override {
    // Only Table 4's single-layer rows give no vocabulary.
    if (!ctx.layer_only) return std::nullopt;
    return UnstatedVocab{51200, "the vocabulary of Table 5's 22B run; a single layer does not use it"};
  }

  double step_flops(const PublishedScenario& ps, const StepFlops& /*simulated*/, bool hardware) const override {
    return korthikanti_source_flops(ps, hardware);
  }
  // Table 5 reports MFU and HFU, each by its name; an "achieved" figure would count model FLOPs.
  bool achieved_counts_recompute() const override { return false; }

  int unstated_vpp(ConventionContext& ctx, int64_t layers, int /*pp*/, int64_t /*microbatches*/) const override {
    if (layers != 105) return 1;
    ctx.assume("vpp = 3", "Table 5's 530B run");
    return 3;
  }
};

}  // namespace

const PublicationConventions& korthikanti_conventions() {
  static const KorthikantiConventions conventions;
  return conventions;
}

}  // namespace clustersim::conventions
