#pragma once

#include "core/units.h"
#include "cost_models/compute_cost_model.h"
#include "workloads/op.h"

namespace clustersim {

// Kernel duration of a compute op on one GPU: GEMMs by their shape, fused attention by its executed
// FLOPs and bytes (forward or backward efficiency by the op's pass), memory-bound ops by the bytes
// they move. Throws InternalError for a communication op (collectives/ prices those).
Duration op_duration(const Op& op, const ComputeCostModel& cost);

// Full-clock power work of a compute op of kernel duration `duration` (op_duration) for the GPU's
// power model (cost_models/power_model.h): GEMMs by dtype and FLOPs, fused attention by its kernel
// FLOPs, memory-bound ops by their bytes; the kernel gap is idle. Empty without a power model.
PowerWork op_power(const Op& op, Duration duration, const ComputeCostModel& cost);

}  // namespace clustersim
