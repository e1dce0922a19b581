#include "tools/validation/validate_calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace clustersim {
namespace validate_calibration_test {

const std::string kSource = CLUSTERSIM_SOURCE_DIR;

CalibrationValidationOptions committed() {
  CalibrationValidationOptions o;
  o.profile = kSource + "/scenarios/profiles/h200-2026-11-29.json";
  o.references = {kSource + "/tools/data/h200-2026-11-29/reference.jsonl"};
  o.nccl_raw = {kSource + "/tools/data/testdata/nccl_published_a3mega_h100x16.csv"};
  return o;
}

// The targets of docs/validation/calibration.md (Summary) on the committed H200 data; a regression of the calibration (profile, GEMM
// predictor, pytorch-eager op model, memory moments) fails here.
TEST(ValidateCalibration, CommittedH200DataMeetTheIssuesTargets) {
  const CalibrationValidation v = validate_calibration(committed());
  // GEMM leave-one-out over the GEMMs the reference steps run (forward, data and weight gradients,
  // the misaligned 50,257-column LM heads included): median ≤ 5 %, max ≤ 15 %.
  ASSERT_GE(v.step_gemms.size(), 50u);
  EXPECT_LE(v.step_gemms_median, CalibrationTargets::kGemmMedian);
  EXPECT_LE(v.step_gemms_max, CalibrationTargets::kGemmMax);
  EXPECT_TRUE(std::any_of(v.step_gemms.begin(), v.step_gemms.end(),
                          [](const auto& r) { return r.shape.n == 50257 || r.shape.k == 50257; }));
  // Over every sample (five dtypes, squares down to 256³, the 4-, 8- and 2-byte stride probes; each
  // the median of its sweeps): median 2.2 %, max 14.6 % (fp8 256³), both within the targets. The
  // median is bounded at its committed level so that it cannot grow unnoticed.
  EXPECT_GE(v.gemm.rows.size(), 437u);
  EXPECT_LE(v.gemm.median_abs_error, 0.023);
  EXPECT_LE(v.gemm.max_abs_error, CalibrationTargets::kGemmMax);
  // Training steps: every reference configuration predicted; at least six within 10 % on step
  // time and on peak memory.
  ASSERT_EQ(v.training.size(), 10u);
  EXPECT_GE(v.training_within, CalibrationTargets::kTrainingRows);
  EXPECT_TRUE(v.training_meets_target());
  for (const TrainingValidationRow& r : v.training) {
    // One GPU, no communication: the step is its forward, backward and optimizer phases and the
    // GPU's waits for the host thread. The phases are priced at the profile's sustained rates; the
    // step runs under the governor (simulation.power_model: auto with this profile's power
    // section), between those and the full clock, which is at most 1 / 0.812 faster (the lowest
    // settled ratio of the profile's classes, fp8).
    const double phases = r.predicted_forward_ms + r.predicted_backward_ms + r.predicted_optimizer_ms +
                          r.predicted_host_bound_ms;
    EXPECT_LE(r.predicted_step_ms, phases * (1 + 1e-6)) << r.name;
    EXPECT_GE(r.predicted_step_ms, 0.812 * phases) << r.name;
    EXPECT_NEAR(r.memory_error, 0, 0.02) << r.name;  // the memory moments are exact accounting
    std::cout << r.name << ": step " << 100 * r.step_error << " %, memory " << 100 * r.memory_error << " %\n";
  }
  // The 7B configurations peak at the end of backward: 16 bytes per parameter (fp32 weights,
  // gradients, two AdamW moments), which the measured peaks confirm within 0.3 %.
  for (const TrainingValidationRow& r : v.training) {
    if (r.parameters > 6'000'000'000) {
      EXPECT_EQ(r.peak_moment, "backward (end)");
      EXPECT_EQ(r.predicted_peak_bytes, 16 * r.parameters);
    }
  }
  // The published 16-GPU sweep: one fit of at most three regimes, fitted within 15 % everywhere.
  ASSERT_EQ(v.collectives.size(), 1u);
  EXPECT_LE(v.collectives[0].fit.segments.size(), 3u);
  EXPECT_LE(v.collectives[0].max_fitted_error, 0.15);
  EXPECT_LE(v.collectives[0].median_left_out_error, 0.05);
}

// GEMMs measured apart from the profile (tools/data/h200-2026-11-29-holdout: the shapes of
// three shipped scenarios that the calibration list lacks and 45 random ones, six sweeps) predicted
// from all of it. No target of docs/validation/calibration.md's Summary applies; the figures
// (median 6.5 %, max 25.3 %, tf32 4416×1344×1330) are bounded at their level, and shapes the
// profile has are not counted.
TEST(ValidateCalibration, GemmShapesOutsideTheProfile) {
  CalibrationValidationOptions o = committed();
  o.references.clear();
  o.nccl_raw.clear();
  for (int i = 1; i <= 6; ++i) {
    o.gemm_holdout.push_back(kSource + "/tools/data/h200-2026-11-29-holdout/gemm-holdout" +
                             std::to_string(i) + ".csv");
  }
  const CalibrationValidation v = validate_calibration(o);
  // 81 shapes listed, two fp8 shapes with odd strides unsupported by cuBLASLt.
  ASSERT_EQ(v.holdout.rows.size(), 79u);
  EXPECT_EQ(v.holdout_in_profile, 0);
  EXPECT_LE(v.holdout.median_abs_error, 0.07);
  EXPECT_LE(v.holdout.max_abs_error, 0.26);
  for (const auto& r : v.holdout.rows) {
    EXPECT_EQ(r.relative_error, (static_cast<double>(r.predicted.ps()) - static_cast<double>(r.measured.ps())) /
                                    static_cast<double>(r.measured.ps()));
  }
  std::ostringstream report;
  write_calibration_report(v, o, report);
  EXPECT_NE(report.str().find("## GEMM shapes outside the profile"), std::string::npos);
  // A holdout refused with `text` in its message: GEMMs of another GPU, a file without a measured
  // row, a file that is not a GEMM sweep.
  auto refused = [&](const std::string& file, const std::string& text) {
    o.gemm_holdout = {file};
    try {
      validate_calibration(o);
      ADD_FAILURE() << file << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  // A copy of the first sweep whose lines pass `keep`, rewritten by `edit`.
  const std::string first = kSource + "/tools/data/h200-2026-11-29-holdout/gemm-holdout1.csv";
  auto copy = [&](const std::string& name, auto edit) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ifstream in(first);
    std::ofstream out(path);
    std::string line;
    while (std::getline(in, line)) {
      if (const auto kept = edit(line)) out << *kept << "\n";
    }
    return path;
  };
  refused(copy("holdout-a100.csv",
               [](const std::string& line) -> std::optional<std::string> {
                 return line.rfind("# gpu_name:", 0) == 0 ? "# gpu_name: NVIDIA A100-SXM4-80GB" : line;
               }),
          "A100");
  refused(copy("holdout-empty.csv",
               [](const std::string& line) -> std::optional<std::string> {
                 if (line.empty() || line[0] == '#' || line.rfind("set,", 0) == 0) return line;
                 return std::nullopt;
               }),
          "no measured GEMM");
  refused(kSource + "/tools/data/h200-2026-11-29/memory.csv", "memory.csv");
}

// The torchrun runs on two H200s (tools/data/h200x2-2026-11-29/reference-x2-b.jsonl): DDP
// and tensor-parallel rows, simulated from scenarios/reference/h200x2-<name>-{ddp,tp}.yaml.
TEST(ValidateCalibration, TwoGpuDataAndTensorParallelSteps) {
  CalibrationValidationOptions o = committed();
  o.nccl_raw.clear();
  o.references = {kSource + "/tools/data/h200x2-2026-11-29/reference-x2-b.jsonl"};
  const CalibrationValidation v = validate_calibration(o);
  ASSERT_EQ(v.training.size(), 6u);
  EXPECT_TRUE(v.training_not_simulated.empty());
  CalibrationValidationOptions single = committed();
  single.nccl_raw.clear();
  const CalibrationValidation one = validate_calibration(single);
  int ddp = 0, tp = 0;
  for (const TrainingValidationRow& r : v.training) {
    EXPECT_EQ(r.ranks, 2);
    const std::string base = r.name.substr(0, r.name.find(' '));
    const auto alone = std::find_if(one.training.begin(), one.training.end(),
                                    [&](const TrainingValidationRow& x) { return x.name == base; });
    ASSERT_NE(alone, one.training.end()) << base;
    EXPECT_NEAR(r.memory_error, 0, 0.006) << r.name;
    std::cout << r.name << ": step " << 100 * r.step_error << " %, memory " << 100 * r.memory_error << " %\n";
    if (r.name.find("ddp×2") != std::string::npos) {
      ++ddp;
      // Memory: the one-GPU step's peak plus DDP's bucket copy of the fp32 gradients (4 B/param),
      // which the measured peaks confirm within 0.5 %.
      EXPECT_EQ(r.predicted_peak_bytes, alone->predicted_peak_bytes + 4 * r.parameters) << r.name;
      // Step time: the data-parallel step costs more than the one-GPU step (DDP's bucket copies, the
      // exposed all-reduce of the last bucket), and is predicted within 10 % (today: -2.8 %, -4.5 %,
      // -9.6 %; gpt-2.7b's measured step grows by 37 ms over one GPU, the simulated one by 12 ms).
      // Under the power model these run faster than at the profile's sustained rates (+0.7, -0.1,
      // -5.8 % without it): the NCCL kernels draw no power in the model (cost_models/power_model.h,
      // "Not modelled"), so the governor lets the GEMMs beside them run at a higher clock.
      EXPECT_GT(r.predicted_step_ms, alone->predicted_step_ms) << r.name;
      EXPECT_NEAR(r.step_error, 0, 0.10) << r.name;
    } else {
      ASSERT_NE(r.name.find("tp×2"), std::string::npos) << r.name;
      ++tp;
      // Half of each layer on each rank, the embedding and LM head whole: the step is faster than
      // on one GPU and slower than half of it (the all-reduces, the replicated head and loss), as
      // measured; predicted within 7 % (today -0.2 %, -4.0 %, -6.2 %; +4.7, +1.9, -0.9 % at the
      // profile's sustained rates, without the power model: the NCCL kernels' power, as above).
      EXPECT_LT(r.predicted_step_ms, alone->predicted_step_ms) << r.name;
      EXPECT_GT(r.predicted_step_ms, 0.5 * alone->predicted_step_ms) << r.name;
      EXPECT_LT(r.step_ms, alone->step_ms) << r.name;
      EXPECT_NEAR(r.step_error, 0, 0.07) << r.name;
      EXPECT_LT(r.parameters, alone->parameters) << r.name;
    }
  }
  EXPECT_EQ(ddp, 3);
  EXPECT_EQ(tp, 3);
}

// The GPipe runs on two H200s (tools/data/h200x2-2026-11-29/reference-x2-pp*.jsonl): two
// stages, 4 and 8 micro-batches, simulated from scenarios/reference/h200x2-<name>-pp-m<N>.yaml. The
// last stage holds the loss tensors of every micro-batch in flight and is the larger (measured and
// predicted); its peak is predicted within 0.5 % and the step within 6 % (today +4.3 % … −0.2 %).
TEST(ValidateCalibration, TwoGpuPipelineSteps) {
  CalibrationValidationOptions o = committed();
  o.nccl_raw.clear();
  o.references = {kSource + "/tools/data/h200x2-2026-11-29/reference-x2-pp.jsonl",
                  kSource + "/tools/data/h200x2-2026-11-29/reference-x2-pp8.jsonl"};
  const CalibrationValidation v = validate_calibration(o);
  ASSERT_EQ(v.training.size(), 6u);
  EXPECT_TRUE(v.training_not_simulated.empty());
  for (const TrainingValidationRow& r : v.training) {
    EXPECT_EQ(r.ranks, 2);
    EXPECT_NE(r.name.find("pp×2"), std::string::npos) << r.name;
    EXPECT_NE(r.peak_moment.find("stage 1"), std::string::npos) << r.name << ": " << r.peak_moment;
    EXPECT_NEAR(r.memory_error, 0, 0.005) << r.name;
    EXPECT_NEAR(r.step_error, 0, 0.06) << r.name;
  }
  // Twice the micro-batches: the step grows by the added micro-batches' compute, less than twice
  // (the pipeline fill is paid once), as measured.
  for (size_t i = 0; i < 3; ++i) {
    const TrainingValidationRow& four = v.training[i];
    const TrainingValidationRow& eight = v.training[i + 3];
    ASSERT_EQ(four.name.substr(0, four.name.find(' ')), eight.name.substr(0, eight.name.find(' ')));
    EXPECT_GT(eight.predicted_step_ms, 1.5 * four.predicted_step_ms) << eight.name;
    EXPECT_LT(eight.predicted_step_ms, 2.0 * four.predicted_step_ms) << eight.name;
    EXPECT_LT(eight.step_ms, 2.0 * four.step_ms) << eight.name;
  }
}

TEST(ValidateCalibration, ReferenceWithoutResultsIsBadInput) {
  CalibrationValidationOptions o = committed();
  o.nccl_raw.clear();
  const std::string empty = ::testing::TempDir() + "empty_reference.jsonl";
  { std::ofstream(empty) << "\n"; }
  o.references = {empty};
  try {
    validate_calibration(o);
    FAIL() << "empty reference accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no train_step.py result"), std::string::npos) << e.what();
  }
}

// Reference lines are checked before use: wrong types and impossible values are input errors that
// name the file, line and key, never a crash or a silently wrong comparison.
TEST(ValidateCalibration, BadReferenceValuesAreInputErrors) {
  std::ifstream in(kSource + "/tools/data/h200x2-2026-11-29/reference-x2-pp.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const nlohmann::json good = nlohmann::json::parse(line);
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"step_time_ms_max_rank", "x"}, {"step_time_ms_max_rank", -5}, {"step_time_ms_max_rank", 0},
      {"step_time_ms_max_rank", 1e308}, {"step_time_ms", -5}, {"world_size", 2.7},
      {"world_size", -3}, {"world_size", 1e20}, {"name", 7}, {"name", "../x"},
      {"peak_allocated_bytes_per_rank", nlohmann::json::array({-1, -1})},
      {"peak_allocated_bytes_per_rank", nlohmann::json::array({1})}, {"config", "pp"},
      {"device", "NVIDIA A100"}};
  for (const auto& [key, value] : cases) {
    nlohmann::json bad = good;
    bad[key] = value;
    const std::string path = ::testing::TempDir() + "bad_reference.jsonl";
    { std::ofstream(path) << bad.dump() << "\n"; }
    CalibrationValidationOptions o = committed();
    o.nccl_raw.clear();
    o.references = {path};
    try {
      validate_calibration(o);
      ADD_FAILURE() << key << " = " << value.dump() << " accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("bad_reference.jsonl:1: \"" + key), std::string::npos) << key << ": " << what;
    }
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"parallel", "zz"}, {"parallel", 3}, {"microbatches", 4.5}, {"microbatches", -3}, {"microbatches", 1e20},
           // A configuration other than the scenario's is not compared with it.
           {"hidden", 4096}, {"layers", 25}, {"seq_len", 8192}, {"recompute", true}, {"mlp", "swiglu"},
           {"kv_heads", 4}}) {
    nlohmann::json bad = good;
    bad["config"][key] = value;
    const std::string path = ::testing::TempDir() + "bad_reference.jsonl";
    { std::ofstream(path) << bad.dump() << "\n"; }
    CalibrationValidationOptions o = committed();
    o.nccl_raw.clear();
    o.references = {path};
    EXPECT_THROW(validate_calibration(o), InputError) << key << " = " << value.dump();
  }
}

TEST(ValidateCalibration, ReportHasEverySection) {
  const CalibrationValidationOptions o = committed();
  std::ostringstream out;
  write_calibration_report(validate_calibration(o), o, out);
  for (const char* part : {"## Summary", "## Training steps", "## GEMM leave-one-out", "bf16 misaligned",
                           "## SDPA flash attention leave-one-out", "## Collectives", "llama-7b-4k-recompute",
                           "backward (end)", "Generated by `clustersim validate --calibration"}) {
    EXPECT_NE(out.str().find(part), std::string::npos) << part;
  }
}

TEST(ValidateCalibration, ReferenceWithoutAScenarioIsBadInput) {
  CalibrationValidationOptions o = committed();
  o.nccl_raw.clear();
  o.references = {kSource + "/tools/data/testdata/h200_smoke_reference.jsonl"};
  o.scenario_dir = kSource + "/scenarios/models";  // no h200-<name>.yaml there
  try {
    validate_calibration(o);
    FAIL() << "missing scenario accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has no scenario"), std::string::npos) << e.what();
  }
}

}  // namespace validate_calibration_test
}  // namespace clustersim
