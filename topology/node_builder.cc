#include "topology/node_builder.h"

#include <fmt/format.h>

#include "topology/nvlink_mesh_node.h"
#include "topology/nvswitch_node.h"
#include "topology/pcie_node.h"

namespace clustersim {

int default_or_given_nic(const NodeSpec& node, int gpu) {
  if (!node.nic_of_gpu.empty()) return node.nic_of_gpu[gpu];
  return static_cast<int>(static_cast<int64_t>(gpu) * node.nics / node.gpus);
}

NodeLayout build_node_layout(const NodeSpec& node, int gpus_used) {
  NodeLayout layout;
  layout.intra = node.intra;
  layout.peer_to_peer = node.pcie.peer_to_peer;
  for (int g = 0; g < gpus_used; ++g) {
    layout.gpu_vertices.push_back(layout.add_vertex(VertexKind::kGpu, fmt::format("gpu{}", g)));
    layout.nic_of_gpu.push_back(node.nics > 0 ? default_or_given_nic(node, g) : -1);
  }
  switch (node.intra) {
    case IntraNodeFabric::kNvSwitch:
      add_nvswitch_fabric(node, layout);
      break;
    case IntraNodeFabric::kNvLinkMesh:
      add_nvlink_mesh(node, layout);
      break;
    case IntraNodeFabric::kPcie:
      break;
  }
  add_pcie_tree(node, layout);
  return layout;
}

}  // namespace clustersim
