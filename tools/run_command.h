#pragma once

// `clustersim run SCENARIO [--set a.b=v ...] [--json] [--trace FILE] [--reproducible]`

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collectives/collective_profile.h"
#include "cost_models/calibration_profile.h"

namespace clustersim {

struct RunOptions {
  std::string scenario;           // path of the scenario file
  std::vector<std::string> sets;  // "a.b=value" overrides
  bool json = false;              // JSON instead of the summary table
  std::string trace;              // Chrome trace output path ("" = none)
  bool reproducible = false;      // report sim.wall_s as 0 so repeated runs are byte-identical
  // With --layout-from: the scenario name the search result records; a different name than the
  // scenario's gets a warning on `warnings` (the layout was ranked for another model or cluster).
  std::string layout_from_scenario;
  std::string layout_from_file;  // with --layout-from: its path and --rank, named in layout errors
  int layout_from_rank = 0;
  std::ostream* warnings = nullptr;
};

// Loads, simulates and reports. Returns the process exit code (0). Throws InputError for bad input
// (exit 2 in main) and InternalError for bugs (exit 1).
int run_command(const RunOptions& options, std::ostream& out);

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

}  // namespace clustersim
