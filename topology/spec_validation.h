#pragma once

#include "topology/specs.h"

namespace clustersim {

// Checks that `spec` describes a cluster that can be built. Throws InputError naming the node (its
// index and preset name), the field, the offending value and the valid range, for:
//   no nodes; a node with gpus < 1; gpus_per_node < 0 or above a node's GPU count;
//   non-positive bandwidths of the links the node uses (NVLink for kNvSwitch, per-link NVLink for
//   kNvLinkMesh, every PCIe bandwidth, the NIC when nics > 0 and the fabric does not override it); negative latencies;
//   pcie.switches or pcie.sockets < 1; nics < 0, or nics == 0 in a cluster of several nodes;
//   nic_of_gpu with a size other than gpus, or an entry outside 0 .. nics-1;
//   mesh edges naming a GPU outside 0 .. gpus-1, joining a GPU to itself, repeating a pair, with
//   links < 1, or giving a GPU more links than GpuSpec::nvlink_links (when that is > 0);
//   fabric leaf_ports < 1, oversubscription < 1 (or not finite), a negative switch latency, a
//   fabric NIC override with a non-positive bandwidth; on a three-tier fabric a pod_type other
//   than fat-tree or rail-optimized, pod_nodes outside 1 .. the cluster's nodes, or
//   core_oversubscription < 1 (or not finite).
void validate_cluster_spec(const ClusterSpec& spec);

}  // namespace clustersim
