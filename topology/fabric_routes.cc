#include "topology/fabric_routes.h"

#include <limits>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/property_map/property_map.hpp>

#include "core/error.h"

namespace clustersim {

namespace {

struct EdgeData {
  LinkId link = 0;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, EdgeData>;

// Distances and shortest-path counts of every switch towards one destination switch.
struct TowardsTable {
  std::vector<int> hops;         // -1: unreachable
  std::vector<uint64_t> counts;  // shortest paths to the destination, saturating
};

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

}  // namespace

class FabricRoutes::Impl {
 public:
  Impl(int switch_count, const std::vector<FabricEdge>& edges)
      : graph_(static_cast<size_t>(switch_count)), tables_(static_cast<size_t>(switch_count)) {
    for (const FabricEdge& e : edges) boost::add_edge(e.from, e.to, EdgeData{e.link}, graph_);
  }

  uint64_t path_count(int src, int dst) { return table(dst).counts[src]; }

  std::vector<LinkId> path(int src, int dst, uint64_t index) {
    const TowardsTable& towards = table(dst);
    check_invariant(index < towards.counts[src], "FabricRoutes::path: index beyond the path count");
    std::vector<LinkId> links;
    size_t v = static_cast<size_t>(src);
    while (v != static_cast<size_t>(dst)) {
      bool stepped = false;
      for (auto [it, end] = boost::out_edges(v, graph_); it != end; ++it) {
        const size_t w = boost::target(*it, graph_);
        if (towards.hops[w] != towards.hops[v] - 1) continue;
        if (index < towards.counts[w]) {
          links.push_back(graph_[*it].link);
          v = w;
          stepped = true;
          break;
        }
        index -= towards.counts[w];
      }
      check_invariant(stepped, "FabricRoutes::path: shortest-path counts are inconsistent");
    }
    return links;
  }

 private:
  // Fabric trunks exist in both directions, so distances from `dst` are distances to it.
  const TowardsTable& table(int dst) {
    auto& slot = tables_[dst];
    if (slot) return *slot;
    auto towards = std::make_unique<TowardsTable>();
    const size_t n = boost::num_vertices(graph_);
    towards->hops.assign(n, -1);
    towards->counts.assign(n, 0);
    towards->hops[dst] = 0;
    std::vector<size_t> order;  // vertices in BFS discovery order (non-decreasing distance)
    struct Recorder : boost::default_bfs_visitor {
      std::vector<size_t>* order;
      std::vector<int>* hops;
      void discover_vertex(size_t v, const Graph&) const { order->push_back(v); }
      void tree_edge(boost::graph_traits<Graph>::edge_descriptor e, const Graph& g) const {
        (*hops)[boost::target(e, g)] = (*hops)[boost::source(e, g)] + 1;
      }
    };
    Recorder recorder;
    recorder.order = &order;
    recorder.hops = &towards->hops;
    boost::breadth_first_search(graph_, static_cast<size_t>(dst), boost::visitor(recorder));
    towards->counts[dst] = 1;
    for (size_t v : order) {
      if (v == static_cast<size_t>(dst)) continue;
      uint64_t count = 0;
      for (auto [it, end] = boost::out_edges(v, graph_); it != end; ++it) {
        const size_t w = boost::target(*it, graph_);
        if (towards->hops[w] == towards->hops[v] - 1) count = saturating_add(count, towards->counts[w]);
      }
      towards->counts[v] = count;
    }
    slot = std::move(towards);
    return *slot;
  }

  Graph graph_;
  std::vector<std::unique_ptr<TowardsTable>> tables_;
};

FabricRoutes::FabricRoutes(int switch_count, const std::vector<FabricEdge>& edges)
    : impl_(std::make_unique<Impl>(switch_count, edges)) {}
FabricRoutes::~FabricRoutes() = default;
FabricRoutes::FabricRoutes(FabricRoutes&&) noexcept = default;
FabricRoutes& FabricRoutes::operator=(FabricRoutes&&) noexcept = default;

uint64_t FabricRoutes::path_count(int src, int dst) { return impl_->path_count(src, dst); }
std::vector<LinkId> FabricRoutes::path(int src, int dst, uint64_t index) { return impl_->path(src, dst, index); }

}  // namespace clustersim
