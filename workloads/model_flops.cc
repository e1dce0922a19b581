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
// The FLOPs the kernels of `ops` run: Op::kernel_flops for the attention core, Op::flops otherwise.
double executed_flops(const std::vector<Op>& ops) {
  double total = 0;
  for (const Op& op : ops) total += op.attention_core ? op.kernel_flops : op.flops;
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
  double executed = executed_flops(t.head_forward()) + executed_flops(t.head_backward());
  double not_executed = 0;  // attention FLOPs of the convention that causal kernels skip
  double recompute = 0;
  for (int64_t layer = 0; layer < model.layers; ++layer) {
    const LayerOps& ops = t.layer_at(layer);
    per_sequence += sum_flops(ops.forward, false) + sum_flops(ops.backward, false);
    const double attention = sum_flops(ops.forward, true) + sum_flops(ops.backward, true);
    if (model.is_window_layer(layer)) {
      // Forward and backward (2×) of the pairs the windowed kernel executes (its forward kernel FLOPs).
      double window_pairs = 0;
      for (const Op& op : ops.forward) window_pairs += op.attention_core ? op.kernel_flops : 0;
      not_executed += attention - 3 * window_pairs;
    } else {
      not_executed += attention / 2;
    }
    recompute += sum_flops(ops.recompute, false);
    executed += executed_flops(ops.forward) + executed_flops(ops.backward) + executed_flops(ops.recompute);
  }
  const double batch = static_cast<double>(training.global_batch);
  return StepFlops{batch * per_sequence, batch * (per_sequence - not_executed), batch * (per_sequence + recompute),
                   batch * executed};
}

double megatron_gpt_model_flops(double global_batch, double seq_len, double layers, double hidden, double vocab) {
  return 72.0 * global_batch * seq_len * layers * hidden * hidden *
         (1.0 + seq_len / (6.0 * hidden) + vocab / (12.0 * hidden * layers));
}

}  // namespace clustersim
