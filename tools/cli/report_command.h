#pragma once

// `clustersim report SCENARIO --out FILE [--set a.b=v ...] [--search [--threads N]]`: the HTML page
// of one simulated step (the run `clustersim run --trace` makes, its spans kept for the timeline)
// or, with --search, of the scenario's layout search (tools/cli/html_report.h).

#include <ostream>
#include <string>
#include <vector>

namespace clustersim {

struct ReportOptions {
  std::string scenario;           // path of the scenario file
  std::vector<std::string> sets;  // "a.b=value" overrides
  std::string out;                // the HTML file to write
  bool search = false;            // the search: section's search instead of one step
  int threads = 0;                // with search: worker threads (0: all cores)
  std::string command_line;       // the command as a shell line, shown on the page
};

// Checks that options.out can be written (check_writable_output: InputError naming --out and the
// path) and is not the scenario file, loads and simulates the scenario (the step with its trace
// recorded, or the search) and writes the page through a temporary file renamed into place, so that
// no half-written file is left. Writes "wrote FILE (N bytes)" to `messages`. Returns 0. Throws
// InputError for bad input (as `clustersim run` / `search`: exit 2) and InternalError for bugs.
int report_command(const ReportOptions& options, std::ostream& messages);

}  // namespace clustersim
