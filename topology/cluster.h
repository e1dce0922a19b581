#pragma once

// The cluster as a graph: vertices are GPUs, NVSwitches, PCIe switches, CPU sockets, NICs and
// fabric switches; every physical link is two directed edges (one per direction, independent
// bandwidth). Built by build_cluster() from a ClusterSpec; read-only afterwards.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/units.h"
#include "topology/specs.h"

namespace clustersim {

using GpuId = int32_t;     // global GPU index: node-major, 0 .. gpu_count()-1
using LinkId = int32_t;    // index into Cluster::links()
using VertexId = int32_t;  // index of a graph vertex

enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kCpu, kNic, kLeafSwitch, kSpineSwitch };

enum class LinkKind { kNvLink, kPcie, kInterSocket, kNicToSwitch, kSwitchToSwitch };

// One direction of a physical link.
struct Link {
  VertexId from = 0;
  VertexId to = 0;
  Bandwidth bandwidth;  // this direction
  Duration latency;     // propagation + the traversed device's latency
  LinkKind kind = LinkKind::kNvLink;
  std::string name;     // for traces and errors: "node3/gpu5->nvswitch", "leaf2->spine0"
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

  const std::vector<Link>& links() const;
  VertexKind vertex_kind(VertexId v) const;
  VertexId gpu_vertex(GpuId gpu) const;
  int nic_of(GpuId gpu) const;          // the node-local NIC index the GPU uses (affinity)

  // Shortest path from `src` to `dst` (src != dst) by hop count. Among equal-cost paths (ECMP)
  // the choice is a deterministic function of (src, dst, flow_hash), so different flows between
  // the same GPUs may take different spines. Cached: repeated calls return the same reference.
  // Throws InputError if either id is out of range, InternalError if no path exists.
  const Route& route(GpuId src, GpuId dst, uint64_t flow_hash = 0) const;

  // The smallest bandwidth along route(src, dst): what one flow alone can get.
  Bandwidth bottleneck(GpuId src, GpuId dst) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustersim
