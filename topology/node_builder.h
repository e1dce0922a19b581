#pragma once

#include "topology/node_layout.h"
#include "topology/specs.h"

namespace clustersim {

// Builds the local graph of one node using its first `gpus_used` GPUs (1 ≤ gpus_used ≤
// node.gpus): GPU vertices, the intra-node fabric (nvswitch_node.h, nvlink_mesh_node.h, or none
// for PCIe nodes), and the PCIe tree with the NICs (pcie_node.h); fills the GPU → NIC affinity
// (NodeSpec::nic_of_gpu, default ⌊g·nics/gpus⌋ over the node's physical GPU count).
// `node` must have passed validate_cluster_spec().
NodeLayout build_node_layout(const NodeSpec& node, int gpus_used);

// The NIC GPU `gpu` (physical index) of `node` uses: nic_of_gpu[gpu], or ⌊gpu·nics/gpus⌋ when the
// spec leaves nic_of_gpu empty. Requires node.nics ≥ 1.
int default_or_given_nic(const NodeSpec& node, int gpu);

}  // namespace clustersim
