#pragma once

// What every collective algorithm provides (one file per algorithm: all_reduce_ring.h,
// all_reduce_tree.h, all_reduce_nvls.h, hierarchical.h, all_to_all.h, send_recv.h), and the
// registry the selector and the runner look them up in.
//
// An algorithm reads the request (op, size, root, all-to-all matrix), the group's GroupLayout and
// the StepCosts of the chosen protocol. It returns either a TransferPlan (flow fidelity) or a
// closed-form α–β time (analytical fidelity). It never sees links, routes or queues.

#include <string>
#include <vector>

#include "collectives/collective.h"
#include "collectives/group_layout.h"
#include "collectives/protocol.h"
#include "collectives/transfer_plan.h"
#include "core/units.h"

namespace clustersim {

struct PlanOptions {
  // Upper bound on the flows a plan may start per pipelined phase, summed over ranks and channels.
  // A ring's 2(n−1) steps are merged into fewer phases when n × channels × steps would exceed it,
  // so a 1,024-GPU ring stays a few hundred thousand flows; pipelining inside a phase is carried
  // by the closed-form step latency.
  int flows_per_phase_budget = 65536;
};

struct AlgorithmEntry {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  // Whether the algorithm can run `op` on `layout`. When it cannot and `why` is not null, *why
  // says what is missing ("needs an NVSwitch node whose GPUs support NVLS").
  bool (*supports)(CollectiveOp op, const GroupLayout& layout, std::string* why) = nullptr;
  TransferPlan (*plan)(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                       const PlanOptions& options) = nullptr;
  Duration (*estimate)(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs) = nullptr;
  // Channels NCCL would run (reported with the choice).
  int (*channels)(const GroupLayout& layout) = nullptr;
  // Considered by the automatic selector. NCCL has no separate hierarchical algorithm, so the
  // selector skips it; users can still ask for it.
  bool automatic = true;
};

// Every algorithm, in the order the selector breaks ties (ring first, as NCCL's table order).
const std::vector<AlgorithmEntry>& algorithm_registry();

// The entry of `algorithm`. Throws InternalError for kAuto.
const AlgorithmEntry& algorithm_entry(CollectiveAlgorithm algorithm);

// Splits `total` into `parts` pieces whose sizes differ by at most one byte and sum exactly to
// `total`; piece i gets one extra byte when i < total % parts.
Bytes split_part(Bytes total, int64_t parts, int64_t index);

}  // namespace clustersim
