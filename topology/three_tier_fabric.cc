#include "topology/three_tier_fabric.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

namespace clustersim {

FabricLayout build_three_tier_fabric(const std::vector<NicPort>& ports, const FabricSpec& spec) {
  FabricLayout layout;
  const Bandwidth port_bandwidth = leaf_port_bandwidth(ports);
  std::vector<std::vector<int>> leaves_of_pod;
  std::map<std::pair<int, int>, int> rail_leaf;  // (node group, rail) → switch, of the current pod
  int first_port_of_pod = 0;
  for (size_t i = 0; i < ports.size(); ++i) {
    const NicPort& port = ports[i];
    const int pod = port.node / spec.pod_nodes;
    if (pod == static_cast<int>(leaves_of_pod.size())) {
      leaves_of_pod.emplace_back();
      rail_leaf.clear();
      first_port_of_pod = static_cast<int>(i);
    }
    std::vector<int>& leaves = leaves_of_pod.back();
    if (spec.pod_type == FabricType::kRailOptimized) {
      const int group = (port.node - pod * spec.pod_nodes) / spec.leaf_ports;
      auto [it, inserted] = rail_leaf.try_emplace({group, port.nic}, 0);
      if (inserted) {
        it->second = layout.add_switch(VertexKind::kLeafSwitch, fmt::format("pod{}/rail{}/leaf{}", pod, port.nic, group));
        leaves.push_back(it->second);
      }
      layout.leaf_of_port.push_back(it->second);
    } else {
      const size_t leaf = static_cast<size_t>(static_cast<int>(i) - first_port_of_pod) / static_cast<size_t>(spec.leaf_ports);
      if (leaf == leaves.size()) {
        leaves.push_back(layout.add_switch(VertexKind::kLeafSwitch, fmt::format("pod{}/leaf{}", pod, leaf)));
      }
      layout.leaf_of_port.push_back(leaves[leaf]);
    }
  }
  if (leaves_of_pod.size() == 1) {
    add_spine_layer(layout, leaves_of_pod.front(), spec, port_bandwidth);
    return layout;
  }
  std::vector<std::vector<int>> spines_of_pod;
  size_t most_leaves = 0;
  for (size_t pod = 0; pod < leaves_of_pod.size(); ++pod) {
    spines_of_pod.push_back(add_spines(layout, leaves_of_pod[pod], spec, port_bandwidth, fmt::format("pod{}/", pod)));
    most_leaves = std::max(most_leaves, leaves_of_pod[pod].size());
  }
  const int planes = spine_count(spec);
  const int per_plane = std::max(
      1, static_cast<int>(std::ceil(static_cast<double>(most_leaves) / spec.core_oversubscription - 1e-9)));
  const Bandwidth leaf_trunk = leaf_trunk_bandwidth(spec, port_bandwidth);
  std::vector<std::vector<int>> cores(static_cast<size_t>(planes));
  for (int plane = 0; plane < planes; ++plane) {
    for (int u = 0; u < per_plane; ++u) {
      cores[plane].push_back(layout.add_switch(VertexKind::kCoreSwitch, fmt::format("plane{}/core{}", plane, u)));
    }
  }
  // Every pod is built alike, for the most leaves: a pod the cluster fills only in part (the last)
  // keeps a whole pod's core uplinks.
  const Bandwidth trunk =
      leaf_trunk * (static_cast<double>(most_leaves) / (spec.core_oversubscription * per_plane));
  for (size_t pod = 0; pod < leaves_of_pod.size(); ++pod) {
    for (int plane = 0; plane < planes; ++plane) {
      for (int core : cores[plane]) layout.trunks.push_back(TrunkLink{spines_of_pod[pod][plane], core, trunk});
    }
  }
  return layout;
}

}  // namespace clustersim
