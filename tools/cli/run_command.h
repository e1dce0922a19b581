#pragma once

// `clustersim run SCENARIO [--set a.b=v ...] [--json] [--trace FILE] [--reproducible] [--no-progress] [--quiet]`

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "campaign/campaign.h"
#include "parallelism/training_simulation.h"
#include "scenarios/prepared_scenario.h"  // resolve_profile_path, load_scenario_profiles (used by the commands)
#include "tools/cli/run_report.h"

namespace clustersim {

struct RunOptions {
  std::string scenario;           // path of the scenario file
  std::vector<std::string> sets;  // "a.b=value" overrides
  bool json = false;              // JSON instead of the summary table
  std::string trace;              // Chrome trace output path ("" = none)
  // Keep the step's spans (RunOutcome::report.step.trace and .waits) without writing a trace file
  // (clustersim report); a trace path records them too.
  bool record_trace = false;
  bool reproducible = false;      // report sim.wall_s as 0 so repeated runs are byte-identical
  // With --layout-from: the scenario name the search result records; a different name than the
  // scenario's gets a warning on `warnings` (the layout was ranked for another model or cluster).
  std::string layout_from_scenario;
  std::string layout_from_file;  // with --layout-from: its path and --rank, named in layout errors
  int layout_from_rank = 0;
  std::ostream* warnings = nullptr;
  // Before a run estimated at kAnnouncedRunSeconds or more, one line on standard error with the
  // estimate (parallelism/work_estimate.h); during such a run, progress as clustersim search's
  // (tools/cli/progress_bar.h); shorter runs print neither. The CLI turns it on unless
  // --no-progress or --quiet.
  bool progress = false;
};

// Runs estimated at this many seconds or more state their estimate before they start.
inline constexpr double kAnnouncedRunSeconds = 2.0;

// One simulated step of a scenario (and its campaign, if it has one), with what the reports need.
struct RunOutcome {
  PreparedScenario prepared;
  Fidelity fidelity = Fidelity::kAnalytical;  // what the step was simulated at
  TrainingReport report;
  std::optional<CampaignResult> campaign;
  double wall_s = 0;  // seconds the simulation took (0 under options.reproducible)
  // The context of the reports (write_run_summary, run_json); it points into this object.
  RunContext context() const;
};

// Loads options.scenario with options.sets, simulates its step (and campaign), and writes
// options.trace when given; options.json is not read. Throws InputError for bad input (exit 2 in
// main) and InternalError for bugs (exit 1).
RunOutcome simulate_run(const RunOptions& options);

// simulate_run(), then the summary or, with options.json, run_json() to `out`. Returns the process
// exit code (0). Throws as simulate_run().
int run_command(const RunOptions& options, std::ostream& out);

}  // namespace clustersim
