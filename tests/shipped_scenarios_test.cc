// Every shipped scenario loads and simulates to completion with finite, consistent figures.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "parallelism/training_simulation.h"
#include "scenarios/scenario.h"
#include "workloads/parameter_count.h"

namespace clustersim {
namespace shipped_scenarios_test {

std::vector<std::string> shipped_scenarios() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ShippedScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedScenario, SimulatesToCompletion) {
  const Scenario s = load_scenario(GetParam());
  const Cluster cluster(s.cluster);
  TrainingSimulationOptions o;
  // Flow fidelity where the scenario's `auto` would choose it, but keep the suite fast: the
  // analytical level for everything above 16 GPUs (the flow level is covered by unit tests).
  o.fidelity = s.layout.world_size() <= 16 ? resolve_fidelity(s.simulation, s.layout.world_size())
                                           : Fidelity::kAnalytical;
  const TrainingReport r = simulate_training(cluster, s.model, s.training, s.layout, o);
  EXPECT_TRUE(std::isfinite(r.step_time_s));
  EXPECT_GT(r.step_time_s, 0);
  EXPECT_GT(r.mfu, 0.0);
  EXPECT_LT(r.mfu, 1.0);
  EXPECT_TRUE(r.fits) << GetParam() << ": shipped scenarios are meant to fit in memory";
  const auto& b = r.breakdown;
  EXPECT_EQ(b.compute + b.exposed_comm + b.bubble + b.optimizer + b.host_bound + b.other, r.step.step_time);
  EXPECT_EQ(r.gpus, cluster.gpu_count());
}

// gpt-oss-120b's model card (arXiv:2508.10925, Table 1): 116.83 B parameters, 5.13 B active per
// token (attention, the 4 routed experts of 128, the unembedding; the input embedding not counted).
TEST(ModelPresets, GptOss120bMatchesItsModelCard) {
  const ModelSpec m = load_model_preset("gpt-oss-120b");
  EXPECT_NEAR(static_cast<double>(count_parameters(m).total()), 116.83e9, 0.001 * 116.83e9);
  EXPECT_NEAR(static_cast<double>(count_active_parameters(m, false)), 5.13e9, 0.01 * 5.13e9);
  EXPECT_TRUE(m.is_window_layer(0));
  EXPECT_FALSE(m.is_window_layer(1));
}

INSTANTIATE_TEST_SUITE_P(All, ShippedScenario, ::testing::ValuesIn(shipped_scenarios()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = std::filesystem::path(param.param).stem().string();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace shipped_scenarios_test
}  // namespace clustersim

namespace clustersim {
namespace shipped_scenarios_test {

// `auto` fidelity: flow up to simulation.flow_max_gpus GPUs and up to
// simulation.flow_max_all_to_all_ranks ranks in an expert- or context-parallel group.
TEST(ResolveFidelity, AutoFollowsGpusAndAllToAllRanks) {
  SimulationSettings s;
  Layout l;
  l.dp = 256;
  EXPECT_EQ(resolve_fidelity(s, l), Fidelity::kFlow);
  l.ep = 64;
  EXPECT_EQ(resolve_fidelity(s, l), Fidelity::kFlow);
  l.ep = 128;  // 16,256 flows per all-to-all
  EXPECT_EQ(resolve_fidelity(s, l), Fidelity::kAnalytical);
  s.flow_max_all_to_all_ranks = 128;
  EXPECT_EQ(resolve_fidelity(s, l), Fidelity::kFlow);
  l.dp = 512;
  EXPECT_EQ(resolve_fidelity(s, l), Fidelity::kAnalytical);
  s.fidelity = FidelityChoice::kFlow;
  EXPECT_EQ(resolve_fidelity(s, l), Fidelity::kFlow);
}

}  // namespace shipped_scenarios_test
}  // namespace clustersim
