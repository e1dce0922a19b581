#include "collectives/all_to_all.h"

#include <algorithm>
#include <vector>

#include "collectives/hops.h"
#include "core/error.h"

namespace clustersim {

Bytes all_to_all_block(const CollectiveRequest& request, int ranks, int src, int dst) {
  if (!request.all_to_all_bytes.empty()) {
    return Bytes::of(request.all_to_all_bytes[static_cast<size_t>(src) * static_cast<size_t>(ranks) +
                                              static_cast<size_t>(dst)]);
  }
  return split_part(request.size, ranks, dst);
}

bool all_to_all_supports(CollectiveOp op, const GroupLayout&, std::string* why) {
  if (op == CollectiveOp::kAllToAll) return true;
  if (why != nullptr) *why = "pairwise runs all_to_all and send_recv";
  return false;
}

int all_to_all_channels(const GroupLayout& layout) { return layout.node_count() > 1 ? layout.min_nics_per_node() : 1; }

TransferPlan all_to_all_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                             const PlanOptions& options) {
  TransferPlan plan;
  const int n = layout.size();
  if (n < 2) return plan;
  const int64_t flows = static_cast<int64_t>(n) * (n - 1);
  const int64_t phases = std::clamp<int64_t>((flows + options.flows_per_phase_budget - 1) / options.flows_per_phase_budget,
                                             1, n - 1);
  std::vector<int32_t> joins(static_cast<size_t>(n), -1);  // per rank: join of its previous phase
  for (int64_t phase = 0; phase < phases; ++phase) {
    const int64_t first_round = 1 + phase * (n - 1) / phases;
    const int64_t last_round = 1 + (phase + 1) * (n - 1) / phases;
    std::vector<std::vector<int32_t>> sent(static_cast<size_t>(n));
    for (int src = 0; src < n; ++src) {
      for (int64_t round = first_round; round < last_round; ++round) {
        const int dst = static_cast<int>((src + round) % n);
        const Bytes block = all_to_all_block(request, n, src, dst);
        if (block == Bytes::zero()) continue;
        const Duration latency = (phase == 0 ? costs.base : Duration::zero()) + hop_step(layout, costs, src, dst);
        const Transfer transfer{src, dst, block, latency, path_between(layout, src, dst), static_cast<uint32_t>(round)};
        const int32_t join = joins[static_cast<size_t>(src)];
        sent[static_cast<size_t>(src)].push_back(join < 0 ? plan.add(transfer) : plan.add(transfer, {&join, 1}));
      }
    }
    if (phase + 1 == phases) break;
    for (int src = 0; src < n; ++src) {
      auto& mine = sent[static_cast<size_t>(src)];
      if (mine.empty()) continue;
      joins[static_cast<size_t>(src)] =
          plan.add({src, src, Bytes::zero(), Duration::zero(), TransferPath::kIntraNode, 0}, mine);
    }
  }
  return plan;
}

Duration all_to_all_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs) {
  const int n = layout.size();
  if (n < 2) return Duration::zero();
  // Bytes per port and direction: a GPU's intra-node port, and each NIC (shared by its GPUs),
  // indexed node × nics_per_port + nic.
  int nic_slots = 1;
  for (const auto& place : layout.ranks) nic_slots = std::max(nic_slots, place.nic + 1);
  auto port = [&](int rank) {
    const auto& place = layout.ranks[static_cast<size_t>(rank)];
    return static_cast<size_t>(place.node) * static_cast<size_t>(nic_slots) + static_cast<size_t>(place.nic);
  };
  std::vector<int64_t> gpu_out(static_cast<size_t>(n)), gpu_in(static_cast<size_t>(n));
  std::vector<int64_t> nic_out(static_cast<size_t>(layout.node_count()) * static_cast<size_t>(nic_slots));
  std::vector<int64_t> nic_in(nic_out.size());
  auto add = [](int64_t& total, int64_t bytes) { total = checked_add(total, bytes, "all_to_all bytes"); };
  if (request.all_to_all_bytes.empty()) {
    // Even split: the block to `dst` is split_part(size, n, dst) from every sender. Sum the blocks
    // per node once, so the traffic of each rank is O(1): O(n) in all.
    std::vector<int64_t> part(static_cast<size_t>(n));
    std::vector<int64_t> node_parts(static_cast<size_t>(layout.node_count()));
    int64_t all_parts = 0;
    for (int r = 0; r < n; ++r) {
      part[static_cast<size_t>(r)] = split_part(request.size, n, r).count();
      add(node_parts[static_cast<size_t>(layout.ranks[static_cast<size_t>(r)].node)], part[static_cast<size_t>(r)]);
      add(all_parts, part[static_cast<size_t>(r)]);
    }
    for (int r = 0; r < n; ++r) {
      const size_t node = static_cast<size_t>(layout.ranks[static_cast<size_t>(r)].node);
      const int64_t local_peers = static_cast<int64_t>(layout.node_ranks[node].size()) - 1;
      const int64_t remote_peers = n - 1 - local_peers;
      const int64_t mine = part[static_cast<size_t>(r)];
      gpu_out[static_cast<size_t>(r)] = node_parts[node] - mine;  // to the other ranks of the node
      gpu_in[static_cast<size_t>(r)] = checked_mul(local_peers, mine, "all_to_all bytes");
      add(nic_out[port(r)], all_parts - node_parts[node]);
      add(nic_in[port(r)], checked_mul(remote_peers, mine, "all_to_all bytes"));
    }
  } else {
    for (int src = 0; src < n; ++src) {
      for (int dst = 0; dst < n; ++dst) {
        if (src == dst) continue;
        const int64_t bytes = all_to_all_block(request, n, src, dst).count();
        if (bytes == 0) continue;
        if (crosses_nodes(layout, src, dst)) {
          add(nic_out[port(src)], bytes);
          add(nic_in[port(dst)], bytes);
        } else {
          add(gpu_out[static_cast<size_t>(src)], bytes);
          add(gpu_in[static_cast<size_t>(dst)], bytes);
        }
      }
    }
  }
  const bool any_intra = std::any_of(gpu_out.begin(), gpu_out.end(), [](int64_t b) { return b > 0; });
  const bool any_inter = std::any_of(nic_out.begin(), nic_out.end(), [](int64_t b) { return b > 0; });
  const Bandwidth intra = layout.intra_bandwidth * (layout.intra_efficiency * costs.efficiency);
  const Bandwidth nic = layout.nic_bandwidth * (layout.nic_efficiency * costs.efficiency);
  int64_t busiest_gpu = 0;
  for (int rank = 0; rank < n; ++rank) {
    busiest_gpu = std::max({busiest_gpu, gpu_out[static_cast<size_t>(rank)], gpu_in[static_cast<size_t>(rank)]});
  }
  int64_t busiest_nic = 0;
  for (size_t p = 0; p < nic_out.size(); ++p) busiest_nic = std::max({busiest_nic, nic_out[p], nic_in[p]});
  Duration transfer;
  if (busiest_gpu > 0) transfer = std::max(transfer, transfer_time(Bytes::of(busiest_gpu), intra));
  if (busiest_nic > 0) transfer = std::max(transfer, transfer_time(Bytes::of(busiest_nic), nic));
  Duration step;
  if (any_intra) step = std::max(step, costs.intra_step);
  if (any_inter) step = std::max(step, costs.inter_step);
  return costs.base + step + transfer;
}

}  // namespace clustersim
