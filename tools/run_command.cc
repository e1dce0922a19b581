#include "tools/run_command.h"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <system_error>
#include <fmt/format.h>
#include <fstream>
#include <optional>

#include "collectives/collective_profile.h"
#include "core/error.h"
#include "core/excerpt.h"
#include "cost_models/calibration_profile.h"
#include "parallelism/training_simulation.h"
#include "scenarios/hardware_presets.h"
#include "scenarios/scenario.h"
#include "tools/output_file.h"
#include "tools/chrome_trace.h"
#include "tools/run_report.h"

namespace clustersim {

std::string resolve_profile_path(const std::string& name_or_path) {
  std::error_code error;  // a name too long for a path (ENAMETOOLONG) is a profile not found
  if (std::filesystem::is_directory(name_or_path, error)) {
    throw InputError(fmt::format("calibration profile path \"{}\" is a directory; give a profile .json file written "
                                 "by `clustersim calibrate fit`, or a shipped profile name",
                                 name_or_path));
  }
  if (std::filesystem::exists(name_or_path, error)) return name_or_path;
  const auto shipped = std::filesystem::path(default_data_dir()) / "profiles" / (name_or_path + ".json");
  if (std::filesystem::exists(shipped, error)) return shipped.string();
  std::string available;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(shipped.parent_path(), ec)) {
    if (e.path().extension() == ".json") available += (available.empty() ? "" : ", ") + e.path().stem().string();
  }
  throw InputError(fmt::format("calibration profile \"{}\" not found; shipped profiles: {} (or give a path to a "
                               "profile .json written by `clustersim calibrate fit`)",
                               excerpt(name_or_path), available.empty() ? "none" : available));
}

namespace {

// "NVIDIA H100 80GB HBM3" -> "h100"; "H200-SXM-141GB" -> "h200".
std::string gpu_model_token(std::string_view name) {
  constexpr std::string_view kVendor = "NVIDIA ";
  if (name.substr(0, kVendor.size()) == kVendor) name.remove_prefix(kVendor.size());
  const size_t end = name.find_first_of(" -");
  std::string token(name.substr(0, end));
  for (char& c : token) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return token;
}

}  // namespace

bool same_gpu_model(const std::string& device_name, const std::string& preset_name) {
  const std::string token = gpu_model_token(device_name);
  return !token.empty() && token == gpu_model_token(preset_name);
}

ScenarioProfiles load_scenario_profiles(const std::optional<std::string>& calibration, const std::string& gpu_name,
                                        const std::string& where) {
  ScenarioProfiles profiles;
  if (!calibration) return profiles;
  try {
    profiles.path = resolve_profile_path(*calibration);
    profiles.compute = load_calibration_profile(profiles.path);
  } catch (const InputError& e) {
    throw InputError(where + e.what());
  }
  const std::string& measured_on = profiles.compute->machine.gpu;
  if (!same_gpu_model(measured_on, gpu_name)) {
    throw InputError(fmt::format("{}profile \"{}\" was measured on \"{}\", but the cluster's GPU is "
                                 "{}; a profile replaces the GPU's GEMM, memory and attention rates, so it must come "
                                 "from the same GPU model (measure one with tools/calibrate, or remove calibration: "
                                 "to use the datasheet defaults)",
                                 where, *calibration, measured_on, gpu_name));
  }
  if (!profiles.compute->collectives_json.empty()) {
    profiles.collectives = parse_collective_profile(profiles.compute->collectives_json);
  }
  return profiles;
}

int run_command(const RunOptions& options, std::ostream& out) {
  std::vector<Override> overrides;
  for (const auto& s : options.sets) overrides.push_back(parse_override(s));
  const Scenario scenario = [&] {
    try {
      return load_scenario(options.scenario, overrides);
    } catch (const InputError& e) {
      if (options.layout_from_file.empty()) throw;
      throw InputError(fmt::format("{} (the layout comes from --layout-from {}, top[{}].layout (--rank {}), a search "
                                   "of scenario \"{}\", applied as --set overrides of the parallelism keys)",
                                   e.what(), options.layout_from_file, options.layout_from_rank - 1,
                                   options.layout_from_rank, options.layout_from_scenario));
    }
  }();
  if (options.warnings != nullptr && !options.layout_from_scenario.empty() &&
      options.layout_from_scenario != scenario.name) {
    *options.warnings << fmt::format("warning: --layout-from holds a search of scenario \"{}\", not of \"{}\"; its "
                                     "layout was ranked for that scenario's model, cluster and batch\n",
                                     options.layout_from_scenario, scenario.name);
  }
  const Cluster cluster(scenario.cluster);

  const ScenarioProfiles profiles =
      load_scenario_profiles(scenario.calibration, cluster.node_spec(0).gpu.name, scenario.calibration_where);
  const std::optional<CalibrationProfile>& compute_profile = profiles.compute;
  const std::optional<CollectiveProfile>& collective_profile = profiles.collectives;
  const std::string& calibration = profiles.path;

  // The trace file is checked before the simulation, not after it (a minute at scale).
  if (!options.trace.empty()) check_writable_output(options.trace, "--trace", "trace.json");

  TrainingSimulationOptions sim;
  sim.fidelity = resolve_fidelity(scenario.simulation, scenario.layout);
  sim.representative = scenario.simulation.representative;
  sim.allow_idle_gpus = scenario.simulation.allow_idle_gpus;
  sim.power_model = scenario.simulation.power_model;
  sim.stragglers = scenario.stragglers;
  sim.jitter = scenario.jitter;
  sim.record_trace = !options.trace.empty();
  sim.compute_profile = compute_profile ? &*compute_profile : nullptr;
  sim.collective_profile = collective_profile ? &*collective_profile : nullptr;

  const auto start = std::chrono::steady_clock::now();
  const TrainingReport report = [&] {
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
  std::optional<CampaignResult> campaign;
  if (scenario.campaign) campaign = simulate_campaign(*scenario.campaign, campaign_inputs(scenario, cluster, report.gpus,
                                                               report.jitter.modelled ? report.jitter.mean_step_s
                                                                                      : report.step_time_s,
                                                               report.energy));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  RunContext context{&scenario, &cluster, sim.fidelity, calibration, options.reproducible ? 0.0 : wall,
                     campaign ? &*campaign : nullptr};
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
  if (options.json) {
    write_run_json(report, context, out);
  } else {
    write_run_summary(report, context, out);
  }
  return 0;
}

}  // namespace clustersim
