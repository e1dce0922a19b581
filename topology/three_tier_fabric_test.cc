#include "topology/three_tier_fabric.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "topology/cluster.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace three_tier_fabric_test {

int count_vertices(const Cluster& cluster, VertexKind kind) {
  int n = 0;
  for (VertexId v = 0; v < cluster.vertex_count(); ++v) n += cluster.vertex_kind(v) == kind ? 1 : 0;
  return n;
}

FabricSpec three_tier(FabricType pod_type, int pod_nodes, int leaf_ports, double oversubscription,
                      double core_oversubscription) {
  FabricSpec spec = test_specs::fabric(FabricType::kThreeTier, leaf_ports, oversubscription);
  spec.pod_type = pod_type;
  spec.pod_nodes = pod_nodes;
  spec.core_oversubscription = core_oversubscription;
  return spec;
}

// 8 nodes of 8 NICs, 16-port leaves (2 nodes a leaf), leaf oversubscription 2, pods of 4 nodes,
// core oversubscription 7: per pod 2 leaves and ⌈16 / 2⌉ = 8 spines; each spine has ⌈2 / 7⌉ = 1
// core uplink, to the one core switch of its plane (8 planes). A pod's core uplinks add up to its
// NICs × NIC bandwidth / (2 × 7): each tier divides by its own ratio.
TEST(ThreeTierFabric, EachTierDividesItsDownlinksByItsOversubscription) {
  const NodeSpec node = test_specs::nvswitch_node(8, 8);
  const double leaf_ratio = 2.0;
  const double core_ratio = 7.0;
  const Cluster cluster(test_specs::cluster(node, 8, three_tier(FabricType::kFatTree, 4, 16, leaf_ratio, core_ratio)));
  EXPECT_EQ(count_vertices(cluster, VertexKind::kLeafSwitch), 4);
  EXPECT_EQ(count_vertices(cluster, VertexKind::kSpineSwitch), 2 * 8);
  EXPECT_EQ(count_vertices(cluster, VertexKind::kCoreSwitch), 8);
  double pod0_core_uplink = 0;
  double leaf0_uplink = 0;
  for (const Link& link : cluster.all_links()) {
    const std::string from = cluster.vertex_name(link.from);
    if (link.kind != LinkKind::kSwitchToSwitch) continue;
    if (from.rfind("pod0/spine", 0) == 0 && cluster.vertex_kind(link.to) == VertexKind::kCoreSwitch) {
      pod0_core_uplink += link.bandwidth.bytes_per_second();
    }
    if (from == "pod0/leaf0") leaf0_uplink += link.bandwidth.bytes_per_second();
  }
  const double nic = node.nic.bandwidth.bytes_per_second();
  EXPECT_NEAR(leaf0_uplink, 16 * nic / leaf_ratio, 1e-3);
  EXPECT_NEAR(pod0_core_uplink, 4 * 8 * nic / (leaf_ratio * core_ratio), 1e-3);
}

// Same leaf: NIC → leaf → NIC; another leaf of the pod: through one of its 16 spines; another pod:
// leaf → spine → core → spine → leaf, ECMP over the 16 planes (one core switch each), two switch
// traversals more than inside the pod.
TEST(ThreeTierFabric, RoutesGoUpOnlyAsFarAsTheyMust) {
  const NodeSpec node = test_specs::nvswitch_node(8, 8);
  const FabricSpec fabric = three_tier(FabricType::kFatTree, 4, 16, 1.0, 4.0);
  const Cluster cluster(test_specs::cluster(node, 8, fabric));
  const GpuId same_leaf = 8;   // node 1: leaf 0 of pod 0
  const GpuId other_leaf = 16; // node 2: leaf 1 of pod 0
  const GpuId other_pod = 32;  // node 4: pod 1
  EXPECT_EQ(cluster.route(0, same_leaf).links.size(), 2U + 2U + 2U);
  EXPECT_EQ(cluster.route(0, other_leaf).links.size(), 2U + 4U + 2U);
  EXPECT_EQ(cluster.route(0, other_pod).links.size(), 2U + 6U + 2U);
  EXPECT_EQ(cluster.equal_cost_paths(0, other_leaf), 16U);
  EXPECT_EQ(cluster.equal_cost_paths(0, other_pod), 16U);
  EXPECT_EQ(cluster.route(0, other_pod).latency - cluster.route(0, other_leaf).latency,
            fabric.switch_latency + fabric.switch_latency);
  EXPECT_EQ(cluster.pod_count(), 2);
  EXPECT_EQ(cluster.pod_of(31), 0);
  EXPECT_EQ(cluster.pod_of(other_pod), 1);
}

// One pod holding every node is the two-tier fabric of its pod type: the same links (bandwidth,
// latency, kind, in order) and the same routes.
TEST(ThreeTierFabric, OnePodIsTheTwoTierFabric) {
  const NodeSpec node = test_specs::nvswitch_node(8, 8);
  for (FabricType type : {FabricType::kFatTree, FabricType::kRailOptimized}) {
    const Cluster two_tier(test_specs::cluster(node, 6, test_specs::fabric(type, 4, 2.0)));
    const Cluster one_pod(test_specs::cluster(node, 6, three_tier(type, 6, 4, 2.0, 7.0)));
    ASSERT_EQ(two_tier.link_count(), one_pod.link_count());
    for (size_t l = 0; l < two_tier.link_count(); ++l) {
      const Link a = two_tier.link(static_cast<LinkId>(l));
      const Link b = one_pod.link(static_cast<LinkId>(l));
      EXPECT_EQ(a.bandwidth, b.bandwidth) << l;
      EXPECT_EQ(a.latency, b.latency) << l;
      EXPECT_EQ(a.kind, b.kind) << l;
      EXPECT_EQ(a.from, b.from) << l;
      EXPECT_EQ(a.to, b.to) << l;
    }
    for (GpuId dst : {1, 9, 20, 47}) EXPECT_EQ(two_tier.route(0, dst).links, one_pod.route(0, dst).links);
    EXPECT_EQ(one_pod.pod_count(), 1);
  }
}

// Rail-optimized pods: NIC i of every node of a pod's node group on rail leaf i of the pod; the
// same rail in another pod is another leaf. The last pod may hold fewer nodes (10 nodes, pods of 4).
TEST(ThreeTierFabric, RailOptimizedPodsKeepRailsInsideThePod) {
  const NodeSpec node = test_specs::nvswitch_node(8, 8);
  const Cluster cluster(test_specs::cluster(node, 10, three_tier(FabricType::kRailOptimized, 4, 4, 1.0, 7.0)));
  EXPECT_EQ(cluster.pod_count(), 3);
  EXPECT_EQ(cluster.pod_of(9 * 8), 2);
  for (int rail = 0; rail < 8; ++rail) {
    EXPECT_EQ(cluster.leaf_of(rail), cluster.leaf_of(3 * 8 + rail));  // nodes 0 and 3: pod 0
    EXPECT_NE(cluster.leaf_of(rail), cluster.leaf_of(4 * 8 + rail));  // node 4: pod 1
    EXPECT_NE(cluster.leaf_of(rail), cluster.leaf_of(rail == 0 ? 1 : 0));
  }
  // Same rail inside the pod: one leaf, no spine; same rail in another pod: spine, core, spine.
  EXPECT_EQ(cluster.route(0, 3 * 8).links.size(), 2U + 2U + 2U);
  EXPECT_EQ(cluster.route(0, 8 * 8).links.size(), 2U + 6U + 2U);
  EXPECT_EQ(count_vertices(cluster, VertexKind::kLeafSwitch), 3 * 8);
  EXPECT_EQ(count_vertices(cluster, VertexKind::kSpineSwitch), 3 * 4);
  EXPECT_EQ(count_vertices(cluster, VertexKind::kCoreSwitch), 4 * 2);  // 4 planes × ⌈8 leaves / 7⌉
  // The last pod (2 of its 4 nodes) keeps a full pod's core uplinks: 8 leaves × NIC / (7 × 2) each.
  const Bandwidth full_pod = node.nic.bandwidth * (8.0 / (7.0 * 2));
  int uplinks = 0;
  for (const Link& link : cluster.all_links()) {
    if (link.kind != LinkKind::kSwitchToSwitch || cluster.vertex_kind(link.to) != VertexKind::kCoreSwitch) continue;
    EXPECT_NEAR(link.bandwidth.bytes_per_second(), full_pod.bytes_per_second(), 1e-6 * full_pod.bytes_per_second());
    ++uplinks;
  }
  EXPECT_EQ(uplinks, 3 * 4 * 2);  // 3 pods × 4 spines × 2 core switches of its plane
}

}  // namespace three_tier_fabric_test
}  // namespace clustersim
