#include "parallelism/training_simulation.h"

#include <limits>
#include <map>
#include <optional>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/random.h"
#include "cost_models/compute_cost_model.h"
#include "workloads/shard_spec.h"
#include "workloads/transformer.h"

namespace clustersim {

namespace {

double seconds(Duration d) { return d.to_seconds(); }

// The work of every step the run will simulate (RunWork).
RunWork estimate_run_work(const Cluster& cluster, const Layout& layout, const TrainingPrograms& programs,
                          const StepSimulationOptions& sim, const TrainingSimulationOptions& options, bool jittered) {
  RunWork work;
  work.fidelity = sim.fidelity;
  work.step = estimate_step_work(cluster, layout, programs.stages, programs.microbatches, sim);
  work.steps = 1 + (sim.power != nullptr ? 1 : 0) + (!options.stragglers.empty() && options.straggler_baseline ? 1 : 0);
  work.events = work.step.events() * static_cast<uint64_t>(work.steps);
  work.seconds = work.step.seconds(sim.fidelity) * work.steps;
  if (jittered) {
    SimulationOptions every_rank = sim;
    every_rank.representative = false;
    const StepWork sampled = estimate_step_work(cluster, layout, programs.stages, programs.microbatches, every_rank);
    work.steps += options.jitter->steps;
    work.events += sampled.events() * static_cast<uint64_t>(options.jitter->steps);
    work.seconds += sampled.seconds(sim.fidelity) * options.jitter->steps;
  }
  return work;
}

}  // namespace

std::string describe_run_work(const RunWork& work) {
  return fmt::format("{:.3g} simulation events ({} step(s) of {} simulated rank(s), {} flow transfers per step, {} "
                     "fidelity): about {} on one core",
                     static_cast<double>(work.events), work.steps, work.step.simulated_ranks, work.step.transfers,
                     name_of(work.fidelity), describe_estimated_seconds(work.seconds));
}

void check_run_work(const RunWork& work, uint64_t max_events, std::string_view source, std::string_view where) {
  if (max_events == 0 || work.events <= max_events) return;
  const std::string prefix = !where.empty()   ? std::string(where)
                             : source.empty() ? std::string("simulation.max_events: ")
                                              : fmt::format("{}: simulation.max_events: ", source);
  throw InputError(fmt::format(
      "{}this run is estimated at {}, above the bound of {:.3g}; raise "
      "simulation.max_events (0 = no bound), or use simulation.fidelity: analytical or a smaller layout",
      prefix, describe_run_work(work), static_cast<double>(max_events)));
}

TrainingReport simulate_training(const Cluster& cluster, const ModelSpec& model, const TrainingSpec& training,
                                 const Layout& layout, const TrainingSimulationOptions& options) {
  validate_run(model, training, layout, ClusterContext{cluster, options.allow_idle_gpus});
  ShardSpec shard = shard_spec(layout);
  if (layout.moe_dispatcher == MoeDispatcher::kDeepEp && layout.ep > 1) {
    shard.ep_ranks_per_node = expert_ranks_per_node(layout, cluster);  // not 0: check_deepep_node_layout
  }
  const GpuSpec& gpu = uniform_gpu(cluster);
  shard.gpu_sm_count = gpu.sm_count > 0 ? gpu.sm_count
                       : options.compute_profile != nullptr ? options.compute_profile->machine.sm_count
                                                            : 0;
  const Transformer transformer(model, training, shard);
  std::optional<ComputeCostModel> own_cost;
  const ComputeCostModel* shared_cost = options.compute_cost;
  if (shared_cost == nullptr) own_cost.emplace(gpu, options.compute_profile);
  // Kernel times at full clock exactly when the governor runs them (ComputeCostModel::set_power_governed).
  const ComputeCostModel& given_cost = shared_cost != nullptr ? *shared_cost : *own_cost;
  const bool governed = options.power_model && given_cost.power_model() != nullptr;
  if (given_cost.power_governed() != governed) {
    if (!own_cost) own_cost.emplace(*shared_cost);
    own_cost->set_power_governed(governed);
    shared_cost = nullptr;
  }
  const ComputeCostModel& cost = shared_cost != nullptr ? *shared_cost : *own_cost;

  TrainingReport report;
  ProgramOptions program_options;
  program_options.merge_compute = !options.record_trace;
  program_options.host = host_costs(training, options.compute_profile);
  report.host_model = program_options.host.source;
  report.programs = build_training_programs(transformer, cost, layout, program_options);
  report.microbatches = report.programs.microbatches;
  report.gpus = layout.world_size();
  report.compute_model = cost.describe();
  report.capacity = gpu.hbm_capacity;

  StepSimulationOptions sim;
  static_cast<SimulationOptions&>(sim) = options;  // what every step is simulated with
  if (governed) sim.power = cost.power_model();
  // Stragglers: one program set per distinct speed, each from a cost model at that speed.
  std::vector<std::pair<double, TrainingPrograms>> slow_programs;
  if (!options.stragglers.empty()) {
    const RankGrid grid(layout);
    slow_programs.reserve(options.stragglers.size());  // no reallocation: the pointers below stay valid
    sim.rank_programs.assign(static_cast<size_t>(layout.world_size()), nullptr);
    std::optional<RankCoord> line;
    for (const Straggler& g : options.stragglers) {
      if (g.gpu < 0 || g.gpu >= layout.world_size()) {
        throw InputError(fmt::format("straggler GPU {} is not in the layout's {} GPUs (0 .. {})", g.gpu,
                                     layout.world_size(), layout.world_size() - 1));
      }
      if (!(g.speed > 0) || g.speed > 1) {
        throw InputError(fmt::format("straggler GPU {}: speed {} is not in (0, 1]", g.gpu, g.speed));
      }
      auto it = std::find_if(slow_programs.begin(), slow_programs.end(),
                             [&](const auto& p) { return p.first == g.speed; });
      if (it == slow_programs.end()) {
        ComputeCostModel slow = cost;
        slow.set_speed(g.speed);
        slow_programs.emplace_back(g.speed, build_training_programs(transformer, slow, layout, program_options));
        it = std::prev(slow_programs.end());
      }
      const RankCoord c = grid.coord_of(g.gpu);
      sim.rank_programs[static_cast<size_t>(g.gpu)] = &it->second.stages[static_cast<size_t>(c.pp)];
      const RankCoord on_line{c.tp, c.cp, c.dp, 0};
      if (!line) line = on_line;
      if (!(*line == on_line)) sim.representative = false;
    }
    // Their common line, when they share one.
    if (sim.representative) sim.representative_line = *line;
    report.stragglers_simulated_every_rank = !sim.representative;
  }
  const bool jittered = options.jitter && options.jitter->cv > 0 && options.jitter->steps > 0;
  if (jittered && layout.world_size() > kMaxJitterGpus) {
    throw InputError(fmt::format("jitter simulates every rank of each sampled step: at most {} GPUs, the layout has {}",
                                 kMaxJitterGpus, layout.world_size()));
  }
  report.work = estimate_run_work(cluster, layout, report.programs, sim, options, jittered);
  if (options.auto_flow_seconds && sim.fidelity == Fidelity::kAnalytical) {
    // auto beyond the size caps: flow where its estimate is within the budget.
    StepSimulationOptions flow = sim;
    flow.fidelity = Fidelity::kFlow;
    const RunWork flow_work = estimate_run_work(cluster, layout, report.programs, flow, options, jittered);
    if (flow_work.seconds <= *options.auto_flow_seconds &&
        (options.auto_flow_max_events == 0 || flow_work.events <= options.auto_flow_max_events)) {
      sim.fidelity = Fidelity::kFlow;
      report.work = flow_work;
    }
    report.work.auto_flow_estimate_s = flow_work.seconds;
    report.work.auto_flow_estimate_events = flow_work.events;
  }
  if (options.on_estimate) options.on_estimate(report.work);
  // Every simulate_step of the run, with the progress callback counting on from the steps before.
  uint64_t events_before = 0;
  auto simulate = [&](StepSimulationOptions step_options) {
    if (options.on_progress) {
      step_options.progress = [&options, &events_before, total = report.work.events](uint64_t events) {
        options.on_progress(events_before + events, total);
      };
    }
    StepResult result = simulate_step(cluster, layout, report.programs.stages, report.microbatches, step_options);
    events_before += result.events;
    return result;
  };
  if (!options.stragglers.empty() && options.straggler_baseline) {
    StepSimulationOptions plain = sim;
    plain.rank_programs.clear();
    plain.representative = options.representative;
    plain.representative_line = RankCoord{};
    plain.record_trace = false;
    report.step_time_without_stragglers_s = seconds(simulate(plain).step_time);
  }
  report.step = simulate(sim);
  if (sim.power != nullptr) {
    // Steady state of back-to-back steps: each GPU's governor starts where the previous step left it.
    // One iteration from idle; its residual (start vs end average of the second run) is reported in
    // GpuEnergy::start_end_power_w.
    for (const RankBreakdown& r : report.step.ranks) sim.initial_power_w.push_back(r.final_power_w);
    report.step = simulate(sim);
    double joules = 0;
    Duration full;
    Duration actual;
    for (const RankBreakdown& r : report.step.ranks) {
      joules += r.energy_joules;
      full += r.clock_bound_full;
      actual += r.clock_bound_actual;
    }
    report.energy.modelled = true;
    for (size_t i = 0; i < report.step.ranks.size(); ++i) {
      report.energy.start_end_power_w =
          std::max(report.energy.start_end_power_w,
                   std::abs(report.step.ranks[i].final_power_w - sim.initial_power_w[i]));
    }
    report.energy.power_limit_w = sim.power->limit().in_watts();
    report.energy.joules_per_step = joules / static_cast<double>(report.step.ranks.size());
    report.energy.avg_power_w = report.energy.joules_per_step / report.step.step_time.to_seconds();
    report.energy.clock_stretch_s = (actual - full).to_seconds() / static_cast<double>(report.step.ranks.size());
    if (actual > Duration::zero()) {
      report.energy.rate_factor = static_cast<double>(full.ps()) / static_cast<double>(actual.ps());
    }
  }

  if (jittered) {
    const StepJitter& jitter = *options.jitter;
    const int world = layout.world_size();
    std::vector<double> speed(static_cast<size_t>(world), 1.0);
    for (const Straggler& g : options.stragglers) speed[static_cast<size_t>(g.gpu)] = g.speed;
    const RankGrid grid(layout);
    std::map<int64_t, TrainingPrograms> by_speed;  // key: speed in 0.1 % steps; nodes stay put
    StepSimulationOptions js = sim;
    js.representative = false;
    js.record_trace = false;
    js.power = nullptr;  // sampled at full clock
    js.initial_power_w.clear();
    SplitMix64 rng(jitter.seed);
    double sum = 0;
    report.jitter.min_step_s = std::numeric_limits<double>::infinity();
    for (int k = 0; k < jitter.steps; ++k) {
      js.rank_programs.assign(static_cast<size_t>(world), nullptr);
      for (int g = 0; g < world; ++g) {
        const double factor = std::clamp(rng.lognormal_mean_one(jitter.cv), 0.25, 4.0);
        const int64_t key = std::clamp<int64_t>(std::llround(speed[static_cast<size_t>(g)] / factor * 1000), 1, 4000);
        auto it = by_speed.find(key);
        if (it == by_speed.end()) {
          ComputeCostModel at = cost;
          at.set_power_governed(false);  // no governor here: kernels at their measured (sustained) rates
          at.set_speed(static_cast<double>(key) / 1000);
          it = by_speed.emplace(key, build_training_programs(transformer, at, layout, program_options)).first;
        }
        js.rank_programs[static_cast<size_t>(g)] = &it->second.stages[static_cast<size_t>(grid.coord_of(g).pp)];
      }
      const double t = seconds(simulate(js).step_time);
      sum += t;
      report.jitter.min_step_s = std::min(report.jitter.min_step_s, t);
      report.jitter.max_step_s = std::max(report.jitter.max_step_s, t);
    }
    report.jitter.modelled = true;
    report.jitter.steps = jitter.steps;
    report.jitter.mean_step_s = sum / jitter.steps;
  }

  report.events = events_before;
  report.flops = step_flops(model, training);
  report.step_time_s = seconds(report.step.step_time);
  const double peak = gpu.peak(training.compute_dtype).flop_per_second();
  const double gpu_seconds = report.step_time_s * report.gpus;
  report.tokens_per_s = static_cast<double>(training.global_batch * training.seq_len) / report.step_time_s;
  report.mfu = report.flops.model / (gpu_seconds * peak);
  report.hfu = report.flops.hardware / (gpu_seconds * peak);
  report.executed_fraction = report.flops.executed / (gpu_seconds * peak);
  report.model_tflops_per_gpu = report.flops.model / gpu_seconds * 1e-12;
  report.hardware_tflops_per_gpu = report.flops.hardware / gpu_seconds * 1e-12;

  // The critical rank's parts, each whole picoseconds; `other` is what they leave of the step,
  // exact in picoseconds (0 when the rank's time is fully accounted). A negative remainder would
  // mean a wait or a compute op counted twice.
  const RankBreakdown& crit = report.step.ranks[report.step.critical];
  const Duration other =
      report.step.step_time - crit.compute - crit.exposed_comm - crit.bubble - crit.optimizer - crit.host_bound;
  check_invariant(other >= Duration::zero(), "the critical rank's time breakdown exceeds the step time");
  report.breakdown.compute = crit.compute;
  report.breakdown.exposed_comm = crit.exposed_comm;
  report.breakdown.bubble = crit.bubble;
  report.breakdown.optimizer = crit.optimizer;
  report.breakdown.host_bound = crit.host_bound;
  report.breakdown.other = other;

  for (const auto& stage : report.programs.memory) {
    if (stage.memory.total() > report.peak_memory) {
      report.peak_memory = stage.memory.total();
      report.peak_stage = stage.stage;
    }
  }
  report.fits = report.peak_memory <= report.capacity;
  return report;
}

}  // namespace clustersim
