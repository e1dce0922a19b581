#pragma once

// A scenario ready to simulate: loaded (scenario.h), its cluster built, and the calibration profile it
// names loaded and checked against its GPU. Every command starts here.

#include <optional>
#include <string>
#include <vector>

#include "collectives/collective_profile.h"
#include "cost_models/calibration_profile.h"
#include "scenarios/scenario.h"
#include "topology/cluster.h"

namespace clustersim {

// Resolves a calibration profile name to a file: <data dir>/profiles/<name>.json, or the name
// itself when it is a path. Throws InputError listing the shipped profiles if neither exists, and
// for a path that is a directory.
std::string resolve_profile_path(const std::string& name_or_path);

// The calibration profiles a scenario names (`calibration:`), loaded: the compute profile and the
// collective fits it carries. Both empty when the scenario names none.
struct ScenarioProfiles {
  std::string path;  // resolved profile file ("" = none)
  std::optional<CalibrationProfile> compute;
  std::optional<CollectiveProfile> collectives;
};

// Loads the profile `calibration` names for a cluster whose GPU is `gpu_name` (a GPU preset name such
// as "H100-SXM5-80GB"). `where` ("file:line:column: calibration: ", Scenario::calibration_where)
// opens every message. Throws InputError when the profile cannot be found or parsed, or when it
// was measured on another GPU model: the profile's device name
// ("NVIDIA H200") and the preset name ("H200-SXM-141GB") must share the model token ("H200";
// same_gpu_model()), since a profile replaces the GPU's GEMM, memory and attention rates.
ScenarioProfiles load_scenario_profiles(const std::optional<std::string>& calibration, const std::string& gpu_name,
                                        const std::string& where);

// Whether a driver device name ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB") and a GPU preset
// name ("H100-SXM5-80GB") name the same GPU model: their first tokens after an optional "NVIDIA "
// prefix, split at a space or '-', are equal ignoring case.
bool same_gpu_model(const std::string& device_name, const std::string& preset_name);

// The scenario, its cluster and its profiles.
struct PreparedScenario {
  Scenario scenario;
  Cluster cluster;
  ScenarioProfiles profiles;
  const CalibrationProfile* compute_profile() const { return profiles.compute ? &*profiles.compute : nullptr; }
  const CollectiveProfile* collective_profile() const { return profiles.collectives ? &*profiles.collectives : nullptr; }
};

// search_problem(scenario, cluster) of a prepared scenario, with its profiles, and the power model
// resolved for them (power_model_applies; an energy objective under `auto` turns it on).
SearchProblem search_problem(const PreparedScenario& prepared);

// Builds the cluster of a loaded `scenario` and loads its profiles. Throws InputError as
// load_scenario_profiles() does.
PreparedScenario prepare_scenario(Scenario scenario);
// Loads the scenario at `path` (load_scenario()) and prepares it.
PreparedScenario prepare_scenario(const std::string& path, const std::vector<Override>& overrides = {},
                                  LayoutCheck layout_check = LayoutCheck::kValidate);

}  // namespace clustersim
