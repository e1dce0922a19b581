#include "topology/single_switch_fabric.h"

namespace clustersim {

FabricLayout build_single_switch_fabric(const std::vector<NicPort>& ports) {
  FabricLayout layout;
  const int only = layout.add_switch(VertexKind::kLeafSwitch, "switch");
  layout.leaf_of_port.assign(ports.size(), only);
  return layout;
}

}  // namespace clustersim
