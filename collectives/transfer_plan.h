#pragma once

// The output of a collective algorithm: point-to-point transfers between ranks, each starting when
// the transfers it depends on have completed, and completing no earlier than its fixed latency
// (pipeline fill, protocol step overheads, wire latency) plus its bytes over the rate it gets. A
// plan knows nothing about links or queues; the CollectiveRunner turns each transfer into a flow on
// the FlowNetwork, started `latency − route latency` after its dependencies (at once when the
// route alone is slower), so that the route's own latency is not counted twice.

#include <cstdint>
#include <span>
#include <vector>

#include "core/units.h"

namespace clustersim {

// Which transport carries a transfer. It selects the transport efficiency the runner applies
// (GroupLayout::intra_efficiency, nic_efficiency, nvls_efficiency).
enum class TransferPath {
  kIntraNode,   // GPU to GPU inside a node (NVLink or PCIe)
  kInterNode,   // through the NICs and the fabric
  kNvlsSwitch,  // NVLink traffic of an in-switch (NVLS) reduction or multicast
};

struct Transfer {
  int32_t src = 0;  // rank index in the group
  int32_t dst = 0;  // rank index in the group; src == dst is a zero-cost join point
  Bytes size;       // payload bytes, before protocol and transport overheads
  Duration latency;  // fixed time from the dependencies' completion to this transfer's, bytes aside
  TransferPath path = TransferPath::kIntraNode;
  uint32_t channel = 0;  // ring/tree channel; feeds the ECMP hash so channels may take different spines
};

class TransferPlan {
 public:
  // Appends `transfer`, to start after every transfer in `after` (indices returned by earlier
  // add() calls). Returns its index. Throws InternalError for a dependency that is not earlier.
  int32_t add(const Transfer& transfer, std::span<const int32_t> after = {});

  size_t size() const { return transfers_.size(); }
  const Transfer& transfer(size_t index) const { return transfers_[index]; }
  const std::vector<Transfer>& transfers() const { return transfers_; }
  std::span<const int32_t> dependencies(size_t index) const;

  // Sum of payload bytes that `rank` sends / receives over the whole plan.
  Bytes bytes_sent_by(int32_t rank) const;
  Bytes bytes_received_by(int32_t rank) const;

 private:
  std::vector<Transfer> transfers_;
  std::vector<int32_t> dependency_begin_{0};  // CSR offsets into dependencies_, one past each transfer
  std::vector<int32_t> dependencies_;
};

}  // namespace clustersim
