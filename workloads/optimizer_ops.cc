// The optimizer step's ops (workloads/optimizer_ops.h).

#include "workloads/optimizer_ops.h"

#include <fmt/format.h>

#include "core/error.h"
#include "workloads/op_list_builder.h"
#include "workloads/pytorch_eager_ops.h"

namespace clustersim {

std::vector<Op> optimizer_step_ops(int64_t params, int64_t tensors, const TrainingSpec& training) {
  if (training.framework == Framework::kPytorchEager) return pytorch_eager_optimizer_ops(params, tensors);
  return optimizer_step_ops(params, training.precision, training.optimizer);
}

std::vector<Op> optimizer_step_ops(int64_t params, const PrecisionPolicy& precision, OptimizerKind optimizer) {
  if (params < 0) throw InputError(fmt::format("optimizer shard cannot hold a negative parameter count ({})", params));
  std::vector<Op> ops;
  OpListBuilder add(ops, Pass::kForward);
  const int64_t p = precision.param_bytes();
  const int64_t g = precision.grad_bytes();
  const int64_t states = optimizer_state_count(optimizer) * bytes_per_element(precision.optimizer_state_dtype);
  int64_t grad_read = g;
  if (precision.fp32_grad_copy) {
    add.memory("optimizer.grad_copy", checked_mul(params, g, "optimizer bytes"), checked_mul(params, 4, "optimizer bytes"));
    grad_read = 4;
  }
  add.memory("optimizer.grad_norm", checked_mul(params, grad_read, "optimizer bytes"), 0);
  const int64_t master = precision.master_weights ? 4 : 0;
  // With a master copy the 16-bit weights are only written; without one they are read and written.
  const int64_t read = grad_read + states + (master > 0 ? master : p);
  const int64_t written = states + p + master;
  add.memory("optimizer.step", checked_mul(params, read, "optimizer bytes"),
             checked_mul(params, written, "optimizer bytes"));
  return ops;
}

}  // namespace clustersim
