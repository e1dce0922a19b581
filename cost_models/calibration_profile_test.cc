#include "cost_models/calibration_profile.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "cost_models/test_support.h"

namespace clustersim {
namespace calibration_profile_test {

const std::string kCommittedProfile = std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/profiles/h200-2026-11-29.json";
const std::string kSweep = std::string(CLUSTERSIM_SOURCE_DIR) + "/cost_models/testdata/h200_pytorch_sweep.json";

std::string message_of(const std::string& json) {
  try {
    parse_calibration_profile(json, "test.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CalibrationProfile, LoadsTheCommittedH200Sweep) {
  const CalibrationProfile p = load_calibration_profile(kSweep);
  EXPECT_EQ(p.name, "h200-pytorch-sweep");
  EXPECT_EQ(p.machine.gpu, "NVIDIA H200");
  EXPECT_EQ(p.machine.sm_count, 132);
  EXPECT_FALSE(p.machine.driver.empty());
  EXPECT_FALSE(p.machine.date.empty());
  EXPECT_GE(p.gemm_samples.size(), 90u);
  ASSERT_TRUE(p.copy_bandwidth.has_value());
  EXPECT_NEAR(p.copy_bandwidth->gigabytes_per_second(), 4180.8, 1e-6);
  ASSERT_TRUE(p.launch_eager && p.launch_graph);
  // The first sample is bf16 256³ in 3.034 µs: 2·256³ / 3.034 µs = 11.06 TFLOP/s.
  const GemmSample& first = p.gemm_samples.front();
  EXPECT_EQ(first.shape, (GemmShape{256, 256, 256, 1, DataType::kBf16, false}));
  EXPECT_NEAR(first.tflops(), 2.0 * 256 * 256 * 256 / first.time.to_seconds() * 1e-12, 1e-9);
}

TEST(CalibrationProfile, RoundTripsThroughJson) {
  CalibrationProfile p = load_calibration_profile(kSweep);
  p.gemm_samples.push_back({GemmShape{50257, 4096, 8192, 1, DataType::kBf16, true}, Duration::picoseconds(123456789)});
  p.collectives_json = R"({"all_reduce":{"ring":[]}})";
  p.kernel_bandwidths[MemoryAccess::kWideningCast] = Bandwidth::gigabytes_per_s(2107.49);
  p.kernel_bandwidths[MemoryAccess::kFusedOptimizer] = Bandwidth::gigabytes_per_s(3247.29);
  AttentionSample a;
  a.kernel = "sdpa-flash";
  a.shape = {2, 32, 8, 4096, 64, DataType::kBf16};
  a.forward = Duration::picoseconds(532939000);
  a.backward = Duration::picoseconds(1647520000);
  p.attention_samples.push_back(a);
  const CalibrationProfile back = parse_calibration_profile(to_json(p), "round-trip");
  EXPECT_EQ(back.kernel_bandwidths, p.kernel_bandwidths);
  ASSERT_EQ(back.attention_samples.size(), 1u);
  EXPECT_EQ(back.attention_samples[0].kernel, a.kernel);
  EXPECT_EQ(back.attention_samples[0].shape, a.shape);
  EXPECT_EQ(back.attention_samples[0].forward, a.forward);
  EXPECT_EQ(back.attention_samples[0].backward, a.backward);
  EXPECT_EQ(back.name, p.name);
  EXPECT_EQ(back.machine.cublas, p.machine.cublas);
  ASSERT_EQ(back.gemm_samples.size(), p.gemm_samples.size());
  for (size_t i = 0; i < p.gemm_samples.size(); ++i) {
    EXPECT_EQ(back.gemm_samples[i].shape, p.gemm_samples[i].shape);
    EXPECT_EQ(back.gemm_samples[i].time, p.gemm_samples[i].time);
  }
  EXPECT_EQ(back.copy_bandwidth, p.copy_bandwidth);
  EXPECT_EQ(back.launch_eager, p.launch_eager);
  EXPECT_EQ(back.collectives_json, p.collectives_json);

  const std::string path = ::testing::TempDir() + "profile.json";
  save_calibration_profile(p, path);
  EXPECT_EQ(load_calibration_profile(path).gemm_samples.size(), p.gemm_samples.size());
  std::remove(path.c_str());
}

// The host thread's costs (section host_costs): every key read back to the picosecond; a missing
// key, a negative time or an unknown key is refused naming it.
TEST(CalibrationProfile, HostCostsRoundTripAndAreChecked) {
  CalibrationProfile p = load_calibration_profile(kSweep);
  ProfileHostCosts host;
  for (size_t i = 0; i < std::size(ProfileHostCosts::kKeys); ++i) {
    *host.field(i) = Duration::picoseconds(1'000'000 * static_cast<int64_t>(i + 1) + 7);
  }
  host.source = "a test machine";
  p.host_costs = host;
  const CalibrationProfile back = parse_calibration_profile(to_json(p), "round-trip");
  ASSERT_TRUE(back.host_costs.has_value());
  ProfileHostCosts read = *back.host_costs;
  for (size_t i = 0; i < std::size(ProfileHostCosts::kKeys); ++i) {
    EXPECT_EQ(*read.field(i), *host.field(i)) << ProfileHostCosts::kKeys[i];
  }
  EXPECT_EQ(read.source, "a test machine");

  const std::string head = R"({"format":"clustersim-calibration-profile","version":1,"name":"x",)"
                           R"("machine":{"gpu":"G","sm_count":132},"host_costs":{)";
  std::string all;
  for (const char* k : ProfileHostCosts::kKeys) all += fmt::format(R"("{}":"1 us",)", k);
  EXPECT_EQ(message_of(head + all.substr(0, all.size() - 1) + "}}"), "");
  const std::string without_sync = head + all.substr(0, all.find(R"("sync")")) + R"("graph_node":"1 us"}})";
  EXPECT_NE(message_of(without_sync).find("test.json: host_costs.sync: required key is missing"), std::string::npos)
      << message_of(without_sync);
  std::string negative = all;
  negative.replace(negative.find(R"("collective":"1 us")"), 19, R"("collective":"-3 us")");
  EXPECT_NE(message_of(head + negative.substr(0, negative.size() - 1) + "}}").find("host_costs.collective"),
            std::string::npos)
      << message_of(head + negative.substr(0, negative.size() - 1) + "}}");
  EXPECT_NE(message_of(head + all + R"("launch":"1 us"}})").find("host_costs.launch: unknown key"),
            std::string::npos);
}

TEST(CalibrationProfile, PowerSectionRoundTripsAndIsChecked) {
  const CalibrationProfile committed = load_calibration_profile(kCommittedProfile);
  ASSERT_TRUE(committed.power.has_value());
  EXPECT_EQ(committed.power->idle_power.in_watts(), 123.3);
  EXPECT_EQ(committed.power->gemm_fp8.settled_ratio, 0.812);
  const CalibrationProfile back = parse_calibration_profile(to_json(committed), "round-trip");
  EXPECT_EQ(to_json(back), to_json(committed));

  const std::string head = R"({"format":"clustersim-calibration-profile","version":1,"name":"x",)"
                           R"("machine":{"gpu":"G","sm_count":132},"power":)";
  nlohmann::json section = nlohmann::json::parse(to_json(committed))["power"];
  auto error_with = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json s = section;
    change(s);
    return message_of(head + s.dump() + "}");
  };
  EXPECT_EQ(error_with([](nlohmann::json&) {}), "");
  EXPECT_NE(error_with([](nlohmann::json& s) { s.erase("window"); }).find("test.json: power.window: required key is missing"),
            std::string::npos);
  EXPECT_NE(error_with([](nlohmann::json& s) { s["gemm_bf16"].erase("settled_power"); })
                .find("power.gemm_bf16.settled_power: required key is missing"),
            std::string::npos);
  EXPECT_NE(error_with([](nlohmann::json& s) { s["idle_power"] = "700 W"; }).find("power.idle_power: must be below"),
            std::string::npos);
  EXPECT_NE(error_with([](nlohmann::json& s) { s["held_power"] = "800 W"; }).find("power.held_power: must not exceed"),
            std::string::npos);
  EXPECT_NE(error_with([](nlohmann::json& s) { s["gemm_fp8"]["settled_ratio"] = 1.5; })
                .find("power.gemm_fp8.settled_ratio: expected a number in (0, 1]"),
            std::string::npos);
  EXPECT_NE(error_with([](nlohmann::json& s) { s["copy"]["full_rate"] = "-4 TB/s"; }).find("power.copy.full_rate"),
            std::string::npos);
  EXPECT_NE(error_with([](nlohmann::json& s) { s["idle_power"] = "-5 W"; }).find("power.idle_power"), std::string::npos);
  EXPECT_NE(error_with([](nlohmann::json& s) { s["fan"] = "1"; }).find("power.fan: unknown key"), std::string::npos);
}

TEST(CalibrationProfile, RejectsMalformedProfilesNamingTheKey) {
  const std::string head = R"({"format":"clustersim-calibration-profile","version":1,"name":"x",)"
                           R"("machine":{"gpu":"G","sm_count":132},)";
  EXPECT_NE(message_of(head + R"("gemm_samples":[{"dtype":"bf16","m":8,"n":8,"k":8,"time":"12.5"}]})")
                .find("gemm_samples[0].time"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("gemm_samples":[{"dtype":"bf17","m":8,"n":8,"k":8,"time":"1 us"}]})")
                .find("valid: fp32"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("gemm_samples":[{"dtype":"bf16","m":0,"n":8,"k":8,"time":"1 us"}]})")
                .find("gemm_samples[0].m"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("colour":"blue"})").find("colour"), std::string::npos);
  EXPECT_NE(message_of(head + R"("memory":{"copy_bandwidth":"4000"}})").find("memory.copy_bandwidth"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("memory":{"kernels":{"vectorised":"4000 GB/s"}}})").find("memory.kernels.vectorised"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("memory":{"kernels":{"strided":"1500"}}})").find("memory.kernels.strided"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("attention_samples":[{"kernel":"sdpa-flash","batch":1,"heads":32,"kv_heads":5,)"
                                  R"("seq":2048,"head_dim":128,"forward":"1 us","backward":"2 us"}]})")
                .find("attention_samples[0].kv_heads"),
            std::string::npos);
  EXPECT_NE(message_of(head + R"("attention_samples":[{"kernel":"sdpa-flash","batch":1,"heads":32,"kv_heads":8,)"
                                  R"("seq":2048,"head_dim":128,"forward":"1 us"}]})")
                .find("attention_samples[0].backward"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"format":"other","version":1})").find("format"), std::string::npos);
  EXPECT_NE(message_of(R"({"format":"clustersim-calibration-profile","version":2})").find("version"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"format":"clustersim-calibration-profile","version":1,"name":"x"})").find("machine"),
            std::string::npos);
  EXPECT_NE(message_of("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_THROW(load_calibration_profile("/nonexistent/profile.json"), InputError);
}

}  // namespace calibration_profile_test
}  // namespace clustersim
