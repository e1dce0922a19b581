#pragma once

// The cluster as a graph: vertices are GPUs, NVSwitches, PCIe switches, CPU sockets, NICs and
// fabric switches; every physical link is two directed edges (one per direction, independent
// bandwidth). Built from a ClusterSpec by the Cluster constructor; read-only afterwards.
//
// Storage is hierarchical so that 16,384 GPUs build in milliseconds: each distinct node layout
// (node_builder.h) has one Boost.Graph, shared by all nodes with that layout, and the fabric
// switches have one more (fabric_routes.h). Global ids are flat: a node's vertices and links are
// its layout's local ids plus the node's base offset; fabric switches and links follow all nodes.
// Links per hop (each direction):
//   NVLink   GPU ↔ NVSwitch (nvswitch_node.h) or GPU ↔ GPU (nvlink_mesh_node.h)
//   PCIe     GPU/NIC ↔ PCIe switch ↔ CPU socket ↔ socket (pcie_node.h)
//   fabric   NIC ↔ leaf: NIC bandwidth; latency NIC latency on the way out, switch latency + NIC
//            latency on the way in; leaf ↔ spine: each switch adds FabricSpec::switch_latency on
//            the link leaving it (single_switch_fabric.h, fat_tree_fabric.h, rail_optimized_fabric.h);
//            spine ↔ core likewise (three_tier_fabric.h).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/units.h"
#include "topology/specs.h"

namespace clustersim {

using GpuId = int32_t;     // global GPU index: node-major, 0 .. gpu_count()-1
using LinkId = int32_t;    // 0 .. Cluster::link_count() - 1
using VertexId = int32_t;  // index of a graph vertex

enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kCpu, kNic, kLeafSwitch, kSpineSwitch, kHostMemory, kCoreSwitch };

enum class LinkKind { kNvLink, kPcie, kInterSocket, kNicToSwitch, kSwitchToSwitch, kHostMemory };

// One direction of a physical link.
struct Link {
  VertexId from = 0;
  VertexId to = 0;
  Bandwidth bandwidth;  // this direction
  Duration latency;     // propagation + the traversed device's latency
  LinkKind kind = LinkKind::kNvLink;
  // Its name is Cluster::link_name (built on demand: a 131,072-GPU cluster has a million links).
};

// A routed path between two GPUs: the directed links in order, and the sum of their latencies.
struct Route {
  std::vector<LinkId> links;
  Duration latency;
};

class Cluster {
 public:
  // Builds the graph. Throws InputError for specs that cannot be built (zero GPUs, bad affinity,
  // non-positive bandwidths, a mesh edge naming a missing GPU, ...), naming the field.
  explicit Cluster(const ClusterSpec& spec);
  ~Cluster();
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;

  int gpu_count() const;
  int node_count() const;
  int node_of(GpuId gpu) const;         // 0 .. node_count()-1
  int local_index(GpuId gpu) const;     // index of the GPU inside its node
  int gpus_in_node(int node) const;     // GPUs used in that node
  GpuId first_gpu_of_node(int node) const;
  const NodeSpec& node_spec(int node) const;
  const ClusterSpec& spec() const;

  // The directed links, 0 .. link_count() - 1. link() builds the Link from the compact storage
  // (ends and a shared class of bandwidth, latency and kind); InternalError for an unknown id.
  size_t link_count() const;
  Link link(LinkId id) const;
  // Every link in id order, copied (tests and small clusters; 32 bytes a link).
  std::vector<Link> all_links() const;
  int vertex_count() const;
  VertexKind vertex_kind(VertexId v) const;
  std::string vertex_name(VertexId v) const;  // "node3/gpu5", "node0/nvswitch", "rail2/leaf0", "spine7"
  // For traces and errors: its ends' vertex names, the node prefix once when both ends share it
  // ("node3/gpu5->nvswitch", "node3/nic0->leaf2", "leaf2->spine0"). Throws InternalError for an
  // unknown link.
  std::string link_name(LinkId link) const;
  VertexId gpu_vertex(GpuId gpu) const;
  int nic_of(GpuId gpu) const;          // the node-local NIC index the GPU uses (affinity)
  int nic_count(int node) const;        // NICs of that node
  VertexId nic_vertex(int node, int nic) const;
  // The fabric switch the NIC of `gpu` (nic_of) plugs into: an index shared by the NICs on the same
  // leaf (one value for every NIC under a single switch). -1 on a one-node cluster (no fabric).
  int leaf_of(GpuId gpu) const;
  // The pod of the node holding `gpu` on a three-tier fabric (FabricType::kThreeTier): node /
  // FabricSpec::pod_nodes, 0 .. pod_count()-1; 0 on every other fabric. Throws InputError for an
  // unknown GPU.
  int pod_of(GpuId gpu) const;
  // Pods of the cluster: ⌈nodes / pod_nodes⌉ on a three-tier fabric, 1 otherwise.
  int pod_count() const;

  // Shortest path from `src` to `dst` (src != dst) by hop count. Among equal-cost paths (ECMP)
  // the choice is a deterministic function of (src, dst, flow_hash), so different flows between
  // the same GPUs may take different spines. Cached: repeated calls return the same reference.
  // Throws InputError if either id is out of range or src == dst, InternalError if no path exists.
  //
  // Paths, by where the GPUs are (node_routes.h gives the intra-node policy and its NCCL source):
  //   same node   the node's GPU ↔ GPU path: NVLink (via the NVSwitch, or a mesh edge / one
  //               intermediate GPU), otherwise the PCIe tree; never through a NIC;
  //   two nodes   src GPU → PCIe → src's affine NIC → fabric → dst's affine NIC → PCIe → dst GPU
  //               (NCCL uses each GPU's closest NIC; GPUDirect RDMA below the PCIe switch).
  // ECMP: the equal-cost alternatives are numbered 0 .. equal_cost_paths(src, dst)-1 and the
  // route takes number splitmix64(src, dst, flow_hash) mod that count (uniform over paths,
  // no global random state). Routes are computed on first use and cached per (src, dst, choice);
  // nothing is stored for pairs never asked for. Thread-safe.
  const Route& route(GpuId src, GpuId dst, uint64_t flow_hash = 0) const;
  // route() for many transfers at once: out[i] = &route(requests[i]...), the same references, the
  // cache's lines asked for a few lookups ahead (a flow simulation at scale looks routes up in a
  // table larger than the processor's caches). `out` has requests.size() entries. Same errors.
  struct RouteRequest {
    GpuId src = 0;
    GpuId dst = 0;
    uint64_t flow_hash = 0;
  };
  void routes(std::span<const RouteRequest> requests, std::span<const Route*> out) const;

  // Number of equal-cost shortest paths route(src, dst, ·) chooses among (≥ 1). Same errors.
  uint64_t equal_cost_paths(GpuId src, GpuId dst) const;

  // The smallest bandwidth along route(src, dst): what one flow alone can get. Same errors.
  Bandwidth bottleneck(GpuId src, GpuId dst) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustersim
