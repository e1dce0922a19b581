#include "collectives/send_recv.h"

#include "collectives/hops.h"
#include "core/error.h"

namespace clustersim {

bool send_recv_supports(CollectiveOp op, const GroupLayout& layout, std::string* why) {
  if (op != CollectiveOp::kSendRecv) {
    if (why != nullptr) *why = "pairwise runs all_to_all and send_recv";
    return false;
  }
  if (layout.size() != 2) {
    if (why != nullptr) *why = "send_recv needs a group of exactly 2 ranks (sender, receiver)";
    return false;
  }
  return true;
}

int send_recv_channels(const GroupLayout&) { return 1; }

TransferPlan send_recv_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                            const PlanOptions&) {
  check_invariant(layout.size() == 2, "send_recv has two ranks");
  TransferPlan plan;
  plan.add({0, 1, request.size, costs.base + hop_step(layout, costs, 0, 1),
            path_between(layout, 0, 1), 0});
  return plan;
}

Duration send_recv_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs) {
  check_invariant(layout.size() == 2, "send_recv has two ranks");
  const bool inter = crosses_nodes(layout, 0, 1);
  const Bandwidth rate = inter ? layout.nic_bandwidth * (layout.nic_efficiency * costs.efficiency)
                               : layout.intra_bandwidth * (layout.intra_efficiency * costs.efficiency);
  return costs.base + hop_step(layout, costs, 0, 1) + transfer_time(request.size, rate);
}

}  // namespace clustersim
