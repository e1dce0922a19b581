#pragma once

#include <vector>

#include "topology/fabric_layout.h"

namespace clustersim {

// FabricType::kRailOptimized, as in NVIDIA DGX SuperPOD reference architectures: NIC i of every
// node plugs into rail leaf i, so GPU i of all nodes talk through one switch. Nodes are taken in
// groups of FabricSpec::leaf_ports (a leaf has that many ports); group k has its own rail leaves
// "rail<i>/leaf<k>". Rails = the largest NIC count of any node (a node with fewer NICs uses the
// first rails). With more than one leaf, a spine layer joins every leaf to every spine with the
// uplink capacity of fabric_layout.h (leaf_ports × port bandwidth / oversubscription), which
// carries cross-rail and cross-group traffic.
FabricLayout build_rail_optimized_fabric(const std::vector<NicPort>& ports, const FabricSpec& spec);

}  // namespace clustersim
