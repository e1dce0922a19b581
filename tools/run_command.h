#pragma once

// `clustersim run SCENARIO [--set a.b=v ...] [--json] [--trace FILE] [--reproducible]`

#include <ostream>
#include <string>
#include <vector>

namespace clustersim {

struct RunOptions {
  std::string scenario;           // path of the scenario file
  std::vector<std::string> sets;  // "a.b=value" overrides
  bool json = false;              // JSON instead of the summary table
  std::string trace;              // Chrome trace output path ("" = none)
  bool reproducible = false;      // report sim.wall_s as 0 so repeated runs are byte-identical
};

// Loads, simulates and reports. Returns the process exit code (0). Throws InputError for bad input
// (exit 2 in main) and InternalError for bugs (exit 1).
int run_command(const RunOptions& options, std::ostream& out);

// Resolves a calibration profile name to a file: <data dir>/profiles/<name>.json, or the name
// itself when it is a path. Throws InputError listing the shipped profiles if neither exists.
std::string resolve_profile_path(const std::string& name_or_path);

}  // namespace clustersim
