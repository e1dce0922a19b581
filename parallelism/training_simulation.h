#pragma once

// One training step of a model on a cluster under a layout: validation, programs, simulation and
// the figures users read (step time, tokens/s, MFU, HFU, memory per stage, where the time went).
//
// FLOP convention (stated in every report): MFU = model FLOPs per step / (step time × GPUs × dense
// peak of the compute dtype), model FLOPs without recomputation and with attention over the full
// s × s score matrix (Megatron-LM, Korthikanti et al. 2022; PaLM App. B); HFU adds the recomputed
// forward FLOPs.

#include <functional>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

#include "collectives/collective_runner.h"
#include "cost_models/calibration_profile.h"
#include "parallelism/layout.h"
#include "parallelism/program_builder.h"
#include "parallelism/simulation_options.h"
#include "parallelism/step_simulation.h"
#include "parallelism/validate_run.h"
#include "parallelism/work_estimate.h"
#include "topology/cluster.h"
#include "workloads/model_flops.h"
#include "workloads/model_spec.h"
#include "workloads/training_spec.h"

namespace clustersim {

// A GPU that runs its kernels slower than its peers (thermal or power throttling, a degraded
// part): every kernel time divided by `speed` (ComputeCostModel::set_speed); its communication
// and host costs unchanged.
struct Straggler {
  int gpu = 0;         // the rank, GPUs of the cluster in order
  double speed = 1.0;  // in (0, 1]
};

// Per-step jitter: in each sampled step every GPU's kernels take a log-normal factor of their time
// (mean 1, coefficient of variation `cv`, clamped to [0.25, 4], rounded to 0.1 %), drawn anew
// each step from a seeded stream; every rank is simulated, since no two are alike.
inline constexpr int kMaxJitterGpus = 8192;
struct StepJitter {
  double cv = 0;
  int steps = 5;
  uint64_t seed = 1;
};

// The work of a run (parallelism/work_estimate.h): the estimate of the step as the run simulates
// it, and of every step it simulates (a second one under the power model, one without stragglers,
// the sampled steps with jitter, which simulate every rank).
struct RunWork {
  StepWork step;
  int steps = 1;           // steps simulated
  uint64_t events = 0;     // estimated engine events of all of them
  double seconds = 0;      // at the measured events per second of the fidelity (StepWork::seconds)
  Fidelity fidelity = Fidelity::kAnalytical;  // the fidelity the run is simulated at
  // With TrainingSimulationOptions::auto_flow_seconds: the run's estimate at flow fidelity (s),
  // whichever fidelity it was simulated at; empty otherwise.
  std::optional<double> auto_flow_estimate_s;
  std::optional<uint64_t> auto_flow_estimate_events;  // the same estimate's events
};

// SimulationOptions (fidelity, representative, trace, collective profile, launch queue: what every
// step it simulates is simulated with) and what the training simulation itself uses.
struct TrainingSimulationOptions : SimulationOptions {
  bool allow_idle_gpus = false;
  const CalibrationProfile* compute_profile = nullptr;
  // Kernel pricing to use; null: built from the cluster's GPU and compute_profile. A caller that
  // simulates many layouts (clustersim search) builds it once; it must be for the same GPU and
  // profile.
  const ComputeCostModel* compute_cost = nullptr;
  // Run each GPU under its power limit (cost_models/power_model.h) and report its energy; needs the
  // GPU's power_limit (without one the step runs at full clock and has no energy figures).
  bool power_model = false;
  // Slow GPUs. With `representative`, stragglers on one tp·cp·dp line (one pipeline, the same
  // position in each stage) are simulated on that line; stragglers on several lines turn it off
  // (every rank simulated), so that no symmetry they break is assumed.
  std::vector<Straggler> stragglers;
  // With stragglers, also simulate the step without them (TrainingReport::step_time_without_stragglers_s);
  // a search, which ranks the step with them, leaves it off.
  bool straggler_baseline = true;
  // Sampled steps with jitter (on top of the stragglers): TrainingReport::jitter.
  std::optional<StepJitter> jitter;
  // simulation.fidelity: auto beyond its size caps (scenarios/scenario.h, resolve_fidelity): with
  // `fidelity` analytical, the run is simulated at flow fidelity instead where its flow estimate
  // (RunWork::seconds at flow fidelity) is at most this many seconds and its events at most
  // auto_flow_max_events (0: no bound; the run's simulation.max_events, so that auto never picks a
  // fidelity the run would be refused at). Empty: `fidelity` as given.
  std::optional<double> auto_flow_seconds;
  uint64_t auto_flow_max_events = 0;
  // Called once with the run's estimate before the first step is simulated; it may throw to refuse
  // the run (check_run_work), and nothing is simulated then.
  std::function<void(const RunWork&)> on_estimate;
  // Called about every kProgressIntervalEvents events with the events executed so far over every
  // step and RunWork::events (the done count may pass the estimate).
  std::function<void(uint64_t done, uint64_t estimated)> on_progress;
};

// The steps sampled with jitter: their mean and spread (s), against the step without it.
struct JitterReport {
  bool modelled = false;
  int steps = 0;
  double mean_step_s = 0;
  double min_step_s = 0;
  double max_step_s = 0;
};

// The GPUs' power over the step (TrainingSimulationOptions::power_model), averaged over the GPUs.
struct GpuEnergy {
  bool modelled = false;
  double avg_power_w = 0;       // energy per GPU / step time
  double joules_per_step = 0;   // per GPU
  double power_limit_w = 0;
  // Full-clock time of the clock-bound work / its time under the governor (1: never power-limited).
  double rate_factor = 1;
  // Time the governor added to the clock-bound work, averaged over the simulated GPUs (s): on one
  // GPU, the step less its work at full clock.
  double clock_stretch_s = 0;
  // The largest difference between a GPU's averaged power at the start and at the end of the
  // simulated step (W): how far the one-iteration steady state is from periodic.
  double start_end_power_w = 0;
};

// Where the critical (last-finishing) rank's step went, in whole picoseconds: its RankBreakdown
// parts as the step simulation measured them, and `other`, the step time less the five parts, so
// that the six sum exactly to the step time (a fully accounted rank has `other` exactly 0).
// Reports convert each to seconds once, where they print it (Duration::to_seconds).
struct TimeBreakdown {
  Duration compute;       // forward, backward, recompute
  Duration exposed_comm;  // collectives the compute stream waited for
  Duration bubble;        // pipeline waits
  Duration optimizer;
  Duration host_bound;    // the compute stream waiting for the host thread (step_simulation.h)
  Duration other;
};

struct TrainingReport {
  StepResult step;
  StepFlops flops;
  TrainingPrograms programs;  // stage programs and per-stage memory
  int gpus = 0;               // GPUs the layout uses
  int microbatches = 0;       // per pipeline per step
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double hfu = 0;
  // StepFlops::executed / (GPU-seconds × peak): the share of peak the kernels run, attention at
  // what its kernels execute (about half the s × s convention for causal fused attention).
  double executed_fraction = 0;
  double model_tflops_per_gpu = 0;     // model FLOPs / step time / GPUs
  double hardware_tflops_per_gpu = 0;  // with recomputation
  TimeBreakdown breakdown;
  Bytes peak_memory;                   // largest stage total
  int peak_stage = 0;
  Bytes capacity;                      // GPU memory capacity
  bool fits = true;
  std::string compute_model;           // "datasheet defaults ..." or "calibrated by profile ..."
  std::string host_model;              // the host costs in force (HostCosts::source)
  GpuEnergy energy;
  // With stragglers: the same step without them, and whether every rank was simulated for them.
  double step_time_without_stragglers_s = 0;
  bool stragglers_simulated_every_rank = false;
  JitterReport jitter;
  RunWork work;                        // the estimate the run was checked against
  uint64_t events = 0;                 // engine events executed, every simulated step
};

// "5.06e+08 simulation events (1 step(s) of 16 simulated rank(s), 168777728 flow transfers per
// step, flow fidelity): about 8 min on one core": the estimate as runs state it and refuse it.
std::string describe_run_work(const RunWork& work);

// Throws InputError, prefixed with `source` (the scenario file; "" for none) and naming
// simulation.max_events, when `work` is estimated above `max_events` events (0 = no bound).
// `where`, when given, is the place of the key itself ("--set simulation.max_events: ",
// "f.yaml:4:3: simulation.max_events: "), and replaces that prefix.
void check_run_work(const RunWork& work, uint64_t max_events, std::string_view source, std::string_view where = "");

// Validates the run (validate_run, parallelism/validate_run.h: InputError naming fields and valid
// values), builds the programs and simulates one step; also InputError for a straggler outside the
// layout or of a speed outside (0, 1], and for jitter over more than kMaxJitterGpus GPUs.
TrainingReport simulate_training(const Cluster& cluster, const ModelSpec& model, const TrainingSpec& training,
                                 const Layout& layout, const TrainingSimulationOptions& options = {});

}  // namespace clustersim
