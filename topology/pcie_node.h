#pragma once

#include "topology/node_layout.h"
#include "topology/specs.h"

namespace clustersim {

// Adds a node's PCIe tree to `layout`, whose GPU vertices already exist: PcieSpec::switches PCIe
// switches, PcieSpec::sockets CPU sockets (root complexes), and NodeSpec::nics NICs.
//
// Placement (physical GPU index g of `gpus` GPUs, NIC i of `nics`, switch s of `switches`):
// GPU g sits on switch ⌊g·switches/gpus⌋, NIC i on switch ⌊i·switches/nics⌋, switch s under socket
// ⌊s·sockets/switches⌋ — so with the default affinity (GPU g → NIC ⌊g·nics/gpus⌋) a GPU and its NIC
// share a switch, as on DGX/HGX baseboards where GPUDirect RDMA stays below one PCIe switch.
// Links, each direction with its own bandwidth and PcieSpec::latency per hop:
//   GPU ↔ switch and NIC ↔ switch  PcieSpec::switch_link   (LinkKind::kPcie)
//   switch ↔ socket                PcieSpec::host_bridge   (kPcie; shared by everything below it)
//   socket ↔ socket, every pair    PcieSpec::inter_socket  (kInterSocket; UPI / xGMI)
//   socket ↔ its host memory       PcieSpec::host_memory   (kHostMemory; only without peer_to_peer:
//                                  the bounce buffers of GPU↔GPU traffic, node_routes.h; no latency)
// Every node has this tree: it is the GPU ↔ NIC path of inter-node traffic, and the GPU ↔ GPU
// path of PCIe nodes (IntraNodeFabric::kPcie) and of mesh pairs that NVLink cannot reach.
void add_pcie_tree(const NodeSpec& node, NodeLayout& layout);

}  // namespace clustersim
