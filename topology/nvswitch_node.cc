#include "topology/nvswitch_node.h"

namespace clustersim {

void add_nvswitch_fabric(const NodeSpec& node, NodeLayout& layout) {
  const int nvswitch = layout.add_vertex(VertexKind::kNvSwitch, "nvswitch");
  const Duration up = Duration::picoseconds(node.nvlink_latency.ps() / 2);
  const Duration down = node.nvlink_latency - up;
  for (int gpu_vertex : layout.gpu_vertices) {
    layout.add_link_pair(gpu_vertex, nvswitch, node.gpu.nvlink_bandwidth, up, down, LinkKind::kNvLink);
  }
}

}  // namespace clustersim
