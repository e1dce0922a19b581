// Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM" (SC21, arXiv:2104.04473): Table 1 (weak scaling of GPT), Table 2 (PTD-P against
// ZeRO-3), the interleaved schedule of §2.2 and §5. FLOPs as eq. 3 counts them
// (tools/validation/published_flops.h).

#include <fmt/format.h>

#include "tools/validation/conventions/megatron_2021.h"

namespace clustersim::conventions {
namespace {

// Smallest number of model chunks v ≥ 2 that divides the layers of a stage while the microbatches
// remain a multiple of pp (Megatron-LM's condition for the interleaved schedule); 1 if none.
int smallest_interleaving(int64_t layers, int pp, int64_t microbatches) {
  if (pp <= 1 || layers % pp != 0 || microbatches % pp != 0) return 1;
  const int64_t per_stage = layers / pp;
  for (int64_t v = 2; v <= per_stage; ++v) {
    if (per_stage % v == 0) return static_cast<int>(v);
  }
  return 1;
}

class Sc21Conventions final : public Megatron2021Conventions {
 public:
  SourceConvention id() const override { return SourceConvention::kSc21; }
  std::string_view name() const override { return "Narayanan et al. 2021 (SC21)"; }
  bool describes(const std::string& source) const override {
    return contains(source, "SC21") || contains(source, "2104.04473");
  }

  bool model_parallel(ConventionContext& ctx, int64_t& tp, int64_t& pp) const override {
    const PublishedConfig& c = ctx.config;
    if ((!c.tp || !c.pp) && !c.gpus) {
      ctx.out.missing = "GPU count and parallel layout not given";
      return false;
    }
    if (!c.tp && !c.pp && c.zero_stage.empty()) {
      // Table 2's PTD-P rows give the model-parallel size only: 96 for GPT-3 175B, 280 for 530B.
      if (c.layers != 96 && c.layers != 105) {
        ctx.out.missing = "tensor × pipeline split not given";
        return false;
      }
      tp = 8;
      pp = c.layers == 96 ? 12 : 35;
      ctx.assume(fmt::format("tp = 8, pp = {}", pp),
                 "Table 2 gives the model-parallel size tp·pp only; tensor parallelism within a DGX node (§3.3), "
                 "pp = 35 as Table 1's 530B run");
      return true;
    }
    return PublicationConventions::model_parallel(ctx, tp, pp);
  }

  std::string unstated_micro_batch_reason() const override {
    return "not in Table 1; Table 2's PTD-P runs on the same system use 1";
  }

  Recompute unstated_recompute(ConventionContext& ctx) const override {
    ctx.assume("recompute = full", "eq. 3 counts the recomputed forward pass; §5 trains with it");
    return Recompute::kFull;
  }

  double step_flops(const PublishedScenario& ps, const StepFlops& /*simulated*/, bool hardware) const override {
    return sc21_source_flops(ps, hardware);
  }
  // Table 1's "achieved teraFLOP/s per GPU" count the recomputed forward pass (eq. 3).
  bool achieved_counts_recompute() const override { return true; }

  int unstated_vpp(ConventionContext& ctx, int64_t layers, int pp, int64_t microbatches) const override {
    const int vpp = smallest_interleaving(layers, pp, microbatches);
    ctx.assume(fmt::format("vpp = {}", vpp),
               "§5 uses the interleaved schedule without giving the chunk count: the fewest chunks (>= 2) that "
               "divide a stage");
    return vpp;
  }
};

}  // namespace

const PublicationConventions& sc21_conventions() {
  static const Sc21Conventions conventions;
  return conventions;
}

}  // namespace clustersim::conventions
