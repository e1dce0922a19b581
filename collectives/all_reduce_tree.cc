#include "collectives/all_reduce_tree.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <utility>

#include "collectives/hops.h"
#include "collectives/link_efficiency.h"
#include "collectives/link_shares.h"
#include "core/error.h"

namespace clustersim {
namespace {

// Parent of `rank` in the in-order binary tree over 0..count−1: a rank's level is its lowest set
// bit; its parent sits one level up, to the right if that exists and to the left otherwise. Rank 0
// is the root (its single child is the largest power of two below `count`).
int btree_parent(int rank, int count) {
  if (rank == 0) return -1;
  const int low_bit = rank & -rank;
  const int right = (rank ^ low_bit) | (low_bit << 1);
  return right < count ? right : (rank ^ low_bit);
}

struct TreeEdge {
  int child = 0;   // rank index
  int parent = 0;  // rank index
};

struct TreeShape {
  std::vector<TreeEdge> edges;  // every edge of one tree (chains and node links)
  int chain_hops = 0;           // longest chain inside a node
  int node_depth = 0;           // floor(log2(nodes)), NCCL's log2i(nNodes)
};

// One tree of channel `channel` (0 or 1 within the pair `pair`): chains inside every node headed
// by the GPU of the pair's NIC, heads linked by the node-level binary tree.
TreeShape build_tree(const GroupLayout& layout, int pair, int tree) {
  TreeShape shape;
  const int nodes = layout.node_count();
  std::vector<int> heads(static_cast<size_t>(nodes));
  shape.edges.reserve(layout.ranks.size());
  std::vector<int> nics_seen;  // per node, kept across nodes to allocate once
  std::vector<size_t> entries;
  for (int node = 0; node < nodes; ++node) {
    const auto& ranks_of_node = layout.node_ranks[static_cast<size_t>(node)];
    // Head: the first rank (by local index) on the pair's NIC slot, as ring entries are chosen.
    nics_seen.clear();
    entries.clear();
    for (size_t index = 0; index < ranks_of_node.size(); ++index) {
      const int nic = layout.ranks[static_cast<size_t>(ranks_of_node[index])].nic;
      if (std::find(nics_seen.begin(), nics_seen.end(), nic) != nics_seen.end()) continue;
      nics_seen.push_back(nic);
      entries.push_back(index);
    }
    const size_t head = entries[static_cast<size_t>(pair) % entries.size()];
    const size_t m = ranks_of_node.size();
    heads[static_cast<size_t>(node)] = ranks_of_node[head];
    // Chain downward from the head: head, head−1, ..., wrapping (by local index).
    int previous = ranks_of_node[head];
    for (size_t step = 1; step < m; ++step) {
      const int next = ranks_of_node[(head + m - step) % m];
      shape.edges.push_back({next, previous});
      previous = next;
    }
    shape.chain_hops = std::max(shape.chain_hops, static_cast<int>(m) - 1);
  }
  const std::vector<int> parents = double_binary_tree_parents(nodes, tree);
  for (int node = 0; node < nodes; ++node) {
    const int parent = parents[static_cast<size_t>(node)];
    if (parent >= 0) {
      shape.edges.push_back({heads[static_cast<size_t>(node)], heads[static_cast<size_t>(parent)]});
    }
  }
  shape.node_depth = nodes > 1 ? std::bit_width(static_cast<unsigned>(nodes)) - 1 : 0;
  return shape;
}

int tree_pairs(const GroupLayout& layout) { return layout.node_count() > 1 ? layout.min_nics_per_node() : 1; }

// Least time of tree `share` bytes under NCCL's per-channel-pair ceiling C (tuning.cc
// perChMaxTreeBws / perChMaxTreeLL128Bws, tree busBw convention, StepCosts::channel_ceiling): a pair moves its 2·share bytes at algbw C/2, so one
// tree's share takes share / (C/4). Zero without a ceiling.
Duration tree_ceiling_time(const StepCosts& costs, Bytes share) {
  if (!costs.channel_ceiling.is_positive()) return Duration::zero();
  return transfer_time(share, costs.channel_ceiling / 4.0);
}

// Fill latency of a tree all_reduce, NCCL tuning.cc: 2 · ((ppn − 1) · intraLat + log2i(nNodes) · interLat).
Duration tree_latency(const TreeShape& shape, const StepCosts& costs) {
  return (costs.intra_step * shape.chain_hops + costs.inter_step * shape.node_depth) * 2;
}

}  // namespace

std::vector<int> double_binary_tree_parents(int nodes, int tree) {
  check_invariant(nodes >= 1 && (tree == 0 || tree == 1), "a double binary tree has trees 0 and 1 over >= 1 nodes");
  std::vector<int> parents(static_cast<size_t>(nodes));
  // Tree 1 renames the nodes: mirrored for an even count, shifted by one for an odd count, so that
  // the leaves (odd positions) of tree 0 are interior in tree 1.
  const auto position_of = [&](int node) {
    if (tree == 0) return node;
    return nodes % 2 == 0 ? nodes - 1 - node : (node + nodes - 1) % nodes;
  };
  const auto node_at = [&](int position) {
    if (tree == 0) return position;
    return nodes % 2 == 0 ? nodes - 1 - position : (position + 1) % nodes;
  };
  for (int node = 0; node < nodes; ++node) {
    const int parent_position = btree_parent(position_of(node), nodes);
    parents[static_cast<size_t>(node)] = parent_position < 0 ? -1 : node_at(parent_position);
  }
  return parents;
}

bool tree_supports(CollectiveOp op, const GroupLayout&, std::string* why) {
  if (op == CollectiveOp::kAllReduce) return true;
  if (why != nullptr) *why = "tree runs all_reduce only";
  return false;
}

int tree_channels(const GroupLayout& layout) { return 2 * tree_pairs(layout); }

TransferPlan tree_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                       const PlanOptions&) {
  TransferPlan plan;
  if (layout.size() < 2) return plan;
  const int pairs = tree_pairs(layout);
  const int trees = 2 * pairs;
  for (int t = 0; t < trees; ++t) {
    const TreeShape shape = build_tree(layout, t / 2, t % 2);
    const Bytes share = split_part(request.size, trees, t);
    const Duration fill = tree_latency(shape, costs);
    for (const TreeEdge& edge : shape.edges) {
      // Reduce up and broadcast down stream at once (pipelined chunks).
      for (const auto& [src, dst] : {std::pair{edge.child, edge.parent}, std::pair{edge.parent, edge.child}}) {
        plan.add({src, dst, share, costs.base + fill,
                  path_between(layout, src, dst), static_cast<uint32_t>(t)});
      }
    }
    // The channel's kernel ceiling runs beside the links: a join point that completes no earlier.
    const Duration ceiling = tree_ceiling_time(costs, share);
    if (ceiling > Duration::zero()) {
      plan.add({0, 0, Bytes::zero(), costs.base + fill + ceiling, TransferPath::kIntraNode, static_cast<uint32_t>(t)});
    }
  }
  return plan;
}

Duration tree_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs) {
  if (layout.size() < 2) return Duration::zero();
  const int pairs = tree_pairs(layout);
  const int trees = 2 * pairs;
  std::vector<TreeShape> shapes;
  LinkShares shares;
  for (int t = 0; t < trees; ++t) {
    shapes.push_back(build_tree(layout, t / 2, t % 2));
    for (const TreeEdge& edge : shapes.back().edges) {
      shares.add(layout, edge.child, edge.parent);
      shares.add(layout, edge.parent, edge.child);
    }
  }
  Duration slowest;
  for (int t = 0; t < trees; ++t) {
    const TreeShape& shape = shapes[static_cast<size_t>(t)];
    const Bytes share = split_part(request.size, trees, t);
    // Every edge of a tree carries the same share, so its slowest transfer is the one of the least
    // rate: one transfer_time per tree instead of one division per edge (131,072 GPUs: 4 M edges).
    std::optional<Bandwidth> least;
    for (const TreeEdge& edge : shape.edges) {
      const Bandwidth up = shares.rate(layout, edge.child, edge.parent, costs.efficiency);
      const Bandwidth down = shares.rate(layout, edge.parent, edge.child, costs.efficiency);
      const Bandwidth lower = std::min(up, down);
      if (!least || lower < *least) least = lower;
    }
    const Duration transfer = least ? transfer_time(share, *least) : Duration::zero();
    slowest = std::max(slowest, tree_latency(shape, costs) + std::max(transfer, tree_ceiling_time(costs, share)));
  }
  return costs.base + slowest;
}

}  // namespace clustersim
