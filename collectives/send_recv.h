#pragma once

// Point-to-point send/recv: group[0] sends `size` bytes to group[1] (a pipeline-parallel
// activation or gradient). One flow; NCCL splits it over its p2p channels, which share the same
// route (the sender's NIC for inter-node peers), so the route's bottleneck sets the rate.
// Latency: one step at NCCL's ring step latency for the hop (NCCL has no separate p2p model).

#include <string>

#include "collectives/algorithm.h"

namespace clustersim {

bool send_recv_supports(CollectiveOp op, const GroupLayout& layout, std::string* why);
TransferPlan send_recv_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                            const PlanOptions& options);
Duration send_recv_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs);
int send_recv_channels(const GroupLayout& layout);

}  // namespace clustersim
