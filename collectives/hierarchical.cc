#include "collectives/hierarchical.h"

#include "collectives/all_reduce_ring.h"

namespace clustersim {
namespace {

struct Stages {
  std::vector<std::vector<int>> node_rings;   // one ring per node, local order
  std::vector<Bytes> node_sizes;              // S for every node ring
  std::vector<std::vector<int>> cross_rings;  // per local index: that GPU of every node
  std::vector<Bytes> cross_sizes;             // the shard that local index holds after the reduce-scatter
};

Stages stages_of(const GroupLayout& layout, Bytes size) {
  Stages stages;
  const auto m = static_cast<int64_t>(layout.node_ranks.front().size());
  for (const auto& ranks_of_node : layout.node_ranks) {
    stages.node_rings.push_back(ranks_of_node);
    stages.node_sizes.push_back(size);
  }
  for (int64_t local = 0; local < m; ++local) {
    std::vector<int> ring;
    for (const auto& ranks_of_node : layout.node_ranks) ring.push_back(ranks_of_node[static_cast<size_t>(local)]);
    stages.cross_rings.push_back(std::move(ring));
    stages.cross_sizes.push_back(split_part(size, m, local));
  }
  return stages;
}

}  // namespace

bool hierarchical_supports(CollectiveOp op, const GroupLayout& layout, std::string* why) {
  if (op != CollectiveOp::kAllReduce) {
    if (why != nullptr) *why = "hierarchical runs all_reduce only";
    return false;
  }
  if (!layout.uniform()) {
    if (why != nullptr) *why = "hierarchical needs the same number of ranks on every node";
    return false;
  }
  return true;
}

int hierarchical_channels(const GroupLayout& layout) { return layout.max_ranks_per_node(); }

TransferPlan hierarchical_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                               const PlanOptions& options) {
  TransferPlan plan;
  if (layout.size() < 2) return plan;
  const Stages stages = stages_of(layout, request.size);
  const auto reduced = append_ring_collective(plan, CollectiveOp::kReduceScatter, stages.node_sizes,
                                              stages.node_rings, layout, costs, options, {}, costs.base);
  const auto summed = append_ring_collective(plan, CollectiveOp::kAllReduce, stages.cross_sizes, stages.cross_rings,
                                             layout, costs, options, reduced, Duration::zero());
  append_ring_collective(plan, CollectiveOp::kAllGather, stages.node_sizes, stages.node_rings, layout, costs,
                         options, summed, Duration::zero());
  return plan;
}

Duration hierarchical_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs) {
  if (layout.size() < 2) return Duration::zero();
  const Stages stages = stages_of(layout, request.size);
  return costs.base +
         ring_collective_time(CollectiveOp::kReduceScatter, stages.node_sizes, stages.node_rings, layout, costs) +
         ring_collective_time(CollectiveOp::kAllReduce, stages.cross_sizes, stages.cross_rings, layout, costs) +
         ring_collective_time(CollectiveOp::kAllGather, stages.node_sizes, stages.node_rings, layout, costs);
}

}  // namespace clustersim
