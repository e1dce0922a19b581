#pragma once

// The optimizer step as ops: Megatron's (gradient norm and a fused Adam pass) and, for
// training.framework pytorch-eager, PyTorch's fused AdamW (workloads/pytorch_eager_ops.h).

#include <cstdint>
#include <vector>

#include "cost_models/precision_policy.h"
#include "workloads/op.h"
#include "workloads/training_spec.h"

namespace clustersim {

// The optimizer step over `params` parameters (the rank's optimizer shard) as memory-bound ops:
// "optimizer.grad_norm" reads the gradients once (Megatron clips by the global norm by default), and
// "optimizer.step" reads and writes each state tensor once (Adam with an fp32 master copy: reads
// grad, master, m, v; writes master, m, v and the 16-bit parameter copy; fused Adam kernels make
// one pass). With fp32_grad_copy the 16-bit gradients are first cast into the fp32 copy. Throws
// InputError for a negative count.
std::vector<Op> optimizer_step_ops(int64_t params, const PrecisionPolicy& precision, OptimizerKind optimizer);
// The optimizer step of `training`'s framework over `params` parameters in `tensors` tensors: the
// ops above for Megatron, PyTorch's fused AdamW (pytorch_eager_optimizer_ops) for pytorch-eager.
std::vector<Op> optimizer_step_ops(int64_t params, int64_t tensors, const TrainingSpec& training);

}  // namespace clustersim
