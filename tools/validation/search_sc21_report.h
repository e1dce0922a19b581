#pragma once

// The layout search against Megatron-LM's SC21 Table 1 (Narayanan et al. 2021, arXiv:2104.04473):
// for each GPT row of docs/validation/published/training_runs.csv, the shipped search scenario
// scenarios/search/sc21-gpt-<size>.yaml (the row's GPUs, global batch and model; the space of the
// 2021 Megatron-LM) is searched, and the report docs/validation/search-sc21.md shows where the
// paper's layout ranks and why the winner wins. `clustersim-search-sc21 --out FILE` writes it.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "parallelism/layout_search.h"
#include "scenarios/scenario.h"
#include "tools/validation/published_run.h"

namespace clustersim {

struct Sc21SearchRow {
  PublishedConfig paper;         // the Table 1 row (tp, pp, dp, GPUs, batch, achieved TFLOP/s)
  std::string scenario_path;     // scenarios/search/sc21-gpt-<size>.yaml
  Scenario scenario;
  SearchResult result;
  std::vector<size_t> order;     // ranked_order(): every simulated candidate, best first
  std::optional<size_t> paper_rank;  // 1-based rank of the best candidate with the paper's tp, pp, dp
  LayoutMetrics paper_metrics;   // that candidate at the scenario's fidelity (re-simulated if needed)
  // Rows where the paper's layout is not in the top 5: its rank when every GPU must keep 16 GB free
  // (screening order), and the p2p time of the winner if none of its pipeline transfers overlapped
  // compute (2·vpp·m transfers of one microbatch's activations at the NIC bandwidth).
  std::optional<size_t> paper_rank_with_headroom;
  double winner_blocking_p2p_s = 0;
  double wall_s = 0;             // search wall time
};

// The SC21 Figure 13 check: (tp, pp) splits of 64 GPUs for a 162B GPT at global batch 32 and 128.
struct Sc21Figure13 {
  int64_t global_batch = 0;
  std::vector<std::pair<LayoutCandidate, LayoutMetrics>> ranked;  // best first
};

// Runs scenarios/search/sc21-fig13-gpt-162b.yaml at global batch 32 and 128.
std::vector<Sc21Figure13> run_sc21_figure13(const std::string& source_dir, int threads);

// The shipped scenario of a Table 1 row: "GPT 145.6B" → <source_dir>/scenarios/search/sc21-gpt-145.6b.yaml,
// "GPT 1008.0B" → sc21-gpt-1t.yaml.
std::string sc21_scenario_path(const std::string& source_dir, const std::string& model);

// Reads the Table 1 GPT rows (config_id sc21_t1_*) of <source_dir>/docs/validation/published/
// training_runs.csv and searches each row's scenario with `threads` workers. Throws InputError when
// a scenario is missing or disagrees with its row (GPUs, global batch, layers, hidden, heads).
std::vector<Sc21SearchRow> run_sc21_searches(const std::string& source_dir, int threads);

// The figures of candidate `index` of a finished search: final-fidelity ones if it was re-ranked.
const LayoutMetrics& final_metrics(const SearchResult& result, size_t index);

// TFLOP/s per GPU as SC21 counts them (eq. 3, recomputation included) for `metrics` of a row.
double sc21_tflops_per_gpu(const Scenario& scenario, const LayoutMetrics& metrics);

// The Markdown report (docs/validation/search-sc21.md). Deterministic: no wall times.
void write_sc21_search_report(const std::vector<Sc21SearchRow>& rows, const std::vector<Sc21Figure13>& figure13,
                              std::ostream& out);

}  // namespace clustersim
