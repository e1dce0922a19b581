#pragma once

// For the CLI tests that compare flow-fidelity steps (representative ranks against every rank):
// one `run` at flow fidelity, its step time and simulated ranks.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "cli_process.h"

namespace clustersim::cli_test {

// A shipped scenario's path.
inline std::string shipped_scenario(const std::string& name) {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name;
}

struct FlowStep {
  double time_s = 0;        // step_time_s
  int simulated_ranks = 0;  // sim.simulated_ranks
};

// `command` (a `run ...` command line) with --json at flow fidelity; a failure is reported
// through gtest and gives zeros.
inline FlowStep flow_step_of(const std::string& command) {
  const Result r = run(command + " --json --reproducible --quiet --set simulation.fidelity=flow");
  EXPECT_EQ(r.exit_code, 0) << command << ": " << r.output;
  if (r.exit_code != 0) return {};
  const nlohmann::json j = nlohmann::json::parse(r.output);
  return {j["step_time_s"].get<double>(), j["sim"]["simulated_ranks"].get<int>()};
}

}  // namespace clustersim::cli_test
