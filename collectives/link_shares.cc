#include "collectives/link_shares.h"

#include <algorithm>

#include "core/error.h"

namespace clustersim {
namespace {

int checked_count(int count) {
  check_invariant(count > 0, "LinkShares::rate asked for a flow that was not added");
  return count;
}

int mesh_count(const std::unordered_map<int64_t, int>& counts, int64_t key) {
  auto it = counts.find(key);
  check_invariant(it != counts.end(), "LinkShares::rate asked for a flow that was not added");
  return it->second;
}

int64_t mesh_key(int a, int b) { return (int64_t{a} << 32) + b; }

}  // namespace

void LinkShares::size_for(const GroupLayout& layout) {
  if (sized_) {
    check_invariant(layout.ranks.size() == ranks_, "LinkShares: every call passes the same layout");
    return;
  }
  sized_ = true;
  ranks_ = layout.ranks.size();
  int nics = 0;
  for (const auto& place : layout.ranks) nics = std::max(nics, place.nic + 1);
  nic_stride_ = static_cast<size_t>(nics);
  gpu_out_.assign(ranks_, 0);
  gpu_in_.assign(ranks_, 0);
  nic_out_.assign(layout.node_ranks.size() * nic_stride_, 0);
  nic_in_.assign(layout.node_ranks.size() * nic_stride_, 0);
}

size_t LinkShares::nic_index(const GroupLayout& layout, int rank) const {
  const auto& place = layout.ranks[static_cast<size_t>(rank)];
  return static_cast<size_t>(place.node) * nic_stride_ + static_cast<size_t>(place.nic);
}

// On an NVLink mesh a GPU's links go to different peers: flows to different peers do not share.
// Elsewhere (NVSwitch uplink, PCIe port) every flow of a GPU shares its one port.
void LinkShares::add(const GroupLayout& layout, int src, int dst) {
  if (sized_) {
    check_invariant(layout.ranks.size() == ranks_, "LinkShares: every call passes the same layout");
  } else {
    size_for(layout);  // the first call sizes the counts (not inlined: a ring over 131,072 GPUs adds millions)
  }
  if (crosses_nodes(layout, src, dst)) {
    ++nic_out_[nic_index(layout, src)];
    ++nic_in_[nic_index(layout, dst)];
  } else if (layout.intra_fabric == IntraNodeFabric::kNvLinkMesh) {
    ++mesh_out_[mesh_key(src, dst)];
    ++mesh_in_[mesh_key(src, dst)];
  } else {
    ++gpu_out_[static_cast<size_t>(src)];
    ++gpu_in_[static_cast<size_t>(dst)];
  }
}

Bandwidth LinkShares::rate(const GroupLayout& layout, int src, int dst, double efficiency) const {
  check_invariant(sized_ && layout.ranks.size() == ranks_, "LinkShares::rate asked for a flow that was not added");
  if (crosses_nodes(layout, src, dst)) {
    const int sharing =
        std::max(checked_count(nic_out_[nic_index(layout, src)]), checked_count(nic_in_[nic_index(layout, dst)]));
    return layout.nic_bandwidth * (layout.nic_efficiency * efficiency / sharing);
  }
  const int sharing = layout.intra_fabric == IntraNodeFabric::kNvLinkMesh
                          ? std::max(mesh_count(mesh_out_, mesh_key(src, dst)), mesh_count(mesh_in_, mesh_key(src, dst)))
                          : std::max(checked_count(gpu_out_[static_cast<size_t>(src)]),
                                     checked_count(gpu_in_[static_cast<size_t>(dst)]));
  return layout.intra_bandwidth * (layout.intra_efficiency * efficiency / sharing);
}

}  // namespace clustersim
