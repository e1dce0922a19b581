#pragma once

// What simulating one training step will cost the simulator, counted from the stage programs
// before anything is simulated: the ops of the simulated ranks and, at flow fidelity, the
// point-to-point transfers that every collective and pipeline send will start on the FlowNetwork.
// A run states it before it starts and refuses one above its bound (simulation.max_events), and
// its progress lines measure how far the simulation got against it.
//
// The count follows simulate_step (parallelism/step_simulation.h): with `representative`, one rank
// per stage runs the compute ops and, at flow fidelity, every group of its stage that leaves an
// NVSwitch node runs its collectives (the mirrors that contend with it); without it, every rank
// runs the compute ops and each group its collectives once. Collectives inside an NVSwitch node are
// priced in closed form at either fidelity and start no transfer. Gradient buckets are counted as
// the reduction's elements over the bucket size, rounded up; no op is counted as fused (analytical
// runs that merge compute ops execute fewer events than estimated).

#include <cstdint>
#include <string>
#include <vector>

#include "parallelism/layout.h"
#include "parallelism/simulation_options.h"
#include "parallelism/step_program.h"
#include "topology/cluster.h"

namespace clustersim {

// Events per flow transfer and per op: the engine events simulate_step executed per counted
// transfer and op, measured with this estimate at flow fidelity (2026-12-03, once a transfer's
// arrival no longer had an event of its own: FlowNetwork::start_flow_sent): the shipped
// Llama-3-405B scenario on 64, 512 and 2,048 GPUs 2.29, 2.31 and 2.31 per transfer, on 16,384 GPUs
// 2.12 (116.5 M events), mixtral-8x7b-64-h100 2.26 (parallelism/work_estimate_test.cc checks the
// estimate against the executed events of shipped scenarios). A tuned constant of the simulator's
// own cost, not a physical one.
inline constexpr double kEventsPerTransfer = 2.2;
inline constexpr double kEventsPerOp = 1.0;

// Flow-fidelity events per second of one core, measured on the development machine (2-core EPYC
// VM, 2026-12-03, same binary): Llama-3-405B at flow fidelity (scenarios/llama3-405b-16k-h100.yaml)
// on 16,384 GPUs 116.5 M events in 56.0 s (2.1 M/s) while the machine ran slow (the previous
// binary took 63.8 s then, and 41-51 s earlier the same day), on 2,048 GPUs (dp 16) 8.55 M in 3.4-3.5
// s (2.4-2.5 M/s). Fewer events than before carry the same flow work, so the rate per event fell
// (3.1 M/s with 172 M events). 2.3 M/s puts the 16,384-GPU estimate (120.7 M events) at 52 s,
// between the day's quiet and slow wall times; a loaded machine takes longer;
// analytical runs execute about 8 M events/s (engine_benchmark). The count of events is the
// estimate, the time a rough guide (a factor 2 either way, more on a loaded machine).
inline constexpr double kFlowEventsPerSecond = 2.3e6;
inline constexpr double kAnalyticalEventsPerSecond = 8e6;

struct StepWork {
  int simulated_ranks = 0;      // ranks that run their compute ops
  uint64_t ops = 0;             // compute ops, collective calls and pipeline sends of those ranks
  uint64_t transfers = 0;       // flow transfers (0 at analytical fidelity)
  uint64_t collectives = 0;     // collective calls, mirrors included
  // ops × kEventsPerOp + transfers × kEventsPerTransfer: the engine events one step will execute.
  uint64_t events() const;
  // events() at the rate of this fidelity (kFlowEventsPerSecond or kAnalyticalEventsPerSecond), s.
  double seconds(Fidelity fidelity) const;
};

// "45 s", "12 min", "3.2 h": an estimated wall time as runs state it (at least "1 s").
std::string describe_estimated_seconds(double seconds);

// Counts one step of `stages` (size layout.pp, as simulate_step takes them) with `microbatches`
// per pipeline under options.fidelity and options.representative. Same preconditions as
// simulate_step; throws InputError where a collective request of the programs is invalid (as the
// simulation would). Cost: one pass over the programs, and each distinct collective's transfer
// plan built once (CollectiveRunner::transfer_count).
StepWork estimate_step_work(const Cluster& cluster, const Layout& layout, const std::vector<StageProgram>& stages,
                            int microbatches, const SimulationOptions& options);

}  // namespace clustersim
