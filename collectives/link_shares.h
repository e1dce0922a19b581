#pragma once

// The bandwidth term of the closed forms: when an algorithm streams several flows at once, each
// flow gets an equal share of the GPU port or NIC it leaves and enters by. A GPU's intra-node port
// is its NVSwitch uplink or PCIe link (all its flows share it); on an NVLink mesh it is the link to
// that peer. Ports and NICs are counted per direction (links are full duplex), as the flow model
// does. Used only for analytical estimates; flow fidelity lets the FlowNetwork share
// the real links max-min fairly.

#include <map>

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
  std::map<int64_t, int> gpu_out_, gpu_in_;
  std::map<int64_t, int> nic_out_, nic_in_;
};

}  // namespace clustersim
