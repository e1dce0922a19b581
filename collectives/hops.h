#pragma once

// Classifying one hop (a transfer from rank a to rank b of a group) for the algorithms: does it
// cross nodes, what route latency and step cost does it carry, which transport carries it.

#include "collectives/group_layout.h"
#include "collectives/protocol.h"
#include "collectives/transfer_plan.h"
#include "core/units.h"

namespace clustersim {

inline bool crosses_nodes(const GroupLayout& layout, int a, int b) {
  return layout.ranks[static_cast<size_t>(a)].node != layout.ranks[static_cast<size_t>(b)].node;
}

// Route latency between the two ranks (the layout's largest of that kind).
inline Duration route_latency(const GroupLayout& layout, int a, int b) {
  return crosses_nodes(layout, a, b) ? layout.inter_latency : layout.intra_latency;
}

// Fixed cost of one pipelined step over the hop.
inline Duration hop_step(const GroupLayout& layout, const StepCosts& costs, int a, int b) {
  return crosses_nodes(layout, a, b) ? costs.inter_step : costs.intra_step;
}

inline TransferPath path_between(const GroupLayout& layout, int a, int b) {
  return crosses_nodes(layout, a, b) ? TransferPath::kInterNode : TransferPath::kIntraNode;
}

}  // namespace clustersim
