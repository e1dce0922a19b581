#pragma once

// `clustersim run SCENARIO [--set a.b=v ...] [--json] [--trace FILE] [--reproducible]`

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "scenarios/prepared_scenario.h"  // resolve_profile_path, load_scenario_profiles (used by the commands)

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

}  // namespace clustersim
