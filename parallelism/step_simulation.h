#pragma once

// Simulates one training step of a layout: every simulated rank runs its stage's program in the
// order of the pipeline schedule on a compute stream; collectives run on per-group communication
// streams (the TP ones block the compute stream, data-parallel gradient buckets overlap with the
// backward pass when enabled); pipeline sends carry activations and gradients between stages.
//
// Ranks: with `representative` on, one rank per pipeline stage (tp = cp = dp = 0) stands for all
// ranks of its stage, which run identical programs on a symmetric fabric (at flow fidelity, one rank
// per tied component of a stage when tied groups cross the network: representative_lines). Its
// collectives span their whole groups, and in flow fidelity the collectives of the symmetric groups
// it stands for are started alongside, so that link contention between them is kept.
// A test compares this with the full simulation (`representative` off: every rank simulated,
// collectives start when all members have arrived).

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/collective_runner.h"
#include "core/units.h"
#include "cost_models/power_model.h"
#include "parallelism/layout.h"
#include "parallelism/rank_grid.h"
#include "parallelism/simulation_options.h"
#include "parallelism/step_program.h"
#include "topology/cluster.h"

namespace clustersim {

// SimulationOptions (fidelity, representative, trace, collective profile, launch queue) and what
// simulate_training sets for one step: the power governors, their starting power, the stragglers.
struct StepSimulationOptions : SimulationOptions {
  // The GPU's power model: each simulated rank's compute stream runs under its own clock governor
  // (cost_models/power_model.h), which stretches clock-bound work while the averaged power would
  // exceed the limit, and integrates the GPU's energy. Null: full clock throughout, no energy.
  const PowerModel* power = nullptr;
  // The governors' averaged power (W) at the start of the step, per simulated rank in the order of
  // StepResult::ranks (the end of the previous step); empty: every GPU starts idle.
  std::vector<double> initial_power_w;
  // Stragglers: rank r runs rank_programs[r] instead of its stage's program where that is not null
  // (empty: every rank its stage's). With `representative`, the simulated rank of each stage is the
  // one at representative_line's tp, cp and dp coordinates (the line of a straggler).
  std::vector<const StageProgram*> rank_programs;
  RankCoord representative_line;
};

// Where one rank's step time went. The six parts sum to the step time.
//
// The host thread: each simulated rank has a CPU thread that issues its compute stream's kernels
// and NCCL calls in program order (ProgramOp::host, parallelism/step_program.h). It runs ahead of
// the GPU, up to the launch-queue depth; a kernel starts at the latest of the end of the kernel
// before it and its issue time, a collective on the compute stream's path when both the stream
// and its NCCL call have got there. A kSync op (and StageProgram::optimizer_sync) holds the host
// until the compute stream reaches it: the queue drains, and the kernels after it are issued one
// host cost at a time while the GPU waits. The compute stream's waiting for the host is
// `host_bound`. Not on the host's path: pipeline sends and receives and the data-parallel gradient
// buckets, which start when the compute stream gets to them.
struct RankBreakdown {
  int rank = 0;
  GpuId gpu = 0;
  int stage = 0;
  Duration compute;        // forward, backward and recompute ops
  Duration recompute;      // the part of `compute` spent recomputing
  Duration exposed_comm;   // waiting for blocking collectives and the final gradient reduction
  Duration bubble;         // waiting for pipeline inputs (including the point-to-point transfer)
  Duration optimizer;      // optimizer step
  Duration host_bound;     // the compute stream waiting for the host thread to issue its next kernel
  Duration idle;           // finished before the slowest rank
  Time finish;
  // With a power model: the GPU's energy over the step (idle power while the compute stream waits
  // or after it finished; communication kernels are counted as idle), and the clock-bound work's
  // full-clock time and the time it took under the governor.
  double energy_joules = 0;
  double final_power_w = 0;  // the governor's averaged power at the end of the step
  Duration clock_bound_full;
  Duration clock_bound_actual;
};

// The most spans one traced step records (about 150 bytes each: 0.6 GB): DeepSeek-V3 on 2,048
// H800 with every rank simulated would record more than the memory of a laptop.
inline constexpr size_t kMaxTraceSpans = 4'000'000;

struct TraceSpan {
  int rank = 0;
  GpuId gpu = 0;
  std::string stream;  // "compute", "host", "tp", "cp", "dp", "ep", "pp"
  std::string name;
  Time start;
  Time end;
};

struct StepResult {
  Duration step_time;
  std::vector<RankBreakdown> ranks;  // the simulated ranks
  size_t critical = 0;               // index in `ranks` of a rank that finished last
  uint64_t events = 0;
  uint64_t fingerprint = 0;          // engine fingerprint (determinism tests)
  std::vector<TraceSpan> trace;      // when record_trace
  // When record_trace: every wait of a simulated rank's compute stream, stream "wait", name the
  // RankBreakdown part it is counted in ("bubble", "exposed_comm", "host_bound"); the spans of one
  // rank sum to those three parts. Kept apart from `trace` (the Chrome trace has no wait events).
  std::vector<TraceSpan> waits;
};

// Whether the members of a group of `kind` wait for each other inside the passes: tensor, context,
// expert and expert-tensor groups, and the data-parallel groups under ZeRO-3 (whose parameter
// gathers precede each layer). The gradient reductions and the parameter gathers after the
// optimizer are waited for only in the step's last phases, the embedding and pipeline groups not
// inside the passes at all.
bool group_ties_ranks(GroupKind kind, const Layout& layout);

// The most ranks representative_lines splits a representative simulation into (a tuned bound, not
// a measurement: it keeps every layout of up to 256 GPUs split, where tests compare the split with
// every rank simulated, and the compute events of a large run within those of 256 ranks).
inline constexpr int kMaxSplitRepresentativeRanks = 256;

// The tp·cp·dp lines (RankCoord with pp = 0) whose ranks a representative simulation runs, one rank
// per stage on each (simulate_step with SimulationOptions::representative). `line` alone, unless
// the fidelity is flow and parts of a stage can move at different paces, which one rank cannot
// stand for: a group of a kind that ties ranks (group_ties_ranks) has members on more than one
// node, or the line's transfers to other nodes (pipeline sends, data-parallel rings, NIC to NIC)
// have more than one equal-cost route on a fat tree or a three-tier fabric (ECMP through shared
// leaf uplinks), where the same transfer of two parts draws different routes (not on a
// rail-optimised fabric, whose parts keep to their own rails' leaves). Then one line per tied component of a
// stage (the closure of a rank under the groups of those kinds; every stage has the same
// components): `line` for its own component, the lowest-ranked position for each other, in rank
// order; `line` alone again when that would simulate more than kMaxSplitRepresentativeRanks ranks.
// `layout` must have passed validate_layout().
std::vector<RankCoord> representative_lines(const Cluster& cluster, const Layout& layout, Fidelity fidelity,
                                            const RankCoord& line);

// Simulates one step. `stages[s]` is the program of pipeline stage s (size pp). `microbatches`
// per pipeline per step. The layout must have passed validate_layout() and fit the cluster
// (world_size() <= cluster.gpu_count(); rank r runs on GPU r). Throws InputError for requests the
// collectives reject, InternalError if the simulation deadlocks (a bug).
StepResult simulate_step(const Cluster& cluster, const Layout& layout, const std::vector<StageProgram>& stages,
                         int microbatches, const StepSimulationOptions& options);

}  // namespace clustersim
