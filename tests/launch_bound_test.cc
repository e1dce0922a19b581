// The launch-bound reference steps on one H200 (scenarios/reference/h200-*-s*-b*.yaml): PyTorch
// eager training steps of 124–354 M-parameter models at 256–512 tokens, where the CPU thread that
// launches the kernels decides the step (the host thread of parallelism/step_simulation.h).
// Measured 2026-12-01 with tools/reference/train_step.py: median eager step over 30 steps
// (tools/calibrate/data/h200-2026-12-01-power/run2/host.jsonl, `step` lines, eager_reference
// step_time_ms; README "Launch-bound training steps": they vary by ±30 % from step to step).

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>
#include <string>

#include "cli_process.h"

namespace clustersim {
namespace launch_bound_test {

using cli_test::Result;
using cli_test::run;

struct Reference {
  const char* config;
  double eager_ms;
};

constexpr Reference kReferences[] = {
    {"gpt-125m-s256-b1", 21.126}, {"gpt-125m-s512-b2", 24.070},  {"gpt-350m-s256-b1", 48.798},
    {"gpt-350m-s512-b2", 46.336}, {"llama-220m-s512-b1", 42.038},
};

// The GPU waits for the host for most of each step, as measured (the power run's GPU ran at
// 120–270 W of 700 during them), and the predicted step stays within the error it reaches today
// (−26 % to −43 %: host costs measured per op in isolation miss the Python of the modules around
// the ops), so that a change of the host model that moves it shows here.
TEST(LaunchBound, ReferenceStepsAreHostBoundAndWithinTheirCommittedError) {
  for (const Reference& ref : kReferences) {
    const std::string path = std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/reference/h200-" + ref.config + ".yaml";
    const Result r = run("run " + path + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json j = nlohmann::json::parse(r.output);
    const double step_ms = j["step_time_s"].get<double>() * 1e3;
    const double host_bound_ms = j["breakdown_s"]["host_bound"].get<double>() * 1e3;
    EXPECT_GT(host_bound_ms, 0.5 * step_ms) << ref.config;
    const double error = step_ms / ref.eager_ms - 1;
    EXPECT_LT(std::abs(error), 0.45) << ref.config << ": " << step_ms << " ms against " << ref.eager_ms << " ms";
    std::cout << ref.config << ": predicted " << step_ms << " ms, measured " << ref.eager_ms << " ms ("
              << 100 * error << " %), host-bound " << host_bound_ms << " ms\n";
  }
}

}  // namespace launch_bound_test
}  // namespace clustersim
