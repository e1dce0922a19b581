#include "topology/node_layout.h"

#include <utility>

namespace clustersim {

int NodeLayout::add_vertex(VertexKind kind, std::string name) {
  kinds.push_back(kind);
  names.push_back(std::move(name));
  return static_cast<int>(kinds.size()) - 1;
}

void NodeLayout::add_link_pair(int a, int b, Bandwidth bandwidth, Duration latency_ab, Duration latency_ba,
                               LinkKind kind) {
  links.push_back(LocalLink{a, b, bandwidth, latency_ab, kind});
  links.push_back(LocalLink{b, a, bandwidth, latency_ba, kind});
}

}  // namespace clustersim
