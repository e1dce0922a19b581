#include "topology/node_routes.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/property_map.hpp>
#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

namespace {

struct NodeEdge {
  int link = 0;  // index into NodeLayout::links
};
using NodeGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property, NodeEdge>;
using Edge = boost::graph_traits<NodeGraph>::edge_descriptor;

uint32_t bit(LinkKind kind) { return 1U << static_cast<unsigned>(kind); }
uint32_t bit(VertexKind kind) { return 1U << static_cast<unsigned>(kind); }

// Which links a path may use and which vertices it may pass through (its ends are always allowed).
struct Policy {
  uint32_t link_kinds = 0;
  uint32_t transit_kinds = 0;
};

const Policy kNvSwitchPolicy{bit(LinkKind::kNvLink), bit(VertexKind::kNvSwitch)};
const Policy kMeshPolicy{bit(LinkKind::kNvLink), bit(VertexKind::kGpu)};
const Policy kPciePolicy{bit(LinkKind::kPcie) | bit(LinkKind::kInterSocket),
                         bit(VertexKind::kPcieSwitch) | bit(VertexKind::kCpu)};
const Policy kHostMemoryPolicy{bit(LinkKind::kHostMemory), 0};

// Boost edge filter applying a Policy between two end vertices.
struct EdgeAllowed {
  const NodeGraph* graph = nullptr;
  const NodeLayout* layout = nullptr;
  Policy policy;
  int src = 0;
  int dst = 0;
  bool passable(int v) const {
    return v == src || v == dst || (policy.transit_kinds & bit(layout->kinds[v])) != 0;
  }
  bool operator()(const Edge& e) const {
    const LocalLink& link = layout->links[(*graph)[e].link];
    return (policy.link_kinds & bit(link.kind)) != 0 && passable(link.from) && passable(link.to);
  }
};

}  // namespace

class NodeRoutes::Impl {
 public:
  explicit Impl(NodeLayout layout) : layout_(std::move(layout)), graph_(layout_.kinds.size()) {
    for (size_t i = 0; i < layout_.links.size(); ++i) {
      boost::add_edge(layout_.links[i].from, layout_.links[i].to, NodeEdge{static_cast<int>(i)}, graph_);
    }
    const size_t gpus = layout_.gpu_vertices.size();
    gpu_pairs_.resize(gpus * gpus);
    to_nic_.resize(gpus);
    from_nic_.resize(gpus);
  }

  const NodeLayout& layout() const { return layout_; }

  const std::vector<LocalPath>& gpu_to_gpu(int src, int dst) {
    auto& slot = gpu_pairs_[static_cast<size_t>(src) * layout_.gpu_vertices.size() + dst];
    if (!slot) slot = compute_gpu_to_gpu(layout_.gpu_vertices[src], layout_.gpu_vertices[dst]);
    return *slot;
  }

  const std::vector<LocalPath>& gpu_to_nic(int gpu) {
    auto& slot = to_nic_[gpu];
    if (!slot) slot = required(layout_.gpu_vertices[gpu], nic_vertex(gpu), kPciePolicy);
    return *slot;
  }

  const std::vector<LocalPath>& nic_to_gpu(int gpu) {
    auto& slot = from_nic_[gpu];
    if (!slot) slot = required(nic_vertex(gpu), layout_.gpu_vertices[gpu], kPciePolicy);
    return *slot;
  }

 private:
  int nic_vertex(int gpu) const {
    const int nic = layout_.nic_of_gpu[gpu];
    check_invariant(nic >= 0 && nic < static_cast<int>(layout_.nic_vertices.size()),
                    "NodeRoutes: GPU without a NIC asked for its NIC path");
    return layout_.nic_vertices[nic];
  }

  std::vector<LocalPath> compute_gpu_to_gpu(int src, int dst) const {
    switch (layout_.intra) {
      case IntraNodeFabric::kNvSwitch:
        return required(src, dst, kNvSwitchPolicy);
      case IntraNodeFabric::kNvLinkMesh: {
        // PATH_NVL (1 hop) or PATH_NVB (2 hops through one GPU); NCCL forwards through no more.
        std::vector<LocalPath> nvlink = shortest_paths(src, dst, kMeshPolicy, 2);
        if (!nvlink.empty()) return nvlink;
        return pcie_gpu_to_gpu(src, dst);
      }
      case IntraNodeFabric::kPcie:
        return pcie_gpu_to_gpu(src, dst);
    }
    throw InternalError("NodeRoutes: unknown intra-node fabric");
  }

  std::vector<LocalPath> pcie_gpu_to_gpu(int src, int dst) const {
    if (layout_.peer_to_peer) return required(src, dst, kPciePolicy);
    // Bounce through host memory of the source GPU's socket: written in (socket → memory), read
    // out (memory → socket), then down to the destination, across the inter-socket link when it
    // sits on the other socket.
    const int gpu_index = static_cast<int>(
        std::find(layout_.gpu_vertices.begin(), layout_.gpu_vertices.end(), src) - layout_.gpu_vertices.begin());
    const int socket = layout_.socket_of_gpu[gpu_index];
    std::vector<LocalPath> up = required(src, socket, kPciePolicy);
    const std::vector<LocalPath> down = required(socket, dst, kPciePolicy);
    const int socket_index = static_cast<int>(std::find(layout_.kinds.begin(), layout_.kinds.end(), VertexKind::kCpu) -
                                              layout_.kinds.begin());
    const size_t c = static_cast<size_t>(socket - socket_index);
    check_invariant(c < layout_.host_memory_of_socket.size(), "NodeRoutes: a socket without host memory");
    const std::vector<LocalPath> into = required(socket, layout_.host_memory_of_socket[c], kHostMemoryPolicy);
    const std::vector<LocalPath> out_of = required(layout_.host_memory_of_socket[c], socket, kHostMemoryPolicy);
    for (LocalPath& a : up) {
      a.insert(a.end(), into.front().begin(), into.front().end());
      a.insert(a.end(), out_of.front().begin(), out_of.front().end());
    }
    std::vector<LocalPath> paths;
    for (const LocalPath& a : up) {
      for (const LocalPath& b : down) {
        if (paths.size() == kMaxEqualCostPaths) return paths;
        LocalPath joined = a;
        joined.insert(joined.end(), b.begin(), b.end());
        paths.push_back(std::move(joined));
      }
    }
    return paths;
  }

  std::vector<LocalPath> required(int src, int dst, Policy policy) const {
    std::vector<LocalPath> paths = shortest_paths(src, dst, policy, -1);
    if (paths.empty()) {
      throw InternalError(fmt::format("no path from {} to {} inside the node", layout_.names[src], layout_.names[dst]));
    }
    return paths;
  }

  // All shortest paths from `src` to `dst` under `policy` (at most kMaxEqualCostPaths, sorted by
  // link indices); empty when there is none or it is longer than `max_hops` (-1: no limit).
  std::vector<LocalPath> shortest_paths(int src, int dst, Policy policy, int max_hops) const {
    const EdgeAllowed allowed{&graph_, &layout_, policy, src, dst};
    const boost::filtered_graph<NodeGraph, EdgeAllowed> view(graph_, allowed);
    std::vector<int> hops(boost::num_vertices(graph_), -1);
    hops[src] = 0;
    boost::breadth_first_search(
        view, static_cast<size_t>(src),
        boost::visitor(boost::make_bfs_visitor(boost::record_distances(
            boost::make_iterator_property_map(hops.begin(), boost::get(boost::vertex_index, graph_)),
            boost::on_tree_edge()))));
    std::vector<LocalPath> paths;
    if (hops[dst] < 0 || (max_hops >= 0 && hops[dst] > max_hops)) return paths;
    LocalPath reversed;
    collect(view, hops, dst, reversed, paths);
    std::sort(paths.begin(), paths.end());
    return paths;
  }

  // Walks back from `v` along in-edges that lose one hop, building reversed paths.
  void collect(const boost::filtered_graph<NodeGraph, EdgeAllowed>& view, const std::vector<int>& hops, size_t v,
               LocalPath& reversed, std::vector<LocalPath>& paths) const {
    if (paths.size() == kMaxEqualCostPaths) return;
    if (hops[v] == 0) {
      paths.emplace_back(reversed.rbegin(), reversed.rend());
      return;
    }
    for (auto [it, end] = boost::in_edges(v, view); it != end; ++it) {
      const size_t u = boost::source(*it, view);
      if (hops[u] != hops[v] - 1) continue;
      reversed.push_back(graph_[*it].link);
      collect(view, hops, u, reversed, paths);
      reversed.pop_back();
    }
  }

  NodeLayout layout_;
  NodeGraph graph_;
  std::vector<std::optional<std::vector<LocalPath>>> gpu_pairs_;
  std::vector<std::optional<std::vector<LocalPath>>> to_nic_;
  std::vector<std::optional<std::vector<LocalPath>>> from_nic_;
};

NodeRoutes::NodeRoutes(NodeLayout layout) : impl_(std::make_unique<Impl>(std::move(layout))) {}
NodeRoutes::~NodeRoutes() = default;
NodeRoutes::NodeRoutes(NodeRoutes&&) noexcept = default;
NodeRoutes& NodeRoutes::operator=(NodeRoutes&&) noexcept = default;

const NodeLayout& NodeRoutes::layout() const { return impl_->layout(); }
const std::vector<LocalPath>& NodeRoutes::gpu_to_gpu(int src, int dst) { return impl_->gpu_to_gpu(src, dst); }
const std::vector<LocalPath>& NodeRoutes::gpu_to_nic(int gpu) { return impl_->gpu_to_nic(gpu); }
const std::vector<LocalPath>& NodeRoutes::nic_to_gpu(int gpu) { return impl_->nic_to_gpu(gpu); }

}  // namespace clustersim
