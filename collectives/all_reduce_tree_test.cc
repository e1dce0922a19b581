#include "collectives/all_reduce_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "collectives/all_reduce_ring.h"
#include "collectives/test_layouts.h"

namespace clustersim {
namespace all_reduce_tree_test {

CollectiveRequest all_reduce(Bytes size) {
  CollectiveRequest r;
  r.op = CollectiveOp::kAllReduce;
  r.size = size;
  return r;
}

// Each tree of the pair is a tree (one root, every other node reaches it), and for an even node
// count no node has children in both trees: the pair is complementary.
TEST(DoubleBinaryTree, TreesAreComplementary) {
  for (int nodes : {2, 3, 4, 5, 8, 13, 16}) {
    std::vector<std::vector<int>> children(2, std::vector<int>(static_cast<size_t>(nodes)));
    for (int tree = 0; tree < 2; ++tree) {
      const std::vector<int> parents = double_binary_tree_parents(nodes, tree);
      EXPECT_EQ(std::count(parents.begin(), parents.end(), -1), 1) << nodes;
      for (int node = 0; node < nodes; ++node) {
        int hops = 0;
        for (int at = node; parents[static_cast<size_t>(at)] >= 0; at = parents[static_cast<size_t>(at)]) {
          ASSERT_LT(++hops, nodes) << "cycle in tree " << tree << " of " << nodes;
        }
        if (parents[static_cast<size_t>(node)] >= 0) ++children[static_cast<size_t>(tree)][static_cast<size_t>(parents[static_cast<size_t>(node)])];
      }
    }
    if (nodes % 2 == 0) {
      for (int node = 0; node < nodes; ++node) {
        EXPECT_FALSE(children[0][static_cast<size_t>(node)] > 0 && children[1][static_cast<size_t>(node)] > 0)
            << "node " << node << " of " << nodes << " is interior in both trees";
      }
    }
  }
}

// Case C1: a tree all_reduce makes an interior GPU send 2S (S/2 up and S/2 down in each tree).
TEST(TreeAllReduce, ChainGpusSendTwiceTheBuffer) {
  const int m = 8;
  const GroupLayout layout = test_layouts::nvswitch(1, m, m);
  const Bytes size = Bytes::mebibytes(64);
  const TransferPlan plan = tree_plan(all_reduce(size), layout, test_layouts::costs(), {});
  int interior = 0;
  for (int rank = 0; rank < m; ++rank) {
    if (plan.bytes_sent_by(rank) == size * 2) ++interior;
    EXPECT_LE(plan.bytes_sent_by(rank), size * 2);
  }
  EXPECT_GE(interior, m - 2);  // all but the chain's two ends
  Bytes total;
  for (int rank = 0; rank < m; ++rank) total += plan.bytes_sent_by(rank);
  // 2 trees × (m − 1) edges × (up + down) × S/2.
  EXPECT_EQ(total, size * (2 * (m - 1)));
}

// On exactly two nodes a node's NICs carry S in each direction (S/2 up in one tree, S/2 down in
// the other), where a ring carries 2(n−1)/n · S: the tree is NIC-bound at S / (R · B_nic).
TEST(TreeAllReduce, TwoNodesSendTheBufferOnceThroughTheNics) {
  const int per_node = 8;
  const GroupLayout layout = test_layouts::nvswitch(2, per_node, per_node);
  const Bytes size = Bytes::mebibytes(1024);
  const TransferPlan plan = tree_plan(all_reduce(size), layout, test_layouts::costs(), {});
  Bytes out_of_node0;
  for (const Transfer& t : plan.transfers()) {
    if (t.path == TransferPath::kInterNode && layout.ranks[static_cast<size_t>(t.src)].node == 0) out_of_node0 += t.size;
  }
  EXPECT_EQ(out_of_node0, size);
  EXPECT_EQ(tree_channels(layout), 16);
}

// A tree (or ring) only runs all_reduce.
TEST(TreeAllReduce, OnlyAllReduce) {
  std::string why;
  EXPECT_FALSE(tree_supports(CollectiveOp::kAllGather, test_layouts::nvswitch(2, 8, 8), &why));
  EXPECT_EQ(why, "tree runs all_reduce only");
  EXPECT_TRUE(tree_supports(CollectiveOp::kAllReduce, test_layouts::nvswitch(2, 8, 8), nullptr));
}

// Case C2 (closed form): 2 DGX A100-like nodes, 8 × 200 Gb/s NICs, NVLink 300 GB/s. The ring is
// NIC-bound at busbw ≈ 8 × 25 GB/s × 0.96 = 192 GB/s; the tree sends half as much over the NICs
// and ends up NVLink-bound above it, below 2(n−1)/n times the network bandwidth.
TEST(TreeAllReduce, BeatsTheRingOnTwoDgxA100Nodes) {
  UniformLayoutSpec spec;
  spec.nodes = 2;
  spec.ranks_per_node = 8;
  spec.nics_per_node = 8;
  spec.intra_bandwidth = Bandwidth::gigabytes_per_s(300);
  spec.nic_bandwidth = Bandwidth::gigabits_per_s(200);
  spec.intra_efficiency = 0.8;
  spec.nic_efficiency = 0.96;
  spec.inter_latency = Duration::microseconds(3);
  const GroupLayout layout = make_uniform_layout(spec);
  const int n = 16;
  const Bytes size = Bytes::gibibytes(4);
  const StepCosts costs = test_layouts::costs();
  const auto busbw = [&](Duration t) {
    return static_cast<double>(size.count()) / t.to_seconds() * 2.0 * (n - 1) / n / 1e9;
  };
  const double ring = busbw(ring_estimate(all_reduce(size), layout, costs));
  const double tree = busbw(tree_estimate(all_reduce(size), layout, costs));
  const double network = 8 * spec.nic_bandwidth.gigabytes_per_second() * spec.nic_efficiency;  // 192 GB/s
  EXPECT_NEAR(ring, network, 0.01 * network);
  EXPECT_GT(tree, ring);
  EXPECT_LT(tree, 2.0 * (n - 1) / n * network);
}

}  // namespace all_reduce_tree_test
}  // namespace clustersim
