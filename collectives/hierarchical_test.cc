#include "collectives/hierarchical.h"

#include <gtest/gtest.h>

#include "collectives/test_layouts.h"

namespace clustersim {
namespace hierarchical_test {

CollectiveRequest all_reduce(Bytes size) {
  CollectiveRequest r;
  r.op = CollectiveOp::kAllReduce;
  r.size = size;
  return r;
}

// Per GPU: 2(m−1)/m · S over NVLink (reduce-scatter + all-gather inside the node) and
// 2(N−1)/N · S/m over its NIC (the cross-node all_reduce of its shard).
TEST(HierarchicalAllReduce, TrafficPerGpu) {
  const int nodes = 4;
  const int m = 8;
  const GroupLayout layout = test_layouts::nvswitch(nodes, m, m);
  const Bytes size = Bytes::of(int64_t{m} * nodes * 1'000'000);
  const TransferPlan plan = hierarchical_plan(all_reduce(size), layout, test_layouts::costs(), {});
  for (int rank = 0; rank < nodes * m; ++rank) {
    Bytes intra, inter;
    for (const Transfer& t : plan.transfers()) {
      if (t.src != rank || t.dst == rank) continue;
      (t.path == TransferPath::kInterNode ? inter : intra) += t.size;
    }
    EXPECT_EQ(intra, Bytes::of(2 * (m - 1) * size.count() / m));
    EXPECT_EQ(inter, Bytes::of(2 * (nodes - 1) * (size.count() / m) / nodes));
  }
}

// Closed form: the three stages one after the other.
TEST(HierarchicalAllReduce, ClosedFormIsTheSumOfItsStages) {
  const int nodes = 4;
  const int m = 8;
  const GroupLayout layout = test_layouts::nvswitch(nodes, m, m);
  const Bytes size = Bytes::of(int64_t{m} * nodes * 1'000'000);
  const StepCosts costs = test_layouts::costs();
  const Bandwidth nvlink = layout.intra_bandwidth * layout.intra_efficiency;
  const Bandwidth nic = layout.nic_bandwidth * layout.nic_efficiency;
  const Duration intra_stage = costs.intra_step * (m - 1) + transfer_time(Bytes::of((m - 1) * size.count() / m), nvlink);
  const Duration inter_stage = costs.inter_step * (2 * (nodes - 1)) +
                               transfer_time(Bytes::of(2 * (nodes - 1) * (size.count() / m) / nodes), nic);
  EXPECT_EQ(hierarchical_estimate(all_reduce(size), layout, costs), costs.base + intra_stage * 2 + inter_stage);
}

TEST(HierarchicalAllReduce, NeedsTheSameRanksOnEveryNode) {
  GroupLayout layout = test_layouts::nvswitch(2, 4, 4);
  layout.node_ranks[1].pop_back();
  layout.ranks.pop_back();
  std::string why;
  EXPECT_FALSE(hierarchical_supports(CollectiveOp::kAllReduce, layout, &why));
  EXPECT_NE(why.find("same number of ranks"), std::string::npos);
}

}  // namespace hierarchical_test
}  // namespace clustersim
