#include "collectives/all_reduce_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "collectives/test_layouts.h"

namespace clustersim {
namespace all_reduce_ring_test {

CollectiveRequest request(CollectiveOp op, Bytes size, int root = 0) {
  CollectiveRequest r;
  r.op = op;
  r.size = size;
  r.root = root;
  return r;
}

Bytes total_sent(const TransferPlan& plan) {
  Bytes total;
  for (const Transfer& t : plan.transfers()) {
    if (t.src != t.dst) total += t.size;
  }
  return total;
}

// Case C1: a ring all_reduce of S bytes makes every GPU send (and receive) 2(n−1)/n · S.
TEST(RingAllReduce, EveryRankSendsTwoNMinusOneOverNOfTheBuffer) {
  for (int n : {2, 3, 4, 8}) {
    const GroupLayout layout = test_layouts::nvswitch(1, n, n);
    const Bytes size = Bytes::mebibytes(n * 3);  // divisible by n
    const TransferPlan plan = ring_plan(request(CollectiveOp::kAllReduce, size), layout, test_layouts::costs(), {});
    for (int rank = 0; rank < n; ++rank) {
      EXPECT_EQ(plan.bytes_sent_by(rank), Bytes::of(2 * (n - 1) * size.count() / n)) << "n=" << n;
      EXPECT_EQ(plan.bytes_received_by(rank), Bytes::of(2 * (n - 1) * size.count() / n)) << "n=" << n;
    }
  }
}

// Block sizes differ by one byte when S is not divisible by n; every step still moves S in total.
TEST(RingAllReduce, UnevenBuffersAreSplitExactly) {
  const int n = 7;
  const GroupLayout layout = test_layouts::nvswitch(1, n, n);
  const Bytes size = Bytes::of(1'000'003);
  const TransferPlan plan = ring_plan(request(CollectiveOp::kAllReduce, size), layout, test_layouts::costs(), {});
  EXPECT_EQ(total_sent(plan), size * (2 * (n - 1)));
  for (int rank = 0; rank < n; ++rank) {
    const int64_t ideal = 2 * (n - 1) * size.count() / n;
    EXPECT_LE(std::abs(plan.bytes_sent_by(rank).count() - ideal), 2 * (n - 1));
  }
}

// all_gather (S = gathered output) and reduce_scatter (S = input): (n−1)/n · S per rank.
TEST(RingAllReduce, AllGatherAndReduceScatterSendNMinusOneOverN) {
  const int n = 8;
  const GroupLayout layout = test_layouts::nvswitch(1, n, n);
  const Bytes size = Bytes::mebibytes(64);
  for (CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
    const TransferPlan plan = ring_plan(request(op, size), layout, test_layouts::costs(), {});
    for (int rank = 0; rank < n; ++rank) EXPECT_EQ(plan.bytes_sent_by(rank), Bytes::of((n - 1) * size.count() / n));
  }
}

// Case C5: a 9,839,837,184-byte reduce_scatter over 4 GPUs moves exactly 3/4 of it per rank
// (7,379,877,888 bytes, beyond 32 bits) and 3 × S in total.
TEST(RingAllReduce, LargeReduceScatterHasNoWrapAround) {
  const Bytes size = Bytes::of(9'839'837'184);
  const GroupLayout layout = test_layouts::nvswitch(1, 4, 4);
  const TransferPlan plan = ring_plan(request(CollectiveOp::kReduceScatter, size), layout, test_layouts::costs(), {});
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(plan.bytes_sent_by(rank), Bytes::of(7'379'877'888));
  EXPECT_EQ(total_sent(plan), Bytes::of(29'519'511'552));
  // Closed form: base + 3 intra steps + 3/4 S over the GPU's link share.
  const StepCosts costs = test_layouts::costs();
  const Bandwidth link = layout.intra_bandwidth * layout.intra_efficiency;
  EXPECT_EQ(ring_estimate(request(CollectiveOp::kReduceScatter, size), layout, costs),
            costs.base + costs.intra_step * 3 + transfer_time(Bytes::of(7'379'877'888), link));
}

// One node: t = base + 2(n−1)·intra_step + 2(n−1)/n · S / (B · efficiency · protocol).
TEST(RingAllReduce, SingleNodeClosedForm) {
  const int n = 8;
  const GroupLayout layout = test_layouts::nvswitch(1, n, n);
  const Bytes size = Bytes::gibibytes(1);
  for (double protocol : {1.0, 120.0 / 128.0, 0.5}) {
    const StepCosts costs = test_layouts::costs(protocol);
    const Bandwidth rate = layout.intra_bandwidth * (layout.intra_efficiency * protocol);
    EXPECT_EQ(ring_estimate(request(CollectiveOp::kAllReduce, size), layout, costs),
              costs.base + costs.intra_step * (2 * (n - 1)) + transfer_time(Bytes::of(2 * (n - 1) * size.count() / n), rate));
  }
}

// NCCL spreads the channels' node crossings over the NICs: with 8 NICs per node, 8 rings; every
// NIC carries exactly one ring out of and one ring into its node, and a ring leaves node k through
// the NIC it enters node k + 1 by (same rail).
TEST(RingAllReduce, RingsSpreadNodeCrossingsOverTheNics) {
  const int nodes = 4;
  const int per_node = 8;
  const GroupLayout layout = test_layouts::nvswitch(nodes, per_node, per_node);
  const auto rings = ring_orders(layout);
  ASSERT_EQ(rings.size(), 8u);
  std::vector<std::multiset<int>> exits(nodes), entries(nodes);
  for (const auto& ring : rings) {
    ASSERT_EQ(ring.size(), static_cast<size_t>(nodes * per_node));
    EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), ring.size());  // every rank once
    for (size_t i = 0; i < ring.size(); ++i) {
      const auto& from = layout.ranks[static_cast<size_t>(ring[i])];
      const auto& to = layout.ranks[static_cast<size_t>(ring[(i + 1) % ring.size()])];
      if (from.node == to.node) continue;
      exits[static_cast<size_t>(from.node)].insert(from.nic);
      entries[static_cast<size_t>(to.node)].insert(to.nic);
      if (to.node == from.node + 1) {
        EXPECT_EQ(from.nic, to.nic) << "a ring changes rail between nodes";
      }
    }
  }
  for (int node = 0; node < nodes; ++node) {
    EXPECT_EQ(exits[static_cast<size_t>(node)], (std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(entries[static_cast<size_t>(node)], (std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  }
  EXPECT_EQ(ring_channels(layout), 16);  // NCCL duplicates each ring into two channels
}

// With fewer NICs than GPUs, the rings follow the NICs: 2 NICs → 2 rings.
TEST(RingAllReduce, RingCountFollowsTheNicsInUse) {
  EXPECT_EQ(ring_orders(test_layouts::nvswitch(2, 8, 2)).size(), 2u);
  EXPECT_EQ(ring_orders(test_layouts::nvswitch(2, 8, 8)).size(), 8u);
  EXPECT_EQ(ring_orders(test_layouts::nvswitch(1, 8, 8)).size(), 1u);  // one node: one path
}

// Multi-node, NIC-bound: each ring's crossing has a NIC to itself, so
// t = base + latency + (2(n−1)/n · S/R) / (B_nic · efficiency) when NVLink is faster.
TEST(RingAllReduce, MultiNodeIsBoundByTheNicPerRing) {
  const int nodes = 2;
  const int per_node = 8;
  const int n = nodes * per_node;
  const GroupLayout layout = test_layouts::nvswitch(nodes, per_node, per_node);
  const StepCosts costs = test_layouts::costs();
  const Bytes size = Bytes::of(int64_t{1} << 34);  // divisible by n × rings
  const int rings = 8;
  const Bytes per_ring_per_rank = Bytes::of(2 * (n - 1) * (size.count() / rings) / n);
  // Each ring crosses 2 of its 16 hops between nodes: mean step (14·intra + 2·inter)/16.
  const Duration latency = Duration::picoseconds((costs.intra_step * 14 + costs.inter_step * 2).ps() * (2 * (n - 1)) / n);
  const Bandwidth nic = layout.nic_bandwidth * layout.nic_efficiency;
  // NVLink share per ring: each GPU sends 7 of its 8 rings over NVLink.
  ASSERT_GT(layout.intra_bandwidth * (layout.intra_efficiency / 7), nic);
  EXPECT_EQ(ring_estimate(request(CollectiveOp::kAllReduce, size), layout, costs),
            costs.base + latency + transfer_time(per_ring_per_rank, nic));
}

// Pipelined chain: every rank but the last forwards S; t = base + (n−1) steps + S / B.
TEST(RingBroadcast, ChainFromTheRoot) {
  const int n = 8;
  const GroupLayout layout = test_layouts::nvswitch(1, n, n);
  const Bytes size = Bytes::mebibytes(256);
  for (CollectiveOp op : {CollectiveOp::kBroadcast, CollectiveOp::kReduce}) {
    const int root = 5;
    const TransferPlan plan = ring_plan(request(op, size, root), layout, test_layouts::costs(), {});
    ASSERT_EQ(plan.size(), static_cast<size_t>(n - 1));
    for (const Transfer& t : plan.transfers()) EXPECT_EQ(t.size, size);
    // The root only sends (broadcast) or only receives (reduce).
    if (op == CollectiveOp::kBroadcast) {
      EXPECT_EQ(plan.bytes_received_by(root), Bytes::zero());
    } else {
      EXPECT_EQ(plan.bytes_sent_by(root), Bytes::zero());
    }
    const StepCosts costs = test_layouts::costs();
    EXPECT_EQ(ring_estimate(request(op, size, root), layout, costs),
              costs.base + costs.intra_step * (n - 1) +
                  transfer_time(size, layout.intra_bandwidth * layout.intra_efficiency));
  }
}

// Phases: small rings run step by step; a large ring is merged into fewer, bigger phases within
// the flow budget, without changing the bytes.
TEST(RingAllReduce, PhasesStayWithinTheFlowBudget) {
  const GroupLayout small = test_layouts::nvswitch(1, 8, 8);
  const TransferPlan stepwise = ring_plan(request(CollectiveOp::kAllReduce, Bytes::mebibytes(8)), small,
                                          test_layouts::costs(), {});
  EXPECT_EQ(stepwise.size(), static_cast<size_t>(8 * 14));  // 2(n−1) steps × n ranks

  const GroupLayout large = test_layouts::nvswitch(32, 8, 8);  // 256 ranks, 8 rings
  PlanOptions options;
  options.flows_per_phase_budget = 8192;
  const Bytes size = Bytes::gibibytes(1);
  const TransferPlan merged = ring_plan(request(CollectiveOp::kAllReduce, size), large, test_layouts::costs(), options);
  EXPECT_LE(merged.size(), static_cast<size_t>(options.flows_per_phase_budget));
  EXPECT_EQ(total_sent(merged), size * (2 * (256 - 1)));
}

TEST(RingAllReduce, SupportsTheRingOpsOnly) {
  const GroupLayout layout = test_layouts::nvswitch(1, 8, 8);
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                          CollectiveOp::kBroadcast, CollectiveOp::kReduce}) {
    EXPECT_TRUE(ring_supports(op, layout, nullptr));
  }
  std::string why;
  EXPECT_FALSE(ring_supports(CollectiveOp::kAllToAll, layout, &why));
  EXPECT_NE(why.find("all_reduce"), std::string::npos);
}

}  // namespace all_reduce_ring_test
}  // namespace clustersim
