#pragma once

// `clustersim search SCENARIO [--set a.b=v ...] [--top K] [--threads N] [--csv FILE] [--json]`
//
// Runs the layout search of the scenario's search: section (parallelism/layout_search.h) and
// prints the best layouts (a table, or JSON with --json), a line per rejection reason with its
// count, and the winner as `--set` overrides for `clustersim run`. Under `mpirun -np N` the
// candidates are split across the processes and only rank 0 writes; the output is byte-identical
// to a one-process run (wall time and speed go to standard error, never standard output).
// Progress goes to standard error: a bar with an ETA on a terminal, otherwise one line every 5 s
// once a phase has run that long; --no-progress or --quiet silences it.

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <optional>
#include <vector>

#include "parallelism/layout_search.h"
#include "scenarios/prepared_scenario.h"
#include "scenarios/scenario.h"

namespace clustersim {

// The most worker threads of --threads: far above the cores of one machine (a 2-socket server: 256
// hardware threads), below the point where starting them fails.
inline constexpr int kMaxSearchThreads = 1'024;

// A search screening this many candidates or more says so on standard error as it begins (with
// progress on): the work stated before it is done.
inline constexpr size_t kAnnouncedSearchCandidates = 5'000;

struct SearchCommandOptions {
  std::string scenario;           // path of the scenario file (with a search: section)
  std::vector<std::string> sets;  // "a.b=value" overrides, e.g. search.top=5
  std::optional<int> top;         // layouts shown (>= 1; unset: the scenario's search.top)
  int threads = 0;                // worker threads per process (0: all cores), at most kMaxSearchThreads
  std::string csv;                // write every simulated layout here ("" = no file)
  bool json = false;              // JSON instead of the table
  bool progress = true;           // progress on standard error: a bar on a terminal, else a line every 5 s
  bool quiet = false;             // --quiet: no progress and no closing "searched ..." line
};

// A finished search of a scenario.
struct SearchOutcome {
  PreparedScenario prepared;  // the scenario with options.sets, its cluster and profiles
  SearchResult result;
  int top = 0;        // layouts shown: options.top, else the scenario's search.top
  double wall_s = 0;  // seconds the search took
};

// Loads the scenario (its parallelism section is only the base of the search) and searches it on
// every process of `partition`; rank 0 writes options.csv when given and draws the progress bar
// (options.progress) on a terminal's standard error. options.json is not read. Throws InputError
// for malformed input (no search: section, an empty or malformed space, impossible constraints,
// threads or top out of range) and InternalError for bugs.
SearchOutcome run_search(const SearchCommandOptions& options, SearchPartition& partition);

// run_search(), then on rank 0 of `partition` the search's speed to standard error and the report
// (the table, or with options.json search_json()) to `out`. Returns the exit code: 0, also when no
// layout is feasible (the output says why). Throws as run_search().
int search_command(const SearchCommandOptions& options, SearchPartition& partition, std::ostream& out);

// The document of `clustersim search --json`: {"scenario", "objective", "candidates", "evaluated",
// "top": [{"rank", "layout": {"tp", "pp", "dp", "cp", "vpp", "micro_batch", "global_batch",
// "recompute", "zero", "sequence_parallel", "schedule", "order", "stage_layers",
// "allow_idle_gpus"}, "step_time_s", "tokens_per_s", "mfu", "peak_bytes", "headroom_bytes", "gpus",
// "gpu_seconds_per_token", "breakdown_s": {...}, "fidelity", "screening_rank", "set"}, ...],
// "rejected": {reason: count}, "rejected_examples": {reason: message}}. Keys in a fixed order. "set" is
// the `--set` line that makes `clustersim run` simulate the layout: `user_sets` (the search's own
// overrides, less those of search:), then the layout's. Times in seconds, memory in bytes.
nlohmann::ordered_json search_json(const Scenario& scenario, const SearchResult& result, int top,
                                   const std::vector<std::string>& user_sets);
// search_json() as `clustersim search --json` prints it: indented by 2, bytes that are not UTF-8
// replaced by U+FFFD.
void write_search_json(const Scenario& scenario, const SearchResult& result, int top,
                       const std::vector<std::string>& user_sets, std::ostream& out);

// Every simulated layout, one CSV row each, in the order of the space, with its screening figures.
void write_search_csv(const SearchResult& result, std::ostream& out);

// The `--set` overrides that make `clustersim run` simulate `candidate` on the search's scenario:
// "parallelism.tp=8", ..., "training.micro_batch=1", "training.recompute=full",
// "training.global_batch=1536", "simulation.allow_idle_gpus=false"; and, where the layout cannot
// take the scenario's option, the value the search gave it instead: overlap_param_gather=false
// without ZeRO, tp_comm_overlap=false without tp > 1 and sequence parallelism,
// zero3_bucket_elements=0 below ZeRO-3, grad_reduce_op=auto except at ZeRO-1 (where the scenario's
// choice stands).
std::vector<std::string> candidate_overrides(const LayoutCandidate& candidate, bool allow_idle_gpus);

// The overrides of the layout ranked `rank` (1-based) in a `clustersim search --json` file, for
// `clustersim run SCENARIO --layout-from FILE --rank N`. Throws InputError naming the file when it
// cannot be read, is not a search result, or has fewer than `rank` layouts.
// `searched_scenario`, when given, receives the "scenario" name the result file records ("" if none).
std::vector<std::string> overrides_from_search_json(const std::string& path, int rank,
                                                    std::string* searched_scenario = nullptr);

// The processes of this search: under an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE or
// PMIX_RANK) and in a build with MPI, the MPI world; otherwise one process. Defined by
// search_partition_mpi.cc or search_partition_local.cc, whichever the build links.
std::unique_ptr<SearchPartition> make_search_partition();

}  // namespace clustersim
