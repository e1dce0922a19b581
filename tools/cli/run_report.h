#pragma once

// The output of `clustersim run`: a summary table for people and JSON for programs.

#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>

#include "parallelism/training_simulation.h"
#include "scenarios/scenario.h"

namespace clustersim {

struct RunContext {
  const Scenario* scenario = nullptr;
  const Cluster* cluster = nullptr;
  Fidelity fidelity = Fidelity::kAnalytical;
  std::string calibration;  // profile used, or empty for datasheet defaults
  double wall_s = 0;        // simulator wall time (0 under --reproducible)
  const CampaignResult* campaign = nullptr;  // the scenario's campaign, simulated
};



// A step's energy beyond the GPUs (report.energy, which needs the power model): the nodes' overhead
// power (NodeSpec::overhead_power) over the step, and the facility's PUE on top of the IT energy.
//   cluster J/step = pue × (GPUs × GPU J/step + Σ node overhead × step time); J/token over
//   global_batch × seq_len tokens. Switches are not counted.
struct ClusterEnergy {
  double node_overhead_w = 0;
  double pue = 1;
  double cluster_joules_per_step = 0;
  double joules_per_token = 0;
};
ClusterEnergy cluster_energy(const TrainingReport& report, const Cluster& cluster, double pue);

// The FLOP convention behind MFU and HFU, stated in every report.
extern const char* const kFlopConvention;

// Human-readable summary: layout, step time, tokens/s, MFU/HFU, breakdown, memory per stage.
void write_run_summary(const TrainingReport& report, const RunContext& context, std::ostream& out);

// The document of `clustersim run --json`: step_time_s, tokens_per_s, mfu, hfu, model_flops_per_step,
// tflops_per_gpu, breakdown_s{compute, exposed_comm, bubble, optimizer, host_bound, other} (seconds),
// memory{peak_bytes, capacity_bytes, fits, per_stage[{stage, params_bytes, grads_bytes, optimizer_bytes,
// activations_bytes, other_bytes, total_bytes}]}, ranks, sim{events, wall_s, fidelity, ...}; on a
// three-tier fabric also pods{count, pod_nodes, pod_type, oversubscription, core_oversubscription,
// groups{tp|cp|dp|pp|ep: {size, min_pods, max_pods}}} (parallelism/pod_placement.h). Keys in a
// fixed order.
nlohmann::ordered_json run_json(const TrainingReport& report, const RunContext& context);

// The time breakdown as --json's `breakdown_s` object: each part in seconds, in the order
// compute, exposed_comm, bubble, optimizer, host_bound, other.
nlohmann::ordered_json breakdown_seconds_json(const TimeBreakdown& breakdown);
// run_json() as `clustersim run --json` prints it: indented by 2, a path that is not UTF-8 with
// U+FFFD in place of its bad bytes.
void write_run_json(const TrainingReport& report, const RunContext& context, std::ostream& out);

// "tp 8 · pp 4 · dp 2 · vpp 5 · sp · zero 1 · interleaved-1f1b"
std::string describe_layout(const Layout& layout);

}  // namespace clustersim
