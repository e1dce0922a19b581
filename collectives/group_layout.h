#pragma once

// Where the ranks of one collective sit in the cluster, and what the hardware between them offers,
// as plain data. Algorithms (ring, tree, NVLS, ...) read only this, so they can be unit-tested
// without building a Cluster; make_group_layout() (group_layout_builder.h) fills it from a Cluster.

#include <cstdint>
#include <vector>

#include "core/units.h"
#include "topology/specs.h"

namespace clustersim {

struct GroupLayout {
  struct Place {
    int node = 0;   // index into node_ranks: the spanned nodes in increasing cluster node id
    int local = 0;  // index of the GPU inside its cluster node
    int nic = 0;    // node-local NIC index the GPU uses for inter-node traffic
  };

  std::vector<Place> ranks;                 // one per rank, in group order
  std::vector<std::vector<int>> node_ranks;  // per spanned node: its ranks, by increasing local index

  IntraNodeFabric intra_fabric = IntraNodeFabric::kNvSwitch;  // kPcie if any spanned node is PCIe-only
  bool nvls_capable = false;  // one node, NVSwitch, GPUs with NVLink SHARP (GpuSpec::supports_nvls)

  // Per-GPU bandwidth per direction to the next GPU of its node when every rank of the node sends
  // at once along one ring (NVSwitch: the GPU's NVLink bandwidth; PCIe: the shared switch and host
  // links divided among the flows that cross them). Datasheet values.
  Bandwidth intra_bandwidth;
  Bandwidth nic_bandwidth;  // one NIC, per direction (line rate; leaf uplink share, group_layout_builder.h)

  // Fractions of those bandwidths that NCCL's transports achieve (documented defaults, replaced by
  // calibration): see link_efficiency.h.
  double intra_efficiency = 1.0;
  double nic_efficiency = 1.0;
  double nvls_efficiency = 0.0;  // fraction of the NVLink bandwidth NVLS reductions reach; 0: none

  Duration intra_latency;  // route latency between two GPUs of one node (largest seen)
  Duration inter_latency;  // route latency between GPUs of two nodes (largest seen)

  // Tree all_reduce: NCCL's ceilings per channel pair (link_efficiency.h tree_channel_ceilings), in
  // its tree bus-bandwidth convention, of the weakest spanned node; zero: none.
  Bandwidth tree_ceiling_simple;
  Bandwidth tree_ceiling_ll128;

  int size() const { return static_cast<int>(ranks.size()); }
  int node_count() const { return static_cast<int>(node_ranks.size()); }
  // Largest number of ranks on one node.
  int max_ranks_per_node() const;
  // True when every spanned node holds the same number of ranks.
  bool uniform() const;
  // Distinct NICs used by the ranks of `node` (index into node_ranks).
  int nics_on_node(int node) const;
  // Smallest nics_on_node() over the spanned nodes: the number of disjoint network paths a
  // multi-channel ring can spread over (NCCL gives each channel's node crossing its own NIC).
  int min_nics_per_node() const;
};

// A layout for tests and quick estimates: `nodes` nodes with `ranks_per_node` ranks each; rank r is
// local GPU r % ranks_per_node of node r / ranks_per_node, and GPU g uses NIC g * nics / ranks_per_node.
struct UniformLayoutSpec {
  int nodes = 1;
  int ranks_per_node = 8;
  int nics_per_node = 8;
  IntraNodeFabric intra_fabric = IntraNodeFabric::kNvSwitch;
  bool nvls_capable = false;
  Bandwidth intra_bandwidth;
  Bandwidth nic_bandwidth;
  double intra_efficiency = 1.0;
  double nic_efficiency = 1.0;
  double nvls_efficiency = 0.0;
  Duration intra_latency;
  Duration inter_latency;
};

// Throws InputError naming the field when nodes, ranks_per_node or nics_per_node is not positive.
GroupLayout make_uniform_layout(const UniformLayoutSpec& spec);

}  // namespace clustersim
