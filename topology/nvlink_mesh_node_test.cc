#include "topology/nvlink_mesh_node.h"

#include <gtest/gtest.h>

#include <set>

#include "topology/cluster.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace nvlink_mesh_node_test {

Cluster one_node(const NodeSpec& node) {
  return Cluster(test_specs::cluster(node, 1, test_specs::fabric(FabricType::kSingleSwitch)));
}

int links_between(const NodeSpec& node, int a, int b) {
  for (const NvLinkMeshEdge& e : node.mesh) {
    if ((e.gpu_a == a && e.gpu_b == b) || (e.gpu_a == b && e.gpu_b == a)) return e.links;
  }
  return 0;
}

// A direct edge of k links: one hop at k × the per-link bandwidth (PATH_NVL).
TEST(NvLinkMeshNode, DirectEdgesCarryTheirLinkCount) {
  const NodeSpec node = test_specs::mesh_node();
  const Cluster cluster = one_node(node);
  for (const NvLinkMeshEdge& edge : node.mesh) {
    const Route& route = cluster.route(edge.gpu_a, edge.gpu_b);
    ASSERT_EQ(route.links.size(), 1U);
    EXPECT_EQ(route.latency, node.nvlink_latency);
    EXPECT_EQ(cluster.bottleneck(edge.gpu_a, edge.gpu_b), node.nvlink_link_bandwidth * edge.links);
  }
}

// GPU 0 and GPU 5 have no edge; NVLink through GPU 1 or GPU 4 (PATH_NVB) gives two equal-cost
// paths, and ECMP uses both.
TEST(NvLinkMeshNode, PairsWithoutAnEdgeGoThroughOneGpu) {
  const NodeSpec node = test_specs::mesh_node();
  const Cluster cluster = one_node(node);
  ASSERT_EQ(links_between(node, 0, 5), 0);
  EXPECT_EQ(cluster.equal_cost_paths(0, 5), 2U);
  std::set<VertexId> intermediates;
  for (uint64_t hash = 0; hash < 32; ++hash) {
    const Route& route = cluster.route(0, 5, hash);
    ASSERT_EQ(route.links.size(), 2U);
    EXPECT_EQ(route.latency, node.nvlink_latency * 2);
    const VertexId via = cluster.link(route.links[0]).to;
    EXPECT_EQ(cluster.vertex_kind(via), VertexKind::kGpu);
    intermediates.insert(via);
    for (LinkId link : route.links) EXPECT_EQ(cluster.link(link).kind, LinkKind::kNvLink);
  }
  EXPECT_EQ(intermediates, (std::set<VertexId>{cluster.gpu_vertex(1), cluster.gpu_vertex(4)}));
}

// A pair more than two NVLink hops apart falls back to PCIe (NCCL forwards through at most one GPU).
TEST(NvLinkMeshNode, FarPairsFallBackToPcie) {
  NodeSpec node = test_specs::mesh_node();
  node.gpus = 4;
  node.nics = 1;
  node.mesh = {{0, 1, 1}, {1, 2, 1}, {2, 3, 1}};  // a line: 0 and 3 are three hops apart
  const Cluster cluster = one_node(node);
  EXPECT_EQ(cluster.route(0, 2).links.size(), 2U);
  for (LinkId link : cluster.route(0, 3).links) EXPECT_NE(cluster.link(link).kind, LinkKind::kNvLink);
}

// Only the used GPUs are built; edges to unused GPUs disappear and routes stay valid.
TEST(NvLinkMeshNode, UnusedGpusDropTheirEdges) {
  ClusterSpec spec = test_specs::cluster(test_specs::mesh_node(), 1, test_specs::fabric(FabricType::kSingleSwitch));
  spec.gpus_per_node = 4;
  const Cluster cluster(spec);
  EXPECT_EQ(cluster.gpu_count(), 4);
  for (GpuId a = 0; a < 4; ++a) {
    for (GpuId b = 0; b < 4; ++b) {
      if (a == b) continue;
      EXPECT_EQ(cluster.route(a, b).links.size(), 1U);  // quad 0-3 is fully connected
    }
  }
}

}  // namespace nvlink_mesh_node_test
}  // namespace clustersim
