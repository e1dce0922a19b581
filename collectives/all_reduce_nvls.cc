#include "collectives/all_reduce_nvls.h"

#include <algorithm>

#include "collectives/hops.h"

namespace clustersim {

Bytes nvls_bytes_per_gpu(Bytes size, int ranks, int rank) { return size + split_part(size, ranks, rank); }

bool nvls_supports(CollectiveOp op, const GroupLayout& layout, std::string* why) {
  if (op != CollectiveOp::kAllReduce) {
    if (why != nullptr) *why = "nvls runs all_reduce only";
    return false;
  }
  if (!layout.nvls_capable) {
    if (why != nullptr) *why = "nvls needs all ranks on one NVSwitch node whose GPUs support NVLink SHARP";
    return false;
  }
  return true;
}

int nvls_channels(const GroupLayout&) { return 16; }

TransferPlan nvls_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                       const PlanOptions&) {
  TransferPlan plan;
  const int n = layout.size();
  if (n < 2) return plan;
  for (int rank = 0; rank < n; ++rank) {
    const int peer = (rank + 1) % n;
    plan.add({rank, peer, nvls_bytes_per_gpu(request.size, n, rank),
              costs.base + costs.intra_step, TransferPath::kNvlsSwitch, 0});
  }
  return plan;
}

Duration nvls_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs) {
  const int n = layout.size();
  if (n < 2) return Duration::zero();
  const Bandwidth rate =
      layout.intra_bandwidth * (layout.intra_efficiency * layout.nvls_efficiency * costs.efficiency);
  Duration transfer;
  for (int rank = 0; rank < n; ++rank) {
    transfer = std::max(transfer, transfer_time(nvls_bytes_per_gpu(request.size, n, rank), rate));
  }
  return costs.base + costs.intra_step + transfer;
}

}  // namespace clustersim
