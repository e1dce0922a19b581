#include "topology/nvswitch_node.h"

#include <gtest/gtest.h>

#include "topology/cluster.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace nvswitch_node_test {

ClusterSpec one_node(const NodeSpec& node) { return test_specs::cluster(node, 1, test_specs::fabric(FabricType::kSingleSwitch)); }

// GPU → NVSwitch → GPU: two NVLink hops at the GPU's NVLink bandwidth, nvlink_latency in total.
TEST(NvSwitchNode, RouteGoesThroughTheSwitchAtFullNvLinkBandwidth) {
  const NodeSpec node = test_specs::nvswitch_node();
  const Cluster cluster(one_node(node));
  ASSERT_EQ(cluster.gpu_count(), node.gpus);
  for (GpuId a = 0; a < node.gpus; ++a) {
    for (GpuId b = 0; b < node.gpus; ++b) {
      if (a == b) continue;
      const Route& route = cluster.route(a, b);
      ASSERT_EQ(route.links.size(), 2U);
      const Link& up = cluster.link(route.links[0]);
      const Link& down = cluster.link(route.links[1]);
      EXPECT_EQ(up.from, cluster.gpu_vertex(a));
      EXPECT_EQ(cluster.vertex_kind(up.to), VertexKind::kNvSwitch);
      EXPECT_EQ(down.to, cluster.gpu_vertex(b));
      EXPECT_EQ(up.kind, LinkKind::kNvLink);
      EXPECT_EQ(route.latency, node.nvlink_latency);
      EXPECT_EQ(cluster.bottleneck(a, b), node.gpu.nvlink_bandwidth);
      EXPECT_EQ(cluster.equal_cost_paths(a, b), 1U);
    }
  }
}

// Intra-node NVLink traffic never crosses a NIC or PCIe link, even with GPU and NIC on one switch.
TEST(NvSwitchNode, IntraNodeRoutesUseOnlyNvLink) {
  const Cluster cluster(test_specs::cluster(test_specs::nvswitch_node(), 2, test_specs::fabric(FabricType::kRailOptimized)));
  for (GpuId a = 0; a < 8; ++a) {
    for (GpuId b = 0; b < 8; ++b) {
      if (a == b) continue;
      for (LinkId link : cluster.route(a, b).links) EXPECT_EQ(cluster.link(link).kind, LinkKind::kNvLink);
    }
  }
}

// Odd latencies split without losing a picosecond.
TEST(NvSwitchNode, LatencySplitIsExact) {
  NodeSpec node = test_specs::nvswitch_node(2, 1);
  node.nvlink_latency = Duration::picoseconds(1001);
  const Cluster cluster(one_node(node));
  EXPECT_EQ(cluster.route(0, 1).latency, node.nvlink_latency);
  EXPECT_EQ(cluster.route(1, 0).latency, node.nvlink_latency);
}

}  // namespace nvswitch_node_test
}  // namespace clustersim
