#include "topology/rail_optimized_fabric.h"

#include <gtest/gtest.h>

#include "topology/cluster.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace rail_optimized_fabric_test {

VertexId leaf_of(const Cluster& cluster, const Route& route) {
  for (LinkId link : route.links) {
    if (cluster.link(link).kind == LinkKind::kNicToSwitch) return cluster.link(link).to;
  }
  return -1;
}

int switches_on(const Cluster& cluster, const Route& route) {
  int n = 0;
  for (LinkId link : route.links) {
    const VertexKind kind = cluster.vertex_kind(cluster.link(link).to);
    n += (kind == VertexKind::kLeafSwitch || kind == VertexKind::kSpineSwitch) ? 1 : 0;
  }
  return n;
}

// GPU i of every node in a group shares rail leaf i: one switch between them.
TEST(RailOptimizedFabric, SameRailIsOneSwitch) {
  const NodeSpec node = test_specs::nvswitch_node();
  const Cluster cluster(test_specs::cluster(node, 4, test_specs::fabric(FabricType::kRailOptimized, 32)));
  for (int i = 0; i < node.gpus; ++i) {
    const Route& route = cluster.route(i, 3 * node.gpus + i);
    EXPECT_EQ(switches_on(cluster, route), 1);
    EXPECT_EQ(cluster.vertex_name(leaf_of(cluster, route)), "rail" + std::to_string(i) + "/leaf0");
  }
  // GPU 0 → GPU 1 of another node crosses rails: leaf → spine → leaf.
  EXPECT_EQ(switches_on(cluster, cluster.route(0, node.gpus + 1)), 3);
  EXPECT_EQ(cluster.equal_cost_paths(0, node.gpus + 1), 32U);  // one path per spine
}

// More nodes than a leaf has ports: groups of leaf_ports nodes get their own rail leaves.
TEST(RailOptimizedFabric, GroupsOfNodesGetTheirOwnLeaves) {
  const NodeSpec node = test_specs::nvswitch_node();
  const Cluster cluster(test_specs::cluster(node, 6, test_specs::fabric(FabricType::kRailOptimized, 4)));
  const GpuId node5_gpu2 = 5 * node.gpus + 2;
  EXPECT_EQ(cluster.vertex_name(leaf_of(cluster, cluster.route(node5_gpu2, 2))), "rail2/leaf1");
  EXPECT_EQ(switches_on(cluster, cluster.route(2, node5_gpu2)), 3);           // group 0 → group 1
  EXPECT_EQ(switches_on(cluster, cluster.route(2, 3 * node.gpus + 2)), 1);  // same group, same rail
}

// A node with fewer NICs uses the first rails; its GPUs share them by the default affinity.
TEST(RailOptimizedFabric, NodesWithFewerNicsUseTheFirstRails) {
  ClusterSpec spec = test_specs::cluster(test_specs::nvswitch_node(8, 8), 2, test_specs::fabric(FabricType::kRailOptimized));
  spec.nodes[1] = test_specs::nvswitch_node(8, 2);
  const Cluster cluster(spec);
  for (int g = 0; g < 8; ++g) {
    const int rail = g * 2 / 8;  // default affinity on the 2-NIC node
    EXPECT_EQ(cluster.nic_of(8 + g), rail);
    EXPECT_EQ(switches_on(cluster, cluster.route(rail, 8 + g)), 1);  // node 0's GPU `rail` is on that rail
    EXPECT_EQ(cluster.vertex_name(leaf_of(cluster, cluster.route(8 + g, 0))), "rail" + std::to_string(rail) + "/leaf0");
  }
}

}  // namespace rail_optimized_fabric_test
}  // namespace clustersim
