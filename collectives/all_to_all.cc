#include "collectives/all_to_all.h"

#include <algorithm>
#include <map>

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
  // Bytes per port and direction: a GPU's intra-node port, and each NIC (shared by its GPUs).
  std::vector<int64_t> gpu_out(static_cast<size_t>(n)), gpu_in(static_cast<size_t>(n));
  std::map<std::pair<int, int>, int64_t> nic_out, nic_in;
  bool any_inter = false;
  bool any_intra = false;
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      const int64_t bytes = all_to_all_block(request, n, src, dst).count();
      if (bytes == 0) continue;
      if (crosses_nodes(layout, src, dst)) {
        any_inter = true;
        const auto& from = layout.ranks[static_cast<size_t>(src)];
        const auto& to = layout.ranks[static_cast<size_t>(dst)];
        nic_out[{from.node, from.nic}] = checked_add(nic_out[{from.node, from.nic}], bytes, "all_to_all bytes");
        nic_in[{to.node, to.nic}] = checked_add(nic_in[{to.node, to.nic}], bytes, "all_to_all bytes");
      } else {
        any_intra = true;
        gpu_out[static_cast<size_t>(src)] = checked_add(gpu_out[static_cast<size_t>(src)], bytes, "all_to_all bytes");
        gpu_in[static_cast<size_t>(dst)] = checked_add(gpu_in[static_cast<size_t>(dst)], bytes, "all_to_all bytes");
      }
    }
  }
  const Bandwidth intra = layout.intra_bandwidth * (layout.intra_efficiency * costs.efficiency);
  const Bandwidth nic = layout.nic_bandwidth * (layout.nic_efficiency * costs.efficiency);
  Duration transfer;
  for (int rank = 0; rank < n; ++rank) {
    const int64_t busiest = std::max(gpu_out[static_cast<size_t>(rank)], gpu_in[static_cast<size_t>(rank)]);
    if (busiest > 0) transfer = std::max(transfer, transfer_time(Bytes::of(busiest), intra));
  }
  for (const auto* ports : {&nic_out, &nic_in}) {
    for (const auto& [port, bytes] : *ports) transfer = std::max(transfer, transfer_time(Bytes::of(bytes), nic));
  }
  Duration step;
  if (any_intra) step = std::max(step, costs.intra_step);
  if (any_inter) step = std::max(step, costs.inter_step);
  return costs.base + step + transfer;
}

}  // namespace clustersim
