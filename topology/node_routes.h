#pragma once

// Routes inside one node, on the node's own Boost.Graph (built from its NodeLayout and shared by
// every node with an equal layout). Paths are lists of node-local link indices; every pair keeps
// all its equal-cost shortest paths (up to kMaxEqualCostPaths) so the Cluster can pick one by ECMP.
//
// Policy (what NCCL's path search does, src/graph/paths.cc and topo.h path types):
//   GPU → GPU, NVSwitch node   NVLink only, through the NVSwitch                  (PATH_NVL)
//   GPU → GPU, NVLink mesh     a direct NVLink edge (PATH_NVL), else NVLink through exactly one
//                              intermediate GPU (PATH_NVB), else the PCIe tree as below
//   GPU → GPU, PCIe node       peer_to_peer: shortest PCIe path through switches and sockets
//                              (PATH_PIX/PXB/PHB/SYS); no peer_to_peer: up to the source GPU's
//                              socket, into its host memory and out again (the kHostMemory link
//                              pair: one write, one read per byte), then down to the destination,
//                              over the inter-socket link when it is on the other socket — through
//                              the root complex and host memory even below one switch
//                              (NCCL_P2P_DISABLE: "divert all traffic through the CPU")
//   GPU ↔ its NIC              shortest PCIe path; never through a GPU or another NIC
// Shortest means fewest hops within what the policy allows. Lazily computed and memoised;
// not thread-safe (the Cluster serialises calls).

#include <memory>
#include <vector>

#include "topology/node_layout.h"

namespace clustersim {

using LocalPath = std::vector<int>;  // node-local link indices, in order

class NodeRoutes {
 public:
  static constexpr size_t kMaxEqualCostPaths = 64;

  explicit NodeRoutes(NodeLayout layout);
  ~NodeRoutes();
  NodeRoutes(NodeRoutes&&) noexcept;
  NodeRoutes& operator=(NodeRoutes&&) noexcept;

  const NodeLayout& layout() const;

  // Equal-cost paths between used GPUs `src` != `dst` (local GPU indices), in a fixed order.
  // Throws InternalError when the layout has no path (a bug: validation keeps nodes connected).
  const std::vector<LocalPath>& gpu_to_gpu(int src, int dst);
  // Paths from used GPU `gpu` to its affine NIC, and back.
  const std::vector<LocalPath>& gpu_to_nic(int gpu);
  const std::vector<LocalPath>& nic_to_gpu(int gpu);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustersim
