#include "tools/cli/run_report.h"

#include <fmt/format.h>
#include <map>
#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallelism/pod_placement.h"
#include "parallelism/program_builder.h"


namespace clustersim {

const char* const kFlopConvention =
    "MFU = model FLOPs / (step time x GPUs x dense peak of the compute dtype); model FLOPs = forward + backward "
    "GEMMs and attention over the full s x s score matrix (s x window for sliding-window layers), no recomputation "
    "(Megatron-LM / Korthikanti et al. 2022, "
    "PaLM App. B); HFU adds the recomputed forward FLOPs. Causal attention kernels execute about half of those "
    "attention FLOPs, so at long sequences MFU on this convention exceeds the fraction of peak the kernels run at";

namespace {

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

std::string gb(Bytes b) { return fmt::format("{:.2f}", b.to_gb()); }

constexpr double kDay = 86'400.0;

// 44,750,000 as "44.75 million": counts a person reads.
std::string large(double x) {
  if (x >= 1e9) return fmt::format("{:.2f} billion", x * 1e-9);
  if (x >= 1e6) return fmt::format("{:.2f} million", x * 1e-6);
  return fmt::format("{:.4g}", x);
}

// A campaign's time span in the unit a person plans in: days, hours or minutes.
std::string span(double seconds) {
  if (seconds >= 2 * kDay) return fmt::format("{:.2f} days", seconds / kDay);
  if (seconds >= 3600) return fmt::format("{:.2f} h", seconds / 3600);
  return fmt::format("{:.1f} min", seconds / 60);
}

// Why a run has no power figures: simulation.power_model false, or auto without measurements.
std::string power_model_reason(const Scenario& s) {
  if (s.simulation.power_model) {
    return *s.simulation.power_model ? "the GPU preset gives no power_limit" : "simulation.power_model: false";
  }
  return "simulation.power_model: auto, and no calibration profile with power measurements of this GPU; true "
         "applies the H200's, scaled to its power limit";
}

void write_campaign_summary(const CampaignResult& k, const Scenario& s, std::ostream& out) {
  const CampaignSpec& spec = *s.campaign;
  out << fmt::format("\n  campaign            {} step{}{}: {} of training at this step time\n", k.steps, k.steps == 1 ? "" : "s",
                     spec.tokens ? fmt::format(" ({:.4g} tokens)", *spec.tokens) : "", span(k.work_s));
  out << fmt::format("    wall clock        {} (p10 {}, p90 {}; {} seeded run{}{}); goodput {:.1f}%\n", span(k.wall_s),
                     span(k.wall_s_p10), span(k.wall_s_p90), k.seeds, k.seeds == 1 ? "" : "s",
                     k.wall_s > k.wall_s_p90 ? "; the mean is above p90: few runs see a failure, and those lose much"
                                             : "",
                     100 * k.goodput);
  if (k.failures_per_hour > 0) {
    out << fmt::format("    failures          {:.1f} interruptions, one every {:.2f} h of the job ({:.3f} per hour)\n",
                       k.interruptions, k.mtbf_s / 3600, k.failures_per_hour);
  } else {
    out << "    failures          none (every campaign.failures rate is 0)\n";
  }
  if (k.checkpoint_interval_s >= k.work_s) {
    out << fmt::format("    checkpoints       none: the run is no longer than the interval ({:.0f} s); one would take "
                       "{:.1f} s\n",
                       k.checkpoint_interval_s, k.checkpoint_write_s);
  } else {
    out << fmt::format("    checkpoints       every {:.0f} s ({} step{}{}); {:.4g} GB written in {:.1f} s, the training "
                       "waits {:.3g} s{}\n",
                       k.checkpoint_interval_s, k.checkpoint_interval_steps, k.checkpoint_interval_steps == 1 ? "" : "s",
                       k.interval_is_optimum ? ", Young's optimum" : "", k.checkpoint_bytes * 1e-9, k.checkpoint_write_s,
                       k.checkpoint_wait_s, spec.async_save ? " (asynchronous save)" : "");
  }
  out << fmt::format("    restart           {:.1f} min: relaunch {:.1f} min + checkpoint load {:.1f} s\n",
                     k.restart_s / 60, spec.relaunch_s / 60, k.checkpoint_load_s);
  if (spec.spare_nodes) {
    out << fmt::format("    spare nodes       {}, each failed node away {}: {} waiting for one per run\n", *spec.spare_nodes,
                       span(spec.repair_s), span(k.spare_wait_s));
  }
  out << fmt::format("    GPU-hours         {}{}\n", large(k.gpu_hours),
                     spec.gpu_hour_price > 0 ? fmt::format(", cost {} at {:g} per GPU-hour", large(k.cost), spec.gpu_hour_price)
                                             : std::string(" (no campaign.gpu_hour_price)"));
  out << fmt::format("    energy            {}\n",
                     k.energy_mwh ? fmt::format("{:.4g} MWh with PUE {:.2f}", *k.energy_mwh, s.pue)
                                  : "not modelled (" + power_model_reason(s) + ")");
  out << fmt::format("    closed forms      first-order (Young/Daly) {}, exact expectation {}\n",
                     span(k.first_order_wall_s), span(k.exact_wall_s));
}

}  // namespace

ClusterEnergy cluster_energy(const TrainingReport& r, const Cluster& cluster, double pue) {
  ClusterEnergy e;
  e.pue = pue;
  for (int n = 0; n < cluster.node_count(); ++n) e.node_overhead_w += cluster.node_spec(n).overhead_power.in_watts();
  const double it_joules = r.energy.joules_per_step * r.gpus + e.node_overhead_w * r.step_time_s;
  e.cluster_joules_per_step = pue * it_joules;
  const double tokens = r.tokens_per_s * r.step_time_s;
  e.joules_per_token = tokens > 0 ? e.cluster_joules_per_step / tokens : 0;
  return e;
}

namespace {

const char* name_of_pod_type(FabricType type) {
  return type == FabricType::kRailOptimized ? "rail-optimized" : "fat-tree";
}

// "6 pods of 384 nodes (3072 GPUs; the last holds 128 nodes), fat-tree pods, leaf 1:1, core 1:7 ·
// pp groups span 6 pods · tp, dp inside one pod": the three-tier fabric's pods and where the
// layout's groups sit in them (pod_placement.h).
std::string describe_pods(const Cluster& cluster, const Layout& layout) {
  const FabricSpec& fabric = cluster.spec().fabric;
  const int pods = cluster.pod_count();
  const int pod_gpus = cluster.gpus_in_node(0) * fabric.pod_nodes;
  auto nodes = [](int n) { return fmt::format("{} {}", n, n == 1 ? "node" : "nodes"); };
  std::string s = fmt::format("{} {} of {} ({} GPUs", pods, pods == 1 ? "pod" : "pods", nodes(fabric.pod_nodes), pod_gpus);
  const int last = cluster.node_count() - (pods - 1) * fabric.pod_nodes;
  if (last != fabric.pod_nodes) s += fmt::format("; the last holds {}", nodes(last));
  s += fmt::format("), {} pods, leaf 1:{:g}, core 1:{:g}", name_of_pod_type(fabric.pod_type), fabric.oversubscription,
                   fabric.core_oversubscription);
  // One pod has no traffic above it: the fabric is its pod's two-tier one.
  if (pods == 1) s += " (one pod: no traffic crosses the core; the same as a two-tier fabric)";
  std::string inside;
  for (const PodSpan& span : pod_spans(cluster, layout)) {
    if (span.max_pods == 1) {
      inside += (inside.empty() ? "" : ", ") + span.name;
      continue;
    }
    s += span.min_pods == span.max_pods ? fmt::format(" · {} groups span {} pods", span.name, span.max_pods)
                                        : fmt::format(" · {} groups span {}-{} pods", span.name, span.min_pods,
                                                      span.max_pods);
  }
  if (!inside.empty()) s += fmt::format(" · {} inside one pod", inside);
  return s;
}

}  // namespace

std::string describe_layout(const Layout& l) {
  // dp 0: a search candidate whose tp·cp·pp leaves no whole data-parallel size.
  std::string s = l.dp > 0 ? fmt::format("tp {} · pp {} · dp {}", l.tp, l.pp, l.dp)
                           : fmt::format("tp {} · pp {} · no dp fits", l.tp, l.pp);
  if (l.cp > 1) s += fmt::format(" · cp {}", l.cp);
  if (l.ep > 1) s += fmt::format(" · ep {}", l.ep);
  if (l.ep > 1 && l.moe_dispatcher != MoeDispatcher::kAllToAll) s += fmt::format(" ({})", name_of(l.moe_dispatcher));
  if (l.etp > 1) s += fmt::format(" · etp {}", l.etp);
  if (l.vpp > 1) s += fmt::format(" · vpp {}", l.vpp);
  if (l.layers_per_virtual_stage > 0) s += fmt::format(" · {} layers/chunk", l.layers_per_virtual_stage);
  if (l.sequence_parallel) s += " · sp";
  if (l.zero_stage > 0) s += fmt::format(" · zero {}", l.zero_stage);
  if (l.hybrid_shard()) {
    s += l.dp % l.shard_dp() == 0 ? fmt::format(" · dp_shard {} ({} replicas)", l.shard_dp(), l.dp / l.shard_dp())
                                  : fmt::format(" · dp_shard {} (does not divide dp)", l.shard_dp());
  }
  s += fmt::format(" · {}", name_of(l.schedule));
  return s;
}

namespace {

// Why `fidelity: auto` chose the fidelity it did (its caps, and the flow estimate it weighed
// against simulation.auto_flow_seconds); empty where the scenario chose one itself.
std::string auto_fidelity_reason(const TrainingReport& r, const RunContext& c) {
  if (c.scenario == nullptr || c.scenario->simulation.fidelity != FidelityChoice::kAuto) return "";
  std::string why;
  const SimulationSettings& sim = c.scenario->simulation;
  const Layout& l = c.scenario->layout;
  const int a2a = std::max(l.ep, l.cp);
  if (l.world_size() > sim.flow_max_gpus) {
    why = fmt::format("{} GPUs > simulation.flow_max_gpus {}", l.world_size(), sim.flow_max_gpus);
  } else if (a2a > sim.flow_max_all_to_all_ranks) {
    why = fmt::format("all-to-alls over {} ranks > simulation.flow_max_all_to_all_ranks {}", a2a,
                      sim.flow_max_all_to_all_ranks);
  }
  if (why.empty()) {
    why = fmt::format("{} GPUs <= simulation.flow_max_gpus {}", l.world_size(), sim.flow_max_gpus);
    if (a2a > 1) {
      why += fmt::format(", all-to-alls over {} ranks <= simulation.flow_max_all_to_all_ranks {}", a2a,
                         sim.flow_max_all_to_all_ranks);
    }
  } else if (!r.work.auto_flow_estimate_s && sim.auto_flow_seconds <= 0) {
    why += ", and simulation.auto_flow_seconds 0 s: no flow estimate weighed";
  }
  if (const std::optional<double>& flow = r.work.auto_flow_estimate_s) {
    const uint64_t events = r.work.auto_flow_estimate_events.value_or(0);
    if (*flow <= sim.auto_flow_seconds && sim.max_events > 0 && events > sim.max_events) {
      why += fmt::format(", and the flow estimate, {} events, above simulation.max_events {}", events, sim.max_events);
    } else {
      why += fmt::format(", and the flow estimate, about {}, {} simulation.auto_flow_seconds {:g} s",
                         describe_estimated_seconds(*flow), *flow <= sim.auto_flow_seconds ? "within" : "above",
                         sim.auto_flow_seconds);
    }
  }
  return why;
}

}  // namespace

void write_run_summary(const TrainingReport& r, const RunContext& c, std::ostream& out) {
  const Scenario& s = *c.scenario;
  const GpuSpec& gpu = c.cluster->node_spec(0).gpu;
  out << fmt::format("{}\n", s.name);
  const int gpus = c.cluster->gpu_count();
  const int nodes = c.cluster->node_count();
  out << fmt::format("  cluster    {} {} ({} {} of {}), {}\n", gpus, gpus == 1 ? "GPU" : "GPUs", nodes,
                     nodes == 1 ? "node" : "nodes", s.cluster.nodes.front().name, gpu.name);
  if (c.cluster->spec().fabric.type == FabricType::kThreeTier) {
    out << fmt::format("  pods       {}\n", describe_pods(*c.cluster, s.layout));
  }
  out << fmt::format("  model      {} · {} layers · h {} · seq {} · global batch {} · micro batch {}\n", s.model.name,
                     s.model.layers, s.model.hidden, s.training.seq_len, s.training.global_batch,
                     s.training.micro_batch);
  // The gradient bucket size where gradients are reduced (auto resolved as the framework does).
  std::string buckets;
  if (static_cast<int64_t>(s.layout.dp) * s.layout.cp > 1) {
    const double elements = static_cast<double>(gradient_bucket_elements(s.layout, s.training));
    buckets = fmt::format(" · gradient buckets {} parameters{}",
                          elements < 1e9    ? fmt::format("{:.4g}M", elements / 1e6)
                          : elements < 1e12 ? fmt::format("{:.4g}G", elements / 1e9)
                                            : fmt::format("{:.3g}", elements),
                          s.layout.grad_bucket_elements == 0 ? " (auto)" : "");
  }
  out << fmt::format("  layout     {} · {} {} per pipeline · recompute {}{}\n", describe_layout(s.layout),
                     r.microbatches, r.microbatches == 1 ? "microbatch" : "microbatches", name_of(s.training.recompute),
                     buckets);
  if (s.model.moe.enabled()) {
    const MoeRouting& routing = s.training.moe_routing;
    std::string text = !routing.expert_load.empty() ? "the given per-expert histogram"
                       : routing.skew == 1.0        ? "balanced"
                                                    : fmt::format("skew {:g} (busiest expert / mean)", routing.skew);
    if (routing.capacity_factor > 0) {
      text += fmt::format(" · capacity factor {:g} (tokens above it dropped)", routing.capacity_factor);
    }
    out << fmt::format("  routing    {} · top {} of {} experts · {}\n", text, s.model.moe.top_k,
                       s.model.moe.num_experts,
                       s.training.moe_experts == MoeExperts::kSequential
                           ? "experts one at a time (moe_experts sequential: SequentialMLP)"
                           : "experts as grouped GEMMs");
  }
  out << "\n";
  if (const std::string note = framework_note(s); !note.empty()) out << "  note: " << note << "\n\n";
  if (!r.fits) {
    out << fmt::format("  WARNING: does not fit: stage {} needs {} GB of the GPU's {} GB; the times below are for a "
                       "run that could not start (see the memory table)\n",
                       r.peak_stage, gb(r.peak_memory), gb(r.capacity));
  }
  out << fmt::format("  step time           {:.4f} s\n", r.step_time_s);
  out << fmt::format("  tokens/s            {:.0f}  ({:.0f} per GPU)\n", r.tokens_per_s, r.tokens_per_s / r.gpus);
  out << fmt::format("  MFU / HFU           {:.1f}% / {:.1f}%  (executed {:.1f}% of peak: attention as its kernels run it)\n",
                     100 * r.mfu, 100 * r.hfu, 100 * r.executed_fraction);
  out << fmt::format("  TFLOP/s per GPU     {:.1f} model, {:.1f} hardware\n", r.model_tflops_per_gpu,
                     r.hardware_tflops_per_gpu);
  if (r.energy.modelled) {
    const ClusterEnergy e = cluster_energy(r, *c.cluster, s.pue);
    out << fmt::format("  GPU power           {:.0f} W average per GPU (limit {:.0f} W; clock-bound work at {:.3f} of "
                       "full clock; the measured kernel rates, taken at the power limit, are undone to full clock "
                       "first)\n",
                       r.energy.avg_power_w, r.energy.power_limit_w, r.energy.rate_factor);
    out << fmt::format("  energy per step     {:.1f} J per GPU, {:.1f} kJ cluster (GPUs + {:.1f} kW node overhead{}, "
                       "x PUE {:.2f})\n",
                       r.energy.joules_per_step, e.cluster_joules_per_step * 1e-3, e.node_overhead_w * 1e-3,
                       e.node_overhead_w > 0 ? "" : ": not given by the node preset", e.pue);
    out << fmt::format("  energy per 1M tok   {:.3g} MJ ({:.3g} kWh), cluster with PUE\n", e.joules_per_token,
                       e.joules_per_token / 3.6);
  }
  if (!r.energy.modelled) out << fmt::format("  GPU power           not modelled ({})\n", power_model_reason(s));
  if (!s.stragglers.empty()) {
    // "GPU 3 at 0.8, node 1 (8 GPUs) at 0.95": a whole node's GPUs at one speed are named as the node.
    std::vector<std::string> parts;
    for (size_t i = 0; i < s.stragglers.size();) {
      const Straggler& g = s.stragglers[i];
      const int node = c.cluster->node_of(g.gpu);
      size_t j = i;
      while (j < s.stragglers.size() && c.cluster->node_of(s.stragglers[j].gpu) == node &&
             s.stragglers[j].speed == g.speed) {
        ++j;
      }
      const auto node_gpus = static_cast<size_t>(c.cluster->node_spec(node).gpus);
      if (j - i > 1 && j - i == node_gpus) {
        parts.push_back(fmt::format("node {} ({} GPUs) at {:g}", node, j - i, g.speed));
        i = j;
      } else {
        parts.push_back(fmt::format("GPU {} at {:g}", g.gpu, g.speed));
        ++i;
      }
    }
    std::string named;
    for (size_t i = 0; i < parts.size() && i < 4; ++i) named += (i ? ", " : "") + parts[i];
    if (parts.size() > 4) named += fmt::format(" and {} more", parts.size() - 4);
    out << fmt::format("  stragglers          {}: step {:.4f} s against {:.4f} s without them ({:+.1f}%){}\n", named,
                       r.step_time_s, r.step_time_without_stragglers_s,
                       100 * (r.step_time_s / r.step_time_without_stragglers_s - 1),
                       r.stragglers_simulated_every_rank ? "; every rank simulated" : "");
  }
  if (r.jitter.modelled) {
    out << fmt::format("  jitter              cv {:g}: {} sampled steps, mean {:.4f} s ({:.4f} to {:.4f}) against {:.4f} s "
                       "without it ({:+.1f}%); every rank simulated{}\n",
                       s.jitter->cv, r.jitter.steps, r.jitter.mean_step_s, r.jitter.min_step_s, r.jitter.max_step_s,
                       r.step_time_s, 100 * (r.jitter.mean_step_s / r.step_time_s - 1),
                       c.campaign != nullptr ? "; the campaign runs at the mean" : "");
  }
  if (c.campaign != nullptr) write_campaign_summary(*c.campaign, *c.scenario, out);
  const TimeBreakdown& b = r.breakdown;
  out << "\n  where the time goes (slowest rank)\n";
  for (auto [name, part] : {std::pair{"compute", b.compute}, std::pair{"exposed communication", b.exposed_comm},
                            std::pair{"pipeline bubble", b.bubble}, std::pair{"optimizer", b.optimizer},
                            std::pair{"waiting for the host", b.host_bound}, std::pair{"other", b.other}}) {
    const double v = part.to_seconds();
    out << fmt::format("    {:<22} {:>10.4f} s  {:>6}\n", name, v, percent(v, r.step_time_s));
  }
  // The slowest rank's bubble is often time it waits for other stages: show where each simulated
  // rank's own time goes when the ranks differ (pipeline stages), so the stage that sets the pace
  // (its compute plus exposed communication) is visible.
  // Above kMaxRankLines simulated ranks (simulation.representative: false at scale: 16,384 lines)
  // the table holds each stage's busiest rank (largest compute + exposed communication); --json
  // lists every rank.
  constexpr size_t kMaxRankLines = 32;
  if (r.step.ranks.size() > 1) {
    std::vector<const RankBreakdown*> shown;
    if (r.step.ranks.size() <= kMaxRankLines) {
      for (const auto& rank : r.step.ranks) shown.push_back(&rank);
    } else {
      std::map<int, const RankBreakdown*> busiest;  // by stage
      for (const auto& rank : r.step.ranks) {
        const RankBreakdown*& top = busiest[rank.stage];
        if (top == nullptr || rank.compute + rank.exposed_comm > top->compute + top->exposed_comm) top = &rank;
      }
      for (const auto& [stage, rank] : busiest) shown.push_back(rank);
    }
    out << fmt::format("\n  per simulated rank (seconds){}\n    {:>5} {:>5} {:>10} {:>14} {:>10}\n",
                       shown.size() < r.step.ranks.size()
                           ? fmt::format(": the busiest of each stage, of {} simulated ranks (--json lists each)",
                                         r.step.ranks.size())
                           : "",
                       "rank", "stage", "compute", "exposed comm", "bubble");
    for (const RankBreakdown* rank : shown) {
      out << fmt::format("    {:>5} {:>5} {:>10.4f} {:>14.4f} {:>10.4f}\n", rank->rank, rank->stage,
                         rank->compute.to_seconds(), rank->exposed_comm.to_seconds(), rank->bubble.to_seconds());
    }
  }
  const std::string moment =
      r.programs.memory.empty() || r.programs.memory.front().peak_moment.empty()
          ? std::string()
          : fmt::format("; each stage at its peak, {}", r.programs.memory.front().peak_moment);
  out << fmt::format("\n  memory per GPU (GB = 1e9 bytes; capacity {} GB{})\n", gb(r.capacity), moment);
  out << fmt::format("    {:>5} {:>6} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9}  {}\n", "stage", "layers", "params",
                     "copies", "grads", "optimizer", "activations", "other", "total", "");
  const StageMemory* most_other = nullptr;
  for (const auto& st : r.programs.memory) {
    const MemoryBreakdown& m = st.memory;
    out << fmt::format("    {:>5} {:>6} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9}  {}\n", st.stage, st.layers,
                       gb(m.params), gb(m.param_copies), gb(m.grads), gb(m.optimizer_state), gb(m.activations),
                       gb(m.other()), gb(m.total()), m.fits(r.capacity) ? "fits" : "OUT OF MEMORY");
    if (most_other == nullptr || m.other() > most_other->memory.other()) most_other = &st;
  }
  out << "    params: the weights as this rank keeps them (its shard under ZeRO-3 / FSDP); copies: gathered or "
         "cast weights alive at the peak\n";
  if (most_other != nullptr) {
    const MemoryBreakdown& m = most_other->memory;
    out << fmt::format("    other{}: logits {} GB, communication buffers {} GB, runtime {} GB\n",
                       r.programs.memory.size() > 1 ? fmt::format(" of stage {} (the largest)", most_other->stage) : "",
                       gb(m.logits), gb(m.comm_buffers), gb(m.runtime_overhead));
  }
  out << "\n";
  out << fmt::format("  compute model  {}\n", r.compute_model);
  out << fmt::format("  host model     {}\n", r.host_model);
  out << fmt::format("  collectives    {}\n", c.calibration.empty() ? "datasheet link bandwidths with NCCL protocol "
                                                                        "costs (no calibration profile)"
                                                                      : "calibrated by " + c.calibration);
  // What a node file left out of its PCIe links (hardware_presets.cc): one line per distinct node preset.
  if (c.cluster != nullptr) {
    std::vector<std::string> said;
    for (int node = 0; node < c.cluster->node_count(); ++node) {
      const NodeSpec& spec = c.cluster->node_spec(node);
      if (spec.pcie_assumption.empty() || std::find(said.begin(), said.end(), spec.name) != said.end()) continue;
      said.push_back(spec.name);
      out << fmt::format("  PCIe assumed   {}: {}\n", spec.name, spec.pcie_assumption);
    }
  }
  std::string why = auto_fidelity_reason(r, c);
  if (!why.empty()) why = " (auto: " + why + ")";
  out << fmt::format("  simulation     {} fidelity{}, {} simulated {}, {} events, {:.3f} s wall\n",
                     std::string(name_of(c.fidelity)), why, r.step.ranks.size(), r.step.ranks.size() == 1 ? "rank" : "ranks",
                     r.step.events, c.wall_s);
  out << fmt::format("  FLOP convention  {}\n", kFlopConvention);
  if (c.scenario != nullptr && c.scenario->model.moe.enabled() &&
      c.scenario->layout.moe_dispatcher != MoeDispatcher::kDeepEp) {
    out << "  accuracy       mixture of experts: Megatron-Bridge's published MoE runs are 1.0-3.6x slower than "
           "clustersim predicts (1.9-3.6x for Qwen3 and DeepSeek-V3 at micro batch 1-2 on B200 and H100, 1.0-1.6x on "
           "GB200/GB300 NVL72, gpt-oss 1.5-2.2x), likely a host-side cost it does not model "
           "(docs/validation/error_budget.md)\n";
  }
}

nlohmann::ordered_json breakdown_seconds_json(const TimeBreakdown& breakdown) {
  return {{"compute", breakdown.compute.to_seconds()},     {"exposed_comm", breakdown.exposed_comm.to_seconds()},
          {"bubble", breakdown.bubble.to_seconds()},       {"optimizer", breakdown.optimizer.to_seconds()},
          {"host_bound", breakdown.host_bound.to_seconds()}, {"other", breakdown.other.to_seconds()}};
}

nlohmann::ordered_json run_json(const TrainingReport& r, const RunContext& c) {
  const Scenario& s = *c.scenario;
  nlohmann::ordered_json j;
  j["scenario"] = s.name;
  j["model"] = s.model.name;
  j["gpus"] = r.gpus;
  j["gpu"] = c.cluster->node_spec(0).gpu.name;
  j["layout"] = {{"tp", s.layout.tp},
                 {"pp", s.layout.pp},
                 {"dp", s.layout.dp},
                 {"cp", s.layout.cp},
                 {"ep", s.layout.ep},
                 {"etp", s.layout.etp},
                 {"vpp", virtual_stages(s.layout, static_cast<int>(s.model.layers))},
                 {"sequence_parallel", s.layout.sequence_parallel},
                 {"zero", s.layout.zero_stage},
                 {"dp_shard", s.layout.dp_shard},
                 {"schedule", std::string(name_of(s.layout.schedule))},
                 {"micro_batch", s.training.micro_batch},
                 {"recompute", std::string(name_of(s.training.recompute))},
                 // The size in parameters, auto resolved (parallelism/program_builder.h).
                 {"grad_bucket_elements", gradient_bucket_elements(s.layout, s.training)}};
  if (s.model.moe.enabled()) j["layout"]["moe_experts"] = std::string(name_of(s.training.moe_experts));
  if (c.cluster->spec().fabric.type == FabricType::kThreeTier) {
    const FabricSpec& fabric = c.cluster->spec().fabric;
    nlohmann::ordered_json groups = nlohmann::ordered_json::object();
    for (const PodSpan& span : pod_spans(*c.cluster, s.layout)) {
      groups[span.name] = {{"size", span.size}, {"min_pods", span.min_pods}, {"max_pods", span.max_pods}};
    }
    j["pods"] = {{"count", c.cluster->pod_count()},
                 {"pod_nodes", fabric.pod_nodes},
                 {"pod_type", name_of_pod_type(fabric.pod_type)},
                 {"oversubscription", fabric.oversubscription},
                 {"core_oversubscription", fabric.core_oversubscription},
                 {"groups", groups}};
  }
  j["microbatches"] = r.microbatches;
  j["step_time_s"] = r.step_time_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["executed_fraction"] = r.executed_fraction;
  if (const std::string note = framework_note(s); !note.empty()) j["notes"] = {note};
  j["model_flops_per_step"] = r.flops.model;
  j["hardware_flops_per_step"] = r.flops.hardware;
  j["tflops_per_gpu"] = r.model_tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = r.hardware_tflops_per_gpu;
  j["flop_convention"] = kFlopConvention;
  j["breakdown_s"] = breakdown_seconds_json(r.breakdown);
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const auto& st : r.programs.memory) {
    const MemoryBreakdown& m = st.memory;
    stages.push_back({{"stage", st.stage},
                      {"layers", st.layers},
                      {"params_bytes", m.params.count()},
                      {"param_copies_bytes", m.param_copies.count()},
                      {"grads_bytes", m.grads.count()},
                      {"optimizer_bytes", m.optimizer_state.count()},
                      {"activations_bytes", m.activations.count()},
                      {"other_bytes", m.other().count()},
                      {"logits_bytes", m.logits.count()},
                      {"comm_buffers_bytes", m.comm_buffers.count()},
                      {"runtime_bytes", m.runtime_overhead.count()},
                      {"total_bytes", m.total().count()},
                      {"inflight_microbatches", st.inflight_microbatches},
                      {"fits", m.fits(r.capacity)}});
  }
  j["memory"] = {{"peak_bytes", r.peak_memory.count()},
                 {"peak_stage", r.peak_stage},
                 {"capacity_bytes", r.capacity.count()},
                 {"fits", r.fits},
                 {"per_stage", std::move(stages)}};
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const auto& rank : r.step.ranks) {
    ranks.push_back({{"rank", rank.rank},
                     {"gpu", rank.gpu},
                     {"stage", rank.stage},
                     {"compute_s", rank.compute.to_seconds()},
                     {"recompute_s", rank.recompute.to_seconds()},
                     {"exposed_comm_s", rank.exposed_comm.to_seconds()},
                     {"bubble_s", rank.bubble.to_seconds()},
                     {"optimizer_s", rank.optimizer.to_seconds()},
                     {"host_bound_s", rank.host_bound.to_seconds()},
                     {"idle_s", rank.idle.to_seconds()},
                     {"finish_s", rank.finish.to_seconds()}});
  }
  j["ranks"] = std::move(ranks);
  if (r.energy.modelled) {
    const ClusterEnergy e = cluster_energy(r, *c.cluster, s.pue);
    j["energy"] = {{"gpu_avg_power_w", r.energy.avg_power_w},
                   {"gpu_power_limit_w", r.energy.power_limit_w},
                   {"rate_factor", r.energy.rate_factor},
                   {"joules_per_step", r.energy.joules_per_step},
                   {"node_overhead_w", e.node_overhead_w},
                   {"cluster_joules_per_step", e.cluster_joules_per_step},
                   {"joules_per_token", e.joules_per_token},
                   {"pue", e.pue}};
  }
  if (!s.stragglers.empty()) {
    nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
    for (const Straggler& g : s.stragglers) gpus.push_back({{"gpu", g.gpu}, {"speed", g.speed}});
    j["stragglers"] = {{"gpus", std::move(gpus)},
                       {"step_time_without_s", r.step_time_without_stragglers_s},
                       {"slowdown", r.step_time_s / r.step_time_without_stragglers_s},
                       {"every_rank_simulated", r.stragglers_simulated_every_rank}};
  }
  if (r.jitter.modelled) {
    j["jitter"] = {{"cv", s.jitter->cv},
                   {"steps", r.jitter.steps},
                   {"mean_step_time_s", r.jitter.mean_step_s},
                   {"min_step_time_s", r.jitter.min_step_s},
                   {"max_step_time_s", r.jitter.max_step_s}};
  }
  if (c.campaign != nullptr) {
    const CampaignResult& k = *c.campaign;
    j["campaign"] = {{"steps", k.steps},
                     {"wall_days", k.wall_s / kDay},
                     {"wall_days_p10", k.wall_s_p10 / kDay},
                     {"wall_days_p90", k.wall_s_p90 / kDay},
                     {"interruptions", k.interruptions},
                     {"goodput", k.goodput},
                     {"gpu_hours", k.gpu_hours},
                     {"cost", k.cost},
                     {"energy_mwh", k.energy_mwh ? nlohmann::ordered_json(*k.energy_mwh) : nlohmann::ordered_json()},
                     {"checkpoint_interval_s", k.checkpoint_interval_s},
                     {"checkpoint_interval_steps", k.checkpoint_interval_steps},
                     {"checkpoint_bytes", k.checkpoint_bytes},
                     {"checkpoint_write_s", k.checkpoint_write_s},
                     {"checkpoint_wait_s", k.checkpoint_wait_s},
                     {"restart_s", k.restart_s},
                     {"spare_wait_s", k.spare_wait_s},
                     {"mtbf_h", k.mtbf_s / 3600},
                     {"seeds", k.seeds},
                     {"first_order_wall_days", k.first_order_wall_s / kDay},
                     {"exact_wall_days", k.exact_wall_s / kDay}};
  }
  j["compute_model"] = r.compute_model;
  j["host_model"] = r.host_model;
  j["calibration"] = c.calibration.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(c.calibration);
  j["sim"] = {{"events", r.step.events},
              {"run_events", r.events},
              {"estimated_events", r.work.events},
              {"estimated_transfers_per_step", r.work.step.transfers},
              {"simulated_steps", r.work.steps},
              {"wall_s", c.wall_s},
              {"fidelity", std::string(name_of(c.fidelity))},
              {"fidelity_reason", c.scenario != nullptr && c.scenario->simulation.fidelity == FidelityChoice::kAuto
                                      ? "auto: " + auto_fidelity_reason(r, c)
                                      : "set by simulation.fidelity"},
              {"simulated_ranks", r.step.ranks.size()},
              {"fingerprint", fmt::format("{:016x}", r.step.fingerprint)}};
  // fidelity auto beyond its caps: the flow estimate it weighed against simulation.auto_flow_seconds.
  if (r.work.auto_flow_estimate_s) j["sim"]["auto_flow_estimate_s"] = *r.work.auto_flow_estimate_s;
  return j;
}

void write_run_json(const TrainingReport& r, const RunContext& c, std::ostream& out) {
  // A path from argv may not be UTF-8.
  out << run_json(r, c).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace clustersim
