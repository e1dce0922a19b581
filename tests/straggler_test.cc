// Stragglers (scenario key stragglers:, parallelism/training_simulation.h Straggler): a GPU whose
// kernels run at a fraction of its peers' rates holds up every synchronous step it takes part in.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <string>

#include "cli_process.h"
#include "core/random.h"

namespace clustersim {
namespace straggler_test {

using cli_test::Result;
using cli_test::run;

// GPT-3 1.3B data parallel over `nodes` DGX H100 nodes, 8 sequences per GPU, and `stragglers` (YAML).
std::string scenario(const std::string& name, int nodes, const std::string& stragglers,
                     const std::string& parallelism = "") {
  const int gpus = 8 * nodes;
  const auto path = std::filesystem::temp_directory_path() / ("clustersim_straggler_" + name + ".yaml");
  std::ofstream(path) << "name: straggler " << name << "\ncluster: {node: dgx-h100, nodes: " << nodes
                      << "}\nmodel: {preset: gpt3-1.3b}\ntraining: {seq_len: 2048, global_batch: " << 8 * gpus
                      << ", micro_batch: 1, precision: bf16, recompute: none, attention: flash}\n"
                      << (parallelism.empty() ? "parallelism: {tp: 1, pp: 1, dp: " + std::to_string(gpus) + ", zero: 1}"
                                              : parallelism)
                      << "\n"
                      << stragglers;
  return path.string();
}

nlohmann::json run_json(const std::string& args) {
  const Result r = run("run --json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

// One GPU at 0.8 of the rates in a 1,024-GPU data-parallel job: its compute takes 1/0.8 as long, and
// the step grows by that extra compute less what the slower GPU hides of its exposed gradient
// reduction and of its waiting for the host; the same job without it is the job as it was.
TEST(Straggler, OneSlowGpuSlowsTheDataParallelStepByItsExtraCompute) {
  const nlohmann::json plain = run_json(scenario("plain", 128, ""));
  const nlohmann::json slow = run_json(scenario("slow", 128, "stragglers:\n  - {gpu: 517, speed: 0.8}\n"));
  const double step = plain["step_time_s"].get<double>();
  const double compute = plain["breakdown_s"]["compute"].get<double>();
  const double hidden = plain["breakdown_s"]["exposed_comm"].get<double>() + plain["breakdown_s"]["host_bound"].get<double>();
  EXPECT_DOUBLE_EQ(slow["stragglers"]["step_time_without_s"].get<double>(), step);
  EXPECT_FALSE(slow["stragglers"]["every_rank_simulated"].get<bool>());
  ASSERT_EQ(slow["ranks"].size(), 1u);
  EXPECT_EQ(slow["ranks"][0]["rank"].get<int>(), 517);  // the straggler's line is the one simulated
  EXPECT_NEAR(slow["ranks"][0]["compute_s"].get<double>(), compute / 0.8, 1e-6 * compute);
  const double delta = slow["step_time_s"].get<double>() - step;
  EXPECT_LE(delta, compute * (1 / 0.8 - 1) + 1e-9);
  EXPECT_GE(delta, compute * (1 / 0.8 - 1) - hidden);
  EXPECT_GT(delta, 0.5 * compute * (1 / 0.8 - 1));
}

// Simulating the straggler's line stands for simulating every rank: the same step to the
// picosecond on 16 GPUs, in both fidelities; stragglers on two lines simulate every rank.
TEST(Straggler, TheStragglersLineIsTheWholeJob) {
  const std::string file = scenario("line", 2, "stragglers:\n  - {gpu: 11, speed: 0.8}\n");
  for (const char* fidelity : {"analytical", "flow"}) {
    const std::string args = file + " --set simulation.fidelity=" + fidelity;
    const nlohmann::json line = run_json(args);
    const nlohmann::json every = run_json(args + " --set simulation.representative=false");
    EXPECT_EQ(line["step_time_s"].get<double>(), every["step_time_s"].get<double>()) << fidelity;
    EXPECT_EQ(every["ranks"].size(), 16u);
  }
  // A tensor- and pipeline-parallel job: the straggler's TP group and its pipeline hold the rest up.
  const std::string hybrid = scenario("hybrid", 2, "stragglers:\n  - {gpu: 13, speed: 0.7}\n",
                                      "parallelism: {tp: 2, pp: 2, dp: 4, zero: 1}");
  const nlohmann::json line = run_json(hybrid);
  EXPECT_EQ(line["step_time_s"].get<double>(),
            run_json(hybrid + " --set simulation.representative=false")["step_time_s"].get<double>());
  EXPECT_GT(line["stragglers"]["slowdown"].get<double>(), 1.05);
  const nlohmann::json two = run_json(scenario("two", 2, "stragglers:\n  - {gpu: 3, speed: 0.9}\n  - {node: 1, speed: 0.7}\n"));
  EXPECT_TRUE(two["stragglers"]["every_rank_simulated"].get<bool>());
  EXPECT_EQ(two["stragglers"]["gpus"].size(), 9u);  // GPU 3 and node 1's eight GPUs
}

// Per-step jitter on 64 data-parallel GPUs: each sampled step waits for its slowest GPU, so the
// mean step grows by the compute times the expected largest of 64 factors less one (computed here
// from the same distribution), less what the slower compute hides of the exposed communication
// and the host waits.
TEST(Straggler, JitterCostsTheExpectedSlowestOfTheGpus) {
  const std::string analytical = " --set simulation.fidelity=analytical";
  const nlohmann::json plain = run_json(scenario("jitter-plain", 8, "") + analytical);
  const nlohmann::json j = run_json(scenario("jitter", 8, "jitter: {cv: 0.05, steps: 20, seed: 3}\n") + analytical);
  const double step = plain["step_time_s"].get<double>();
  const double compute = plain["breakdown_s"]["compute"].get<double>();
  const double hidden = plain["breakdown_s"]["exposed_comm"].get<double>() + plain["breakdown_s"]["host_bound"].get<double>();
  EXPECT_EQ(j["step_time_s"].get<double>(), step);  // the step without jitter, as before
  SplitMix64 rng(99);
  double max_sum = 0;
  const int samples = 4000;
  for (int k = 0; k < samples; ++k) {
    double m = 0;
    for (int g = 0; g < 64; ++g) m = std::max(m, rng.lognormal_mean_one(0.05));
    max_sum += m;
  }
  const double extra = compute * (max_sum / samples - 1);  // about 12 % of the compute
  const double delta = j["jitter"]["mean_step_time_s"].get<double>() - step;
  std::cout << "jitter: mean step " << step + delta << " s against " << step << " s; compute " << compute
            << " s x expected slowest factor - 1 = " << extra << " s\n";
  EXPECT_LT(delta, 1.2 * extra);
  EXPECT_GT(delta, 0.8 * extra - hidden);
  EXPECT_GT(delta, 0);
  EXPECT_LE(j["jitter"]["min_step_time_s"].get<double>(), j["jitter"]["mean_step_time_s"].get<double>());
}

// The top-level seed: seeds the sampled steps where jitter.seed is absent, so that the same file
// with another seed samples other factors; jitter.seed, where given, wins over it; and jitter.seed
// absent with seed N is jitter.seed N (the seeded stream is the same).
TEST(Straggler, TopLevelSeedSeedsTheJitterUnlessJitterSeedIsGiven) {
  const std::string analytical = " --set simulation.fidelity=analytical";
  const std::string file = scenario("jitter-seed", 1, "jitter: {cv: 0.05, steps: 3}\n") + analytical;
  const auto mean = [&](const std::string& sets) {
    return run_json(file + sets)["jitter"]["mean_step_time_s"].get<double>();
  };
  const double seed_1 = mean("");
  const double seed_7 = mean(" --set seed=7");
  EXPECT_NE(seed_7, seed_1);                                  // the seed reaches the sampled factors
  EXPECT_EQ(mean(" --set seed=1"), seed_1);                   // 1 is the default
  EXPECT_EQ(mean(" --set jitter.seed=7"), seed_7);            // the same stream from either key
  EXPECT_EQ(mean(" --set seed=7 --set jitter.seed=1"), seed_1);  // jitter.seed wins
}

// A one-node scenario with `extra` is refused with exit code 2 and `message` in its output.
void expect_refused(const std::string& name, const std::string& extra, const std::string& message) {
  const Result r = run("run " + scenario(name, 1, extra));
  EXPECT_EQ(r.exit_code, 2) << name;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
}

TEST(Straggler, BadStragglersAndJitterExitWith2AtTheirKey) {
  expect_refused("outside", "stragglers:\n  - {gpu: 8, speed: 0.8}\n",
                 "stragglers[0].gpu: GPU 8 is not in the cluster's 8 GPUs (0 .. 7)");
  expect_refused("speed", "stragglers:\n  - {gpu: 1, speed: 1.5}\n", "stragglers[0].speed");
  expect_refused("both", "stragglers:\n  - {gpu: 1, node: 0, speed: 0.5}\n", "give gpu or node");
  expect_refused("twice", "stragglers:\n  - {gpu: 1, speed: 0.5}\n  - {node: 0, speed: 0.9}\n",
                 "GPU 1 is named by two stragglers");
  expect_refused("jitter-no-cv", "jitter: {steps: 3}\n", "jitter: give cv, the coefficient of variation");
  expect_refused("jitter-big", "jitter: {cv: 2}\n", "jitter.cv");
}

}  // namespace straggler_test
}  // namespace clustersim
