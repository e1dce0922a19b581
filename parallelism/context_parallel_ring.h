#pragma once

// The attention core of a context-parallel layer run as TransformerEngine's ring (p2p context-
// parallel attention): cp steps of attention, each overlapped with the asynchronous K/V exchange
// that brings the next block. Internal to parallelism/ (the program builder).

#include <vector>

#include "cost_models/compute_cost_model.h"
#include "parallelism/step_program.h"
#include "workloads/op.h"

namespace clustersim {

// One attention core run as the ring of context parallelism (TransformerEngine's p2p context-
// parallel attention): cp steps, each computing the attention of the K/V block in hand (1/cp of the
// core: with zig-zag sharding every step has the same causal work) while the block moves on to the
// next rank: an asynchronous exchange on the context group (every rank sends `exchange.comm_bytes`
// to its successor: an all-to-all whose matrix has one block per row), waited for before the next
// step. The last step has nothing left to send.
// `exchange` is the workload's kCpKvExchange op and `core` the fused attention core after it;
// `exchange_host` and `core_host` are their host costs per call; `merge` as in push_compute.
void append_ring(std::vector<ProgramOp>& out, const Op& exchange, const Op& core, const ComputeCostModel& cost,
                 int cp, Duration exchange_host, Duration core_host, bool merge);

}  // namespace clustersim
