#include "topology/pcie_node.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "topology/cluster.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace pcie_node_test {

std::vector<VertexKind> vertices_on(const Cluster& cluster, const Route& route) {
  std::vector<VertexKind> kinds;
  for (LinkId link : route.links) kinds.push_back(cluster.vertex_kind(cluster.link(link).to));
  return kinds;
}

bool uses_kind(const Cluster& cluster, const Route& route, LinkKind kind) {
  return std::any_of(route.links.begin(), route.links.end(),
                     [&](LinkId link) { return cluster.link(link).kind == kind; });
}

Cluster one_node(bool peer_to_peer) {
  return Cluster(test_specs::cluster(test_specs::pcie_node(peer_to_peer), 1, test_specs::fabric(FabricType::kSingleSwitch)));
}

// With peer-to-peer, GPUs below one switch talk through the switch alone: GPU → switch → GPU.
TEST(PcieNode, PeerToPeerStaysBelowTheSwitch) {
  const Cluster cluster = one_node(true);
  const Route& route = cluster.route(0, 1);
  EXPECT_EQ(vertices_on(cluster, route), (std::vector<VertexKind>{VertexKind::kPcieSwitch, VertexKind::kGpu}));
  const PcieSpec pcie = test_specs::pcie_node(true).pcie;
  EXPECT_EQ(route.latency, pcie.latency * 2);
  EXPECT_EQ(cluster.bottleneck(0, 1), pcie.switch_link);
}

// Across sockets: GPU → switch → CPU → CPU → switch → GPU, limited by the inter-socket link.
TEST(PcieNode, CrossSocketTrafficUsesTheInterSocketLink) {
  const Cluster cluster = one_node(true);
  const Route& route = cluster.route(0, 7);
  EXPECT_EQ(vertices_on(cluster, route),
            (std::vector<VertexKind>{VertexKind::kPcieSwitch, VertexKind::kCpu, VertexKind::kCpu, VertexKind::kPcieSwitch,
                                     VertexKind::kGpu}));
  const PcieSpec pcie = test_specs::pcie_node(true).pcie;
  EXPECT_EQ(cluster.bottleneck(0, 7), std::min({pcie.switch_link, pcie.host_bridge, pcie.inter_socket}));
}

// Without peer-to-peer, even GPUs on one switch bounce through the CPU: into its host memory and
// out again (a host-memory link each way, no latency of their own).
TEST(PcieNode, WithoutPeerToPeerTrafficGoesThroughTheCpu) {
  const Cluster cluster = one_node(false);
  EXPECT_EQ(vertices_on(cluster, cluster.route(0, 1)),
            (std::vector<VertexKind>{VertexKind::kPcieSwitch, VertexKind::kCpu, VertexKind::kHostMemory, VertexKind::kCpu,
                                     VertexKind::kPcieSwitch, VertexKind::kGpu}));
  EXPECT_TRUE(uses_kind(cluster, cluster.route(0, 7), LinkKind::kHostMemory));
  EXPECT_EQ(cluster.bottleneck(0, 1), std::min(test_specs::pcie_node(false).pcie.switch_link,
                                               test_specs::pcie_node(false).pcie.host_memory));
  EXPECT_FALSE(uses_kind(cluster, cluster.route(0, 1), LinkKind::kInterSocket));
  EXPECT_TRUE(uses_kind(cluster, cluster.route(0, 7), LinkKind::kInterSocket));
  EXPECT_TRUE(uses_kind(cluster, cluster.route(7, 0), LinkKind::kInterSocket));
  EXPECT_EQ(cluster.route(0, 1).latency, test_specs::pcie_node(false).pcie.latency * 4);
}

// Placement: GPU g on switch ⌊g·switches/gpus⌋; its default NIC ⌊g·nics/gpus⌋ on the same switch.
TEST(PcieNode, GpuAndDefaultNicShareASwitch) {
  const NodeSpec node = test_specs::pcie_node(true);
  const Cluster cluster(test_specs::cluster(node, 2, test_specs::fabric(FabricType::kSingleSwitch)));
  for (GpuId g = 0; g < node.gpus; ++g) {
    EXPECT_EQ(cluster.nic_of(g), g * node.nics / node.gpus);
    const Route& route = cluster.route(g, node.gpus + g);
    // GPU → switch → NIC → switch → NIC → switch → GPU
    ASSERT_EQ(route.links.size(), 6U);
    EXPECT_EQ(cluster.link(route.links[1]).to, cluster.nic_vertex(0, cluster.nic_of(g)));
  }
}

}  // namespace pcie_node_test
}  // namespace clustersim
