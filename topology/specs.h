#pragma once

// Hardware descriptions a cluster is built from. Pure data: builders (topology/*_builder.h) turn
// them into a Cluster graph; scenarios/ fills them from the YAML presets under scenarios/hardware/.

#include <optional>
#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "core/units.h"

namespace clustersim {

// A network adapter (InfiniBand HCA / RoCE NIC), e.g. ConnectX-7 400 Gb/s.
struct NicSpec {
  std::string name;
  Bandwidth bandwidth;  // per direction
  Duration latency;     // adapter latency added once per traversal (send or receive side)
};

// How the GPUs of one node are joined.
enum class IntraNodeFabric {
  kNvSwitch,    // every GPU has all its NVLinks to NVSwitch chips: full bandwidth any-to-any
  kNvLinkMesh,  // GPUs joined point-to-point by NVLink, no switch (hybrid cube-mesh, ...)
  kPcie,        // no NVLink: GPUs on PCIe switches under CPU sockets
};

// One point-to-point NVLink connection of a mesh node (kNvLinkMesh).
struct NvLinkMeshEdge {
  int gpu_a = 0;
  int gpu_b = 0;
  int links = 1;  // parallel NVLink links between the two GPUs
};

// The PCIe tree of a node: GPUs and NICs hang off PCIe switches, each switch off one CPU socket's
// host bridge; sockets are joined by an inter-socket link (UPI / xGMI).
struct PcieSpec {
  Bandwidth switch_link;        // GPU/NIC ↔ PCIe switch, per direction (Gen4 x16 ≈ 25 GB/s usable)
  Bandwidth host_bridge;        // PCIe switch ↔ CPU root complex, per direction (shared by the switch)
  Bandwidth inter_socket;       // CPU ↔ CPU link, per direction (shared by all cross-socket traffic)
  Duration latency;             // per PCIe hop
  int switches = 2;             // PCIe switches; GPUs and NICs are spread evenly over them
  int sockets = 2;              // CPU sockets; switches are spread evenly over them
  bool peer_to_peer = true;     // false: GPU↔GPU traffic bounces through host memory (via the root complex)
  // Without peer_to_peer: what one socket's root complex and memory give the bounce buffers of GPU
  // traffic, per direction (DMA writes into host memory / DMA reads out of it). A bounced byte is
  // written once and read once, so DRAM that serves reads and writes from one pool (DDR5: channels
  // × transfer rate × 8 bytes) gives half its peak to each direction.
  Bandwidth host_memory;
};

// One server: its GPUs, how they are joined, and its NICs.
struct NodeSpec {
  std::string name;  // preset name, e.g. "dgx-h100"
  GpuSpec gpu;
  int gpus = 8;  // GPUs in the node (scenarios may use fewer: cluster.gpus_per_node)
  IntraNodeFabric intra = IntraNodeFabric::kNvSwitch;
  Duration nvlink_latency;            // GPU → NVSwitch → GPU, or one mesh hop
  Bandwidth nvlink_link_bandwidth;    // one NVLink link per direction (mesh nodes)
  std::vector<NvLinkMeshEdge> mesh;   // kNvLinkMesh only
  PcieSpec pcie;                      // kPcie (and the GPU↔NIC path of every node)
  // What the node file left out of its PCIe links and was assumed instead ("Gen5 x16 (63.0 GB/s per
  // direction) for pcie.switch_link ..."), for the run report; empty when the file gave both.
  std::string pcie_assumption;
  NicSpec nic;
  int nics = 8;                       // compute-fabric NICs of the node
  // GPU↔NIC affinity: nic_of_gpu[g] is the NIC GPU g uses for inter-node traffic.
  // Empty means the default: GPU g uses NIC g·nics/gpus (one NIC per GPU when nics == gpus).
  std::vector<int> nic_of_gpu;
  // Power of the node besides its GPUs (CPUs, memory, NICs, fans, power conversion), for energy
  // reports; zero: not given.
  Power overhead_power;
};

// The network that joins the nodes' NICs.
enum class FabricType {
  kSingleSwitch,   // one non-blocking switch: every NIC one hop from every other
  kFatTree,        // two-tier leaf/spine; nodes fill leaves in order; uplinks = downlinks / oversubscription
  kRailOptimized,  // NIC i of every node on rail leaf i (per group of nodes), leaves joined by spines
  kThreeTier,      // pods of FabricSpec::pod_nodes nodes, each a two-tier pod_type fabric, joined by a core tier
};

struct FabricSpec {
  FabricType type = FabricType::kRailOptimized;
  Duration switch_latency;         // per switch traversal
  int leaf_ports = 64;             // downlink ports of one leaf switch (NICs it can hold)
  double oversubscription = 1.0;   // fat-tree: downlink bandwidth / uplink bandwidth of a leaf (>= 1)
  std::optional<NicSpec> nic;      // overrides the node preset's NIC when set
  // kThreeTier only (three_tier_fabric.h): how the leaves inside a pod are wired (kFatTree or
  // kRailOptimized), the nodes of one pod (the last pod may hold fewer), and the spine downlink /
  // core uplink bandwidth of a pod (>= 1; Llama 3's cluster: 7, Dubey et al. 2024 §3.3.1).
  FabricType pod_type = FabricType::kFatTree;
  int pod_nodes = 0;
  double core_oversubscription = 1.0;
};

// A whole cluster: one NodeSpec per node (nodes may differ), and the fabric between them.
struct ClusterSpec {
  std::vector<NodeSpec> nodes;
  FabricSpec fabric;
  // GPUs used per node (<= the node's GPUs); 0 means all. Unused GPUs are not in the graph.
  int gpus_per_node = 0;
};

}  // namespace clustersim
