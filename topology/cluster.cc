#include "topology/cluster.h"

#include <algorithm>
#include <array>
#include <bit>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "topology/fabric_layout.h"
#include "topology/fabric_routes.h"
#include "topology/fat_tree_fabric.h"
#include "topology/node_builder.h"
#include "topology/node_routes.h"
#include "topology/rail_optimized_fabric.h"
#include "topology/single_switch_fabric.h"
#include "topology/three_tier_fabric.h"
#include "topology/spec_validation.h"

namespace clustersim {

namespace {

// splitmix64 finaliser (Steele, Lea, Flood 2014): a fixed bijective mix, so ECMP choices spread
// evenly and depend only on their inputs.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t ecmp_hash(GpuId src, GpuId dst, uint64_t flow_hash) {
  const uint64_t pair = (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
  return mix64(mix64(pair) ^ flow_hash);
}

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return std::numeric_limits<uint64_t>::max();
  return a * b;
}

struct RouteKey {
  GpuId src = 0;
  GpuId dst = 0;
  uint64_t choice = 0;
  bool operator==(const RouteKey&) const = default;
};

// The routes built so far, by (src, dst, ECMP choice): an open-addressing table of one slot per
// key (a lookup is about one cache miss; std::unordered_map's bucket array and node chain made two,
// and the flow simulation looks a route up for every transfer). The routes themselves live in a
// deque, so a reference stays valid while the table grows.
class RouteTable {
 public:
  // Asks for the cache line of `key`'s first slot (a later find_or_build of it).
  void prefetch(const RouteKey& key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[index_of(key)]);
  }

  // The route of `key`, built by `build()` on first use.
  template <typename Build>
  const Route& find_or_build(const RouteKey& key, Build&& build) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    size_t i = index_of(key);
    while (slots_[i].route != nullptr) {
      if (slots_[i].key == key) return *slots_[i].route;
      i = (i + 1) & (slots_.size() - 1);
    }
    routes_.push_back(build());
    slots_[i] = Slot{key, &routes_.back()};
    ++count_;
    return routes_.back();
  }

 private:
  struct Slot {
    RouteKey key;
    const Route* route = nullptr;
  };
  size_t index_of(const RouteKey& key) const {
    return static_cast<size_t>(mix64(ecmp_hash(key.src, key.dst, 0) ^ key.choice)) & (slots_.size() - 1);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(64, old.size() * 2), Slot{});
    for (const Slot& slot : old) {
      if (slot.route == nullptr) continue;
      size_t i = index_of(slot.key);
      while (slots_[i].route != nullptr) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = slot;
    }
  }

  std::vector<Slot> slots_;  // a power of two, at most half full
  size_t count_ = 0;
  std::deque<Route> routes_;
};

struct NodeInfo {
  int layout = 0;          // index into Impl::layouts_
  GpuId first_gpu = 0;
  int gpus = 0;            // GPUs used
  VertexId vertex_base = 0;
  LinkId link_base = 0;
  int first_nic = 0;       // index of the node's NIC 0 among all NICs of the cluster
};

int32_t checked_id(size_t value, const char* what) {
  if (value > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw InputError(fmt::format("the cluster has too many {} ({}); at most 2^31-1 are supported", what, value));
  }
  return static_cast<int32_t>(value);
}

}  // namespace

class Cluster::Impl {
 public:
  explicit Impl(const ClusterSpec& spec) : spec_(spec) {
    validate_cluster_spec(spec_);
    build_nodes();
    build_fabric();
  }

  const ClusterSpec& spec() const { return spec_; }
  int gpu_count() const { return static_cast<int>(gpu_vertices_.size()); }
  int node_count() const { return static_cast<int>(nodes_.size()); }
  const NodeInfo& node(int index) const {
    if (index < 0 || index >= node_count()) {
      throw InputError(fmt::format("node {} is out of range; valid nodes are 0..{}", index, node_count() - 1));
    }
    return nodes_[index];
  }
  void check_gpu(GpuId gpu) const {
    if (gpu < 0 || gpu >= gpu_count()) {
      throw InputError(fmt::format("GPU {} is out of range; valid GPUs are 0..{}", gpu, gpu_count() - 1));
    }
  }
  int node_of(GpuId gpu) const {
    check_gpu(gpu);
    return node_of_gpu_[gpu];
  }
  int local_index(GpuId gpu) const { return gpu - nodes_[node_of(gpu)].first_gpu; }
  const NodeLayout& layout_of_node(int index) const { return layouts_[node(index).layout].layout(); }

  size_t link_count() const { return links_.size(); }
  Link link(LinkId id) const {
    const PackedLink& p = links_[static_cast<size_t>(id)];
    const LinkClass& c = link_classes_[p.link_class];
    return Link{p.from, p.to, c.bandwidth, c.latency, c.kind};
  }
  Duration link_latency(LinkId id) const { return link_classes_[links_[static_cast<size_t>(id)].link_class].latency; }
  int vertex_count() const { return static_cast<int>(vertex_kinds_.size()); }
  void check_vertex(VertexId v) const {
    if (v < 0 || v >= vertex_count()) {
      throw InputError(fmt::format("vertex {} is out of range; valid vertices are 0..{}", v, vertex_count() - 1));
    }
  }
  VertexKind vertex_kind(VertexId v) const {
    check_vertex(v);
    return vertex_kinds_[v];
  }
  std::string vertex_name(VertexId v) const {
    check_vertex(v);
    const auto node = std::upper_bound(nodes_.begin(), nodes_.end(), v,
                                       [](VertexId x, const NodeInfo& n) { return x < n.vertex_base; });
    if (v >= fabric_base_ || node == nodes_.begin()) return fabric_names_[static_cast<size_t>(v - fabric_base_)];
    const NodeInfo& info = *std::prev(node);
    return fmt::format("node{}/{}", std::prev(node) - nodes_.begin(),
                       layouts_[info.layout].layout().names[static_cast<size_t>(v - info.vertex_base)]);
  }
  std::string link_name(LinkId link) const {
    if (link < 0 || static_cast<size_t>(link) >= links_.size()) {
      throw InternalError(fmt::format("Cluster::link_name: no link {}", link));
    }
    const std::string from = vertex_name(links_[static_cast<size_t>(link)].from);
    const std::string to = vertex_name(links_[static_cast<size_t>(link)].to);
    const size_t slash = from.find('/');
    if (slash != std::string::npos && to.compare(0, slash + 1, from, 0, slash + 1) == 0) {
      return fmt::format("{}->{}", from, std::string_view(to).substr(slash + 1));
    }
    return fmt::format("{}->{}", from, to);
  }
  VertexId gpu_vertex(GpuId gpu) const {
    check_gpu(gpu);
    return gpu_vertices_[gpu];
  }
  int nic_of(GpuId gpu) const {
    const int n = node_of(gpu);
    return layout_of_node(n).nic_of_gpu[gpu - nodes_[n].first_gpu];
  }
  int leaf_of(GpuId gpu) const {
    if (leaf_of_nic_.empty()) return -1;
    return leaf_of_nic_[static_cast<size_t>(global_nic(gpu))];
  }
  int pod_of(GpuId gpu) const {
    const int node = node_of(gpu);
    return spec_.fabric.type == FabricType::kThreeTier ? node / spec_.fabric.pod_nodes : 0;
  }
  int pod_count() const {
    if (spec_.fabric.type != FabricType::kThreeTier) return 1;
    return (node_count() + spec_.fabric.pod_nodes - 1) / spec_.fabric.pod_nodes;
  }
  int nic_count(int index) const { return static_cast<int>(layout_of_node(index).nic_vertices.size()); }
  VertexId nic_vertex(int index, int nic) const {
    const NodeLayout& layout = layout_of_node(index);
    if (nic < 0 || nic >= static_cast<int>(layout.nic_vertices.size())) {
      throw InputError(fmt::format("NIC {} of node {} is out of range; valid NICs are 0..{}", nic, index,
                                   static_cast<int>(layout.nic_vertices.size()) - 1));
    }
    return nodes_[index].vertex_base + layout.nic_vertices[nic];
  }

  uint64_t equal_cost_paths(GpuId src, GpuId dst) const {
    check_pair(src, dst);
    std::lock_guard<std::mutex> lock(mutex_);
    return alternatives(src, dst).total;
  }

  const Route& route(GpuId src, GpuId dst, uint64_t flow_hash) const {
    check_pair(src, dst);
    std::lock_guard<std::mutex> lock(mutex_);
    const Alternatives alt = alternatives(src, dst);
    const uint64_t choice = ecmp_hash(src, dst, flow_hash) % alt.total;
    return routes_.find_or_build(RouteKey{src, dst, choice}, [&] { return build_route(src, dst, alt, choice); });
  }

  void routes(std::span<const Cluster::RouteRequest> requests, std::span<const Route*> out) const {
    check_invariant(out.size() == requests.size(), "Cluster::routes: one output per request");
    for (const Cluster::RouteRequest& r : requests) check_pair(r.src, r.dst);
    std::lock_guard<std::mutex> lock(mutex_);
    // Keys a window ahead of the lookups, their slots asked for as the keys are made.
    constexpr size_t kAhead = 16;
    struct Pending {
      Alternatives alt;
      RouteKey key;
    };
    std::array<Pending, kAhead> ring{};
    auto make = [&](size_t i) {
      const Cluster::RouteRequest& r = requests[i];
      Pending p{alternatives(r.src, r.dst), {}};
      p.key = RouteKey{r.src, r.dst, ecmp_hash(r.src, r.dst, r.flow_hash) % p.alt.total};
      routes_.prefetch(p.key);
      ring[i % kAhead] = p;
    };
    for (size_t i = 0; i < std::min(kAhead, requests.size()); ++i) make(i);
    for (size_t i = 0; i < requests.size(); ++i) {
      const Pending p = ring[i % kAhead];
      out[i] = &routes_.find_or_build(p.key, [&] { return build_route(p.key.src, p.key.dst, p.alt, p.key.choice); });
      if (i + kAhead < requests.size()) make(i + kAhead);
    }
  }

 private:
  // How many equal-cost choices each segment of a src → dst path has.
  struct Alternatives {
    uint64_t first = 1;   // same node: GPU→GPU paths; two nodes: GPU→NIC paths in src's node
    uint64_t fabric = 1;  // leaf → leaf paths (two nodes)
    uint64_t last = 1;    // NIC→GPU paths in dst's node (two nodes)
    uint64_t total = 1;
  };

  void check_pair(GpuId src, GpuId dst) const {
    check_gpu(src);
    check_gpu(dst);
    if (src == dst) {
      throw InputError(fmt::format("no route from GPU {} to itself: a local copy does not use the network", src));
    }
  }

  Alternatives alternatives(GpuId src, GpuId dst) const {
    const NodeInfo& ns = nodes_[node_of_gpu_[src]];
    const NodeInfo& nd = nodes_[node_of_gpu_[dst]];
    Alternatives alt;
    if (&ns == &nd) {
      alt.first = layouts_[ns.layout].gpu_to_gpu(src - ns.first_gpu, dst - ns.first_gpu).size();
      alt.total = alt.first;
      return alt;
    }
    check_invariant(fabric_.has_value(), "Cluster: two nodes but no fabric");
    alt.first = layouts_[ns.layout].gpu_to_nic(src - ns.first_gpu).size();
    alt.last = layouts_[nd.layout].nic_to_gpu(dst - nd.first_gpu).size();
    const int leaf_src = leaf_of_nic_[global_nic(src)];
    const int leaf_dst = leaf_of_nic_[global_nic(dst)];
    alt.fabric = fabric_->path_count(leaf_src, leaf_dst);
    if (alt.fabric == 0) {
      throw InternalError(fmt::format("no fabric path between the NICs of GPU {} and GPU {}", src, dst));
    }
    alt.total = saturating_mul(saturating_mul(alt.first, alt.fabric), alt.last);
    return alt;
  }

  int global_nic(GpuId gpu) const {
    const NodeInfo& n = nodes_[node_of_gpu_[gpu]];
    return n.first_nic + layouts_[n.layout].layout().nic_of_gpu[gpu - n.first_gpu];
  }

  void append_local(Route& route, const NodeInfo& n, const LocalPath& path) const {
    for (int local : path) {
      const LinkId link = n.link_base + local;
      route.links.push_back(link);
      route.latency += link_latency(link);
    }
  }

  void append_global(Route& route, LinkId link) const {
    route.links.push_back(link);
    route.latency += link_latency(link);
  }

  // Decodes `choice` in mixed radix (first, fabric, last) and concatenates the chosen segments.
  Route build_route(GpuId src, GpuId dst, const Alternatives& alt, uint64_t choice) const {
    const NodeInfo& ns = nodes_[node_of_gpu_[src]];
    const NodeInfo& nd = nodes_[node_of_gpu_[dst]];
    Route route;
    if (&ns == &nd) {
      append_local(route, ns, layouts_[ns.layout].gpu_to_gpu(src - ns.first_gpu, dst - ns.first_gpu)[choice]);
      return route;
    }
    const uint64_t first = choice % alt.first;
    const uint64_t fabric = (choice / alt.first) % alt.fabric;
    const uint64_t last = (choice / alt.first / alt.fabric) % alt.last;
    const int nic_src = global_nic(src);
    const int nic_dst = global_nic(dst);
    append_local(route, ns, layouts_[ns.layout].gpu_to_nic(src - ns.first_gpu)[first]);
    append_global(route, nic_up_[nic_src]);
    for (LinkId link : fabric_->path(leaf_of_nic_[nic_src], leaf_of_nic_[nic_dst], fabric)) append_global(route, link);
    append_global(route, nic_down_[nic_dst]);
    append_local(route, nd, layouts_[nd.layout].nic_to_gpu(dst - nd.first_gpu)[last]);
    return route;
  }

  void build_nodes() {
    nodes_.reserve(spec_.nodes.size());
    // The layouts first, so that the vectors of vertices and links are allocated once.
    std::vector<int> layout_of(spec_.nodes.size());
    size_t vertices = 0;
    size_t links = 0;
    for (size_t i = 0; i < spec_.nodes.size(); ++i) {
      const NodeSpec& node_spec = spec_.nodes[i];
      const int used = spec_.gpus_per_node > 0 ? spec_.gpus_per_node : node_spec.gpus;
      layout_of[i] = find_or_add_layout(build_node_layout(node_spec, used));
      vertices += layouts_[layout_of[i]].layout().kinds.size();
      links += layouts_[layout_of[i]].layout().links.size();
    }
    if (spec_.nodes.size() >= 2) {
      std::vector<int> nics(spec_.nodes.size());
      for (size_t i = 0; i < nics.size(); ++i) nics[i] = static_cast<int>(layouts_[layout_of[i]].layout().nic_vertices.size());
      fabric_plan_ = plan_fabric(nics);
      vertices += fabric_plan_->layout.kinds.size();
      links += 2 * fabric_plan_->ports.size() + 2 * fabric_plan_->layout.trunks.size();
    }
    vertex_kinds_.reserve(vertices);
    links_.reserve(links);
    for (size_t i = 0; i < spec_.nodes.size(); ++i) {
      const NodeSpec& node_spec = spec_.nodes[i];
      const int used = spec_.gpus_per_node > 0 ? spec_.gpus_per_node : node_spec.gpus;
      NodeInfo info;
      info.layout = layout_of[i];
      info.first_gpu = checked_id(gpu_vertices_.size(), "GPUs");
      info.gpus = used;
      info.vertex_base = checked_id(vertex_kinds_.size(), "vertices");
      info.link_base = checked_id(links_.size(), "links");
      info.first_nic = nics_total_;
      place_node(static_cast<int>(i), info);
      nodes_.push_back(info);
    }
  }

  int find_or_add_layout(NodeLayout layout) {
    for (size_t t = 0; t < layouts_.size(); ++t) {
      if (layouts_[t].layout() == layout) return static_cast<int>(t);
    }
    layouts_.emplace_back(std::move(layout));
    return static_cast<int>(layouts_.size()) - 1;
  }

  void place_node(int index, const NodeInfo& info) {
    const NodeLayout& layout = layouts_[info.layout].layout();
    for (size_t v = 0; v < layout.kinds.size(); ++v) {
      vertex_kinds_.push_back(layout.kinds[v]);
    }
    for (const LocalLink& local : layout.links) {
      add_link(Link{info.vertex_base + local.from, info.vertex_base + local.to, local.bandwidth, local.latency,
                    local.kind});
    }
    for (int g = 0; g < info.gpus; ++g) {
      gpu_vertices_.push_back(info.vertex_base + layout.gpu_vertices[g]);
      node_of_gpu_.push_back(index);
    }
    nics_total_ += static_cast<int>(layout.nic_vertices.size());
  }

  // The fabric's ports and switches, from each node's NIC count (`nics[n]`).
  struct FabricPlan {
    std::vector<NicPort> ports;
    std::vector<Duration> nic_latency;  // of each port's NIC
    FabricLayout layout;
  };
  FabricPlan plan_fabric(const std::vector<int>& nics) const {
    const FabricSpec& fabric = spec_.fabric;
    FabricPlan plan;
    for (size_t n = 0; n < nics.size(); ++n) {
      const NicSpec& nic = fabric.nic ? *fabric.nic : spec_.nodes[n].nic;
      for (int i = 0; i < nics[n]; ++i) {
        plan.ports.push_back(NicPort{static_cast<int>(n), i, nic.bandwidth});
        plan.nic_latency.push_back(nic.latency);
      }
    }
    switch (fabric.type) {
      case FabricType::kSingleSwitch:
        plan.layout = build_single_switch_fabric(plan.ports);
        break;
      case FabricType::kFatTree:
        plan.layout = build_fat_tree_fabric(plan.ports, fabric);
        break;
      case FabricType::kRailOptimized:
        plan.layout = build_rail_optimized_fabric(plan.ports, fabric);
        break;
      case FabricType::kThreeTier:
        plan.layout = build_three_tier_fabric(plan.ports, fabric);
        break;
    }
    return plan;
  }

  void build_fabric() {
    if (!fabric_plan_) return;
    const FabricPlan plan = std::move(*fabric_plan_);
    fabric_plan_.reset();
    const FabricSpec& fabric = spec_.fabric;
    const std::vector<NicPort>& ports = plan.ports;
    const std::vector<Duration>& nic_latency = plan.nic_latency;
    const FabricLayout& layout = plan.layout;
    const VertexId base = checked_id(vertex_kinds_.size(), "vertices");
    fabric_base_ = base;
    for (size_t s = 0; s < layout.kinds.size(); ++s) {
      vertex_kinds_.push_back(layout.kinds[s]);
      fabric_names_.push_back(layout.names[s]);
    }
    leaf_of_nic_ = layout.leaf_of_port;
    nic_up_.reserve(ports.size());
    nic_down_.reserve(ports.size());
    for (size_t p = 0; p < ports.size(); ++p) {
      const NicPort& port = ports[p];
      const VertexId nic = nic_vertex(port.node, port.nic);
      const VertexId leaf = base + layout.leaf_of_port[p];
      nic_up_.push_back(checked_id(links_.size(), "links"));
      add_link(Link{nic, leaf, port.bandwidth, nic_latency[p], LinkKind::kNicToSwitch});
      nic_down_.push_back(checked_id(links_.size(), "links"));
      add_link(Link{leaf, nic, port.bandwidth, fabric.switch_latency + nic_latency[p], LinkKind::kNicToSwitch});
    }
    std::vector<FabricEdge> edges;
    edges.reserve(layout.trunks.size() * 2);
    for (const TrunkLink& trunk : layout.trunks) {
      for (auto [from, to] : {std::pair{trunk.a, trunk.b}, std::pair{trunk.b, trunk.a}}) {
        edges.push_back(FabricEdge{from, to, checked_id(links_.size(), "links")});
        add_link(Link{base + from, base + to, trunk.bandwidth, fabric.switch_latency, LinkKind::kSwitchToSwitch});
      }
    }
    fabric_.emplace(static_cast<int>(layout.kinds.size()), edges);
  }

  ClusterSpec spec_;
  std::vector<NodeInfo> nodes_;
  std::vector<int32_t> node_of_gpu_;
  std::vector<VertexId> gpu_vertices_;
  // Links are stored as their ends and an index into the few distinct (bandwidth, latency, kind)
  // classes of the cluster: 12 bytes a link instead of 32 (a 131,072-GPU cluster has about 1.2
  // million links; the analytical collective of issue-sized clusters stays under 100 MB).
  struct PackedLink {
    VertexId from = 0;
    VertexId to = 0;
    uint32_t link_class = 0;
  };
  struct LinkClass {
    Bandwidth bandwidth;
    Duration latency;
    LinkKind kind = LinkKind::kNvLink;
  };
  void add_link(const Link& link) {
    const LinkClassKey key{std::bit_cast<uint64_t>(link.bandwidth.bytes_per_second()), link.latency.ps(),
                           static_cast<int>(link.kind)};
    auto [it, inserted] = link_class_of_.emplace(key, static_cast<uint32_t>(link_classes_.size()));
    if (inserted) link_classes_.push_back(LinkClass{link.bandwidth, link.latency, link.kind});
    links_.push_back(PackedLink{link.from, link.to, it->second});
  }
  using LinkClassKey = std::tuple<uint64_t, int64_t, int>;
  std::vector<PackedLink> links_;
  std::vector<LinkClass> link_classes_;
  std::map<LinkClassKey, uint32_t> link_class_of_;
  std::vector<VertexKind> vertex_kinds_;
  // Vertex names are built on demand from the node layouts' (a million strings at 131,072 GPUs);
  // the fabric's switches, from fabric_base_ on, keep theirs.
  std::vector<std::string> fabric_names_;
  std::optional<FabricPlan> fabric_plan_;  // from build_nodes to build_fabric
  VertexId fabric_base_ = std::numeric_limits<VertexId>::max();
  int nics_total_ = 0;
  std::vector<int> leaf_of_nic_;  // per NIC of the cluster: its switch in the fabric layout
  std::vector<LinkId> nic_up_;    // per NIC: NIC → leaf
  std::vector<LinkId> nic_down_;  // per NIC: leaf → NIC

  // Routing state filled lazily by const queries, guarded by mutex_.
  mutable std::vector<NodeRoutes> layouts_;
  mutable std::optional<FabricRoutes> fabric_;
  mutable RouteTable routes_;
  mutable std::mutex mutex_;
};

Cluster::Cluster(const ClusterSpec& spec) : impl_(std::make_unique<Impl>(spec)) {}
Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

int Cluster::gpu_count() const { return impl_->gpu_count(); }
int Cluster::node_count() const { return impl_->node_count(); }
int Cluster::node_of(GpuId gpu) const { return impl_->node_of(gpu); }
int Cluster::local_index(GpuId gpu) const { return impl_->local_index(gpu); }
int Cluster::gpus_in_node(int node) const { return impl_->node(node).gpus; }
GpuId Cluster::first_gpu_of_node(int node) const { return impl_->node(node).first_gpu; }
const NodeSpec& Cluster::node_spec(int node) const {
  impl_->node(node);
  return impl_->spec().nodes[node];
}
const ClusterSpec& Cluster::spec() const { return impl_->spec(); }
size_t Cluster::link_count() const { return impl_->link_count(); }
Link Cluster::link(LinkId id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->link_count()) {
    throw InternalError(fmt::format("Cluster::link: no link {} (the cluster has {})", id, impl_->link_count()));
  }
  return impl_->link(id);
}
std::vector<Link> Cluster::all_links() const {
  std::vector<Link> all;
  all.reserve(impl_->link_count());
  for (size_t l = 0; l < impl_->link_count(); ++l) all.push_back(impl_->link(static_cast<LinkId>(l)));
  return all;
}
int Cluster::vertex_count() const { return impl_->vertex_count(); }
VertexKind Cluster::vertex_kind(VertexId v) const { return impl_->vertex_kind(v); }
std::string Cluster::vertex_name(VertexId v) const { return impl_->vertex_name(v); }
std::string Cluster::link_name(LinkId link) const { return impl_->link_name(link); }
VertexId Cluster::gpu_vertex(GpuId gpu) const { return impl_->gpu_vertex(gpu); }
int Cluster::nic_of(GpuId gpu) const { return impl_->nic_of(gpu); }
int Cluster::nic_count(int node) const { return impl_->nic_count(node); }
VertexId Cluster::nic_vertex(int node, int nic) const { return impl_->nic_vertex(node, nic); }
int Cluster::leaf_of(GpuId gpu) const { return impl_->leaf_of(gpu); }
int Cluster::pod_of(GpuId gpu) const { return impl_->pod_of(gpu); }
int Cluster::pod_count() const { return impl_->pod_count(); }

const Route& Cluster::route(GpuId src, GpuId dst, uint64_t flow_hash) const {
  return impl_->route(src, dst, flow_hash);
}

void Cluster::routes(std::span<const RouteRequest> requests, std::span<const Route*> out) const {
  impl_->routes(requests, out);
}

uint64_t Cluster::equal_cost_paths(GpuId src, GpuId dst) const { return impl_->equal_cost_paths(src, dst); }

Bandwidth Cluster::bottleneck(GpuId src, GpuId dst) const {
  const Route& path = route(src, dst);
  Bandwidth narrowest = Bandwidth::bytes_per_s(std::numeric_limits<double>::infinity());
  for (LinkId link : path.links) narrowest = std::min(narrowest, impl_->link(link).bandwidth);
  return narrowest;
}

}  // namespace clustersim
