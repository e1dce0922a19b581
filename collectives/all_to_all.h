#pragma once

// All-to-all by direct exchange, as NCCL implements it (one ncclSend/ncclRecv per peer inside a
// group call, all in flight at once; nccl-tests alltoall.cu): rank i sends block (i, j) to rank j
// for every j ≠ i. Blocks come from CollectiveRequest::all_to_all_bytes (an n × n matrix, row =
// sender, column = receiver) when given, else every block is size / n.
//
// Nothing synchronises the peers, so the time is set by the busiest port: for each rank the
// bytes it sends and receives over NVLink (peers on its node) and over its NIC (peers elsewhere,
// summed over the ranks that share the NIC), each over that port's bandwidth. With skewed MoE
// routing the busiest receiver sets the time, not the average (DeepEP issues 250 and 343;
// case C4). The flow plan starts every block as its own flow; if n(n − 1) exceeds the per-phase
// flow budget, pairwise rounds k = 1 .. n−1 (rank i → i + k) are grouped into phases, and a rank
// starts a phase when its own sends of the previous phase have finished.
// Latency: NCCL prices point-to-point steps like ring steps; one step is charged.

#include <string>
#include <vector>

#include "collectives/algorithm.h"

namespace clustersim {

bool all_to_all_supports(CollectiveOp op, const GroupLayout& layout, std::string* why);
TransferPlan all_to_all_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                             const PlanOptions& options);
Duration all_to_all_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs);
int all_to_all_channels(const GroupLayout& layout);

// Bytes rank `src` sends to rank `dst` (src ≠ dst) under the request's matrix or even split.
Bytes all_to_all_block(const CollectiveRequest& request, int ranks, int src, int dst);

}  // namespace clustersim
