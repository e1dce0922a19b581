#pragma once

// The local graph of one node, before it is placed in a Cluster: vertices and directed links with
// node-local ids. Builders (nvswitch_node.h, nvlink_mesh_node.h, pcie_tree.h) fill it; the Cluster
// shares one layout, and its routes, among all nodes whose layouts are equal.

#include <string>
#include <vector>

#include "core/units.h"
#include "topology/cluster.h"
#include "topology/specs.h"

namespace clustersim {

// One direction of a link inside a node, between node-local vertex ids.
struct LocalLink {
  int from = 0;
  int to = 0;
  Bandwidth bandwidth;
  Duration latency;
  LinkKind kind = LinkKind::kNvLink;
  bool operator==(const LocalLink&) const = default;
};

struct NodeLayout {
  IntraNodeFabric intra = IntraNodeFabric::kNvSwitch;
  bool peer_to_peer = true;         // PCIe GPU↔GPU without bouncing through the root complex
  std::vector<VertexKind> kinds;    // per local vertex
  std::vector<std::string> names;   // per local vertex: "gpu3", "nvswitch", "pcie0", "cpu1", "nic2"
  std::vector<LocalLink> links;
  std::vector<int> gpu_vertices;    // local vertex of each used GPU, by local GPU index
  std::vector<int> nic_vertices;    // local vertex of each NIC, by NIC index
  std::vector<int> socket_of_gpu;   // local vertex of the CPU socket above each used GPU's PCIe switch
  std::vector<int> host_memory_of_socket;  // without peer_to_peer: host-memory vertex of socket c (cpu vertex c)
  std::vector<int> nic_of_gpu;      // affinity: NIC index of each used GPU

  int add_vertex(VertexKind kind, std::string name);
  // Adds the two directions of a physical link between local vertices `a` and `b`, each with
  // `bandwidth`; `latency_ab` on a→b and `latency_ba` on b→a.
  void add_link_pair(int a, int b, Bandwidth bandwidth, Duration latency_ab, Duration latency_ba, LinkKind kind);

  bool operator==(const NodeLayout&) const = default;
};

}  // namespace clustersim
