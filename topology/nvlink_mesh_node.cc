#include "topology/nvlink_mesh_node.h"

namespace clustersim {

void add_nvlink_mesh(const NodeSpec& node, NodeLayout& layout) {
  const int used = static_cast<int>(layout.gpu_vertices.size());
  for (const NvLinkMeshEdge& edge : node.mesh) {
    if (edge.gpu_a >= used || edge.gpu_b >= used) continue;
    const Bandwidth bandwidth = node.nvlink_link_bandwidth * static_cast<double>(edge.links);
    layout.add_link_pair(layout.gpu_vertices[edge.gpu_a], layout.gpu_vertices[edge.gpu_b], bandwidth,
                         node.nvlink_latency, node.nvlink_latency, LinkKind::kNvLink);
  }
}

}  // namespace clustersim
