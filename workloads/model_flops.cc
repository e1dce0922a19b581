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
  // One sequence on one unsharded rank; FLOPs are linear in the batch. Routing is balanced: model
  // FLOPs count each token's top_k experts, whatever the imbalance costs in time.
  TrainingSpec one = training;
  one.micro_batch = 1;
  one.global_batch = 1;
  one.moe_routing.skew = 1.0;
  one.moe_routing.expert_load.clear();
  const Transformer t(model, one, ShardSpec{});
  double per_sequence = sum_flops(t.head_forward(), false) + sum_flops(t.head_backward(), false);
  double attention = 0;
  double recompute = 0;
  for (LayerKind kind : {LayerKind::kDense, LayerKind::kMoe}) {
    const double layers =
        static_cast<double>(kind == LayerKind::kDense ? model.dense_layer_count() : model.moe_layer_count());
    if (layers == 0) continue;
    const LayerOps& ops = t.layer(kind);
    per_sequence += layers * (sum_flops(ops.forward, false) + sum_flops(ops.backward, false));
    attention += layers * (sum_flops(ops.forward, true) + sum_flops(ops.backward, true));
    recompute += layers * sum_flops(ops.recompute, false);
  }
  const double batch = static_cast<double>(training.global_batch);
  return StepFlops{batch * per_sequence, batch * (per_sequence - attention / 2), batch * (per_sequence + recompute)};
}

double megatron_gpt_model_flops(double global_batch, double seq_len, double layers, double hidden, double vocab) {
  return 72.0 * global_batch * seq_len * layers * hidden * hidden *
         (1.0 + seq_len / (6.0 * hidden) + vocab / (12.0 * hidden * layers));
}

}  // namespace clustersim
