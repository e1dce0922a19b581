#include "topology/cluster.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace cluster_test {

TEST(Cluster, GpuIdsAreNodeMajor) {
  const NodeSpec node = test_specs::nvswitch_node();
  const Cluster cluster(test_specs::cluster(node, 3, test_specs::fabric(FabricType::kRailOptimized)));
  EXPECT_EQ(cluster.gpu_count(), 3 * node.gpus);
  EXPECT_EQ(cluster.node_count(), 3);
  for (GpuId g = 0; g < cluster.gpu_count(); ++g) {
    EXPECT_EQ(cluster.node_of(g), g / node.gpus);
    EXPECT_EQ(cluster.local_index(g), g % node.gpus);
    EXPECT_EQ(cluster.vertex_kind(cluster.gpu_vertex(g)), VertexKind::kGpu);
  }
  EXPECT_EQ(cluster.first_gpu_of_node(2), 2 * node.gpus);
  EXPECT_EQ(cluster.vertex_name(cluster.gpu_vertex(13)), "node1/gpu5");
}

// Every physical link is two directed links of equal bandwidth.
// Link names are built from their ends' vertex names, the node prefix once: the names traces and
// messages print ("node3/gpu5->nvswitch", "node0/nic0->leaf0", "leaf0->spine1").
TEST(Cluster, NamesLinksByTheirEnds) {
  const Cluster cluster(test_specs::cluster(test_specs::pcie_node(true), 3, test_specs::fabric(FabricType::kFatTree, 4)));
  int intra = 0, fabric = 0;
  for (LinkId l = 0; l < static_cast<LinkId>(cluster.link_count()); ++l) {
    const std::string& from = cluster.vertex_name(cluster.link(l).from);
    const std::string& to = cluster.vertex_name(cluster.link(l).to);
    const std::string prefix = from.substr(0, from.find('/') + 1);
    if (!prefix.empty() && to.starts_with(prefix)) {
      ++intra;
      EXPECT_EQ(cluster.link_name(l), from + "->" + to.substr(prefix.size()));
    } else {
      ++fabric;
      EXPECT_EQ(cluster.link_name(l), from + "->" + to);
    }
  }
  EXPECT_GT(intra, 0);
  EXPECT_GT(fabric, 0);
  EXPECT_EQ(cluster.link_name(0).rfind("node0/", 0), 0u) << cluster.link_name(0);
  EXPECT_EQ(cluster.link_name(0).find("node0/", 1), std::string::npos) << cluster.link_name(0);
  EXPECT_THROW(cluster.link_name(static_cast<LinkId>(cluster.link_count())), InternalError);
}

TEST(Cluster, LinksComeInBothDirections) {
  const Cluster cluster(test_specs::cluster(test_specs::pcie_node(true), 3, test_specs::fabric(FabricType::kFatTree, 4)));
  std::multiset<std::pair<VertexId, VertexId>> forward;
  for (const Link& link : cluster.all_links()) forward.insert({link.from, link.to});
  for (LinkId l = 0; l < static_cast<LinkId>(cluster.link_count()); ++l) {
    const Link& link = cluster.link(l);
    EXPECT_EQ(forward.count({link.to, link.from}), 1U) << cluster.link_name(l);
    EXPECT_TRUE(link.bandwidth.is_positive()) << cluster.link_name(l);
  }
}

// The case L7 cluster: a 4-GPU and a 6-GPU node build, and every pair has a finite route.
TEST(Cluster, HeterogeneousNodesBuild) {
  ClusterSpec spec;
  spec.nodes = {test_specs::nvswitch_node(4, 4), test_specs::nvswitch_node(6, 2)};
  spec.fabric = test_specs::fabric(FabricType::kRailOptimized);
  const Cluster cluster(spec);
  EXPECT_EQ(cluster.gpu_count(), 10);
  EXPECT_EQ(cluster.gpus_in_node(1), 6);
  EXPECT_EQ(cluster.first_gpu_of_node(1), 4);
  EXPECT_EQ(cluster.nic_of(4 + 5), 5 * 2 / 6);
  for (GpuId a = 0; a < 10; ++a) {
    for (GpuId b = 0; b < 10; ++b) {
      if (a == b) continue;
      const Route& route = cluster.route(a, b);
      EXPECT_FALSE(route.links.empty());
      EXPECT_GT(route.latency, Duration::zero());
      EXPECT_EQ(cluster.link(route.links.front()).from, cluster.gpu_vertex(a));
      EXPECT_EQ(cluster.link(route.links.back()).to, cluster.gpu_vertex(b));
      for (size_t i = 1; i < route.links.size(); ++i) {
        EXPECT_EQ(cluster.link(route.links[i - 1]).to, cluster.link(route.links[i]).from);
      }
    }
  }
}

// Inter-node routes leave through the sender's affine NIC and enter through the receiver's.
TEST(Cluster, InterNodeRoutesUseTheAffineNics) {
  NodeSpec node = test_specs::nvswitch_node(8, 4);
  node.nic_of_gpu = {3, 3, 2, 2, 1, 1, 0, 0};
  const Cluster cluster(test_specs::cluster(node, 2, test_specs::fabric(FabricType::kSingleSwitch)));
  for (GpuId g = 0; g < 8; ++g) {
    EXPECT_EQ(cluster.nic_of(g), node.nic_of_gpu[g]);
    std::set<VertexId> nics;
    for (LinkId link : cluster.route(g, 8 + (7 - g)).links) {
      const VertexId to = cluster.link(link).to;
      if (cluster.vertex_kind(to) == VertexKind::kNic) nics.insert(to);
    }
    EXPECT_EQ(nics, (std::set<VertexId>{cluster.nic_vertex(0, node.nic_of_gpu[g]), cluster.nic_vertex(1, node.nic_of_gpu[7 - g])}));
  }
}

// The bottleneck of an inter-node route on a DGX-like node is the NIC (50 GB/s < PCIe 64 GB/s).
TEST(Cluster, BottleneckIsTheNarrowestLink) {
  const NodeSpec node = test_specs::nvswitch_node();
  const Cluster cluster(test_specs::cluster(node, 2, test_specs::fabric(FabricType::kRailOptimized)));
  EXPECT_EQ(cluster.bottleneck(0, 8), std::min(node.nic.bandwidth, node.pcie.switch_link));
  EXPECT_EQ(cluster.bottleneck(0, 1), node.gpu.nvlink_bandwidth);
}

TEST(Cluster, RoutesAreCachedAndDeterministic) {
  const ClusterSpec spec = test_specs::cluster(test_specs::nvswitch_node(), 8, test_specs::fabric(FabricType::kFatTree, 16));
  const Cluster a(spec);
  const Cluster b(spec);
  for (uint64_t hash = 0; hash < 16; ++hash) {
    const Route& first = a.route(3, 60, hash);
    EXPECT_EQ(&first, &a.route(3, 60, hash));
    EXPECT_EQ(first.links, b.route(3, 60, hash).links);
  }
}

// The batched lookup returns route()'s own references, in order, for requests that are new to the
// cache (it grows while the batch is looked up), repeated, and within one node; bad ids throw.
TEST(Cluster, BatchedRoutesAreTheSingleLookups) {
  const ClusterSpec spec = test_specs::cluster(test_specs::nvswitch_node(), 8, test_specs::fabric(FabricType::kFatTree, 16));
  const Cluster batched(spec);
  const Cluster single(spec);
  std::vector<Cluster::RouteRequest> requests;
  for (GpuId src = 0; src < 64; src += 3) {
    for (GpuId dst = 1; dst < 64; dst += 5) {
      if (src != dst) requests.push_back({src, dst, static_cast<uint64_t>(src * 131 + dst)});
    }
  }
  requests.push_back(requests.front());  // a repeat: the same reference
  std::vector<const Route*> out(requests.size());
  batched.routes(requests, out);
  for (size_t i = 0; i < requests.size(); ++i) {
    const Cluster::RouteRequest& r = requests[i];
    EXPECT_EQ(out[i], &batched.route(r.src, r.dst, r.flow_hash)) << i;
    EXPECT_EQ(out[i]->links, single.route(r.src, r.dst, r.flow_hash).links) << i;
  }
  EXPECT_EQ(out.front(), out.back());
  std::vector<const Route*> one(1);
  const std::vector<Cluster::RouteRequest> bad = {{2, 2, 0}};
  EXPECT_THROW(batched.routes(bad, one), InputError);
}

TEST(Cluster, RejectsBadIds) {
  const Cluster cluster(test_specs::cluster(test_specs::nvswitch_node(), 1, test_specs::fabric(FabricType::kSingleSwitch)));
  EXPECT_THROW(cluster.route(0, 8), InputError);
  EXPECT_THROW(cluster.route(-1, 0), InputError);
  EXPECT_THROW(cluster.route(2, 2), InputError);
  EXPECT_THROW(cluster.node_of(8), InputError);
  EXPECT_THROW(cluster.gpus_in_node(1), InputError);
  EXPECT_THROW(cluster.nic_vertex(0, 8), InputError);
  EXPECT_THROW(Cluster(ClusterSpec{}), InputError);
}

// 2,048 DGX-H100-like nodes (16,384 GPUs) on a rail-optimized fabric build in well under a second,
// and looking up routes does not compute all n² of them. (Release build: ~30 ms to build, ~40 ms
// for the 16,384 first routes; benchmarks/network_benchmark measures both. The route bound is
// loose so that sanitizer builds pass; an n² routing table would take minutes.)
// 16,384 GPUs (2,048 NVSwitch nodes, rail-optimized) build and every GPU has a route to a GPU of
// another node. How fast: benchmarks/network_benchmark.cc (BM_BuildCluster).
TEST(Cluster, SixteenThousandGpusBuildAndRoute) {
  const Cluster cluster(test_specs::cluster(test_specs::nvswitch_node(), 2048, test_specs::fabric(FabricType::kRailOptimized)));
  EXPECT_EQ(cluster.gpu_count(), 16384);
  for (GpuId g = 0; g < cluster.gpu_count(); ++g) {
    const Route& route = cluster.route(g, (g + 8) % cluster.gpu_count());
    ASSERT_FALSE(route.links.empty());
  }
}

}  // namespace cluster_test
}  // namespace clustersim
