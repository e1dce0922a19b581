#pragma once

// Fills a GroupLayout from the cluster the collective runs on.

#include <vector>

#include "collectives/group_layout.h"
#include "topology/cluster.h"

namespace clustersim {

// Places every rank of `group` (node, local index, NIC affinity) and measures what the closed
// forms need:
//   intra_bandwidth: per node, every rank sends to the next rank of the node (local order, one
//     ring) at once; each link used gives each flow bandwidth / flows, and the smallest such share
//     over all routes and nodes is the per-GPU ring rate (NVSwitch: the GPU's NVLink bandwidth;
//     PCIe: the shared switch, host-bridge and socket links divided);
//   nic_bandwidth: the bottleneck of an inter-node route between consecutive nodes, times the share
//     of a NIC the leaf uplinks of an oversubscribed fabric leave to the group when every NIC of a
//     leaf serves a group of the same shape at once (min(1, g / oversubscription), g the group's
//     fewest nodes on one leaf of a channel that spans several leaves; a ring crosses each leaf
//     boundary once per channel; crossings spread evenly over the spines, as adaptive routing
//     spreads them). The flow fidelity prices the contention link by link with static ECMP, whose
//     hash collisions can make it slower;
//     all-to-all traffic, which crosses leaves more often than a ring, is priced with the same
//     share and is therefore optimistic under oversubscription;
//     on a three-tier fabric (three_tier_fabric.h) the same argument one tier up caps it at
//     min(1, g_pod / (oversubscription × core_oversubscription)) of the NIC line rate, g_pod the
//     group's fewest nodes in one pod on a channel that spans several pods (a ring crosses each pod
//     boundary once per channel; a pod's core uplinks carry its NICs' rate over both ratios);
//   intra_latency / inter_latency: the largest route latency over those pairs and over every hop
//     of the rings the ring algorithm runs (ring_orders());
//   efficiencies: link_efficiency.h for the node's GPU (PCIe-only nodes: kPcieEfficiency).
// Throws InputError naming the value for an empty group, a GPU id outside 0..gpu_count()−1, or a
// GPU that appears twice.
GroupLayout make_group_layout(const Cluster& cluster, const std::vector<GpuId>& group);

// Throws InputError, as make_group_layout() does, unless `group` is a non-empty list of distinct
// GPUs of the cluster.
void check_group(const Cluster& cluster, const std::vector<GpuId>& group);

}  // namespace clustersim
