#pragma once

// A scenario file: the cluster, the model, the training options, the parallel layout and how to
// simulate. Loaded against scenario_schema() (`clustersim help-config` prints it); presets for
// nodes and models are resolved through the hardware catalog and scenarios/models/.
//
//   name: llama3-70b on 8 DGX H100
//   cluster: {node: dgx-h100, nodes: 8, fabric: {type: rail-optimized, nic: cx7-400g}}
//   model: {preset: llama3-70b}
//   training: {seq_len: 8192, global_batch: 512, micro_batch: 1, precision: bf16, recompute: selective}
//   parallelism: {tp: 8, pp: 4, dp: 2, vpp: 5, sequence_parallel: true, zero: 1,
//                 schedule: interleaved-1f1b}
//   search: {tp: [4, 8], pp: [2, 4, 8], micro_batch: [1, 2], top: 5}   # clustersim search only

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "campaign/campaign.h"
#include "collectives/collective_runner.h"
#include "parallelism/layout.h"
#include "parallelism/layout_search.h"
#include "parallelism/search_space.h"
#include "scenarios/config_document.h"
#include "scenarios/hardware_presets.h"
#include "scenarios/schema.h"
#include "topology/specs.h"
#include "workloads/model_spec.h"
#include "workloads/training_spec.h"

namespace clustersim {

// Bounds and defaults of cluster keys of scenario_schema(), shared with `clustersim collective`,
// which builds a cluster from flags instead of a scenario file.
//
// cluster.nodes and cluster.node_groups[].count: at most 16,384 nodes (131,072 GPUs of 8-GPU
// nodes), where a training step simulates in about 3 s on one core; beyond it building the cluster
// graph grows faster than linearly (100,000 nodes: ~100 s).
inline constexpr int kMaxClusterNodes = 16'384;
// GPUs of the largest cluster, kMaxClusterNodes nodes of kMaxNodeGpus GPUs (2^24): the bound of
// the parallel sizes (parallelism.tp, pp, dp, cp, ep, etp and their search: lists), which are
// held in int.
inline constexpr int kMaxClusterGpus = kMaxClusterNodes * kMaxNodeGpus;
// GPUs a simulated cluster may hold: 2^18 = 262,144, above the largest training clusters built so
// far (~10^5 GPUs). Building the topology grows faster than linearly with GPUs and NICs: 1,024
// GB200 NVL72 racks of 64 GPUs (65,536 GPUs, a NIC each) take about 10 s and 0.5 GB for an
// analytical all_reduce, 16,384 of them (10^6 GPUs) did not finish in 15 minutes and used 18 GB.
inline constexpr int64_t kMaxSimulatedGpus = int64_t{1} << 18;
// cluster.fabric.leaf_ports: downlink ports of one leaf switch, 1 to 65,536 (switches sold have 32
// to 128 ports at the line rates of the shipped NICs; NVIDIA Quantum-2 QM9700: 64 × 400 Gb/s).
inline constexpr int kDefaultLeafPorts = 32;
inline constexpr int kMaxLeafPorts = 65'536;
// cluster.fabric.oversubscription: fat-tree leaf downlink / uplink bandwidth, in [1, 64]; the same
// bounds for cluster.fabric.core_oversubscription (a three-tier pod's spine downlink / core uplink).
inline constexpr double kDefaultOversubscription = 1.0;
inline constexpr double kMaxOversubscription = 64.0;

enum class FidelityChoice { kAuto, kFlow, kAnalytical };

// cluster.pue: facility energy / IT energy, in [1, 5].
inline constexpr double kDefaultPue = 1.2;
inline constexpr double kMaxPue = 5.0;
// Bounds of a campaign: 10^16 tokens (Llama 3 405B trained on 1.56e13), 10^12 steps, 10^5 seeds.
inline constexpr double kMaxCampaignTokens = 1e16;
inline constexpr double kMaxCampaignSteps = 1e12;
inline constexpr double kMaxCampaignSeeds = 1e5;

struct SimulationSettings {
  FidelityChoice fidelity = FidelityChoice::kAuto;
  // `auto` uses flow fidelity up to this many GPUs and analytical beyond, and analytical for layouts
  // whose expert- or context-parallel all-to-alls span more than flow_max_all_to_all_ranks ranks:
  // an all-to-all of n ranks is n(n − 1) flows, and its flow simulation costs about the square of
  // that (a 256-rank one, 65,280 flows, takes seconds per collective).
  int flow_max_gpus = 256;
  int flow_max_all_to_all_ranks = 64;
  // Beyond those caps `auto` still runs `clustersim run` at flow fidelity where the run's flow
  // estimate (parallelism/work_estimate.h: events at kFlowEventsPerSecond, a rough guide) is at
  // most this many seconds and its events at most max_events; 0: the caps alone decide. 60 s, the
  // wall time a 16,384-GPU step at flow fidelity is to stay within (the shipped Llama-3-405B one is
  // estimated at 55 s and runs in about 56 s): contention is then simulated up to that scale by
  // default. A search ranks by the caps alone.
  double auto_flow_seconds = 60.0;
  // simulation.max_events: a run estimated above this many engine events (RunWork::events,
  // parallelism/work_estimate.h) is refused before it starts; 0 = no bound. 5e8 is about 3 min of a
  // flow-fidelity run on one core of the development machine (kFlowEventsPerSecond).
  uint64_t max_events = 500'000'000;
  bool representative = true;
  bool allow_idle_gpus = false;
  // simulation.power_model: true, false, or nullopt for `auto` (the default): on exactly when the
  // calibration profile carries power measurements of the GPU (power_model_applies).
  std::optional<bool> power_model;
};

// Whether a run of these settings simulates the GPUs under their power limit: simulation.power_model
// when given; under `auto`, when `compute_profile` (the scenario's calibration profile, or nullptr)
// has a power section (CalibrationProfile::power), so that the governor runs on parameters
// measured on that GPU and not on the H200's scaled to another GPU's limit (cost_models/power_model.h).
bool power_model_applies(const SimulationSettings& settings, const CalibrationProfile* compute_profile);

// The note `run` prints where the default framework is likely the wrong one: training.framework
// left at megatron (Transformer Engine's fused kernels) for an FSDP layout (ZeRO 2 or 3 without
// tensor or pipeline parallelism) that plain PyTorch modules usually run (HF Trainer, accelerate,
// torchtitan without torch.compile). Llama-3-8B under FSDP on 16 A100 reads about 66 % MFU as
// megatron and 46 % as pytorch-eager. Empty where no note applies.
struct Scenario;
std::string framework_note(const Scenario& s);

struct Scenario {
  std::string name;
  std::string description;  // free text
  std::string source;       // file path, for messages
  // The seed: key, as the file gives it: the seed of the jitter's sampled steps and of the
  // campaign's Monte-Carlo runs where jitter.seed or campaign.seed is absent (the loader copies it
  // into StepJitter::seed and CampaignSpec::seed). Nothing else draws random numbers: ECMP picks a
  // path by a fixed hash of each flow (topology/cluster.h).
  uint64_t seed = 1;
  ClusterSpec cluster;
  ModelSpec model;
  TrainingSpec training;
  bool framework_given = false;  // training.framework set by the file or a --set (not the default)
  Layout layout;
  std::optional<std::string> calibration;  // profile name or path
  std::string calibration_where;           // "file:line:column: calibration: " (or its --set), for messages
  SimulationSettings simulation;
  double pue = kDefaultPue;           // cluster.pue
  std::optional<SearchSpace> search;  // the search: section, for `clustersim search`
  std::optional<CampaignSpec> campaign;  // the campaign: section, with training.tokens / steps
  std::vector<Straggler> stragglers;     // the stragglers: list, one entry per GPU
  std::optional<StepJitter> jitter;      // the jitter: section
  std::string jitter_where;              // "file:line:column: jitter: ", for messages
  std::string max_events_where;          // where simulation.max_events was given ("" = its default)
  std::string search_objective_where;    // "file:line:column: search.objective: " (or the file)
  // cluster.storage (bytes/s); the node bandwidth absent: the node's compute NICs.
  std::optional<double> storage_bandwidth;
  std::optional<double> storage_node_bandwidth;
};

// kValidate: the parallelism section must be a valid layout (clustersim run). kDeferToSearch: it is
// only the base of a search (fields the search does not vary), so the layout rules are not applied
// to it (clustersim search; every searched layout is validated instead).
enum class LayoutCheck { kValidate, kDeferToSearch };

// The schema of scenario files (every key with type, unit, default and description).
const Schema& scenario_schema();
// The schema of model preset files (scenarios/models/<name>.yaml): the model section's keys.
const Schema& model_preset_schema();
// The keys of scenario_schema() that a setter writes into the Scenario as the file is read (each
// declared with its setter, scenarios/key_binding.h): every key but the plain sections.
std::vector<std::string> scenario_bound_keys();

// Loads `path` with `overrides` (--set) applied. `data_dir` holds hardware/ and models/.
// Throws InputError naming file:line:column and key for anything invalid, including layouts that
// do not fit the model and cluster (validate_layout) and unknown presets.
Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides = {},
                       const std::string& data_dir = "", LayoutCheck layout_check = LayoutCheck::kValidate);

// Builds a ModelSpec from a model preset name or file path (models/<name>.yaml). Throws InputError.
ModelSpec load_model_preset(const std::string& name_or_path, const std::string& data_dir = "");
// Names of the shipped model presets, sorted.
std::vector<std::string> model_preset_names(const std::string& data_dir = "");

// The fidelity `auto` resolves to for a cluster of `gpus` GPUs whose largest all-to-all group
// (ep, or cp with Ulysses-style all-to-alls; 1 without) has `all_to_all_ranks` ranks.
Fidelity resolve_fidelity(const SimulationSettings& settings, int gpus, int all_to_all_ranks = 1);
// The same for a layout: its world size and max(ep, cp).
Fidelity resolve_fidelity(const SimulationSettings& settings, const Layout& layout);
// What TrainingSimulationOptions::auto_flow_seconds is for a run of `layout`: the budget where
// `auto` resolved to analytical by its caps (and the budget is above 0), else empty.
std::optional<double> auto_flow_budget(const SimulationSettings& settings, const Layout& layout);

// The search that `scenario`'s search: section describes on `cluster` (the Cluster built from
// scenario.cluster; it must outlive the result): model, training, the fixed layout fields as the
// base, the search space, and the scenario's fidelity per world size (resolve_fidelity) and
// representative-rank setting. Calibration profiles are left unset for the caller to attach.
// Throws InputError when the scenario has no search: section.
SearchProblem search_problem(const Scenario& scenario, const Cluster& cluster);

// What the campaign (campaign/campaign.h) takes from the step and the cluster:
//   checkpoint: each rank writes its stage's parameters as the layout shards them (the memory
//     model's StageMemory), dense ones divided among their dp·cp replicas and routed experts among
//     their tp·cp·dp / (ep·etp) (Megatron's fully parallel save), × (working weights + optimizer
//     state, the fp32 gradient copy excepted) per parameter: bf16 weights, fp32 master and two fp32
//     moments are 14 B/param;
//   write time = the longer of all bytes / cluster.storage.bandwidth and the busiest node's bytes /
//     its path to storage (cluster.storage.node_bandwidth, else its compute NICs: nics × NIC
//     bandwidth), the max-min flow rates of a two-level tree; reads as fast as writes;
//   asynchronous save's wait = the busiest rank's bytes over its PCIe link (pcie.switch_link);
//   power (with the power model only): training = GPUs × average power + node overhead, waiting =
//     GPUs × idle power + node overhead.
// `layout` the step was simulated with (`report`), and the step time the campaign runs at.
CampaignInputs campaign_inputs(const Scenario& scenario, const Cluster& cluster, const Layout& layout,
                               const TrainingReport& report, double step_time_s);

}  // namespace clustersim
