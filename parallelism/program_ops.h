#pragma once

// Appending to a pass program (parallelism/step_program.h) as the program builder does: compute ops
// merged into the one before them where allowed, and the handles of the asynchronous collectives a
// pass starts, kept apart here so that the ring, the tensor-parallel overlaps and the ZeRO-3 gathers
// never share one. Internal to parallelism/.

#include <string_view>
#include <vector>

#include "parallelism/step_program.h"
#include "parallelism/tp_comm_overlap.h"

namespace clustersim {

// Appends a compute op of `duration`, `flops`, `power` and host side `host`; with `merge` it joins
// the compute op before it when that has the same work kind (HostWork::then keeps the host side
// exact).
void push_compute(std::vector<ProgramOp>& out, std::string_view label, WorkKind work, Duration duration, double flops,
                  const PowerWork& power, const HostWork& host, bool merge);

// Appends `ops`, merging compute ops as push_compute does.
void append(std::vector<ProgramOp>& out, const std::vector<ProgramOp>& ops, bool merge);

// Handle of the context-parallel ring's exchange in a pass (one at a time: started, waited, reused);
// the tensor-parallel overlaps use kFirstTpOverlapHandle .. + kTpOverlapHandles − 1
// (parallelism/tp_comm_overlap.h), ZeRO-3 parameter gathers kFirstGatherHandle and up.
constexpr int kRingHandle = 0;
constexpr int kFirstGatherHandle = kFirstTpOverlapHandle + kTpOverlapHandles;
static_assert(kFirstTpOverlapHandle > kRingHandle);

}  // namespace clustersim
