#pragma once

#include <vector>

#include "topology/fabric_layout.h"

namespace clustersim {

// FabricType::kFatTree: a two-tier leaf/spine Clos. NICs fill leaves in order (node-major, then
// NIC index), FabricSpec::leaf_ports per leaf, so a node may straddle two leaves. With more than
// one leaf, ⌈leaf_ports / oversubscription⌉ spines join every leaf; each leaf's total uplink
// bandwidth is leaf_ports × port bandwidth / oversubscription (fabric_layout.h). Spine radix is not
// limited (a real fabric this large is three-tier; its top tier is modelled as one spine layer).
FabricLayout build_fat_tree_fabric(const std::vector<NicPort>& ports, const FabricSpec& spec);

}  // namespace clustersim
