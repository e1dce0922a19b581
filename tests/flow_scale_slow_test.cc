// simulation.fidelity auto at full scale (label slow: about a minute on one core): the shipped
// 16,384-GPU Llama-3-405B step is estimated within simulation.auto_flow_seconds (60 s) and so
// simulated at flow fidelity by default, with the step of an explicit fidelity flow.
//
//   ctest --test-dir build -L slow -R FlowScale

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "cli_process.h"

namespace clustersim {
namespace flow_scale_slow_test {

using cli_test::Result;
using cli_test::run;

const std::string kScenario = std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/llama3-405b-16k-h100.yaml";

TEST(FlowScale, AutoSimulatesTheFlowsOfThe16kGpuLlamaStep) {
  const Result r = run("run --json --reproducible --quiet " + kScenario);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["sim"]["fidelity"], "flow");
  EXPECT_LE(j["sim"]["auto_flow_estimate_s"].get<double>(), 60.0);
  // The estimate's events within 15 % of those executed (parallelism/work_estimate.h).
  const double estimated = j["sim"]["estimated_events"].get<double>();
  const double executed = j["sim"]["run_events"].get<double>();
  EXPECT_NEAR(estimated, executed, 0.15 * executed);
  // At analytical fidelity (the caps alone) the step differs: the flows' contention.
  const Result a = run("run --json --reproducible --quiet " + kScenario + " --set simulation.auto_flow_seconds=0s");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const nlohmann::json analytical = nlohmann::json::parse(a.output);
  EXPECT_EQ(analytical["sim"]["fidelity"], "analytical");
  EXPECT_NE(analytical["step_time_s"], j["step_time_s"]);
  // A bound on the events below the flow estimate keeps auto analytical, and the summary says why.
  const Result bounded = run("run " + kScenario + " --set simulation.max_events=1e8");
  ASSERT_EQ(bounded.exit_code, 0) << bounded.output;
  EXPECT_NE(bounded.output.find("analytical fidelity (auto: 16384 GPUs > simulation.flow_max_gpus 256, and the flow "
                                "estimate, "),
            std::string::npos)
      << bounded.output;
  EXPECT_NE(bounded.output.find("events, above simulation.max_events 100000000)"), std::string::npos) << bounded.output;
}

}  // namespace flow_scale_slow_test
}  // namespace clustersim
