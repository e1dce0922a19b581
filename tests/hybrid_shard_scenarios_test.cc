// Hybrid sharding against a published comparison with full sharding, and the search choosing
// between them.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parallelism/layout_search.h"
#include "parallelism/training_simulation.h"
#include "scenarios/prepared_scenario.h"
#include "scenarios/scenario.h"

namespace clustersim {
namespace hybrid_shard_scenarios_test {

const std::string kScenario = std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/fsdp-hybrid-1.8b-16-a100-gcp.yaml";

// Samples per second of the scenario with `overrides` at the fidelity its `auto` picks.
TrainingReport run(const std::vector<Override>& overrides) {
  const Scenario s = load_scenario(kScenario, overrides);
  const Cluster cluster(s.cluster);
  TrainingSimulationOptions o;
  o.fidelity = resolve_fidelity(s.simulation, s.layout);
  return simulate_training(cluster, s.model, s.training, s.layout, o);
}

double samples_per_s(const TrainingReport& r, int64_t global_batch) {
  return static_cast<double>(global_batch) / r.step_time_s;
}

// oumi-ai/oumi pull 213: the 1.8B Llama on 4 a2-highgpu-4g VMs (16 A100 40GB, 50 Gbps each),
// 74.41 samples/s with HYBRID_SHARD, 55.35 with FULL_SHARD (1.34x).
TEST(HybridShardScenario, SlowNetworkFavoursHybridShardingAsPublished) {
  const TrainingReport hybrid = run({});
  const TrainingReport full = run({{"parallelism.dp_shard", "0"}});
  ASSERT_TRUE(hybrid.fits);
  ASSERT_TRUE(full.fits);
  const double h = samples_per_s(hybrid, 4256);
  const double f = samples_per_s(full, 4256);
  EXPECT_NEAR(h, 74.41, 0.10 * 74.41);
  // Published 1.34x. The simulation gives about 1.14x: full sharding's all-gathers over the 50 Gbps
  // network are hidden behind the recomputed layers more than they were on the VMs (the gap is in
  // docs/validation/error_budget.md); the order and a clear margin must hold.
  EXPECT_GT(h / f, 1.08);
  // The state per GPU is that of 4-way sharding, more than 16-way.
  EXPECT_GT(hybrid.programs.memory[0].memory.optimizer_state, full.programs.memory[0].memory.optimizer_state);
}

TEST(HybridShardScenario, FastNetworkGivesHybridShardingNoEdge) {
  // The same model and batch per GPU on 4 DGX A100 40GB nodes (8 × 200 Gb/s each): the gathers hide
  // behind compute either way, and full sharding keeps less state per GPU.
  const std::vector<Override> dgx = {{"cluster.node", "dgx-a100-40gb"},
                                     {"cluster.fabric.nic", "cx6-200g"},
                                     {"parallelism.dp", "32"},
                                     {"training.global_batch", "8512"},
                                     {"simulation.fidelity", "analytical"}};  // no shared links to contend
  std::vector<Override> hybrid_set = dgx;
  hybrid_set.push_back({"parallelism.dp_shard", "8"});
  std::vector<Override> full_set = dgx;
  full_set.push_back({"parallelism.dp_shard", "0"});
  const TrainingReport hybrid = run(hybrid_set);
  const TrainingReport full = run(full_set);
  EXPECT_NEAR(hybrid.step_time_s / full.step_time_s, 1.0, 0.01);
  EXPECT_LT(full.peak_memory, hybrid.peak_memory);
}

TEST(HybridShardScenario, SearchPicksFullShardingWhereHybridDoesNotFit) {
  // Llama-2-13B on 4 DGX A100 40GB nodes, ZeRO-3: sharded over 8 GPUs the fp32 state does not fit in
  // 40 GB, over 32 it does; on the 50 Gbps VMs of the scenario the 1.8B model fits either way and
  // hybrid sharding is the faster.
  auto best = [](const std::vector<Override>& overrides) {
    std::vector<Override> o = overrides;
    o.push_back({"search.dp_shard", "[0, 8, 4]"});
    o.push_back({"search.tp", "[1]"});
    o.push_back({"search.pp", "[1]"});
    o.push_back({"search.schedule", "[1f1b]"});
    o.push_back({"search.rerank", "3"});
    const PreparedScenario p = prepare_scenario(kScenario, o, LayoutCheck::kDeferToSearch);
    const SearchResult r = search_layouts(search_problem(p));
    EXPECT_FALSE(r.ranking.empty());
    return r.ranking.empty() ? -1 : r.candidates[r.ranking.front().index].layout.dp_shard;
  };
  EXPECT_EQ(best({}), 4);
  EXPECT_EQ(best({{"cluster.node", "dgx-a100-40gb"},
                  {"cluster.fabric.nic", "cx6-200g"},
                  {"model.preset", "llama2-13b"},
                  {"training.micro_batch", "1"},
                  {"training.global_batch", "32"},  // one micro-batch: no gradients accumulate
                  {"parallelism.dp", "32"},
                  {"simulation.fidelity", "analytical"}}),
            0);
}

}  // namespace hybrid_shard_scenarios_test
}  // namespace clustersim
