#pragma once

// What every simulated step of a run is simulated with, chosen once by the caller: the options
// that simulate_training (parallelism/training_simulation.h) hands to each step it simulates
// (parallelism/step_simulation.h). TrainingSimulationOptions and StepSimulationOptions both extend
// it, so that each of these is declared once and passed on as one value.

#include <cstdint>
#include <functional>

#include "collectives/fidelity.h"

namespace clustersim {

struct CollectiveProfile;  // calibrated fits (collectives/collective_profile.h)

// Events between two calls of SimulationOptions::progress: about 0.1 s of a flow-fidelity run
// (2-4 M events/s, parallelism/work_estimate.h), 5 ms of an analytical one.
inline constexpr uint64_t kProgressIntervalEvents = 1 << 16;

struct SimulationOptions {
  Fidelity fidelity = Fidelity::kAnalytical;
  // One rank per pipeline stage stands for all ranks of its stage (step_simulation.h says when
  // that is exact); false: every rank simulated.
  bool representative = true;
  bool record_trace = false;  // StepResult::trace: one span per op and transfer
  // Collective times fitted on measurements (collectives/collective_profile.h); null: the
  // algorithms' closed forms on the fabric's bandwidth and latency.
  const CollectiveProfile* collective_profile = nullptr;
  // The launch queue: the host thread issues a kernel only once the kernel `launch_queue_depth`
  // launches before it has finished; 0 = unbounded. 1,022: measured on the H200 of 2026-12-01
  // (tools/data/h200-2026-12-01-power/README.md, "Launch-queue depth": the 1,022nd launch
  // behind a long kernel blocked until it ended; CUDA's pending-launch limit is about 1,024).
  int64_t launch_queue_depth = 1022;
  // Called with the events the step's simulation has executed so far, every
  // kProgressIntervalEvents events (empty: never): how a long run reports its progress.
  std::function<void(uint64_t events)> progress;
};

}  // namespace clustersim
