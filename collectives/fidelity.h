#pragma once

// How a collective (and every collective of a training step) is simulated.
//  - kFlow: as transfers over the flow network (network/flow_network.h), sharing links with every
//    other transfer in flight: contention is modelled, at a cost of events per chunk.
//  - kAnalytical: the alpha-beta time of the algorithm on its bottleneck link (collectives/
//    algorithm.h), with no contention between collectives.
// The scenario's `simulation.fidelity: auto` picks one per run (scenarios/scenario.h, resolve_fidelity).

#include <string_view>

namespace clustersim {

enum class Fidelity { kFlow, kAnalytical };

// "flow" or "analytical": the names of the scenario key simulation.fidelity and of --fidelity.
constexpr std::string_view name_of(Fidelity fidelity) {
  return fidelity == Fidelity::kFlow ? "flow" : "analytical";
}

}  // namespace clustersim
