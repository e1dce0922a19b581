#include "tools/cli/run_command.h"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <system_error>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <optional>

#include "collectives/collective_profile.h"
#include "core/error.h"
#include "core/excerpt.h"
#include "cost_models/calibration_profile.h"
#include "parallelism/training_simulation.h"
#include "scenarios/hardware_presets.h"
#include "scenarios/scenario.h"
#include "tools/common/output_file.h"
#include "tools/cli/chrome_trace.h"
#include "tools/cli/progress_bar.h"
#include "tools/cli/run_report.h"

namespace clustersim {

RunContext RunOutcome::context() const {
  return RunContext{&prepared.scenario, &prepared.cluster, fidelity, prepared.profiles.path, wall_s,
                    campaign ? &*campaign : nullptr};
}

RunOutcome simulate_run(const RunOptions& options) {
  std::vector<Override> overrides;
  for (const auto& s : options.sets) overrides.push_back(parse_override(s));
  RunOutcome outcome{prepare_scenario([&] {
    try {
      return load_scenario(options.scenario, overrides);
    } catch (const InputError& e) {
      if (options.layout_from_file.empty()) throw;
      throw InputError(fmt::format("{} (the layout comes from --layout-from {}, top[{}].layout (--rank {}), a search "
                                   "of scenario \"{}\", applied as --set overrides of the parallelism keys)",
                                   e.what(), options.layout_from_file, options.layout_from_rank - 1,
                                   options.layout_from_rank, options.layout_from_scenario));
    }
  }())};
  const PreparedScenario& prepared = outcome.prepared;
  const Scenario& scenario = prepared.scenario;
  if (options.warnings != nullptr && !options.layout_from_scenario.empty() &&
      options.layout_from_scenario != scenario.name) {
    *options.warnings << fmt::format("warning: --layout-from holds a search of scenario \"{}\", not of \"{}\"; its "
                                     "layout was ranked for that scenario's model, cluster and batch\n",
                                     options.layout_from_scenario, scenario.name);
  }
  const Cluster& cluster = prepared.cluster;
  const ScenarioProfiles& profiles = prepared.profiles;
  const std::optional<CalibrationProfile>& compute_profile = profiles.compute;
  const std::optional<CollectiveProfile>& collective_profile = profiles.collectives;

  // The trace file is checked before the simulation, not after it (a minute at scale).
  if (!options.trace.empty()) check_writable_output(options.trace, "--trace", "trace.json");

  TrainingSimulationOptions sim;
  sim.fidelity = resolve_fidelity(scenario.simulation, scenario.layout);
  sim.auto_flow_seconds = auto_flow_budget(scenario.simulation, scenario.layout);
  sim.auto_flow_max_events = scenario.simulation.max_events;
  sim.representative = scenario.simulation.representative;
  sim.allow_idle_gpus = scenario.simulation.allow_idle_gpus;
  sim.stragglers = scenario.stragglers;
  sim.jitter = scenario.jitter;
  sim.record_trace = options.record_trace || !options.trace.empty();
  sim.compute_profile = compute_profile ? &*compute_profile : nullptr;
  sim.collective_profile = collective_profile ? &*collective_profile : nullptr;
  sim.power_model = power_model_applies(scenario.simulation, sim.compute_profile);

  // The bound and the estimate before anything is simulated, then progress on standard error.
  ProgressBar bar("run", options.progress ? ProgressBar::mode_for_stderr() : ProgressBar::Mode::kOff, "events");
  bool announced = false;  // progress only for runs whose estimate was stated: short runs print nothing
  sim.on_estimate = [&](const RunWork& work) {
    check_run_work(work, scenario.simulation.max_events, scenario.source, scenario.max_events_where);
    if (!options.progress || work.seconds < kAnnouncedRunSeconds) return;
    announced = true;
    std::cerr << "run: estimated " << describe_run_work(work) << "\n";
  };
  if (options.progress) {
    sim.on_progress = [&bar, &announced](uint64_t done, uint64_t estimated) {
      if (announced) bar.update("simulate", done, estimated);
    };
  }

  outcome.fidelity = sim.fidelity;
  const auto start = std::chrono::steady_clock::now();
  outcome.report = [&] {
    try {
      return simulate_training(cluster, scenario.model, scenario.training, scenario.layout, sim);
    } catch (const OverflowError& e) {
      // No one key is to blame for a step beyond int64 picoseconds: name the file and the keys that
      // scale it.
      throw OverflowError(fmt::format(
          "{}: one step of this scenario ({}; training.seq_len {}, training.global_batch {}, model.layers {}, "
          "model.hidden {})",
          scenario.source, e.what(), scenario.training.seq_len, scenario.training.global_batch, scenario.model.layers,
          scenario.model.hidden));
    }
  }();
  bar.finish();
  const TrainingReport& report = outcome.report;
  outcome.fidelity = report.work.fidelity;  // auto may have chosen flow within its budget
  if (scenario.campaign) {
    // The seeded runs' progress, on the same terms as the step's: lines once it has run 5 s.
    ProgressBar campaign_bar("run", options.progress ? ProgressBar::mode_for_stderr() : ProgressBar::Mode::kOff,
                             "seeded runs");
    outcome.campaign = simulate_campaign(
        *scenario.campaign,
        campaign_inputs(scenario, cluster, scenario.layout, report,
                        report.jitter.modelled ? report.jitter.mean_step_s : report.step_time_s),
        [&campaign_bar](int done, int total) {
          campaign_bar.update("campaign", static_cast<uint64_t>(done), static_cast<uint64_t>(total));
        });
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  outcome.wall_s = options.reproducible ? 0.0 : wall;
  if (!options.trace.empty()) {
    std::error_code same_error;
    if (std::filesystem::equivalent(options.trace, options.scenario, same_error)) {
      throw InputError(fmt::format("--trace {}: that is the scenario file; give another path", options.trace));
    }
    std::ofstream trace(options.trace);
    if (!trace) throw InputError(fmt::format("--trace {}: cannot open the file for writing", options.trace));
    write_chrome_trace(report.step.trace, cluster, trace);
    check_written(trace, "--trace " + options.trace);
  }
  return outcome;
}

int run_command(const RunOptions& options, std::ostream& out) {
  const RunOutcome outcome = simulate_run(options);
  if (options.json) {
    write_run_json(outcome.report, outcome.context(), out);
  } else {
    write_run_summary(outcome.report, outcome.context(), out);
  }
  return 0;
}

}  // namespace clustersim
