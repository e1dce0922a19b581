#include "topology/fat_tree_fabric.h"

#include <fmt/format.h>

namespace clustersim {

FabricLayout build_fat_tree_fabric(const std::vector<NicPort>& ports, const FabricSpec& spec) {
  FabricLayout layout;
  std::vector<int> leaves;
  for (size_t i = 0; i < ports.size(); ++i) {
    const size_t leaf = i / static_cast<size_t>(spec.leaf_ports);
    if (leaf == leaves.size()) {
      leaves.push_back(layout.add_switch(VertexKind::kLeafSwitch, fmt::format("leaf{}", leaf)));
    }
    layout.leaf_of_port.push_back(leaves[leaf]);
  }
  add_spine_layer(layout, leaves, spec, leaf_port_bandwidth(ports));
  return layout;
}

}  // namespace clustersim
