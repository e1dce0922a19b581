#pragma once

// `clustersim-layout-report SCENARIO [--out FILE] [--threads N]`: runs the layout search of a
// scenario's search: section (parallelism/layout_search.h) and writes a Markdown report of its best
// layouts and of why the best one wins: the top layouts with their step-time breakdown (compute,
// exposed communication, pipeline bubble, optimizer), memory and the time each collective group
// (tp, cp, ep, etp, dp, edp, pp) took on the critical rank; the difference between the best layout
// and each runner-up split into those parts; the best layout for each value of every searched
// dimension (what fixing tp, cp, pp, ep, ... to another value costs); and the rejected candidates by
// reason. docs/validation/search-mixtral.md is this report for
// scenarios/search/mixtral-8x7b-64-h100.yaml.

#include <ostream>
#include <string>

#include "parallelism/layout_search.h"
#include "scenarios/scenario.h"

namespace clustersim {

struct LayoutReportOptions {
  std::string scenario;  // path of the scenario file (with a search: section)
  std::string command;   // the command line shown in the report's header
  int threads = 0;       // worker threads (0: all cores)
};

// Loads the scenario, searches, simulates the top layouts once more with traces (for the time per
// collective group) and writes the report to `out`. Throws InputError for a scenario without a
// search: section or with a malformed space, InternalError for bugs.
void write_layout_report(const LayoutReportOptions& options, std::ostream& out);

}  // namespace clustersim
