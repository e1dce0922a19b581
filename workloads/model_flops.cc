#include "workloads/model_flops.h"

#include "workloads/transformer.h"

namespace clustersim {

namespace {
double sum_flops(const std::vector<Op>& ops, bool attention_only) {
  double total = 0;
  for (const Op& op : ops) {
    if (!attention_only || op.attention_core) total += op.flops;
  }
  return total;
}
}  // namespace

StepFlops step_flops(const ModelSpec& model, const TrainingSpec& training) {
  // One sequence on one unsharded rank; FLOPs are linear in the batch.
  TrainingSpec one = training;
  one.micro_batch = 1;
  one.global_batch = 1;
  const Transformer t(model, one, ShardSpec{});
  const double layers = static_cast<double>(model.layers);
  const double per_sequence = layers * (sum_flops(t.layer_forward(), false) + sum_flops(t.layer_backward(), false)) +
                              sum_flops(t.head_forward(), false) + sum_flops(t.head_backward(), false);
  const double attention =
      layers * (sum_flops(t.layer_forward(), true) + sum_flops(t.layer_backward(), true));
  const double recompute = layers * sum_flops(t.layer_recompute(), false);
  const double batch = static_cast<double>(training.global_batch);
  return StepFlops{batch * per_sequence, batch * (per_sequence - attention / 2), batch * (per_sequence + recompute)};
}

double megatron_gpt_model_flops(double global_batch, double seq_len, double layers, double hidden, double vocab) {
  return 72.0 * global_batch * seq_len * layers * hidden * hidden *
         (1.0 + seq_len / (6.0 * hidden) + vocab / (12.0 * hidden * layers));
}

}  // namespace clustersim
