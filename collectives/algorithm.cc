#include "collectives/algorithm.h"

#include "collectives/all_reduce_nvls.h"
#include "collectives/all_reduce_ring.h"
#include "collectives/all_reduce_tree.h"
#include "collectives/all_to_all.h"
#include "collectives/hierarchical.h"
#include "collectives/send_recv.h"
#include "core/error.h"

namespace clustersim {
namespace {

// all_to_all and send_recv are both direct point-to-point exchanges: one "pairwise" entry.
bool pairwise_supports(CollectiveOp op, const GroupLayout& layout, std::string* why) {
  if (op == CollectiveOp::kSendRecv) return send_recv_supports(op, layout, why);
  return all_to_all_supports(op, layout, why);
}

TransferPlan pairwise_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                           const PlanOptions& options) {
  if (request.op == CollectiveOp::kSendRecv) return send_recv_plan(request, layout, costs, options);
  return all_to_all_plan(request, layout, costs, options);
}

Duration pairwise_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs) {
  if (request.op == CollectiveOp::kSendRecv) return send_recv_estimate(request, layout, costs);
  return all_to_all_estimate(request, layout, costs);
}

}  // namespace

const std::vector<AlgorithmEntry>& algorithm_registry() {
  static const std::vector<AlgorithmEntry> kRegistry = {
      {CollectiveAlgorithm::kRing, ring_supports, ring_plan, ring_estimate, ring_channels, true},
      {CollectiveAlgorithm::kTree, tree_supports, tree_plan, tree_estimate, tree_channels, true},
      {CollectiveAlgorithm::kNvls, nvls_supports, nvls_plan, nvls_estimate, nvls_channels, true},
      {CollectiveAlgorithm::kHierarchical, hierarchical_supports, hierarchical_plan, hierarchical_estimate,
       hierarchical_channels, false},
      {CollectiveAlgorithm::kPairwise, pairwise_supports, pairwise_plan, pairwise_estimate, all_to_all_channels, true},
  };
  return kRegistry;
}

const AlgorithmEntry& algorithm_entry(CollectiveAlgorithm algorithm) {
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    if (entry.algorithm == algorithm) return entry;
  }
  throw InternalError("no registered algorithm for this value (kAuto must be resolved by the selector)");
}

Bytes split_part(Bytes total, int64_t parts, int64_t index) {
  check_invariant(parts > 0 && index >= 0 && index < parts, "split_part needs 0 <= index < parts");
  const int64_t base = total.count() / parts;
  return Bytes::of(base + (index < total.count() % parts ? 1 : 0));
}

}  // namespace clustersim
