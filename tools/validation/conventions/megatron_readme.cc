// NVIDIA/Megatron-LM README, "Training Speed and Scalability" (images/model_table.png: the weak
// scaling of GPT 2B to 462B on H100; images/strong_scaling.png with its text: the 177B model from
// 96 to 4,608 GPUs), run with Megatron-Core r0.8: --tp-comm-overlap, the distributed optimizer with
// --overlap-param-gather. FLOPs as Megatron-LM counts them (tools/validation/published_flops.h).

#include "tools/validation/conventions/megatron_2021.h"

namespace clustersim::conventions {
namespace {

class MegatronReadmeConventions final : public PublicationConventions {
 public:
  SourceConvention id() const override { return SourceConvention::kMegatronReadme; }
  std::string_view name() const override { return "Megatron-LM README"; }
  bool describes(const std::string& source) const override { return contains(source, "Megatron-LM README"); }

  bool model_parallel(ConventionContext& ctx, int64_t& tp, int64_t& pp) const override {
    const PublishedConfig& c = ctx.config;
    if (!c.tp || !c.pp) {
      tp = 8;
      pp = 6;
      ctx.assume("tp = 8, pp = 6", "the strong-scaling text gives none; those of the weak-scaling table's 177B run");
    }
    return true;
  }

  DataType unstated_precision(ConventionContext& ctx) const override {
    ctx.assume("precision = bf16", "not stated; the MFU/TFLOP/s ratio implies the bf16 peak");
    return DataType::kBf16;
  }

  double dropout() const override { return kMegatronGptDropout; }

  // Megatron-LM's model FLOPs (num_floating_point_operations), as Korthikanti et al. count them.
  double step_flops(const PublishedScenario& ps, const StepFlops& /*simulated*/, bool hardware) const override {
    return korthikanti_source_flops(ps, hardware);
  }
  // The table's achieved TFLOP/s per GPU are its MFU's model FLOPs.
  bool achieved_counts_recompute() const override { return false; }

  bool unstated_sequence_parallel(ConventionContext& ctx) const override {
    ctx.assume("sequence_parallel = true", "--tp-comm-overlap needs sequence parallelism");
    return true;
  }

  void tp_comm_overlap(ConventionContext& ctx, Layout& l) const override {
    // The README's runs state --tp-comm-overlap.
    l.tp_comm_overlap = true;
    ctx.assume("tp_comm_overlap = true", "the README's runs use --tp-comm-overlap");
  }

  void unstated_zero(ConventionContext& ctx, Layout& l) const override {
    l.zero_stage = 1;
    l.overlap_param_gather = true;
    ctx.assume("distributed optimizer (zero 1) with overlapped parameter gather",
               "--overlap-param-gather needs --use-distributed-optimizer");
  }
};

}  // namespace

const PublicationConventions& megatron_readme_conventions() {
  static const MegatronReadmeConventions conventions;
  return conventions;
}

}  // namespace clustersim::conventions
