#pragma once

// Hardware specs for unit tests of topology/, network/ and the folders above them, built in code so
// that tests do not depend on the YAML presets. The numbers are round values of the same order as
// the datasheets (the presets under scenarios/hardware/ carry the sourced ones); tests derive
// their expectations from these fields, never from literals.

#include <vector>

#include "core/units.h"
#include "topology/specs.h"

namespace clustersim::test_specs {

// An H100-like GPU: NVLink 450 GB/s per direction over 18 links.
inline GpuSpec gpu() {
  GpuSpec spec;
  spec.name = "test-gpu";
  spec.dense_peak[DataType::kBf16] = FlopRate::teraflop_per_s(1000);
  spec.hbm_capacity = Bytes::gigabytes(80);
  spec.hbm_bandwidth = Bandwidth::gigabytes_per_s(3000);
  spec.nvlink_bandwidth = Bandwidth::gigabytes_per_s(450);
  spec.nvlink_links = 18;
  spec.sm_count = 132;
  spec.supports_nvls = true;
  return spec;
}

// 400 Gb/s NIC = 50 GB/s per direction, 1 us adapter latency.
inline NicSpec nic() { return NicSpec{"test-nic", Bandwidth::gigabits_per_s(400), Duration::microseconds(1)}; }

// PCIe tree: 64 GB/s switch links and host bridges, 40 GB/s between sockets, 100 ns per hop.
inline PcieSpec pcie(int switches = 4, int sockets = 2, bool peer_to_peer = true) {
  PcieSpec spec;
  spec.switch_link = Bandwidth::gigabytes_per_s(64);
  spec.host_bridge = Bandwidth::gigabytes_per_s(64);
  spec.inter_socket = Bandwidth::gigabytes_per_s(40);
  spec.host_memory = Bandwidth::gigabytes_per_s(100);
  spec.latency = Duration::nanoseconds(100);
  spec.switches = switches;
  spec.sockets = sockets;
  spec.peer_to_peer = peer_to_peer;
  return spec;
}

// A DGX-H100-like node: `gpus` GPUs on one NVSwitch, `nics` NICs, 4 PCIe switches on 2 sockets.
inline NodeSpec nvswitch_node(int gpus = 8, int nics = 8) {
  NodeSpec node;
  node.name = "test-nvswitch";
  node.gpu = gpu();
  node.gpus = gpus;
  node.intra = IntraNodeFabric::kNvSwitch;
  node.nvlink_latency = Duration::nanoseconds(700);
  node.pcie = pcie();
  node.nic = nic();
  node.nics = nics;
  return node;
}

// An 8-GPU PCIe node: two switches on two sockets (GPUs 0-3 on switch 0 / socket 0, 4-7 on
// switch 1 / socket 1), two NICs.
inline NodeSpec pcie_node(bool peer_to_peer) {
  NodeSpec node = nvswitch_node(8, 2);
  node.name = "test-pcie";
  node.intra = IntraNodeFabric::kPcie;
  node.pcie = pcie(2, 2, peer_to_peer);
  return node;
}

// The DGX-1 hybrid cube-mesh (two fully connected quads 0-3 and 4-7, plus GPU i ↔ i+4; the cube
// edges 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7 have two links), 25 GB/s per link and direction.
inline NodeSpec mesh_node() {
  NodeSpec node = nvswitch_node(8, 4);
  node.name = "test-mesh";
  node.intra = IntraNodeFabric::kNvLinkMesh;
  node.gpu.nvlink_links = 6;
  node.nvlink_link_bandwidth = Bandwidth::gigabytes_per_s(25);
  node.mesh = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {1, 2, 2}, {1, 3, 1}, {2, 3, 2}, {4, 5, 1}, {4, 6, 1},
               {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}, {0, 4, 2}, {1, 5, 2}, {2, 6, 1}, {3, 7, 1}};
  return node;
}

inline FabricSpec fabric(FabricType type, int leaf_ports = 64, double oversubscription = 1.0) {
  FabricSpec spec;
  spec.type = type;
  spec.switch_latency = Duration::nanoseconds(300);
  spec.leaf_ports = leaf_ports;
  spec.oversubscription = oversubscription;
  return spec;
}

// `nodes` copies of `node` joined by `fabric`.
inline ClusterSpec cluster(const NodeSpec& node, int nodes, const FabricSpec& fabric_spec) {
  ClusterSpec spec;
  spec.nodes.assign(static_cast<size_t>(nodes), node);
  spec.fabric = fabric_spec;
  return spec;
}

}  // namespace clustersim::test_specs
