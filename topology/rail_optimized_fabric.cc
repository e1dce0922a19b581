#include "topology/rail_optimized_fabric.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

namespace clustersim {

FabricLayout build_rail_optimized_fabric(const std::vector<NicPort>& ports, const FabricSpec& spec) {
  FabricLayout layout;
  std::map<std::pair<int, int>, int> leaf_of_group_rail;  // (group, rail) → switch, created in port order
  std::vector<int> leaves;
  for (const NicPort& port : ports) {
    const int group = port.node / spec.leaf_ports;
    auto [it, inserted] = leaf_of_group_rail.try_emplace({group, port.nic}, 0);
    if (inserted) {
      it->second = layout.add_switch(VertexKind::kLeafSwitch, fmt::format("rail{}/leaf{}", port.nic, group));
      leaves.push_back(it->second);
    }
    layout.leaf_of_port.push_back(it->second);
  }
  add_spine_layer(layout, leaves, spec, leaf_port_bandwidth(ports));
  return layout;
}

}  // namespace clustersim
