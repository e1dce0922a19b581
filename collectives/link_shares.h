#pragma once

// The bandwidth term of the closed forms: when an algorithm streams several flows at once, each
// flow gets an equal share of the GPU port or NIC it leaves and enters by. A GPU's intra-node port
// is its NVSwitch uplink or PCIe link (all its flows share it); on an NVLink mesh it is the link to
// that peer. Ports and NICs are counted per direction (links are full duplex), as the flow model
// does. Used only for analytical estimates; flow fidelity lets the FlowNetwork share
// the real links max-min fairly.

#include <unordered_map>
#include <vector>

#include "collectives/group_layout.h"
#include "collectives/hops.h"
#include "core/units.h"

namespace clustersim {

class LinkShares {
 public:
  // Counts one flow from rank `src` to rank `dst` (indices into the layout).
  void add(const GroupLayout& layout, int src, int dst);
  // Rate of one such flow: the layout's intra-node bandwidth (or NIC bandwidth, when the ranks are
  // on different nodes) times its transport efficiency times `efficiency`, divided by the largest
  // number of counted flows on the sender's or receiver's port. Throws InternalError for a pair
  // that was never counted.
  Bandwidth rate(const GroupLayout& layout, int src, int dst, double efficiency) const;

 private:
  // Counts are dense arrays over the layout's ranks and (node, NIC) pairs, sized by the first
  // layout added (a ring over 131,072 GPUs counts millions of flows); an NVLink mesh's per-peer
  // ports, sparse, stay in hash maps. Every call must pass the same layout.
  void size_for(const GroupLayout& layout);
  size_t nic_index(const GroupLayout& layout, int rank) const;
  bool sized_ = false;
  size_t ranks_ = 0;
  size_t nic_stride_ = 0;
  std::vector<int> gpu_out_, gpu_in_;  // by rank (NVSwitch or PCIe port)
  std::vector<int> nic_out_, nic_in_;  // by node · nic_stride + NIC
  std::unordered_map<int64_t, int> mesh_out_, mesh_in_;
};

// The longest of many transfers, transfer_time(size, rate) for each, with one transfer_time call:
// transfer_time rounds size / rate up to a picosecond, a monotone function of the ratio, so the
// slowest transfer is the one of the largest ratio (a ring over 18,432 GPUs prices 1.3 M hops).
class SlowestTransfer {
 public:
  void add(Bytes size, Bandwidth rate) {
    const long double ratio = transfer_picoseconds(size, rate);  // what transfer_time rounds up
    if (!any_ || ratio > ratio_) {
      any_ = true;
      ratio_ = ratio;
      size_ = size;
      rate_ = rate;
    }
  }
  // transfer_time of the slowest transfer added; zero when none was.
  Duration time() const { return any_ ? transfer_time(size_, rate_) : Duration::zero(); }

 private:
  bool any_ = false;
  long double ratio_ = 0;
  Bytes size_;
  Bandwidth rate_;
};

}  // namespace clustersim
