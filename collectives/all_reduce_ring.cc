#include "collectives/all_reduce_ring.h"

#include <algorithm>
#include <utility>

#include "collectives/link_shares.h"
#include "core/error.h"

namespace clustersim {
namespace {

// Ranks of one node as the ring visits them: `entry` first, then the others downward from entry
// (cyclically, by local index), `exit` last.
std::vector<int> node_sequence(const std::vector<int>& node_ranks, size_t entry, size_t exit) {
  const size_t m = node_ranks.size();
  std::vector<int> sequence;
  sequence.reserve(m);
  sequence.push_back(node_ranks[entry]);
  for (size_t step = 1; step < m; ++step) {
    const size_t index = (entry + m - step) % m;
    if (index != exit) sequence.push_back(node_ranks[index]);
  }
  if (exit != entry) sequence.push_back(node_ranks[exit]);
  return sequence;
}

int steps_of(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2 * (n - 1);
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      return n - 1;
    default:
      break;
  }
  throw InternalError("ring steps asked for an op that is not a ring collective");
}

// Number of indices below `small` in the cyclic interval of `length` indices that starts at `low`.
int64_t count_below(int64_t low, int64_t length, int64_t small, int64_t n) {
  const auto in_range = [small](int64_t begin, int64_t end) {  // [begin, end) within [0, n)
    return std::max<int64_t>(0, std::min(end, small) - begin);
  };
  if (low + length <= n) return in_range(low, low + length);
  return in_range(low, n) + in_range(0, low + length - n);
}

// Bytes sent at ring position `position` during steps [first, last) of a ring collective of
// `ring_bytes` over n blocks. At step s the position sends one block: reduce-scatter steps send
// block (i − s − 1) mod n, all-gather steps block (i − s) mod n (s counted from the start of the
// all-gather half). Consecutive steps therefore send a cyclic run of consecutive blocks; blocks
// below ring_bytes % n are one byte larger.
Bytes position_bytes(CollectiveOp op, Bytes ring_bytes, int64_t n, int64_t position, int64_t first, int64_t last) {
  const int64_t quotient = ring_bytes.count() / n;
  const int64_t remainder = ring_bytes.count() % n;
  const auto run = [&](int64_t highest_block, int64_t length) {
    // Blocks highest_block, highest_block − 1, ..., highest_block − length + 1 (mod n).
    const int64_t low = ((highest_block - length + 1) % n + n) % n;
    return quotient * length + count_below(low, length, remainder, n);
  };
  int64_t total = 0;
  const auto add_half = [&](int64_t begin, int64_t end, int64_t offset) {
    if (end <= begin) return;
    total += run(((position - begin - offset) % n + n) % n, end - begin);
  };
  switch (op) {
    case CollectiveOp::kReduceScatter:
      add_half(first, last, 1);
      break;
    case CollectiveOp::kAllGather:
      add_half(first, last, 0);
      break;
    case CollectiveOp::kAllReduce: {
      const int64_t half = n - 1;
      add_half(first, std::min(last, half), 1);
      add_half(std::max(first, half) - half, last - half, 0);
      break;
    }
    default:
      throw InternalError("position_bytes asked for an op that is not a ring collective");
  }
  return Bytes::of(total);
}

// Latency a chunk accumulates over `steps` steps of a ring: every step crosses one hop, and over a
// whole revolution the hops are the ring's own (intra- and inter-node).
Duration ring_latency(const std::vector<int>& ring, const GroupLayout& layout, const StepCosts& costs,
                      int64_t steps) {
  const auto n = static_cast<int64_t>(ring.size());
  Duration revolution;
  for (int64_t i = 0; i < n; ++i) {
    revolution += hop_step(layout, costs, ring[static_cast<size_t>(i)], ring[static_cast<size_t>((i + 1) % n)]);
  }
  return Duration::picoseconds(checked_mul(revolution.ps(), steps, "ring latency") / n);
}

LinkShares ring_loads(const std::vector<std::vector<int>>& rings, const GroupLayout& layout) {
  LinkShares loads;
  for (const auto& ring : rings) {
    const size_t n = ring.size();
    if (n < 2) continue;
    for (size_t i = 0; i < n; ++i) loads.add(layout, ring[i], ring[(i + 1) % n]);
  }
  return loads;
}

// A ring rotated so that `root` comes first.
std::vector<int> rotated_to(const std::vector<int>& ring, int root) {
  auto it = std::find(ring.begin(), ring.end(), root);
  check_invariant(it != ring.end(), "the root is in every ring");
  std::vector<int> rotated(it, ring.end());
  rotated.insert(rotated.end(), ring.begin(), it);
  return rotated;
}

// Chain hops (src, dst) of a broadcast (from the root) or reduce (towards the root) on one ring.
std::vector<std::pair<int, int>> chain_hops(const std::vector<int>& ring, int root, bool towards_root) {
  const std::vector<int> chain = rotated_to(ring, root);
  std::vector<std::pair<int, int>> hops;
  for (size_t k = 0; k + 1 < chain.size(); ++k) {
    hops.emplace_back(towards_root ? std::make_pair(chain[k + 1], chain[k]) : std::make_pair(chain[k], chain[k + 1]));
  }
  return hops;
}

Duration chain_latency(const std::vector<std::pair<int, int>>& hops, const GroupLayout& layout,
                       const StepCosts& costs) {
  Duration total;
  for (const auto& [src, dst] : hops) total += hop_step(layout, costs, src, dst);
  return total;
}


// Phases a ring's `steps` steps are merged into. Every phase waits for the previous one around
// the ring, so a phase must stand for enough steps that its share of the ring latency (steps ×
// the ring's mean step cost) covers the slowest route it crosses; otherwise a node crossing would
// add its full latency on every step where NCCL's pipeline pays it only on the hops a chunk
// actually crosses. The flow budget bounds the phases from above.
int64_t ring_phases(const std::vector<std::vector<int>>& rings, const GroupLayout& layout, const StepCosts& costs,
                    int64_t steps, const PlanOptions& options) {
  const auto n = static_cast<int64_t>(rings.front().size());
  const int64_t flows_per_step = n * static_cast<int64_t>(rings.size());
  int64_t phases = std::clamp<int64_t>(options.flows_per_phase_budget / std::max<int64_t>(1, flows_per_step), 1, steps);
  for (const auto& ring : rings) {
    Duration slowest_route;
    for (int64_t i = 0; i < n; ++i) {
      slowest_route = std::max(slowest_route, route_latency(layout, ring[static_cast<size_t>(i)],
                                                            ring[static_cast<size_t>((i + 1) % n)]));
    }
    const Duration revolution = ring_latency(ring, layout, costs, n);  // n steps: every hop once
    if (revolution <= Duration::zero()) continue;
    // Smallest k with k × revolution / n >= slowest_route.
    const int64_t min_steps = (checked_mul(slowest_route.ps(), n, "ring phase") + revolution.ps() - 1) / revolution.ps();
    phases = std::min(phases, std::max<int64_t>(1, steps / std::max<int64_t>(1, min_steps)));
  }
  return phases;
}

}  // namespace

std::vector<std::vector<int>> ring_orders(const GroupLayout& layout) {
  check_invariant(layout.node_count() >= 1, "a layout spans at least one node");
  if (layout.node_count() == 1) return {layout.node_ranks.front()};

  // NCCL builds one ring per NIC only where NVLink carries the rings inside the node; on a PCIe
  // node one ring already fills the PCIe links ("going through all GPUs would consume all PCI
  // bandwidth, so there would be no room left for another flow", NVIDIA/nccl issue 412).
  const int rings = layout.intra_fabric == IntraNodeFabric::kPcie ? 1 : layout.min_nics_per_node();
  // Per node, the first rank (by local index) on each distinct NIC: the ring entry points.
  std::vector<std::vector<size_t>> entries(layout.node_ranks.size());
  for (size_t node = 0; node < layout.node_ranks.size(); ++node) {
    std::vector<int> seen;
    const auto& ranks_of_node = layout.node_ranks[node];
    for (size_t index = 0; index < ranks_of_node.size(); ++index) {
      const int nic = layout.ranks[static_cast<size_t>(ranks_of_node[index])].nic;
      if (std::find(seen.begin(), seen.end(), nic) != seen.end()) continue;
      seen.push_back(nic);
      entries[node].push_back(index);
    }
  }
  std::vector<std::vector<int>> orders(static_cast<size_t>(rings));
  for (int r = 0; r < rings; ++r) {
    for (size_t node = 0; node < layout.node_ranks.size(); ++node) {
      const auto& node_entries = entries[node];
      const size_t slot = (static_cast<size_t>(r) + node) % static_cast<size_t>(rings);
      const size_t entry = node_entries[slot];
      // With one NIC per node the sequence simply ends at the last GPU visited.
      const size_t exit = rings > 1 ? node_entries[(slot + 1) % static_cast<size_t>(rings)] : entry;
      const std::vector<int> sequence = node_sequence(layout.node_ranks[node], entry, exit);
      orders[static_cast<size_t>(r)].insert(orders[static_cast<size_t>(r)].end(), sequence.begin(), sequence.end());
    }
  }
  return orders;
}

bool ring_supports(CollectiveOp op, const GroupLayout&, std::string* why) {
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
      return true;
    default:
      if (why != nullptr) *why = "ring runs all_reduce, all_gather, reduce_scatter, broadcast and reduce";
      return false;
  }
}

int ring_channels(const GroupLayout& layout) { return 2 * static_cast<int>(ring_orders(layout).size()); }

std::vector<Bytes> split_over_rings(Bytes size, size_t rings) {
  std::vector<Bytes> parts;
  for (size_t r = 0; r < rings; ++r) {
    parts.push_back(split_part(size, static_cast<int64_t>(rings), static_cast<int64_t>(r)));
  }
  return parts;
}

std::vector<int32_t> append_ring_collective(TransferPlan& plan, CollectiveOp op, std::span<const Bytes> ring_sizes,
                                            const std::vector<std::vector<int>>& rings, const GroupLayout& layout,
                                            const StepCosts& costs, const PlanOptions& options,
                                            std::span<const int32_t> start_after, Duration start_latency) {
  check_invariant(!rings.empty() && ring_sizes.size() == rings.size(), "one size per ring");
  const auto n = static_cast<int64_t>(rings.front().size());
  if (n < 2) return {start_after.begin(), start_after.end()};

  // One join point instead of n × rings dependencies on every previous transfer.
  std::vector<int32_t> start(start_after.begin(), start_after.end());
  if (start.size() > 1) {
    const int32_t join = plan.add({rings.front().front(), rings.front().front(), Bytes::zero(), Duration::zero(),
                                   TransferPath::kIntraNode, 0},
                                  start);
    start = {join};
  }

  const auto ring_count = static_cast<int64_t>(rings.size());
  const int64_t steps = steps_of(op, static_cast<int>(n));
  const int64_t phases = ring_phases(rings, layout, costs, steps, options);

  std::vector<std::vector<int32_t>> previous(static_cast<size_t>(ring_count));
  std::vector<int32_t> last_phase;
  for (int64_t phase = 0; phase < phases; ++phase) {
    const int64_t first = phase * steps / phases;
    const int64_t last = (phase + 1) * steps / phases;
    last_phase.clear();
    for (int64_t r = 0; r < ring_count; ++r) {
      const auto& ring = rings[static_cast<size_t>(r)];
      const Bytes ring_bytes = ring_sizes[static_cast<size_t>(r)];
      Duration latency = ring_latency(ring, layout, costs, last) - ring_latency(ring, layout, costs, first);
      if (phase == 0) latency += start_latency;
      std::vector<int32_t> current(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const int src = ring[static_cast<size_t>(i)];
        const int dst = ring[static_cast<size_t>((i + 1) % n)];
        const Transfer transfer{src,     dst, position_bytes(op, ring_bytes, n, i, first, last),
                                latency, path_between(layout, src, dst), static_cast<uint32_t>(r)};
        if (phase == 0) {
          current[static_cast<size_t>(i)] = plan.add(transfer, start);
        } else {
          // The block received in the previous phase, and this rank's own previous send (a
          // connection delivers its steps in order).
          const auto& before = previous[static_cast<size_t>(r)];
          const int32_t deps[2] = {before[static_cast<size_t>(i)], before[static_cast<size_t>((i + n - 1) % n)]};
          current[static_cast<size_t>(i)] = plan.add(transfer, deps);
        }
      }
      last_phase.insert(last_phase.end(), current.begin(), current.end());
      previous[static_cast<size_t>(r)] = std::move(current);
    }
  }
  return last_phase;
}

Duration ring_collective_time(CollectiveOp op, std::span<const Bytes> ring_sizes,
                              const std::vector<std::vector<int>>& rings, const GroupLayout& layout,
                              const StepCosts& costs) {
  check_invariant(!rings.empty() && ring_sizes.size() == rings.size(), "one size per ring");
  const auto n = static_cast<int64_t>(rings.front().size());
  if (n < 2) return Duration::zero();
  const LinkShares loads = ring_loads(rings, layout);
  const auto ring_count = static_cast<int64_t>(rings.size());
  const int64_t steps = steps_of(op, static_cast<int>(n));
  Duration slowest;
  for (int64_t r = 0; r < ring_count; ++r) {
    const auto& ring = rings[static_cast<size_t>(r)];
    const Bytes ring_bytes = ring_sizes[static_cast<size_t>(r)];
    SlowestTransfer transfer;
    for (int64_t i = 0; i < n; ++i) {
      const int src = ring[static_cast<size_t>(i)];
      const int dst = ring[static_cast<size_t>((i + 1) % n)];
      transfer.add(position_bytes(op, ring_bytes, n, i, 0, steps), loads.rate(layout, src, dst, costs.efficiency));
    }
    slowest = std::max(slowest, ring_latency(ring, layout, costs, steps) + transfer.time());
  }
  return slowest;
}

TransferPlan ring_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                       const PlanOptions& options) {
  TransferPlan plan;
  if (layout.size() < 2) return plan;
  const std::vector<std::vector<int>> rings = ring_orders(layout);
  if (request.op == CollectiveOp::kBroadcast || request.op == CollectiveOp::kReduce) {
    const bool towards_root = request.op == CollectiveOp::kReduce;
    const auto ring_count = static_cast<int64_t>(rings.size());
    for (int64_t r = 0; r < ring_count; ++r) {
      const auto hops = chain_hops(rings[static_cast<size_t>(r)], request.root, towards_root);
      const Duration fill = chain_latency(hops, layout, costs);
      for (const auto& [src, dst] : hops) {
        plan.add({src, dst, split_part(request.size, ring_count, r), costs.base + fill, path_between(layout, src, dst),
                  static_cast<uint32_t>(r)});
      }
    }
    return plan;
  }
  const std::vector<Bytes> sizes = split_over_rings(request.size, rings.size());
  append_ring_collective(plan, request.op, sizes, rings, layout, costs, options, {}, costs.base);
  return plan;
}

Duration ring_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs) {
  if (layout.size() < 2) return Duration::zero();
  const std::vector<std::vector<int>> rings = ring_orders(layout);
  if (request.op == CollectiveOp::kBroadcast || request.op == CollectiveOp::kReduce) {
    const bool towards_root = request.op == CollectiveOp::kReduce;
    LinkShares loads;
    std::vector<std::vector<std::pair<int, int>>> chains;
    for (const auto& ring : rings) {
      chains.push_back(chain_hops(ring, request.root, towards_root));
      for (const auto& [src, dst] : chains.back()) loads.add(layout, src, dst);
    }
    Duration slowest;
    const auto ring_count = static_cast<int64_t>(rings.size());
    for (int64_t r = 0; r < ring_count; ++r) {
      const auto& hops = chains[static_cast<size_t>(r)];
      SlowestTransfer transfer;
      for (const auto& [src, dst] : hops) {
        transfer.add(split_part(request.size, ring_count, r), loads.rate(layout, src, dst, costs.efficiency));
      }
      slowest = std::max(slowest, chain_latency(hops, layout, costs) + transfer.time());
    }
    return costs.base + slowest;
  }
  return costs.base + ring_collective_time(request.op, split_over_rings(request.size, rings.size()), rings, layout, costs);
}

}  // namespace clustersim
