#include "parallelism/layout_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <thread>

#include "core/error.h"
#include "parallelism/test_clusters.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace layout_search_test {

// A 5.6B-parameter GPT (12 layers, h 6144, 48 heads): 18 bytes per parameter do not fit one 80 GB
// GPU, so the space has out-of-memory layouts, and 16 GPUs simulate quickly at flow fidelity.
ModelSpec model() {
  ModelSpec m = testing::gpt3_175b();
  m.name = "gpt-5.6b";
  m.layers = 12;
  m.hidden = 6144;
  m.ffn_hidden = 4 * 6144;
  m.heads = 48;
  return m;
}

TrainingSpec training() {
  TrainingSpec t;
  t.seq_len = 2048;
  t.global_batch = 32;
  t.micro_batch = 1;
  return t;
}

// Two nodes of 8 test H100s; every tp/pp/vpp of the GPUs, micro batch 1 or 2, ZeRO 0 or 1, with and
// without full recompute; re-ranked at flow fidelity (what `clustersim run` uses for 16 GPUs).
struct Fixture {
  Cluster cluster{testing::h100_cluster(2)};
  SearchProblem problem;
  Fixture() {
    problem.cluster = &cluster;
    problem.model = model();
    problem.training = training();
    problem.space.micro_batch = {1, 2};
    problem.space.zero = {0, 1};
    problem.space.recompute = {Recompute::kNone, Recompute::kFull};
    problem.space.top = 5;
    problem.fidelity_for = [](const Layout&) { return Fidelity::kFlow; };
  }
};

// Every candidate through simulate_training() at flow fidelity, as `clustersim run` would do it;
// the ones that validate, fit (with the headroom) and keep tp inside a node, best first by
// tokens/s, then lower peak memory, then position.
std::vector<std::pair<size_t, TrainingReport>> exhaustive(const SearchProblem& p,
                                                          const std::vector<LayoutCandidate>& candidates) {
  std::vector<std::pair<size_t, TrainingReport>> out;
  TrainingSimulationOptions o;
  o.fidelity = Fidelity::kFlow;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const LayoutCandidate& c = candidates[i];
    if (!tensor_groups_within_nodes(c.layout, 8)) continue;
    try {
      TrainingReport r = simulate_training(*p.cluster, p.model, c.training(p.training), c.layout, o);
      if (r.peak_memory + p.space.memory_headroom > r.capacity) continue;
      out.emplace_back(i, std::move(r));
    } catch (const InputError&) {
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (a.second.tokens_per_s != b.second.tokens_per_s) return a.second.tokens_per_s > b.second.tokens_per_s;
    if (a.second.peak_memory != b.second.peak_memory) return a.second.peak_memory < b.second.peak_memory;
    return a.first < b.first;
  });
  return out;
}

TEST(LayoutSearch, TheScreenedSearchFindsTheTopOfRunningEveryLayout) {
  const Fixture f;
  const SearchResult r = search_layouts(f.problem);
  const auto truth = exhaustive(f.problem, r.candidates);
  ASSERT_GE(truth.size(), 5U);
  ASSERT_GE(r.ranking.size(), 5U);
  EXPECT_TRUE(r.reranked);
  EXPECT_EQ(r.evaluated, truth.size());  // pruning drops exactly what run rejects or cannot fit
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(r.ranking[k].index, truth[k].first) << "rank " << k + 1;
    EXPECT_EQ(r.ranking[k].metrics.step_time_s, truth[k].second.step_time_s) << "rank " << k + 1;
    EXPECT_EQ(r.ranking[k].metrics.fidelity, Fidelity::kFlow);
  }
}

TEST(LayoutSearch, NeverReturnsALayoutThatRunRejectsOrThatDoesNotFit) {
  Fixture f;
  f.problem.space.memory_headroom = Bytes::gigabytes(20);
  const SearchResult r = search_layouts(f.problem);
  ASSERT_FALSE(r.ranking.empty());
  const LayoutContext context = layout_context(f.problem.model, f.problem.training, f.cluster, false);
  for (const RankedLayout& ranked : r.ranking) {
    const LayoutCandidate& c = r.candidates[ranked.index];
    LayoutContext cc = context;
    cc.micro_batch = c.micro_batch;
    cc.global_batch = c.global_batch;
    EXPECT_NO_THROW(validate_layout(c.layout, cc));
    TrainingSimulationOptions o;
    o.fidelity = Fidelity::kFlow;
    const TrainingReport run = simulate_training(f.cluster, f.problem.model, c.training(f.problem.training), c.layout, o);
    EXPECT_TRUE(run.fits);
    EXPECT_LE(run.peak_memory + Bytes::gigabytes(20), run.capacity);
    EXPECT_EQ(run.peak_memory.count(), ranked.metrics.peak_bytes);
    EXPECT_EQ(run.step_time_s, ranked.metrics.step_time_s);
  }
  // The headroom rejected layouts that fit the GPU but not with 20 GB free.
  const auto headroom = std::find_if(r.rejected.begin(), r.rejected.end(), [](const RejectionSummary& s) {
    return s.reason == RejectReason::kMemoryHeadroom;
  });
  ASSERT_NE(headroom, r.rejected.end());
  const LayoutMetrics& m = r.outcomes[headroom->example].metrics;
  EXPECT_LE(m.peak_bytes, m.capacity_bytes);
  EXPECT_GT(m.peak_bytes + Bytes::gigabytes(20).count(), m.capacity_bytes);
}

TEST(LayoutSearch, RejectionsAreCountedByTheRuleTheyBreak) {
  Fixture f;
  const SearchResult all = search_layouts(f.problem);
  int64_t rejected = 0;
  for (const auto& s : all.rejected) rejected += s.count;
  EXPECT_EQ(static_cast<size_t>(rejected) + all.evaluated, all.candidates.size());
  // Out-of-memory rejections are what `run` reports as not fitting.
  for (size_t i = 0; i < all.outcomes.size(); ++i) {
    if (all.outcomes[i].rejected != RejectReason::kOutOfMemory) continue;
    const LayoutCandidate& c = all.candidates[i];
    const TrainingReport run = simulate_training(f.cluster, f.problem.model, c.training(f.problem.training), c.layout);
    EXPECT_FALSE(run.fits);
    EXPECT_EQ(run.peak_memory.count(), all.outcomes[i].metrics.peak_bytes);
  }

  auto only_reason = [&](SearchSpace space, TrainingSpec t) {
    SearchProblem p = f.problem;
    p.space = std::move(space);
    p.training = t;
    const SearchResult r = search_layouts(p);
    EXPECT_EQ(r.evaluated, 0U);
    EXPECT_EQ(r.rejected.size(), 1U);
    return r.rejected.front().reason;
  };
  SearchSpace s;
  s.tp = {5};  // 48 heads: tp 5 does not divide them (nor the 16 GPUs)
  s.dp = {1};
  s.pp = {1};
  EXPECT_EQ(only_reason(s, training()), RejectReason::kWorldSize);
  s.dp = {16};
  s.tp = {1};
  s.pp = {5};  // 12 layers do not split into 5 stages
  s.allow_idle_gpus = true;
  s.dp = {1};
  EXPECT_EQ(only_reason(s, training()), RejectReason::kStageSplit);
  s = SearchSpace{};
  s.tp = {8};
  s.pp = {2};
  s.vpp = {1};
  s.micro_batch = {3};  // 32 sequences are not a multiple of 3 · dp
  EXPECT_EQ(only_reason(s, training()), RejectReason::kGlobalBatch);
  s = SearchSpace{};
  s.tp = {1};
  s.pp = {4};
  s.vpp = {3};
  TrainingSpec t = training();
  t.global_batch = 24;  // 24 / (1 · 4) = 6 microbatches, not a multiple of pp = 4
  EXPECT_EQ(only_reason(s, t), RejectReason::kInterleavedMicrobatches);
  s = SearchSpace{};
  s.tp = {8};
  s.pp = {1};
  s.order = {"dp-tp-cp-pp"};  // tp ranks dp = 2 apart: groups of 8 span both nodes
  EXPECT_EQ(only_reason(s, training()), RejectReason::kTensorAcrossNodes);
}

// Processes played by threads: all_gather through shared slots and a barrier.
class ThreadPartition final : public SearchPartition {
 public:
  struct Shared {
    explicit Shared(int n) : barrier(n), slots(static_cast<size_t>(n)) {}
    std::barrier<> barrier;
    std::vector<std::string> slots;
  };
  ThreadPartition(Shared& shared, int rank) : shared_(shared), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(shared_.slots.size()); }
  std::vector<std::string> all_gather(const std::string& mine) override {
    shared_.slots[static_cast<size_t>(rank_)] = mine;
    shared_.barrier.arrive_and_wait();
    std::vector<std::string> out = shared_.slots;
    shared_.barrier.arrive_and_wait();
    return out;
  }

 private:
  Shared& shared_;
  int rank_;
};

void expect_same(const SearchResult& a, const SearchResult& b) {
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  ASSERT_EQ(a.outcomes.size(), b.outcomes.size());
  for (size_t i = 0; i < a.outcomes.size(); ++i) {
    EXPECT_EQ(a.outcomes[i].rejected, b.outcomes[i].rejected) << i;
    EXPECT_EQ(a.outcomes[i].message, b.outcomes[i].message) << i;
    EXPECT_EQ(a.outcomes[i].metrics.step_time_s, b.outcomes[i].metrics.step_time_s) << i;
    EXPECT_EQ(a.outcomes[i].metrics.peak_bytes, b.outcomes[i].metrics.peak_bytes) << i;
    EXPECT_EQ(a.outcomes[i].metrics.breakdown.bubble, b.outcomes[i].metrics.breakdown.bubble) << i;
  }
  ASSERT_EQ(a.ranking.size(), b.ranking.size());
  for (size_t k = 0; k < a.ranking.size(); ++k) {
    EXPECT_EQ(a.ranking[k].index, b.ranking[k].index);
    EXPECT_EQ(a.ranking[k].metrics.step_time_s, b.ranking[k].metrics.step_time_s);
    EXPECT_EQ(a.ranking[k].screening_rank, b.ranking[k].screening_rank);
  }
  EXPECT_EQ(a.reranked_layouts, b.reranked_layouts);
  EXPECT_EQ(a.rerank_rounds, b.rerank_rounds);
  EXPECT_EQ(a.rerank_stop, b.rerank_stop);
  ASSERT_EQ(a.rejected.size(), b.rejected.size());
  for (size_t k = 0; k < a.rejected.size(); ++k) {
    EXPECT_EQ(a.rejected[k].reason, b.rejected[k].reason);
    EXPECT_EQ(a.rejected[k].count, b.rejected[k].count);
    EXPECT_EQ(a.rejected[k].example, b.rejected[k].example);
  }
}

TEST(LayoutSearch, ThreadsAndProcessesDoNotChangeTheResult) {
  const Fixture f;
  SearchOptions one;
  one.threads = 1;
  const SearchResult reference = search_layouts(f.problem, one);
  SearchOptions three;
  three.threads = 3;
  expect_same(reference, search_layouts(f.problem, three));

  // Three "processes", two threads each.
  const int processes = 3;
  ThreadPartition::Shared shared(processes);
  std::vector<SearchResult> results(processes);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < processes; ++rank) {
    threads.emplace_back([&, rank] {
      ThreadPartition partition(shared, rank);
      SearchOptions o;
      o.threads = 2;
      o.partition = &partition;
      results[static_cast<size_t>(rank)] = search_layouts(f.problem, o);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) expect_same(reference, r);
}

// The best of the ranked layouts whose screening rank is at most `screened` (the winner of the
// re-ranked set before its last doubling), by the final metrics.
size_t winner_of_first(const SearchResult& r, SearchObjective objective, int screened) {
  const RankedLayout* best = nullptr;
  for (const RankedLayout& l : r.ranking) {
    if (l.screening_rank > screened) continue;
    if (best == nullptr || ranks_before(objective, l.metrics, l.index, best->metrics, best->index)) best = &l;
  }
  return best == nullptr ? r.candidates.size() : best->index;
}

TEST(LayoutSearch, AutoRerankDoublesFromTopUntilTheWinnerHolds) {
  Fixture f;
  f.problem.space.top = 1;
  f.problem.space.rerank_first = 1;  // rounds of 1, 2, 4, ... on this small space
  ASSERT_EQ(f.problem.space.rerank, kRerankAuto);  // the default
  const SearchResult r = search_layouts(f.problem);
  ASSERT_GE(r.evaluated, 8U);
  ASSERT_FALSE(r.rerank_rounds.empty());
  // 1, 2, 4, ... screened layouts, each round twice the one before, cut only by the space.
  EXPECT_EQ(r.rerank_rounds.front(), 1U);
  for (size_t k = 1; k < r.rerank_rounds.size(); ++k) {
    EXPECT_EQ(r.rerank_rounds[k], std::min(2 * r.rerank_rounds[k - 1], r.evaluated)) << k;
  }
  EXPECT_EQ(r.reranked_layouts, r.rerank_rounds.back());
  EXPECT_EQ(r.ranking.size(), r.reranked_layouts);
  ASSERT_TRUE(r.rerank_stop == RerankStop::kStable || r.rerank_stop == RerankStop::kWholeSpace)
      << name_of(r.rerank_stop);
  if (r.rerank_stop == RerankStop::kStable) {
    ASSERT_GE(r.rerank_rounds.size(), 2U);
    const int before = static_cast<int>(r.rerank_rounds[r.rerank_rounds.size() - 2]);
    EXPECT_EQ(winner_of_first(r, f.problem.space.objective, before), r.ranking.front().index);
    // Before the last round the winner changed at every doubling, else the search had stopped there.
    for (size_t k = 1; k + 1 < r.rerank_rounds.size(); ++k) {
      EXPECT_NE(winner_of_first(r, f.problem.space.objective, static_cast<int>(r.rerank_rounds[k - 1])),
                winner_of_first(r, f.problem.space.objective, static_cast<int>(r.rerank_rounds[k])))
          << k;
    }
  }
  for (const RankedLayout& l : r.ranking) EXPECT_EQ(l.metrics.fidelity, Fidelity::kFlow);
  // Doubling once more does not change the winner: the best of twice as many re-ranked layouts.
  SearchProblem again = f.problem;
  again.space.rerank = static_cast<int>(2 * r.reranked_layouts);
  const SearchResult doubled = search_layouts(again);
  EXPECT_EQ(doubled.rerank_stop, RerankStop::kFixed);
  EXPECT_EQ(doubled.reranked_layouts, std::min(2 * r.reranked_layouts, r.evaluated));
  EXPECT_EQ(doubled.ranking.front().index, r.ranking.front().index);
}

TEST(LayoutSearch, RerankMaxBoundsTheDoublingAndAFixedCountIsTakenOnce) {
  Fixture f;
  f.problem.space.top = 1;
  f.problem.space.rerank_first = 1;
  f.problem.space.rerank_max = 1;  // no doubling allowed: the bound is reached at once
  const SearchResult bounded = search_layouts(f.problem);
  EXPECT_EQ(bounded.rerank_stop, RerankStop::kLimit);
  EXPECT_EQ(bounded.rerank_rounds, std::vector<size_t>{1});
  EXPECT_EQ(bounded.reranked_layouts, 1U);

  f.problem.space.rerank_max = 3;  // 1, 2, then at most 3
  const SearchResult three = search_layouts(f.problem);
  if (three.rerank_stop == RerankStop::kStable) {
    EXPECT_EQ(three.rerank_rounds, (std::vector<size_t>{1, 2}));
  } else {
    EXPECT_EQ(three.rerank_stop, RerankStop::kLimit);
    EXPECT_EQ(three.rerank_rounds, (std::vector<size_t>{1, 2, 3}));
  }

  f.problem.space.rerank = 3;  // a count: max(top, 3) once, whatever the winner does
  const SearchResult fixed = search_layouts(f.problem);
  EXPECT_EQ(fixed.rerank_stop, RerankStop::kFixed);
  EXPECT_EQ(fixed.rerank_rounds, std::vector<size_t>{3});
  EXPECT_EQ(fixed.ranking.size(), 3U);

  f.problem.space.rerank = 0;  // none: the top screened layouts at the screening's figures
  const SearchResult off = search_layouts(f.problem);
  EXPECT_EQ(off.rerank_stop, RerankStop::kOff);
  EXPECT_FALSE(off.reranked);
  EXPECT_EQ(off.reranked_layouts, 0U);
  ASSERT_EQ(off.ranking.size(), 1U);
  EXPECT_EQ(off.ranking.front().metrics.fidelity, Fidelity::kAnalytical);

  f.problem.space.rerank = kRerankAuto;
  f.problem.fidelity_for = [](const Layout&) { return Fidelity::kAnalytical; };  // the screening's own
  const SearchResult same = search_layouts(f.problem);
  EXPECT_EQ(same.rerank_stop, RerankStop::kNotNeeded);
  EXPECT_FALSE(same.reranked);
  EXPECT_TRUE(same.rerank_rounds.empty());
}

TEST(LayoutSearch, TiesGoToLowerMemoryThenToTheEarlierCandidate) {
  LayoutMetrics a, b;
  a.tokens_per_s = b.tokens_per_s = 1000;
  a.peak_bytes = 10;
  b.peak_bytes = 20;
  EXPECT_TRUE(ranks_before(SearchObjective::kTokensPerSecond, a, 5, b, 1));
  b.peak_bytes = 10;
  EXPECT_TRUE(ranks_before(SearchObjective::kTokensPerSecond, a, 1, b, 5));
  EXPECT_FALSE(ranks_before(SearchObjective::kTokensPerSecond, a, 5, b, 1));
  b.tokens_per_s = 1001;
  EXPECT_TRUE(ranks_before(SearchObjective::kTokensPerSecond, b, 9, a, 1));
  // Step time and cost per token: lower is better.
  a.step_time_s = 2;
  b.step_time_s = 3;
  EXPECT_TRUE(ranks_before(SearchObjective::kStepTime, a, 9, b, 1));
  a.gpu_seconds_per_token = 1e-3;
  b.gpu_seconds_per_token = 2e-3;
  EXPECT_TRUE(ranks_before(SearchObjective::kCostPerToken, a, 9, b, 1));
}

TEST(LayoutSearch, CostPerTokenCountsTheGpusALayoutUses) {
  Fixture f;
  f.problem.space.allow_idle_gpus = true;
  f.problem.space.tp = {2};
  f.problem.space.pp = {1};
  f.problem.space.dp = {4, 8};
  f.problem.space.micro_batch = {1};
  f.problem.space.zero = {1};
  f.problem.space.recompute = {Recompute::kNone};
  f.problem.space.objective = SearchObjective::kCostPerToken;
  const SearchResult r = search_layouts(f.problem);
  ASSERT_EQ(r.ranking.size(), 2U);
  for (const RankedLayout& l : r.ranking) {
    // GPU-seconds per token = GPUs used × step time / (global batch × sequence).
    EXPECT_DOUBLE_EQ(l.metrics.gpu_seconds_per_token, l.metrics.gpus * l.metrics.step_time_s / (32.0 * 2048));
    EXPECT_EQ(l.metrics.gpus, r.candidates[l.index].layout.world_size());
  }
  EXPECT_LE(r.ranking[0].metrics.gpu_seconds_per_token, r.ranking[1].metrics.gpu_seconds_per_token);
}

}  // namespace layout_search_test
}  // namespace clustersim
