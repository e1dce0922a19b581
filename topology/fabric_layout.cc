#include "topology/fabric_layout.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace clustersim {

int FabricLayout::add_switch(VertexKind kind, std::string name) {
  kinds.push_back(kind);
  names.push_back(std::move(name));
  return static_cast<int>(kinds.size()) - 1;
}

Bandwidth leaf_port_bandwidth(const std::vector<NicPort>& ports) {
  Bandwidth widest;
  for (const NicPort& port : ports) widest = std::max(widest, port.bandwidth);
  return widest;
}

int spine_count(const FabricSpec& spec) {
  return std::max(1, static_cast<int>(std::ceil(spec.leaf_ports / spec.oversubscription - 1e-9)));
}

Bandwidth leaf_trunk_bandwidth(const FabricSpec& spec, Bandwidth port_bandwidth) {
  return port_bandwidth * (spec.leaf_ports / (spec.oversubscription * spine_count(spec)));
}

std::vector<int> add_spines(FabricLayout& layout, const std::vector<int>& leaves, const FabricSpec& spec,
                            Bandwidth port_bandwidth, const std::string& prefix) {
  const int spines = spine_count(spec);
  const Bandwidth trunk = leaf_trunk_bandwidth(spec, port_bandwidth);
  std::vector<int> spine_ids;
  for (int s = 0; s < spines; ++s) {
    spine_ids.push_back(layout.add_switch(VertexKind::kSpineSwitch, fmt::format("{}spine{}", prefix, s)));
  }
  for (int leaf : leaves) {
    for (int spine : spine_ids) layout.trunks.push_back(TrunkLink{leaf, spine, trunk});
  }
  return spine_ids;
}

void add_spine_layer(FabricLayout& layout, const std::vector<int>& leaves, const FabricSpec& spec,
                     Bandwidth port_bandwidth) {
  if (leaves.size() <= 1) return;
  add_spines(layout, leaves, spec, port_bandwidth, "");
}

}  // namespace clustersim
