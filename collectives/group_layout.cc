#include "collectives/group_layout.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "core/error.h"

namespace clustersim {

int GroupLayout::max_ranks_per_node() const {
  size_t most = 0;
  for (const auto& ranks_of_node : node_ranks) most = std::max(most, ranks_of_node.size());
  return static_cast<int>(most);
}

bool GroupLayout::uniform() const {
  for (const auto& ranks_of_node : node_ranks) {
    if (ranks_of_node.size() != node_ranks.front().size()) return false;
  }
  return true;
}

int GroupLayout::nics_on_node(int node) const {
  std::set<int> nics;
  for (int rank : node_ranks.at(static_cast<size_t>(node))) nics.insert(ranks[static_cast<size_t>(rank)].nic);
  return static_cast<int>(nics.size());
}

int GroupLayout::min_nics_per_node() const {
  int fewest = 0;
  for (int node = 0; node < node_count(); ++node) {
    const int nics = nics_on_node(node);
    fewest = node == 0 ? nics : std::min(fewest, nics);
  }
  return fewest;
}

GroupLayout make_uniform_layout(const UniformLayoutSpec& spec) {
  if (spec.nodes < 1) throw InputError(fmt::format("nodes must be at least 1 (got {})", spec.nodes));
  if (spec.ranks_per_node < 1) {
    throw InputError(fmt::format("ranks_per_node must be at least 1 (got {})", spec.ranks_per_node));
  }
  if (spec.nics_per_node < 1) {
    throw InputError(fmt::format("nics_per_node must be at least 1 (got {})", spec.nics_per_node));
  }
  GroupLayout layout;
  layout.node_ranks.resize(static_cast<size_t>(spec.nodes));
  for (int node = 0; node < spec.nodes; ++node) {
    for (int local = 0; local < spec.ranks_per_node; ++local) {
      const int rank = node * spec.ranks_per_node + local;
      layout.ranks.push_back({node, local, local * spec.nics_per_node / spec.ranks_per_node});
      layout.node_ranks[static_cast<size_t>(node)].push_back(rank);
    }
  }
  layout.intra_fabric = spec.intra_fabric;
  layout.nvls_capable = spec.nvls_capable;
  layout.intra_bandwidth = spec.intra_bandwidth;
  layout.nic_bandwidth = spec.nic_bandwidth;
  layout.intra_efficiency = spec.intra_efficiency;
  layout.nic_efficiency = spec.nic_efficiency;
  layout.nvls_efficiency = spec.nvls_efficiency;
  layout.intra_latency = spec.intra_latency;
  layout.inter_latency = spec.inter_latency;
  return layout;
}

}  // namespace clustersim
