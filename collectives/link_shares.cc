#include "collectives/link_shares.h"

#include <algorithm>

#include "core/error.h"

namespace clustersim {
namespace {

int64_t nic_key(const GroupLayout& layout, int rank) {
  const auto& place = layout.ranks[static_cast<size_t>(rank)];
  return static_cast<int64_t>(place.node) * (int64_t{1} << 32) + place.nic;
}

template <typename Key>
int count_of(const std::unordered_map<Key, int>& counts, Key key) {
  auto it = counts.find(key);
  check_invariant(it != counts.end(), "LinkShares::rate asked for a flow that was not added");
  return it->second;
}

// On an NVLink mesh a GPU's links go to different peers: flows to different peers do not share.
// Elsewhere (NVSwitch uplink, PCIe port) every flow of a GPU shares its one port.
int64_t intra_out_key(const GroupLayout& layout, int src, int dst) {
  return layout.intra_fabric == IntraNodeFabric::kNvLinkMesh ? (int64_t{src} << 32) + dst : src;
}
int64_t intra_in_key(const GroupLayout& layout, int src, int dst) {
  return layout.intra_fabric == IntraNodeFabric::kNvLinkMesh ? (int64_t{src} << 32) + dst : dst;
}

}  // namespace

void LinkShares::add(const GroupLayout& layout, int src, int dst) {
  if (crosses_nodes(layout, src, dst)) {
    ++nic_out_[nic_key(layout, src)];
    ++nic_in_[nic_key(layout, dst)];
  } else {
    ++gpu_out_[intra_out_key(layout, src, dst)];
    ++gpu_in_[intra_in_key(layout, src, dst)];
  }
}

Bandwidth LinkShares::rate(const GroupLayout& layout, int src, int dst, double efficiency) const {
  if (crosses_nodes(layout, src, dst)) {
    const int sharing = std::max(count_of(nic_out_, nic_key(layout, src)), count_of(nic_in_, nic_key(layout, dst)));
    return layout.nic_bandwidth * (layout.nic_efficiency * efficiency / sharing);
  }
  const int sharing =
      std::max(count_of(gpu_out_, intra_out_key(layout, src, dst)), count_of(gpu_in_, intra_in_key(layout, src, dst)));
  return layout.intra_bandwidth * (layout.intra_efficiency * efficiency / sharing);
}

}  // namespace clustersim
