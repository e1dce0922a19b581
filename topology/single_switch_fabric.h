#pragma once

#include <vector>

#include "topology/fabric_layout.h"

namespace clustersim {

// FabricType::kSingleSwitch: one non-blocking switch with a port for every NIC, so any NIC is one
// switch traversal from any other and only the NIC links limit bandwidth. (An idealisation: real
// switches have a radix — 64 ports of 400 Gb/s on a Quantum-2 NDR switch.)
FabricLayout build_single_switch_fabric(const std::vector<NicPort>& ports);

}  // namespace clustersim
