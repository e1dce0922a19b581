// BigScience BLOOM-176B, the tr11-176B-ml README and training log
// (github.com/bigscience-workshop/bigscience): Megatron-DeepSpeed with bf16, ZeRO-1 and pipeline
// parallelism on Jean Zay's A100 nodes. FLOPs as Megatron-LM counts them, its "achieved" TFLOP/s
// with the recomputation (tools/validation/published_flops.h).

#include "tools/validation/conventions/megatron_2021.h"

namespace clustersim::conventions {
namespace {

class BigScienceConventions final : public PublicationConventions {
 public:
  SourceConvention id() const override { return SourceConvention::kBigScience; }
  std::string_view name() const override { return "BigScience BLOOM"; }
  bool describes(const std::string& source) const override { return contains(source, "BigScience"); }

  std::optional<ModelSpec> model(ConventionContext& ctx, int64_t seq_len) const override {
    const PublishedConfig& c = ctx.config;
    if (!c.layers || !c.hidden || !c.heads || !c.vocab) return model_from_columns(ctx, seq_len);
    // BLOOM: GPT layers with ALiBi.
    ModelSpec m = gpt_model(c, seq_len);
    m.position_embedding = PositionEmbedding::kAlibi;
    m.max_position_embeddings = 0;
    return m;
  }

  bool naive_attention(ConventionContext& ctx) const override { return megatron_2021_naive_attention(ctx); }
  double dropout() const override { return kMegatronGptDropout; }

  // The log's "hardware TFLOPs" (Megatron-DeepSpeed, checkpoint_activations_factor = 4): SC21's eq. 3.
  double step_flops(const PublishedScenario& ps, const StepFlops& /*simulated*/, bool hardware) const override {
    return sc21_source_flops(ps, hardware);
  }
  bool achieved_counts_recompute() const override { return true; }

  void gradient_reduction(ConventionContext& ctx, Layout& l, TrainingSpec& /*t*/,
                          DataType /*params_dtype*/) const override {
    reduce_after_backward(ctx, l);
    if (l.zero_stage == 1 && l.pp > 1 && l.dp > 1) {
      // Megatron-DeepSpeed with bf16 and ZeRO-1 under pipeline parallelism: DeepSpeed's PipelineEngine
      // reduces with _bf16_reduce_grads, a buffered all-reduce of the BF16_Optimizer's fp32 gradients
      // (deepspeed/runtime/pipe/engine.py), and each rank then updates its shard and all-gathers the
      // bf16 parameters.
      l.grad_reduce_op = GradReduceOp::kAllReduce;
      ctx.assume("gradients all-reduced (fp32), not reduce-scattered",
                 "DeepSpeed's pipeline engine with its bf16 optimizer all-reduces whole gradients under ZeRO-1");
    }
  }
};

}  // namespace

const PublicationConventions& bigscience_conventions() {
  static const BigScienceConventions conventions;
  return conventions;
}

}  // namespace clustersim::conventions
