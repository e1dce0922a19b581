#pragma once

// Layout search: every candidate of a search space (search_space.h) is checked against the layout
// rules and the constraints, dropped if its memory cannot fit, and otherwise simulated; the
// simulated ones are ranked by the objective.
//
// Pipeline, per candidate (in parallel on a Boost.Asio thread pool, and split across processes by
// a SearchPartition):
//   1. rules: validate_run() (parallelism/validate_run.h: the model, TrainingSpec::validate(),
//      validate_layout() of docs/cases/layouts.md, the sharding and the framework checks) decides;
//      a rejected candidate is counted under the first rule it breaks, in validate_layout()'s order
//      (world size, tensor split, stage split, global batch, interleaved microbatches, other);
//   2. constraints: tensor-parallel groups inside a node (search.tp_within_node);
//   3. memory: the per-stage memory of build_training_programs(), computed alone by stage_memory()
//      without pricing ops or simulating; the peak plus the headroom must fit the GPU;
//   4. screening: simulate_training() at the analytical fidelity with one representative rank per
//      stage (the same call `clustersim run` makes, at its cheapest setting);
//   5. re-ranking: the best screened layouts are simulated again at the scenario's own fidelity and
//      representative setting, and the final order is theirs. How many (search.rerank):
//      - auto (the default): the best max(top, 10) first (SearchSpace::rerank_first); then the
//        set is doubled (the next as many in screening order) until the winner of the doubled set
//        is the winner of the set before it (RerankStop::kStable), every simulated layout has been
//        re-ranked (kWholeSpace), or search.rerank_max layouts have been (kLimit: the winner may
//        lie further down). The screening error is not bounded, so a stable winner is the best of
//        what was re-ranked, checked against twice as many; tests/search_scenarios_test.cc shows a
//        space whose analytical winner is not its flow winner, found by the doubling and missed by
//        re-ranking the first round alone;
//      - a count N: the best max(top, N), once (kFixed); 0: none (kOff).
//      layout_search_test.cc shows on small spaces that the final top K equals the top K of
//      simulating every layout at the scenario's fidelity. Layouts whose fidelity is the
//      screening's keep their screening figures; when that holds for every layout, nothing is
//      re-simulated (kNotNeeded).
// Ranking: the objective (better first), ties broken by the lower peak memory, then by the
// candidate's position in the space, so the result does not depend on threads or processes.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective_runner.h"
#include "cost_models/calibration_profile.h"
#include "parallelism/search_space.h"
#include "parallelism/training_simulation.h"
#include "topology/cluster.h"
#include "workloads/model_spec.h"
#include "workloads/training_spec.h"

namespace clustersim {

// Why a candidate was not simulated (or not kept). Printed in this order.
enum class RejectReason {
  kWorldSize,                // tp·cp·pp·dp does not match the GPUs (exceeds them with idle GPUs allowed)
  kTensorSplit,              // heads, KV heads or ffn_hidden not divisible by tp
  kStageSplit,               // layers do not split into pp stages of vpp chunks
  kGlobalBatch,              // global batch not a multiple of micro_batch·dp, or none below the maximum
  kInterleavedMicrobatches,  // interleaved 1F1B needs microbatches per pipeline % pp == 0
  kLayoutRule,               // any other rule of validate_layout() / TrainingSpec::validate()
  kTensorAcrossNodes,        // constraint search.tp_within_node
  kOutOfMemory,              // peak memory of a stage above the GPU capacity
  kMemoryHeadroom,           // fits the GPU but not with search.memory_headroom free
  kSimulation,               // the simulation rejected the layout (e.g. a collective it cannot run)
};
inline constexpr int kRejectReasons = 10;

// "world_size", "tp_split", "pp_split", "global_batch", "interleaved_microbatches", "layout_rule",
// "tp_across_nodes", "out_of_memory", "memory_headroom", "simulation".
std::string_view name_of(RejectReason reason);
// One line for people: "tp·cp·pp·dp differs from the GPU count".
std::string_view describe(RejectReason reason);

// The figures of one simulated layout (seconds and bytes, the breakdown in picoseconds; see
// TrainingReport).
struct LayoutMetrics {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double hfu = 0;
  double gpu_seconds_per_token = 0;  // GPUs used × step time / tokens per step
  int gpus = 0;                      // GPUs the layout uses
  int microbatches = 0;              // per pipeline per step
  int64_t peak_bytes = 0;            // largest stage total (memory model)
  int peak_stage = 0;
  int64_t capacity_bytes = 0;        // GPU memory
  TimeBreakdown breakdown;           // of the critical rank
  Fidelity fidelity = Fidelity::kAnalytical;
  bool representative = true;
  uint64_t events = 0;               // simulator events
  // With the scenario's campaign (SearchProblem::campaign): the whole run's expected wall time (s),
  // GPU-hours and energy (MWh; 0 without the power model).
  double campaign_wall_s = 0;
  double campaign_gpu_hours = 0;
  double campaign_energy_mwh = 0;
};

// What became of one candidate. `rejected` empty: simulated, `metrics` complete. Rejected for
// memory: `metrics.peak_bytes`, `peak_stage` and `capacity_bytes` are set.
struct CandidateOutcome {
  std::optional<RejectReason> rejected;
  std::string message;  // why, in the words of validate_layout() or the memory check
  LayoutMetrics metrics;
};

// Everything a search needs: the scenario's cluster, model, training and layout (the fields the
// space does not vary), the space, and how the scenario simulates (its resolved fidelity).
struct SearchProblem {
  const Cluster* cluster = nullptr;
  ModelSpec model;
  TrainingSpec training;
  Layout base;
  SearchSpace space;
  // The scenario's fidelity for a layout, used for re-ranking (what `clustersim run` would use for
  // it; scenarios::resolve_fidelity). Empty: analytical for every layout.
  std::function<Fidelity(const Layout&)> fidelity_for;
  bool representative = true;
  bool power_model = false;  // simulation.power_model (TrainingSimulationOptions::power_model)
  // Fills a candidate's campaign_* metrics from its simulated step (scenarios::search_problem sets
  // it when the scenario has a campaign); empty: no campaign figures.
  std::function<void(const Layout&, const TrainingReport&, LayoutMetrics&)> campaign;
  // Slow GPUs every candidate is simulated with (TrainingSimulationOptions::stragglers).
  std::vector<Straggler> stragglers;

  Fidelity fidelity(const Layout& layout) const { return fidelity_for ? fidelity_for(layout) : Fidelity::kAnalytical; }
  const CalibrationProfile* compute_profile = nullptr;
  const CollectiveProfile* collective_profile = nullptr;
  // The kernel pricing every candidate shares; search_layouts() builds it from the cluster's GPU and
  // compute_profile when empty (building a calibrated model takes about a millisecond).
  std::shared_ptr<const ComputeCostModel> compute_cost;
};

// The processes that share one search. Process `rank()` evaluates the candidates whose index i
// has i % size() == rank(); all_gather() exchanges the results. The default is one process;
// tools/ provides an MPI implementation (`mpirun -np N clustersim search ...`).
class SearchPartition {
 public:
  virtual ~SearchPartition() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every process's `mine`, indexed by rank, on every process. Collective: all must call it.
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
};

class SingleProcess final : public SearchPartition {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> all_gather(const std::string& mine) override { return {mine}; }
};

struct SearchOptions {
  int threads = 0;                       // worker threads of this process; 0 = all cores
  SearchPartition* partition = nullptr;  // null: one process
  // Called after each of this process's candidates (phase "screen", then "rerank A-B" for each
  // re-ranking round, A-B its 1-based screening positions), from one thread at a time: done and
  // total count this process's share of the phase.
  std::function<void(std::string_view phase, size_t done, size_t total)> progress;
};

struct RankedLayout {
  size_t index = 0;           // into SearchResult::candidates
  LayoutMetrics metrics;      // at the final fidelity
  LayoutMetrics screening;    // at the screening fidelity
  int screening_rank = 0;     // 1-based position after screening
};

// Why the re-ranking (step 5 above) stopped where it did.
enum class RerankStop {
  kNotNeeded,   // every layout's fidelity is the screening's: nothing to re-simulate
  kOff,         // search.rerank: 0
  kFixed,       // search.rerank: N, the best max(top, N) re-ranked once
  kStable,      // auto: the winner held when the re-ranked set doubled
  kWholeSpace,  // auto: every simulated layout was re-ranked
  kLimit,       // auto: search.rerank_max reached before the winner held over a doubling
};

// "not_needed", "off", "fixed", "stable", "all", "limit".
std::string_view name_of(RerankStop stop);
// One line for people: "the winner held when the re-ranked layouts doubled".
std::string_view describe(RerankStop stop);

struct RejectionSummary {
  RejectReason reason = RejectReason::kLayoutRule;
  int64_t count = 0;
  size_t example = 0;          // the candidate shown: the first rejected; for memory, the smallest peak
  std::string message;         // its message
};

struct SearchResult {
  std::vector<LayoutCandidate> candidates;  // the whole space, in expansion order
  std::vector<CandidateOutcome> outcomes;   // screening outcome of each candidate
  std::vector<RankedLayout> ranking;        // the re-ranked best layouts, best first (reranked_layouts of them,
                                            // or without re-ranking the best top screened; see RerankStop)
  std::vector<RejectionSummary> rejected;   // reasons with a non-zero count, in RejectReason order
  size_t evaluated = 0;                     // candidates simulated
  Fidelity screening_fidelity = Fidelity::kAnalytical;
  bool reranked = false;                    // some layouts re-simulated (their fidelity differs from screening)
  // The best screened layouts taken at the scenario's fidelity (re-simulated where it differs from
  // the screening's); 0 without re-ranking. rerank_rounds: that count after each round, ascending
  // (auto: max(top, 10), then doubled, cut at the space and search.rerank_max).
  size_t reranked_layouts = 0;
  std::vector<size_t> rerank_rounds;
  RerankStop rerank_stop = RerankStop::kNotNeeded;
};

// The checks of steps 1-3 for one candidate, then the screening simulation. Throws InternalError
// for bugs only; every InputError of a candidate becomes a rejection.
CandidateOutcome screen_candidate(const SearchProblem& problem, const LayoutCandidate& candidate);

// Simulates one candidate (which must pass the rules) with simulate_training() at `fidelity`.
LayoutMetrics evaluate_candidate(const SearchProblem& problem, const LayoutCandidate& candidate, Fidelity fidelity,
                                 bool representative);

// The objective value of `m` under `objective`, oriented so that larger is better.
double objective_score(SearchObjective objective, const LayoutMetrics& m);

// True if a ranks before b: better score, then lower peak memory, then lower index.
bool ranks_before(SearchObjective objective, const LayoutMetrics& a, size_t a_index, const LayoutMetrics& b,
                  size_t b_index);

// Every simulated candidate, best first: the re-ranked layouts in their final order, then the
// others in screening order (indices into SearchResult::candidates).
std::vector<size_t> ranked_order(const SearchResult& result, SearchObjective objective);

// Runs the whole search. Throws InputError for a malformed space (validate_search_space,
// expand_search_space) and InternalError for bugs; a space where nothing is feasible returns a
// result with an empty ranking and the rejection counts.
SearchResult search_layouts(const SearchProblem& problem, const SearchOptions& options = {});

}  // namespace clustersim
