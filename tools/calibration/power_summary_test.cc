// The power section derived from the committed summary of the H200 power and clock run: each
// value is the rule of power_summary.h applied to the summary's figures, computed here from the
// same fields.

#include "tools/calibration/power_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/input_file.h"

namespace clustersim {
namespace power_summary_test {

const std::string kSummary = std::string(CLUSTERSIM_SOURCE_DIR) + "/tools/data/h200-2026-12-01-power/run1/summary.json";

nlohmann::json scenario(const nlohmann::json& doc, const std::string& name) {
  for (const auto& s : doc["scenarios"]) {
    if (s["name"] == name) return s;
  }
  ADD_FAILURE() << "no scenario " << name;
  return {};
}

TEST(PowerSummary, TheH200RunGivesThePowerSection) {
  const std::string text = read_input_file(kSummary, "summary");
  const nlohmann::json doc = nlohmann::json::parse(text);
  const ProfilePower p = derive_profile_power(text, kSummary);
  EXPECT_EQ(p.power_limit.in_watts(), 700.0);
  // Idle with a context open: 123.29 W over its 5 s.
  EXPECT_NEAR(p.idle_power.in_watts(), scenario(doc, "idle_ctx")["avg_power_w"].get<double>(), 0.05);
  EXPECT_NEAR(p.idle_power.in_watts(), 123.3, 1e-9);
  // bf16 8192³: peak 800.95 TFLOP/s in the first 16 ms, 658.20 settled, 692.06 W settled.
  EXPECT_EQ(p.gemm_bf16.full_rate, 800.9e12);
  EXPECT_NEAR(p.gemm_bf16.settled_ratio, 658.1976 / 800.9, 0.0006);
  EXPECT_NEAR(p.gemm_bf16.settled_power.in_watts(), 692.1, 1e-9);
  // fp32 on CUDA cores is not capped: its settled rate (51.25) is above its first 16 ms (50.71).
  EXPECT_EQ(p.gemm_fp32.full_rate, 51.25e12);
  EXPECT_EQ(p.gemm_fp32.settled_ratio, 1.0);
  EXPECT_EQ(p.copy.full_rate, 4270e9);
  EXPECT_EQ(p.copy.settled_ratio, 0.999);
  // Held: the median settled power of the seven capped runs (six GEMMs, attention).
  std::vector<double> held;
  for (const char* name : {"gemm_bf16_8192", "gemm_bf16_4096", "gemm_fp8_8192", "gemm_fp8_4096", "gemm_tf32_8192",
                           "gemm_tf32_4096", "attn_flash_bf16"}) {
    held.push_back(scenario(doc, name)["settled_power_w"].get<double>());
  }
  std::sort(held.begin(), held.end());
  EXPECT_NEAR(p.held_power.in_watts(), held[3], 0.05);
  // Window: onsets 32, 38, 38, 34, 24, 76 ms (median 36); D = idle + (held − idle) / 0.822².
  const double idle = p.idle_power.in_watts();
  const double h = p.held_power.in_watts();
  const double d = idle + (h - idle) / (p.gemm_bf16.settled_ratio * p.gemm_bf16.settled_ratio);
  EXPECT_NEAR(p.window.to_seconds() * 1e3, 36.0 / std::log((d - idle) / (d - h)), 0.05);
  EXPECT_NEAR(p.window.to_seconds() * 1e3, 32.0, 0.5);
  // Copies beside capped GEMMs: (1 − 4176.95/4270) / (1 − 709.47/798.01).
  EXPECT_NEAR(p.memory_clock_share, (1 - 4176.952 / 4270.0) / (1 - 709.472 / 798.006), 0.0006);
  EXPECT_NE(p.source.find("summary.json"), std::string::npos);
}

std::string error_of(const std::string& text) {
  try {
    derive_profile_power(text, "s.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(PowerSummary, BadSummariesNameTheFileScenarioAndField) {
  EXPECT_NE(error_of("{").find("s.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[]").find("s.json: expected the summary of power_clock_analyze.py"), std::string::npos);
  const std::string text = read_input_file(kSummary, "summary");
  nlohmann::json doc = nlohmann::json::parse(text);
  nlohmann::json no_limit = doc;
  no_limit["run"]["nvml"].erase("enforced_power_limit_w");
  EXPECT_NE(error_of(no_limit.dump()).find("run.nvml.enforced_power_limit_w"), std::string::npos);
  nlohmann::json negative = doc;
  for (auto& s : negative["scenarios"]) {
    if (s["name"] == "copy_2gib") s["rate_settled"] = -1.0;
  }
  EXPECT_NE(error_of(negative.dump()).find("scenario \"copy_2gib\": \"rate_settled\" is -1"), std::string::npos)
      << error_of(negative.dump());
  nlohmann::json missing = doc;
  auto& list = missing["scenarios"];
  list.erase(std::remove_if(list.begin(), list.end(), [](const auto& s) { return s["name"] == "mix_gemm_copy_1ms"; }),
             list.end());
  EXPECT_NE(error_of(missing.dump()).find("no scenario \"mix_gemm_copy_1ms\""), std::string::npos);
  // A limit below what the capped runs hold is refused by the profile's own checks.
  nlohmann::json low = doc;
  low["run"]["nvml"]["enforced_power_limit_w"] = 600.0;
  EXPECT_NE(error_of(low.dump()).find("power.held_power"), std::string::npos) << error_of(low.dump());
}

}  // namespace power_summary_test
}  // namespace clustersim
