#include "topology/pcie_node.h"

#include <fmt/format.h>

namespace clustersim {

void add_pcie_tree(const NodeSpec& node, NodeLayout& layout) {
  const PcieSpec& pcie = node.pcie;
  std::vector<int> sockets;
  for (int c = 0; c < pcie.sockets; ++c) {
    sockets.push_back(layout.add_vertex(VertexKind::kCpu, fmt::format("cpu{}", c)));
  }
  // Host memory of each socket: only nodes without GPU peer-to-peer route through it, so other
  // nodes keep their graphs (and the routes and results that follow from them).
  layout.host_memory_of_socket.clear();
  if (!pcie.peer_to_peer) {
    for (int c = 0; c < pcie.sockets; ++c) {
      const int memory = layout.add_vertex(VertexKind::kHostMemory, fmt::format("mem{}", c));
      layout.add_link_pair(sockets[static_cast<size_t>(c)], memory, pcie.host_memory, Duration::zero(),
                           Duration::zero(), LinkKind::kHostMemory);
      layout.host_memory_of_socket.push_back(memory);
    }
  }
  for (int a = 0; a < pcie.sockets; ++a) {
    for (int b = a + 1; b < pcie.sockets; ++b) {
      layout.add_link_pair(sockets[a], sockets[b], pcie.inter_socket, pcie.latency, pcie.latency,
                           LinkKind::kInterSocket);
    }
  }
  std::vector<int> switches;
  std::vector<int> socket_of_switch;
  for (int s = 0; s < pcie.switches; ++s) {
    switches.push_back(layout.add_vertex(VertexKind::kPcieSwitch, fmt::format("pcie{}", s)));
    socket_of_switch.push_back(sockets[s * pcie.sockets / pcie.switches]);
    layout.add_link_pair(switches[s], socket_of_switch[s], pcie.host_bridge, pcie.latency, pcie.latency,
                         LinkKind::kPcie);
  }
  layout.socket_of_gpu.clear();
  for (size_t g = 0; g < layout.gpu_vertices.size(); ++g) {
    const int s = static_cast<int>(g) * pcie.switches / node.gpus;
    layout.add_link_pair(layout.gpu_vertices[g], switches[s], pcie.switch_link, pcie.latency, pcie.latency,
                         LinkKind::kPcie);
    layout.socket_of_gpu.push_back(socket_of_switch[s]);
  }
  layout.nic_vertices.clear();
  for (int i = 0; i < node.nics; ++i) {
    const int nic = layout.add_vertex(VertexKind::kNic, fmt::format("nic{}", i));
    layout.nic_vertices.push_back(nic);
    layout.add_link_pair(nic, switches[i * pcie.switches / node.nics], pcie.switch_link, pcie.latency, pcie.latency,
                         LinkKind::kPcie);
  }
}

}  // namespace clustersim
