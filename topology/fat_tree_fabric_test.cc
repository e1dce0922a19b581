#include "topology/fat_tree_fabric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "topology/cluster.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace fat_tree_fabric_test {

int count_vertices(const Cluster& cluster, VertexKind kind) {
  int n = 0;
  for (VertexId v = 0; v < cluster.vertex_count(); ++v) n += cluster.vertex_kind(v) == kind ? 1 : 0;
  return n;
}

// NICs fill leaves in order; ⌈leaf_ports / oversubscription⌉ spines; each leaf's uplinks add up to
// leaf_ports × NIC bandwidth / oversubscription.
TEST(FatTreeFabric, LeafUplinksAreDownlinksOverOversubscription) {
  const NodeSpec node = test_specs::nvswitch_node(8, 8);
  const int leaf_ports = 16;
  const double oversubscription = 3.0;
  const Cluster cluster(test_specs::cluster(node, 5, test_specs::fabric(FabricType::kFatTree, leaf_ports, oversubscription)));
  const int nics = 5 * node.nics;
  const int leaves = (nics + leaf_ports - 1) / leaf_ports;
  const int spines = static_cast<int>(std::ceil(leaf_ports / oversubscription));
  EXPECT_EQ(count_vertices(cluster, VertexKind::kLeafSwitch), leaves);
  EXPECT_EQ(count_vertices(cluster, VertexKind::kSpineSwitch), spines);
  const VertexId leaf0 = cluster.link(cluster.route(0, 8 * 4).links[2]).to;  // GPU 0's NIC → its leaf
  double uplink = 0;
  for (const Link& link : cluster.all_links()) {
    if (link.from == leaf0 && link.kind == LinkKind::kSwitchToSwitch) uplink += link.bandwidth.bytes_per_second();
  }
  EXPECT_NEAR(uplink, leaf_ports * node.nic.bandwidth.bytes_per_second() / oversubscription, 1e-3);
}

// Same leaf: NIC → leaf → NIC. Different leaves: NIC → leaf → spine → leaf → NIC, with ECMP over
// every spine, and latency NIC + 3 switches + NIC on the fabric part.
TEST(FatTreeFabric, CrossLeafRoutesSpreadOverSpines) {
  const NodeSpec node = test_specs::nvswitch_node(8, 8);
  const FabricSpec fabric = test_specs::fabric(FabricType::kFatTree, 16, 1.0);
  const Cluster cluster(test_specs::cluster(node, 4, fabric));
  const GpuId same_leaf = 8;    // node 1 shares leaf 0 with node 0 (16 ports)
  const GpuId other_leaf = 16;  // node 2 is on leaf 1
  EXPECT_EQ(cluster.route(0, same_leaf).links.size(), 2U + 2U + 2U);
  EXPECT_EQ(cluster.equal_cost_paths(0, same_leaf), 1U);
  EXPECT_EQ(cluster.equal_cost_paths(0, other_leaf), 16U);
  std::set<VertexId> spines;
  for (uint64_t hash = 0; hash < 256; ++hash) {
    const Route& route = cluster.route(0, other_leaf, hash);
    ASSERT_EQ(route.links.size(), 2U + 4U + 2U);
    spines.insert(cluster.link(route.links[3]).to);
  }
  EXPECT_EQ(spines.size(), 16U);
  const Route& route = cluster.route(0, other_leaf);
  const Duration pcie_part = node.pcie.latency * 4;
  EXPECT_EQ(route.latency, pcie_part + node.nic.latency * 2 + fabric.switch_latency * 3);
}

// Oversubscription 2 with one spine: the single trunk carries half a leaf's downlink bandwidth.
TEST(FatTreeFabric, OneSpineCarriesHalfTheDownlinks) {
  const NodeSpec node = test_specs::nvswitch_node(1, 1);
  const Cluster cluster(test_specs::cluster(node, 4, test_specs::fabric(FabricType::kFatTree, 2, 2.0)));
  const Route& route = cluster.route(0, 2);
  const Link& trunk = cluster.link(route.links[3]);
  EXPECT_EQ(trunk.kind, LinkKind::kSwitchToSwitch);
  EXPECT_DOUBLE_EQ(trunk.bandwidth.bytes_per_second(), 2 * node.nic.bandwidth.bytes_per_second() / 2.0);
}

}  // namespace fat_tree_fabric_test
}  // namespace clustersim
