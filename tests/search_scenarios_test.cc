// The shipped search scenarios (scenarios/search/): each loads and expands; the SC21 ones match
// their Table 1 rows; the L6 case of docs/cases/layouts.md. The long runs are in
// search_slow_test.cc (label `slow`).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "parallelism/layout_search.h"
#include "scenarios/scenario.h"
#include "tools/validation/published_run.h"
#include "tests/search_scenario_files.h"
#include "tools/validation/search_sc21_report.h"

namespace clustersim {
namespace search_scenarios_test {

const std::string kSource = CLUSTERSIM_SOURCE_DIR;

using testing::search_scenarios;

TEST(SearchScenarios, EveryShippedSearchScenarioLoadsAndExpands) {
  const auto paths = search_scenarios();
  ASSERT_GE(paths.size(), 13U);  // 10 SC21 rows, Figure 13, GPT-3 175B, Llama-3-405B, L6, the small one
  for (const auto& path : paths) {
    const Scenario s = load_scenario(path, {}, "", LayoutCheck::kDeferToSearch);
    ASSERT_TRUE(s.search.has_value()) << path;
    int gpus = 0;
    for (const auto& n : s.cluster.nodes) gpus += n.gpus;
    const SearchContext context{.gpus = gpus,
                                .gpus_per_node = s.cluster.nodes.front().gpus,
                                .layers = static_cast<int>(s.model.layers),
                                .heads = static_cast<int>(s.model.heads)};
    EXPECT_FALSE(expand_search_space(*s.search, s.layout, s.training, context).empty()) << path;
  }
}

TEST(SearchScenarios, Sc21ScenariosMatchTheirTableRows) {
  int rows = 0;
  for (const auto& config : read_published_runs(kSource + "/docs/validation/published/training_runs.csv")) {
    if (config.config_id.rfind("sc21_t1_", 0) != 0) continue;
    ++rows;
    const std::string path = sc21_scenario_path(kSource, config.model);
    const Scenario s = load_scenario(path, {}, "", LayoutCheck::kDeferToSearch);
    int gpus = 0;
    for (const auto& n : s.cluster.nodes) gpus += n.gpus;
    EXPECT_EQ(gpus, config.gpus.value_or(-1)) << path;
    EXPECT_EQ(s.training.global_batch, config.global_batch.value_or(-1)) << path;
    EXPECT_EQ(s.training.seq_len, config.seq_len.value_or(-1)) << path;
    EXPECT_EQ(s.model.layers, config.layers.value_or(-1)) << path;
    EXPECT_EQ(s.model.hidden, config.hidden.value_or(-1)) << path;
    EXPECT_EQ(s.model.heads, config.heads.value_or(-1)) << path;
    EXPECT_EQ(s.model.vocab, config.vocab.value_or(-1)) << path;
    EXPECT_EQ(s.training.recompute, Recompute::kFull) << path;  // eq. 3 counts the recomputed forward
  }
  EXPECT_EQ(rows, 10);
}

TEST(SearchScenarios, L6ExactGpuCountHasNoFeasibleLayoutAndSaysWhy) {
  const Scenario s = load_scenario(kSource + "/scenarios/search/turing-nlg-530b-5128-a100.yaml", {}, "",
                                   LayoutCheck::kDeferToSearch);
  const Cluster cluster(s.cluster);
  const SearchResult r = search_layouts(search_problem(s, cluster));
  EXPECT_TRUE(r.ranking.empty());
  EXPECT_EQ(r.evaluated, 0U);
  std::set<RejectReason> reasons;
  for (const auto& rej : r.rejected) reasons.insert(rej.reason);
  // 5128 = 2³·641: pp must be 1, tp <= 8; dp = 5128/tp > 2520 leaves no batch for tp < 4, and
  // tp 4 or 8 holds 530B/tp parameters per GPU, far above 80 GB.
  EXPECT_EQ(reasons, (std::set<RejectReason>{RejectReason::kGlobalBatch, RejectReason::kOutOfMemory}));
  for (const auto& c : r.candidates) EXPECT_EQ(c.layout.pp, 1);
}

TEST(SearchScenarios, L6WithIdleGpusFindsLayoutsWithinTheGpusAndTheBatch) {
  const Scenario s = load_scenario(kSource + "/scenarios/search/turing-nlg-530b-5128-a100.yaml",
                                   {Override{"search.allow_idle_gpus", "true"}}, "", LayoutCheck::kDeferToSearch);
  const Cluster cluster(s.cluster);
  const SearchResult r = search_layouts(search_problem(s, cluster));
  ASSERT_FALSE(r.ranking.empty());
  for (const RankedLayout& l : r.ranking) {
    const LayoutCandidate& c = r.candidates[l.index];
    EXPECT_LE(c.layout.world_size(), 5128);
    EXPECT_LE(c.global_batch, 2520);
    EXPECT_LE(l.metrics.peak_bytes, l.metrics.capacity_bytes);
  }
  // tp 8 · pp 35 · dp 18 = 5,040 GPUs with the full batch of 2,520 = 18 · 140 is among the layouts
  // simulated (layouts.md L6's natural answer).
  bool natural = false;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const LayoutCandidate& c = r.candidates[i];
    if (c.layout.tp == 8 && c.layout.pp == 35 && c.layout.dp == 18 && c.global_batch == 2520 &&
        !r.outcomes[i].rejected) {
      natural = true;
    }
  }
  EXPECT_TRUE(natural);
}

// search.rerank: auto on the shipped searches that re-rank and finish in a few seconds (every
// shipped one: search_slow_test.cc): the winner is the one of re-ranking twice as many again.
TEST(SearchScenarios, WinnersHoldWhenTheRerankedSetDoublesAgain) {
  for (const char* name : {"gpt3-1.3b-2-dgx-h100", "sc21-gpt-1.7b", "sc21-gpt-3.6b"}) {
    const std::string path = kSource + "/scenarios/search/" + name + ".yaml";
    const Scenario s = load_scenario(path, {}, "", LayoutCheck::kDeferToSearch);
    const Cluster cluster(s.cluster);
    SearchProblem problem = search_problem(s, cluster);
    ASSERT_EQ(problem.space.rerank, kRerankAuto) << path;
    const SearchResult r = search_layouts(problem);
    ASSERT_TRUE(r.reranked) << path;
    ASSERT_FALSE(r.ranking.empty()) << path;
    EXPECT_TRUE(r.rerank_stop == RerankStop::kStable || r.rerank_stop == RerankStop::kWholeSpace)
        << path << ": " << name_of(r.rerank_stop);
    problem.space.rerank = static_cast<int>(2 * r.reranked_layouts);
    const SearchResult doubled = search_layouts(problem);
    EXPECT_EQ(doubled.reranked_layouts, std::min(2 * r.reranked_layouts, r.evaluated)) << path;
    EXPECT_EQ(doubled.ranking.front().index, r.ranking.front().index) << path;
    EXPECT_EQ(doubled.ranking.front().metrics.step_time_s, r.ranking.front().metrics.step_time_s) << path;
  }
}

// A space whose analytical winner is not its flow winner: GPT 1.7B on 32 A100 (sc21-gpt-1.7b) with
// a global batch of 64 on a 16:1 oversubscribed fat-tree of 16-port leaves. Re-ranking every
// simulated layout at flow fidelity gives the truth; the flow winner ranks below the first
// re-ranking round after screening, so re-ranking that round alone misses it and auto's doubling
// finds it.
TEST(SearchScenarios, TheDoublingFindsAFlowWinnerThatTheScreeningRanksLow) {
  const std::vector<Override> overrides = {
      {"training.global_batch", "64"},         {"cluster.fabric.type", "fat-tree"},
      {"cluster.fabric.oversubscription", "16"}, {"cluster.fabric.leaf_ports", "16"},
      {"search.top", "1"}};
  const Scenario s =
      load_scenario(kSource + "/scenarios/search/sc21-gpt-1.7b.yaml", overrides, "", LayoutCheck::kDeferToSearch);
  const Cluster cluster(s.cluster);
  SearchProblem problem = search_problem(s, cluster);
  SearchProblem every = problem;
  every.space.rerank = kMaxSearchRerank;
  const SearchResult truth = search_layouts(every);
  ASSERT_EQ(truth.reranked_layouts, truth.evaluated);
  const RankedLayout& flow_winner = truth.ranking.front();
  ASSERT_EQ(flow_winner.metrics.fidelity, Fidelity::kFlow);
  // The case: the flow winner is not the analytical one, and lies beyond the first round.
  ASSERT_GT(flow_winner.screening_rank, kAutoRerankFirst);

  const SearchResult first_round_only = [&] {
    SearchProblem p = problem;
    p.space.rerank = kAutoRerankFirst;
    return search_layouts(p);
  }();
  EXPECT_NE(first_round_only.ranking.front().index, flow_winner.index);

  const SearchResult r = search_layouts(problem);  // search.rerank: auto
  EXPECT_EQ(r.ranking.front().index, flow_winner.index);
  EXPECT_EQ(r.ranking.front().metrics.step_time_s, flow_winner.metrics.step_time_s);
  EXPECT_EQ(r.ranking.front().screening_rank, flow_winner.screening_rank);
  EXPECT_GE(r.reranked_layouts, static_cast<size_t>(flow_winner.screening_rank));
  EXPECT_LT(r.reranked_layouts, r.evaluated);  // found without re-ranking everything
  EXPECT_EQ(r.rerank_stop, RerankStop::kStable);
}

}  // namespace search_scenarios_test
}  // namespace clustersim
