// Long layout-search runs (ctest label `slow`; CI skips them, run with `ctest -L slow`): every
// shipped search scenario to the end, the SC21 Table 1 acceptance check and the committed report
// docs/validation/search-sc21.md.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "parallelism/layout_search.h"
#include "scenarios/scenario.h"
#include "tests/search_scenario_files.h"
#include "tools/validation/search_sc21_report.h"

namespace clustersim {
namespace search_slow_test {

const std::string kSource = CLUSTERSIM_SOURCE_DIR;

using testing::search_scenarios;

// Every shipped search runs to the end with the scenario's own settings; where it re-ranks with
// search.rerank: auto, re-ranking twice as many layouts again keeps its winner.
TEST(SearchScenariosSlow, EveryShippedSearchRuns) {
  for (const auto& path : search_scenarios()) {
    const Scenario s = load_scenario(path, {}, "", LayoutCheck::kDeferToSearch);
    const Cluster cluster(s.cluster);
    SearchProblem problem = search_problem(s, cluster);
    const SearchResult r = search_layouts(problem);
    if (r.reranked && problem.space.rerank == kRerankAuto) {
      EXPECT_TRUE(r.rerank_stop == RerankStop::kStable || r.rerank_stop == RerankStop::kWholeSpace)
          << path << ": " << name_of(r.rerank_stop);
      problem.space.rerank = static_cast<int>(2 * r.reranked_layouts);
      const SearchResult doubled = search_layouts(problem);
      EXPECT_EQ(doubled.ranking.front().index, r.ranking.front().index) << path;
    }
    if (path.find("turing-nlg-530b-5128") != std::string::npos) {
      EXPECT_TRUE(r.ranking.empty()) << path;
    } else {
      EXPECT_FALSE(r.ranking.empty()) << path;
    }
    for (const RankedLayout& l : r.ranking) EXPECT_LE(l.metrics.peak_bytes, l.metrics.capacity_bytes) << path;
  }
}

// The acceptance check: for each SC21 Table 1 GPT row the paper's layout (its tp, pp, dp)
// is within the top 5. Rows where the simulator disagrees with the paper are listed with the
// reason in docs/validation/search-sc21.md ("Where the search disagrees with the paper"); for them
// this test checks what the report states: the paper's layout is simulated, the winner uses less
// tensor parallelism, and the paper's layout is within 25 % of the winner's step time (5-23 % today,
// with the gradient all-reduce after the backward pass as 2021 Megatron-LM ran it; GPT 3.6B's layout
// ranks 6th, 0.3-0.5 % behind the 4th and 5th, tp 1 · pp 2 · dp 32 interleaved layouts).
TEST(SearchScenariosSlow, Sc21PaperLayoutsRankInTheTopFiveAndTheReportIsCurrent) {
  const std::set<std::string> open_rows = {"GPT 3.6B", "GPT 7.5B", "GPT 18.4B", "GPT 39.1B"};
  const auto rows = run_sc21_searches(kSource, 0);
  ASSERT_EQ(rows.size(), 10U);
  for (const auto& row : rows) {
    ASSERT_TRUE(row.paper_rank.has_value()) << row.paper.model << ": the paper's layout was not simulated";
    if (open_rows.count(row.paper.model) == 0) {
      EXPECT_LE(*row.paper_rank, 5U) << row.paper.model;
      continue;
    }
    const LayoutCandidate& winner = row.result.candidates[row.order.front()];
    EXPECT_LT(winner.layout.tp, row.paper.tp.value_or(0)) << row.paper.model;
    EXPECT_LE(row.paper_metrics.step_time_s, 1.25 * final_metrics(row.result, row.order.front()).step_time_s)
        << row.paper.model;
  }
  std::ostringstream report;
  write_sc21_search_report(rows, run_sc21_figure13(kSource, 0), report);
  std::ifstream committed(kSource + "/docs/validation/search-sc21.md");
  std::stringstream text;
  text << committed.rdbuf();
  EXPECT_EQ(report.str(), text.str()) << "regenerate: build/bin/clustersim-search-sc21 --out docs/validation/search-sc21.md";
}

}  // namespace search_slow_test
}  // namespace clustersim
