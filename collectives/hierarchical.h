#pragma once

// Hierarchical all_reduce (as in Horovod's hierarchical allreduce and 2D-torus all-reduce,
// Mikami et al. 2018, arXiv:1811.05233): a ring reduce-scatter inside every node, then for each
// local index l a ring all_reduce across nodes among the GPUs with local index l (each on its own
// NIC) over the 1/m shard they hold, then a ring all-gather inside every node. Every stage waits
// for the previous one to finish everywhere.
//
// Per GPU: 2(m − 1)/m · S over NVLink and 2(N − 1)/N · S/m over its NIC (m ranks per node, N
// nodes). Needs the same number of ranks on every node. NCCL has no such algorithm (its tree plays
// that role), so the automatic selector never picks it; it is available on request.

#include <string>

#include "collectives/algorithm.h"

namespace clustersim {

bool hierarchical_supports(CollectiveOp op, const GroupLayout& layout, std::string* why);
TransferPlan hierarchical_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                               const PlanOptions& options);
Duration hierarchical_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs);
int hierarchical_channels(const GroupLayout& layout);

}  // namespace clustersim
