#include "collectives/group_layout_builder.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "collectives/all_reduce_ring.h"
#include "collectives/link_efficiency.h"
#include "core/error.h"

namespace clustersim {
namespace {

// Per-GPU rate of one ring through `ring` (GPU ids, wrapping) when all its hops stream at once.
Bandwidth ring_share(const Cluster& cluster, const std::vector<GpuId>& ring) {
  std::map<LinkId, int> flows_on_link;
  for (size_t i = 0; i < ring.size(); ++i) {
    const Route& route = cluster.route(ring[i], ring[(i + 1) % ring.size()]);
    for (LinkId link : route.links) ++flows_on_link[link];
  }
  Bandwidth share;
  bool first = true;
  for (const auto& [link, flows] : flows_on_link) {
    const Bandwidth per_flow = cluster.link(link).bandwidth / flows;
    if (first || per_flow < share) share = per_flow;
    first = false;
  }
  return share;
}

// Share of a NIC's line rate left to a group's inter-node traffic by the leaf uplinks of an
// oversubscribed fabric (ratio r = downlink / uplink capacity of a leaf), when every NIC of the
// leaf carries a group of the same shape at once (the data-parallel rings of a training step).
// Per channel (NIC index), a ring over the group's nodes leaves and re-enters each leaf once; a
// leaf whose NICs serve groups with g nodes on it thus carries (ports / g) crossings per direction
// on an uplink of ports × NIC rate / r: each gets min(1, g / r) of a NIC. g is the fewest nodes
// the group has on any leaf it uses on a channel that spans several leaves; 1 when none does.
double leaf_uplink_share(const Cluster& cluster, const GroupLayout& layout, const std::vector<GpuId>& group) {
  const double r = cluster.spec().fabric.oversubscription;
  if (!(r > 1.0) || layout.node_count() < 2) return 1.0;
  std::map<int, std::map<int, int>> nodes_on_leaf;  // channel (node-local NIC) -> leaf -> nodes of the group
  for (size_t rank = 0; rank < group.size(); ++rank) {
    const auto& place = layout.ranks[rank];
    const bool first_on_node_and_nic = std::none_of(
        layout.node_ranks[static_cast<size_t>(place.node)].begin(),
        layout.node_ranks[static_cast<size_t>(place.node)].end(), [&](int other) {
          return other < static_cast<int>(rank) && layout.ranks[static_cast<size_t>(other)].nic == place.nic;
        });
    if (first_on_node_and_nic) ++nodes_on_leaf[place.nic][cluster.leaf_of(group[rank])];
  }
  double share = 1.0;
  for (const auto& [nic, leaves] : nodes_on_leaf) {
    if (leaves.size() < 2) continue;
    for (const auto& [leaf, nodes] : leaves) share = std::min(share, static_cast<double>(nodes) / r);
  }
  return share;
}

// The same for the core uplinks of a three-tier fabric's pods (three_tier_fabric.h): a pod's core
// uplinks carry its NICs' line rate / (r_leaf × r_core), and a ring over the group's nodes leaves
// and re-enters each pod once per channel; with g the fewest nodes the group has in one pod on a
// channel that spans several pods, each crossing gets min(1, g / (r_leaf × r_core)) of a NIC.
// 1 on other fabrics and for groups inside one pod.
double core_uplink_share(const Cluster& cluster, const GroupLayout& layout, const std::vector<GpuId>& group) {
  const FabricSpec& fabric = cluster.spec().fabric;
  if (fabric.type != FabricType::kThreeTier || cluster.pod_count() < 2 || layout.node_count() < 2) return 1.0;
  const double r = fabric.oversubscription * fabric.core_oversubscription;
  if (!(r > 1.0)) return 1.0;
  std::map<int, std::map<int, std::vector<int>>> nodes_in_pod;  // channel -> pod -> the group's nodes there
  for (size_t rank = 0; rank < group.size(); ++rank) {
    const auto& place = layout.ranks[rank];
    std::vector<int>& nodes = nodes_in_pod[place.nic][cluster.pod_of(group[rank])];
    if (std::find(nodes.begin(), nodes.end(), place.node) == nodes.end()) nodes.push_back(place.node);
  }
  double share = 1.0;
  for (const auto& [nic, pods] : nodes_in_pod) {
    if (pods.size() < 2) continue;
    for (const auto& [pod, nodes] : pods) share = std::min(share, static_cast<double>(nodes.size()) / r);
  }
  return share;
}

// Route figures of a group, memoised by what decides them, so that a group of 131,072 GPUs does not
// build (and keep) a route for each of its hops: a hop's latency and bottleneck follow from the two
// nodes' hardware (preset name), the two GPUs' places in them and whether their NICs share a leaf
// and whether they are in one pod (paths between two leaves of a pod all cross one spine, paths
// between pods a spine, a core switch and a spine, over links of the same kinds); a node's ring
// share from its hardware and the local GPUs in the ring.
class RouteFigures {
 public:
  explicit RouteFigures(const Cluster& cluster) : cluster_(cluster) {}

  Duration latency(GpuId a, GpuId b) { return hop(a, b).first; }
  Bandwidth bottleneck(GpuId a, GpuId b) { return hop(a, b).second; }

  // The ring share and largest hop latency of a ring of GPUs inside one node.
  std::pair<Bandwidth, Duration> intra_ring(const std::vector<GpuId>& ring) {
    std::vector<int> locals;
    for (GpuId g : ring) locals.push_back(cluster_.local_index(g));
    const auto key = std::make_pair(hardware(cluster_.node_of(ring.front())), std::move(locals));
    auto it = rings_.find(key);
    if (it != rings_.end()) return it->second;
    Duration largest;
    for (size_t i = 0; i < ring.size(); ++i) largest = std::max(largest, latency(ring[i], ring[(i + 1) % ring.size()]));
    return rings_.emplace(key, std::make_pair(ring_share(cluster_, ring), largest)).first->second;
  }

 private:
  using HopKey = std::tuple<int, int, int, int, bool, bool, bool>;
  // A small number per node preset name, so that keys compare integers, not strings.
  int hardware(int node) {
    if (hardware_of_node_.empty()) hardware_of_node_.assign(static_cast<size_t>(cluster_.node_count()), -1);
    int& id = hardware_of_node_[static_cast<size_t>(node)];
    if (id < 0) id = hardware_ids_.emplace(cluster_.node_spec(node).name, static_cast<int>(hardware_ids_.size())).first->second;
    return id;
  }
  const std::pair<Duration, Bandwidth>& hop(GpuId a, GpuId b) {
    const int na = cluster_.node_of(a);
    const int nb = cluster_.node_of(b);
    const bool same_node = na == nb;
    const HopKey key{hardware(na), cluster_.local_index(a), hardware(nb), cluster_.local_index(b), same_node,
                     !same_node && cluster_.leaf_of(a) == cluster_.leaf_of(b), cluster_.pod_of(a) == cluster_.pod_of(b)};
    auto it = hops_.find(key);
    if (it != hops_.end()) return it->second;
    const Route& route = cluster_.route(a, b);
    Bandwidth narrowest = Bandwidth::bytes_per_s(std::numeric_limits<double>::infinity());
    for (LinkId link : route.links) narrowest = std::min(narrowest, cluster_.link(link).bandwidth);
    return hops_.emplace(key, std::make_pair(route.latency, narrowest)).first->second;
  }

  const Cluster& cluster_;
  std::map<HopKey, std::pair<Duration, Bandwidth>> hops_;
  std::map<std::pair<int, std::vector<int>>, std::pair<Bandwidth, Duration>> rings_;
  std::map<std::string, int> hardware_ids_;
  std::vector<int> hardware_of_node_;
};

Bandwidth nic_line_rate(const Cluster& cluster, int node) {
  const auto& fabric_nic = cluster.spec().fabric.nic;
  return fabric_nic ? fabric_nic->bandwidth : cluster.node_spec(node).nic.bandwidth;
}

}  // namespace

void check_group(const Cluster& cluster, const std::vector<GpuId>& group) {
  if (group.empty()) throw InputError("the collective's group is empty; give at least one GPU id");
  std::map<GpuId, size_t> first_rank;
  for (size_t rank = 0; rank < group.size(); ++rank) {
    const GpuId gpu = group[rank];
    if (gpu < 0 || gpu >= cluster.gpu_count()) {
      throw InputError(fmt::format("GPU {} (rank {}) is not in the cluster; valid GPU ids are 0..{}", gpu, rank,
                                   cluster.gpu_count() - 1));
    }
    auto [it, inserted] = first_rank.emplace(gpu, rank);
    if (!inserted) {
      throw InputError(fmt::format("GPU {} appears twice in the group (ranks {} and {}); every rank needs its own GPU",
                                   gpu, it->second, rank));
    }
  }
}

GroupLayout make_group_layout(const Cluster& cluster, const std::vector<GpuId>& group) {
  check_group(cluster, group);
  GroupLayout layout;

  std::vector<int> nodes;  // cluster node ids spanned, increasing
  for (GpuId gpu : group) nodes.push_back(cluster.node_of(gpu));
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  const auto index_of_node = [&nodes](int node) {
    return static_cast<int>(std::lower_bound(nodes.begin(), nodes.end(), node) - nodes.begin());
  };

  layout.node_ranks.resize(nodes.size());
  for (size_t rank = 0; rank < group.size(); ++rank) {
    const GpuId gpu = group[rank];
    const int node = index_of_node(cluster.node_of(gpu));
    layout.ranks.push_back({node, cluster.local_index(gpu), cluster.nic_of(gpu)});
    layout.node_ranks[static_cast<size_t>(node)].push_back(static_cast<int>(rank));
  }
  for (auto& ranks_of_node : layout.node_ranks) {
    std::sort(ranks_of_node.begin(), ranks_of_node.end(), [&layout](int a, int b) {
      return layout.ranks[static_cast<size_t>(a)].local < layout.ranks[static_cast<size_t>(b)].local;
    });
  }

  // Fabric and efficiencies: the weakest spanned node decides.
  bool any_pcie = false;
  bool any_mesh = false;
  layout.intra_efficiency = 1.0;
  for (int node : nodes) {
    const NodeSpec& spec = cluster.node_spec(node);
    any_pcie = any_pcie || spec.intra == IntraNodeFabric::kPcie;
    any_mesh = any_mesh || spec.intra == IntraNodeFabric::kNvLinkMesh;
    if (spec.intra != IntraNodeFabric::kPcie) {
      layout.intra_efficiency = std::min(layout.intra_efficiency, nvlink_efficiency(spec.gpu));
    }
  }
  layout.intra_fabric = any_pcie ? IntraNodeFabric::kPcie
                                 : (any_mesh ? IntraNodeFabric::kNvLinkMesh : IntraNodeFabric::kNvSwitch);
  if (any_pcie) layout.intra_efficiency = kPcieEfficiency;
  const NodeSpec& first_spec = cluster.node_spec(nodes.front());
  layout.nvls_capable = nodes.size() == 1 && group.size() > 1 && first_spec.intra == IntraNodeFabric::kNvSwitch &&
                        first_spec.gpu.supports_nvls;
  layout.nvls_efficiency = layout.nvls_capable ? nvls_efficiency(first_spec.gpu) : 0.0;
  layout.nic_efficiency = kNicEfficiency;
  // From three nodes on (NCCL's N4 column), where each tree channel pair crosses its own NIC. On one
  // or two nodes NCCL sizes the tree by its NVLink bandwidth (bwIntra) with more channels than NICs,
  // which this model does not derive: no ceiling there (2 DGX A100: the tree beats the ring, as
  // measured in NVIDIA/nccl issue 812).
  for (size_t i = 0; nodes.size() > 2 && i < nodes.size(); ++i) {
    const TreeChannelCeilings c = tree_channel_ceilings(cluster.node_spec(nodes[i]).gpu, static_cast<int>(nodes.size()));
    if (i == 0 || c.simple < layout.tree_ceiling_simple) layout.tree_ceiling_simple = c.simple;
    if (i == 0 || c.ll128 < layout.tree_ceiling_ll128) layout.tree_ceiling_ll128 = c.ll128;
  }

  // Intra-node ring share and latency.
  RouteFigures figures(cluster);
  bool have_intra = false;
  for (size_t node = 0; node < nodes.size(); ++node) {
    const auto& ranks_of_node = layout.node_ranks[node];
    if (ranks_of_node.size() < 2) continue;
    std::vector<GpuId> ring;
    for (int rank : ranks_of_node) ring.push_back(group[static_cast<size_t>(rank)]);
    const auto [share, latency] = figures.intra_ring(ring);
    layout.intra_bandwidth = have_intra ? std::min(layout.intra_bandwidth, share) : share;
    have_intra = true;
    layout.intra_latency = std::max(layout.intra_latency, latency);
  }
  if (!have_intra) {
    layout.intra_bandwidth = first_spec.gpu.nvlink_bandwidth.is_positive() ? first_spec.gpu.nvlink_bandwidth
                                                                            : first_spec.pcie.switch_link;
  }

  // Inter-node bottleneck and latency between consecutive nodes (both directions).
  layout.nic_bandwidth = nic_line_rate(cluster, nodes.front());
  const size_t node_pairs = nodes.size() > 1 ? nodes.size() : 0;  // node k with node k+1, wrapping
  for (size_t node = 0; node < node_pairs; ++node) {
    const GpuId a = group[static_cast<size_t>(layout.node_ranks[node].front())];
    const GpuId b = group[static_cast<size_t>(layout.node_ranks[(node + 1) % nodes.size()].front())];
    layout.nic_bandwidth = std::min({layout.nic_bandwidth, figures.bottleneck(a, b), figures.bottleneck(b, a)});
    layout.inter_latency = std::max({layout.inter_latency, figures.latency(a, b), figures.latency(b, a)});
  }
  layout.nic_bandwidth = layout.nic_bandwidth * leaf_uplink_share(cluster, layout, group);
  // Pod crossings are leaf crossings too: the core tier caps what the leaf tier leaves.
  layout.nic_bandwidth = std::min(layout.nic_bandwidth, nic_line_rate(cluster, nodes.front()) *
                                                            core_uplink_share(cluster, layout, group));
  // Route latencies over every hop of the rings the ring algorithm will run.
  for (const auto& ring : ring_orders(layout)) {
    for (size_t i = 0; ring.size() > 1 && i < ring.size(); ++i) {
      const int a = ring[i];
      const int b = ring[(i + 1) % ring.size()];
      const Duration latency = figures.latency(group[static_cast<size_t>(a)], group[static_cast<size_t>(b)]);
      Duration& largest = layout.ranks[static_cast<size_t>(a)].node == layout.ranks[static_cast<size_t>(b)].node
                              ? layout.intra_latency
                              : layout.inter_latency;
      largest = std::max(largest, latency);
    }
  }
  return layout;
}

}  // namespace clustersim
