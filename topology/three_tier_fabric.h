#pragma once

#include <vector>

#include "topology/fabric_layout.h"

namespace clustersim {

// FabricType::kThreeTier: a leaf–spine–core Clos of pods, as large training clusters are built
// (Meta's Llama 3 cluster: pods of 3,072 GPUs with full bisection inside, joined by aggregation
// switches at 1:7 oversubscription; Dubey et al. 2024 §3.3.1).
//
// Nodes are cut into pods of FabricSpec::pod_nodes consecutive nodes (pod p: nodes p·pod_nodes ..;
// the last pod holds the rest, which may be fewer: a job on part of a larger cluster). Inside a pod
// the leaves are wired as FabricSpec::pod_type says, with the pod's node and NIC indices:
//   kFatTree        the pod's NICs fill leaves "pod<p>/leaf<k>" in order, leaf_ports per leaf;
//   kRailOptimized  NIC i of the pod's node group k (leaf_ports nodes) on "pod<p>/rail<i>/leaf<k>".
// Each pod has its own spine_count(spec) spines "pod<p>/spine<s>" joined to each of its leaves with
// leaf_trunk_bandwidth() (fabric_layout.h): a leaf's uplinks carry its downlinks / oversubscription.
// With more than one pod, spine s of every pod is joined to the U core switches of core plane s,
// "plane<s>/core<u>", U = ⌈L / core_oversubscription⌉ with L the most leaves of any pod (a spine
// has as many core uplinks as it has leaf downlinks over the ratio), each trunk carrying
// L × leaf trunk / (core_oversubscription × U): a full pod's core uplinks carry its spines'
// downlink capacity / core_oversubscription, the per-tier definition of oversubscription (Clos;
// the 1:7 of the Llama 3 paper). Pods are built alike, so a pod the cluster fills only in part
// (fewer leaves) keeps a full pod's core uplinks and gives its NICs more of them. Routing stays up/down by hop count
// (fabric_routes.h): inside a pod leaf → spine → leaf, between pods leaf → spine → core → spine →
// leaf, ECMP over the spine and the core switch of its plane. With one pod the fabric is the
// pod_type two-tier fabric (no spines for a single leaf, no core).
// `ports` are node-major (as Cluster lists them); spec.pod_nodes ≥ 1 (spec_validation.h).
FabricLayout build_three_tier_fabric(const std::vector<NicPort>& ports, const FabricSpec& spec);

}  // namespace clustersim
