#pragma once

#include "topology/node_layout.h"
#include "topology/specs.h"

namespace clustersim {

// Joins the GPUs already in `layout` point-to-point by NVLink, without a switch
// (IntraNodeFabric::kNvLinkMesh), from the edges of NodeSpec::mesh: an edge of k links carries
// k × NodeSpec::nvlink_link_bandwidth per direction and costs NodeSpec::nvlink_latency per hop.
// Edges that name a GPU the cluster does not use (ClusterSpec::gpus_per_node) are left out.
//
// Routing on a mesh (node_routes.h) follows NCCL's path types (src/graph/topo.h, paths.cc):
// a direct edge is PATH_NVL; a pair without one goes over NVLink through one intermediate GPU
// (PATH_NVB) when such a GPU exists; otherwise it falls back to the node's PCIe tree.
// Spec errors (edges naming missing GPUs, ...) are rejected earlier by validate_cluster_spec().
void add_nvlink_mesh(const NodeSpec& node, NodeLayout& layout);

}  // namespace clustersim
