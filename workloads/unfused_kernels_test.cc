// clustersim's prices of elementwise steps written in PyTorch operations (workloads/aten_kernels.h)
// against their times measured on an H200 (tools/data/h200-2026-11-30/, README there).

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cost_models/calibration_profile.h"
#include "cost_models/compute_cost_model.h"
#include "cost_models/test_support.h"
#include "workloads/aten_kernels.h"

namespace clustersim {
namespace unfused_kernels_test {

const std::string kSource = CLUSTERSIM_SOURCE_DIR;

Duration priced(const ComputeCostModel& cost, const std::vector<AtenKernel>& kernels) {
  Duration total;
  for (const AtenKernel& k : kernels) total += cost.memory_bound_time(Bytes::of(k.read + k.written), k.access);
  return total;
}

struct Case {
  std::string name;
  int64_t elements;
  double predicted_forward_us, predicted_backward_us, measured_forward_us, measured_backward_us;
};

std::vector<Case> cases() {
  const CalibrationProfile profile = load_calibration_profile(kSource + "/scenarios/profiles/h200-2026-11-29.json");
  const ComputeCostModel cost(testing::h200(), &profile);
  std::ifstream file(kSource + "/tools/data/h200-2026-11-30/unfused.jsonl");
  std::vector<Case> out;
  for (std::string line; std::getline(file, line);) {
    const auto j = nlohmann::json::parse(line);
    Case c;
    c.measured_forward_us = j.at("forward_us").get<double>();
    c.measured_backward_us = j.at("backward_us").get<double>();
    if (j.at("case") == "rms_norm") {
      const int64_t tokens = j.at("tokens").get<int64_t>(), hidden = j.at("hidden").get<int64_t>();
      c.name = "rms_norm " + std::to_string(tokens) + "x" + std::to_string(hidden);
      c.elements = tokens * hidden;
      c.predicted_forward_us = priced(cost, rms_norm_forward_kernels(tokens, hidden, 2)).to_microseconds();
      c.predicted_backward_us = priced(cost, rms_norm_backward_kernels(tokens, hidden, 2)).to_microseconds();
    } else {
      const int64_t seq = j.at("seq").get<int64_t>();
      c.name = "masked_softmax " + std::to_string(j.at("batch_heads").get<int64_t>()) + "x" + std::to_string(seq);
      c.elements = j.at("batch_heads").get<int64_t>() * seq * seq;
      c.predicted_forward_us = priced(cost, masked_softmax_forward_kernels(c.elements, 2)).to_microseconds();
      c.predicted_backward_us = priced(cost, masked_softmax_backward_kernels(c.elements, 2)).to_microseconds();
    }
    out.push_back(c);
  }
  return out;
}

TEST(UnfusedKernels, BandwidthBoundStepsMatchTheH200) {
  const std::vector<Case> all = cases();
  ASSERT_EQ(all.size(), 10u);
  int checked = 0;
  for (const Case& c : all) {
    const double forward = c.predicted_forward_us / c.measured_forward_us - 1;
    const double backward = c.predicted_backward_us / c.measured_backward_us - 1;
    if (c.elements < 50'000'000) {
      // Host-bound in the harness (README): clustersim is faster, never slower.
      EXPECT_LT(forward, 0) << c.name;
      continue;
    }
    const bool norm = c.name.starts_with("rms_norm");
    EXPECT_NEAR(forward, 0, norm ? 0.05 : 0.25) << c.name;
    EXPECT_NEAR(backward, 0, norm ? 0.20 : 0.25) << c.name;
    ++checked;
  }
  EXPECT_EQ(checked, 6);  // RMSNorm 8192 × 6656 and the five softmax cases
}

}  // namespace unfused_kernels_test
}  // namespace clustersim
