#pragma once

// The switches of an inter-node fabric and how they are joined, before they are placed in a
// Cluster. Builders (single_switch_fabric.h, fat_tree_fabric.h, rail_optimized_fabric.h) fill it
// from the list of NIC ports; the Cluster adds the NIC ↔ leaf links (NIC bandwidth) and the
// switch ↔ switch links with FabricSpec::switch_latency.

#include <string>
#include <vector>

#include "core/units.h"
#include "topology/cluster.h"
#include "topology/specs.h"

namespace clustersim {

// One NIC to attach: node index, NIC index inside the node, and its bandwidth per direction.
struct NicPort {
  int node = 0;
  int nic = 0;
  Bandwidth bandwidth;
};

// A physical switch ↔ switch link; both directions get `bandwidth`.
struct TrunkLink {
  int a = 0;  // index into FabricLayout::kinds
  int b = 0;
  Bandwidth bandwidth;
};

struct FabricLayout {
  std::vector<VertexKind> kinds;   // per switch: kLeafSwitch or kSpineSwitch
  std::vector<std::string> names;  // per switch: "leaf3", "spine0", "rail2/leaf1", "switch"
  std::vector<int> leaf_of_port;   // per NicPort (same order as the input): the switch it plugs into
  std::vector<TrunkLink> trunks;

  int add_switch(VertexKind kind, std::string name);
};

// Bandwidth of one leaf port: the largest NIC bandwidth among `ports` (ports are sized for the
// fastest adapter; a slower NIC is limited by its own NIC ↔ leaf link).
Bandwidth leaf_port_bandwidth(const std::vector<NicPort>& ports);

// Adds `spines` spine switches and joins every leaf in `leaves` to every spine with one trunk of
// leaf_ports × port_bandwidth / (oversubscription × spines): each leaf's uplink capacity is its
// downlink capacity divided by the oversubscription ratio (the definition of a leaf's
// oversubscription in two-tier Clos designs). Does nothing when there is one leaf or fewer.
void add_spine_layer(FabricLayout& layout, const std::vector<int>& leaves, const FabricSpec& spec,
                     Bandwidth port_bandwidth);

// Spines per leaf group: as many as a leaf has uplink ports, ⌈leaf_ports / oversubscription⌉ (≥ 1).
int spine_count(const FabricSpec& spec);
// The bandwidth of one leaf ↔ spine trunk: leaf_ports × port_bandwidth / (oversubscription ×
// spine_count(spec)), so a leaf's uplinks carry its downlink capacity / oversubscription.
Bandwidth leaf_trunk_bandwidth(const FabricSpec& spec, Bandwidth port_bandwidth);

// Adds spine_count(spec) spines named "<prefix>spine<s>", joins every leaf in `leaves` to each of
// them with leaf_trunk_bandwidth(), even when there is a single leaf (a pod's spines also lead to
// the core), and returns their switch indices in order.
std::vector<int> add_spines(FabricLayout& layout, const std::vector<int>& leaves, const FabricSpec& spec,
                            Bandwidth port_bandwidth, const std::string& prefix);

}  // namespace clustersim
