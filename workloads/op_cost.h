#pragma once

#include "core/units.h"
#include "cost_models/compute_cost_model.h"
#include "workloads/op.h"

namespace clustersim {

// Kernel duration of a compute op on one GPU: GEMMs by their shape, fused attention by its executed
// FLOPs and bytes (forward or backward efficiency by the op's pass), memory-bound ops by the bytes
// they move. Throws InternalError for a communication op (collectives/ prices those).
Duration op_duration(const Op& op, const ComputeCostModel& cost);

}  // namespace clustersim
