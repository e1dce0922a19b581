#pragma once

// The NCCL-like choice of algorithm and protocol for one collective (NCCL src/enqueue.cc
// topoGetAlgoInfo / src/graph/tuning.cc ncclTopoGetAlgoTime): every (algorithm, protocol) pair that
// can run the op on this group is priced — latency plus size over bandwidth — and the fastest wins;
// ties go to the earlier pair in registry order (ring, tree, nvls, pairwise) and protocol order
// (LL, LL128, Simple). A request's algorithm or protocol narrows the candidates to what the user
// asked for. The hierarchical algorithm, which NCCL does not have, is only used when requested.

#include <functional>

#include "collectives/algorithm.h"
#include "collectives/collective.h"
#include "collectives/group_layout.h"

namespace clustersim {

// Time of one candidate for the request (closed form, or a calibrated fit).
using CandidatePricing = std::function<Duration(const AlgorithmEntry& entry, Protocol protocol)>;

struct Selection {
  CollectiveChoice choice;
  Duration time;  // the chosen candidate's price
};

// Throws InputError when the requested algorithm cannot run the op on this group or the requested
// protocol cannot run with it; the message names the request's value and the valid choices.
Selection select_algorithm(const CollectiveRequest& request, const GroupLayout& layout,
                           const CandidatePricing& price);

// The default pricing: the algorithm's closed form with step_costs(algorithm, protocol, layout).
Duration closed_form_time(const CollectiveRequest& request, const GroupLayout& layout, const AlgorithmEntry& entry,
                          Protocol protocol);

}  // namespace clustersim
