// Layout search speed (`clustersim search`): simulated layouts per second and the wall time of the
// full searches of the issue, GPT-3 175B on 1,024 A100 (every tp/pp/dp/vpp/micro batch/recompute/
// ZeRO/sequence-parallel combination; target < 60 s on a 2-core machine) and Llama-3-405B on 16,384
// H100, from the shipped scenarios in scenarios/search/. Run with
//   build/bin/search_benchmark --benchmark_filter=Full
// items_per_second = layouts simulated per second (rejected candidates are not counted).

#include <benchmark/benchmark.h>

#include <string>

#include "parallelism/layout_search.h"
#include "scenarios/scenario.h"

namespace clustersim {
namespace {

Scenario load(const std::string& name) {
  return load_scenario(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/search/" + name, {}, "",
                       LayoutCheck::kDeferToSearch);
}

// The whole search of a shipped scenario with state.range(0) threads (0 = all cores).
void full_search(benchmark::State& state, const std::string& name) {
  const Scenario s = load(name);
  const Cluster cluster(s.cluster);
  const SearchProblem problem = search_problem(s, cluster);
  SearchOptions options;
  options.threads = static_cast<int>(state.range(0));
  size_t simulated = 0;
  size_t candidates = 0;
  for (auto _ : state) {
    const SearchResult r = search_layouts(problem, options);
    simulated += r.evaluated;
    candidates = r.candidates.size();
    benchmark::DoNotOptimize(r.ranking.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(simulated));
  state.counters["candidates"] = static_cast<double>(candidates);
}

void BM_FullSearchGpt3_175B_1024A100(benchmark::State& state) { full_search(state, "gpt3-175b-1024-a100.yaml"); }
BENCHMARK(BM_FullSearchGpt3_175B_1024A100)->Arg(1)->Arg(0)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_FullSearchLlama3_405B_16kH100(benchmark::State& state) { full_search(state, "llama3-405b-16k-h100.yaml"); }
BENCHMARK(BM_FullSearchLlama3_405B_16kH100)->Arg(1)->Arg(0)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// Screening of one candidate (rules, memory, analytical simulation): GPT-3 175B, tp 8 · pp 16 ·
// dp 8, micro batch 1, full recompute, 96 microbatches per pipeline.
void BM_ScreenOneLayout(benchmark::State& state) {
  const Scenario s = load("gpt3-175b-1024-a100.yaml");
  const Cluster cluster(s.cluster);
  const SearchProblem problem = search_problem(s, cluster);
  LayoutCandidate c;
  c.layout = Layout{.tp = 8, .pp = 16, .dp = 8};
  c.micro_batch = 1;
  c.global_batch = s.training.global_batch;
  c.recompute = Recompute::kFull;
  for (auto _ : state) {
    const CandidateOutcome o = screen_candidate(problem, c);
    benchmark::DoNotOptimize(o.metrics.step_time_s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScreenOneLayout)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace clustersim

BENCHMARK_MAIN();
