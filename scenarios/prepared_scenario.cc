#include "scenarios/prepared_scenario.h"

#include <cctype>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/excerpt.h"
#include "scenarios/hardware_presets.h"

namespace clustersim {

std::string resolve_profile_path(const std::string& name_or_path) {
  std::error_code error;  // a name too long for a path (ENAMETOOLONG) is a profile not found
  if (std::filesystem::is_directory(name_or_path, error)) {
    throw InputError(fmt::format("calibration profile path \"{}\" is a directory; give a profile .json file written "
                                 "by `clustersim calibrate fit`, or a shipped profile name",
                                 name_or_path));
  }
  if (std::filesystem::exists(name_or_path, error)) return name_or_path;
  const auto shipped_dir = std::filesystem::path(default_data_dir()) / "profiles";
  // A name is a shipped profile's (no folder in it: "/x/foo" must not become "/x/foo.json").
  const bool is_name = name_or_path.find('/') == std::string::npos && !name_or_path.empty();
  if (is_name) {
    const auto shipped = shipped_dir / (name_or_path + ".json");
    if (std::filesystem::exists(shipped, error)) return shipped.string();
  }
  std::string available;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(shipped_dir, ec)) {
    if (e.path().extension() == ".json") available += (available.empty() ? "" : ", ") + e.path().stem().string();
  }
  throw InputError(fmt::format("calibration profile {} \"{}\" not found; shipped profiles: {} (or give a path to a "
                               "profile .json written by `clustersim calibrate fit`)",
                               is_name ? "name" : "file", excerpt(name_or_path), available.empty() ? "none" : available));
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
                                 "from the same GPU model (measure one with tools/calibrator, or remove calibration: "
                                 "to use the datasheet defaults)",
                                 where, *calibration, measured_on, gpu_name));
  }
  if (!profiles.compute->collectives_json.empty()) {
    profiles.collectives = parse_collective_profile(profiles.compute->collectives_json);
  }
  return profiles;
}

PreparedScenario prepare_scenario(Scenario scenario) {
  Cluster cluster(scenario.cluster);
  ScenarioProfiles profiles =
      load_scenario_profiles(scenario.calibration, cluster.node_spec(0).gpu.name, scenario.calibration_where);
  return PreparedScenario{std::move(scenario), std::move(cluster), std::move(profiles)};
}

PreparedScenario prepare_scenario(const std::string& path, const std::vector<Override>& overrides,
                                  LayoutCheck layout_check) {
  return prepare_scenario(load_scenario(path, overrides, "", layout_check));
}

SearchProblem search_problem(const PreparedScenario& prepared) {
  SearchProblem problem = search_problem(prepared.scenario, prepared.cluster);
  problem.compute_profile = prepared.compute_profile();
  problem.collective_profile = prepared.collective_profile();
  const SimulationSettings& settings = prepared.scenario.simulation;
  problem.power_model = power_model_applies(settings, problem.compute_profile) ||
                        (!settings.power_model && problem.space.objective == SearchObjective::kEnergy);
  return problem;
}

}  // namespace clustersim
