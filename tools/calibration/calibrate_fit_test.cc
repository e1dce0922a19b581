#include "tools/calibration/calibrate_fit.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <algorithm>
#include <fmt/format.h>
#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "cost_models/gemm_efficiency_model.h"
#include "scenarios/scenario.h"

namespace clustersim {
namespace calibrate_fit_test {

const std::string kData = std::string(CLUSTERSIM_SOURCE_DIR) + "/tools/data/h200-2026-11-29";
const std::string kPublishedSweep =
    std::string(CLUSTERSIM_SOURCE_DIR) + "/tools/data/testdata/nccl_published_a3mega_h100x16.csv";
const std::string kPublishedLog =
    std::string(CLUSTERSIM_SOURCE_DIR) + "/tools/data/published/nccl_tests_a3mega_h100x16_all_reduce.log";

calibrate::RawTable table(const std::string& text) {
  std::istringstream in(text);
  return calibrate::read_raw_table(in, "test.csv");
}

// A GEMM raw file with the calibrator's columns and the given rows (set,label,dtype,m,n,k,...).
std::string gemm_file(const std::vector<std::string>& rows) {
  std::string text =
      "# clustersim-calibrate raw samples\n# format: 1\n# kind: gemm\n# gpu_name: NVIDIA H200\n# sm_count: 132\n"
      "set,label,dtype,m,n,k,layout,status,median_us\n";
  for (const auto& r : rows) text += r + "\n";
  return text + "# complete: true\n";
}

TEST(CalibrateFit, GemmSamplesTakeTheFrameworksOrientationAndMergeRepeats) {
  // cuBLAS TN (M, N, K) = (50257, 8192, 2048) is the row-major LM head y[8192, 50257] = x[8192, 2048] ·
  // W[50257, 2048]ᵀ: GemmShape{m = 8192, n = 50257, k = 2048}, whose output stride (50257) is off the
  // 16-byte grid.
  const auto samples = fit_gemm_samples(table(gemm_file({"file,lm_head,bf16,50257,8192,2048,TN,ok,15658.2",
                                                         "square,,bf16,4096,4096,4096,TN,ok,182.0",
                                                         "grid,,bf16,4096,4096,4096,TN,ok,191.0",
                                                         "file,proj,bf16,4096,4096,4096,TN,ok,205.0",
                                                         "misaligned,,fp8,1000,1000,1000,TN,unsupported,"})));
  ASSERT_EQ(samples.size(), 2u);
  const auto lm = std::find_if(samples.begin(), samples.end(), [](const GemmSample& s) { return s.shape.n == 50257; });
  ASSERT_NE(lm, samples.end());
  EXPECT_EQ(lm->shape, (GemmShape{8192, 50257, 2048, 1, DataType::kBf16, false}));
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(lm->shape), GemmAlignment::kMisaligned);
  EXPECT_EQ(lm->time, Duration::microseconds(15658.2));
  // Three measurements of 4096³: the median, 191 µs.
  const auto sq = std::find_if(samples.begin(), samples.end(), [](const GemmSample& s) { return s.shape.m == 4096; });
  EXPECT_EQ(sq->time, Duration::microseconds(191.0));
  EXPECT_THROW(fit_gemm_samples(table(gemm_file({"file,x,bf16,64,64,64,NN,ok,3.0"}))), InputError);
  EXPECT_THROW(fit_gemm_samples(table(gemm_file({"file,x,bf16,64,0,64,TN,ok,3.0"}))), InputError);
  EXPECT_THROW(fit_gemm_samples(table(gemm_file({"file,x,bf16,64,64,64,TN,ok,-3.0"}))), InputError);
}

// Several sweeps of one machine (files): a shape's sample is the median over all of them.
TEST(CalibrateFit, GemmSamplesMergeSweepsAcrossFiles) {
  const auto a = table(gemm_file({"square,,bf16,4096,4096,4096,TN,ok,182.0", "square,,fp32,64,64,64,TN,ok,5.0"}));
  const auto b = table(gemm_file({"square,,bf16,4096,4096,4096,TN,ok,200.0"}));
  const auto c = table(gemm_file({"square,,bf16,4096,4096,4096,TN,ok,190.0"}));
  const auto samples = fit_gemm_samples(std::vector<const calibrate::RawTable*>{&a, &b, &c});
  ASSERT_EQ(samples.size(), 2u);
  const auto sq = std::find_if(samples.begin(), samples.end(), [](const GemmSample& s) { return s.shape.m == 4096; });
  ASSERT_NE(sq, samples.end());
  EXPECT_EQ(sq->time, Duration::microseconds(190.0));
}

// Errors name the row's line in the file, comment and header lines counted (the file has
// gemm_file's five comment lines and a header before the rows).
TEST(CalibrateFit, ErrorsNameTheFileLine) {
  const std::vector<std::string> rows = {"file,x,bf16,64,64,64,TN,ok,3.0", "file,y,bf16,64,64,64,TN,ok,3.0",
                                         "file,z,bf16,64,64,64,TN,ok,-3.0"};
  const std::string text = gemm_file(rows);
  // The line of the bad row, counted in the text itself.
  const size_t at = text.find(rows[2]);
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  try {
    fit_gemm_samples(table(text));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("test.csv:" + std::to_string(line) + ": column \"median_us\""),
              std::string::npos)
        << e.what();
  }
}

TEST(CalibrateFit, SyntheticAlphaBetaSweepIsRecoveredWithinOnePercent) {
  // all_reduce on 8 ranks with NCCL_ALGO=Ring NCCL_PROTO=Simple: t = 25 µs + S / 150 GB/s.
  const Duration alpha = Duration::microseconds(25);
  const Bandwidth beta = Bandwidth::gigabytes_per_s(150);
  std::vector<CollectiveMeasurement> m;
  for (int64_t s = 8; s <= (int64_t{1} << 33); s *= 2) {
    m.push_back({CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, Protocol::kSimple, 8, 1, Bytes::of(s),
                 alpha + transfer_time(Bytes::of(s), beta)});
  }
  const auto fits = fit_collectives(m);
  ASSERT_EQ(fits.size(), 1u);
  ASSERT_EQ(fits[0].fit.segments.size(), 1u);
  EXPECT_NEAR(fits[0].fit.segments[0].latency.to_microseconds(), 25, 0.25);
  EXPECT_NEAR(fits[0].fit.segments[0].bandwidth.gigabytes_per_second(), 150, 1.5);
  EXPECT_EQ(fits[0].fit.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(fits[0].fit.protocol, Protocol::kSimple);
  EXPECT_EQ(fits[0].fit.ranks, 8);
}

TEST(CalibrateFit, NcclTestsLogAndItsRawConversionGiveTheSameFit) {
  // The published sweep's raw file was converted from this log's out-of-place columns.
  const auto from_raw = fit_collectives(collective_measurements(calibrate::read_raw_table_file(kPublishedSweep)));
  NcclTestsLogInput log;
  log.path = kPublishedLog;
  log.ranks = 16;
  log.nodes = 2;
  const auto from_log = fit_collectives(collective_measurements(log));
  ASSERT_EQ(from_raw.size(), 1u);
  ASSERT_EQ(from_log.size(), 1u);
  EXPECT_EQ(from_log[0].fit.op, CollectiveOp::kAllReduce);
  EXPECT_EQ(from_log[0].fit.algorithm, CollectiveAlgorithm::kAuto);
  EXPECT_EQ(from_log[0].fit.nodes, 2);
  ASSERT_EQ(from_raw[0].fit.segments.size(), from_log[0].fit.segments.size());
  for (size_t i = 0; i < from_log[0].fit.segments.size(); ++i) {
    EXPECT_EQ(from_raw[0].fit.segments[i].latency, from_log[0].fit.segments[i].latency);
    EXPECT_EQ(from_raw[0].fit.segments[i].max_size, from_log[0].fit.segments[i].max_size);
  }
  EXPECT_LE(from_log[0].fit.segments.size(), 3u);
  // The log lists 16 ranks on 2 hosts: other counts are refused.
  log.ranks = 8;
  EXPECT_THROW(collective_measurements(log), InputError);
  log.ranks = 16;
  log.nodes = 1;
  EXPECT_THROW(collective_measurements(log), InputError);
}

TEST(CalibrateFit, LogOptionsAreZippedPerLogOrOnceForAll) {
  const auto one = nccl_log_inputs({"a.log", "b.log"}, {16}, {2}, {}, {"ring", "tree"}, {"Simple"});
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[1].ranks, 16);
  EXPECT_EQ(one[1].algorithm, "tree");
  EXPECT_EQ(one[0].protocol, "Simple");
  EXPECT_EQ(one[0].op, "");
  EXPECT_THROW(nccl_log_inputs({"a.log", "b.log", "c.log"}, {16, 8}, {2}, {}, {}, {}), InputError);
  EXPECT_THROW(nccl_log_inputs({"a.log"}, {}, {2}, {}, {}, {}), InputError);
  EXPECT_THROW(nccl_log_inputs({}, {8}, {1}, {}, {}, {}), InputError);
}

// --nodes has the range of a scenario's cluster.nodes (and collective --nodes); --ranks runs 1 to
// kMaxNodeGpus ranks on each node.
TEST(CalibrateFit, LogRankAndNodeCountsAreBounded) {
  auto error_of = [](int ranks, int nodes) {
    try {
      nccl_log_inputs({"a.log"}, {ranks}, {nodes}, {}, {}, {});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of(16, 2), "");
  EXPECT_EQ(error_of(kMaxClusterNodes * 8, kMaxClusterNodes), "");
  const std::string valid_nodes = fmt::format("valid: 1..{} (as cluster.nodes of a scenario)", kMaxClusterNodes);
  for (int nodes : {0, -1, kMaxClusterNodes + 1, 100000}) {
    const std::string e = error_of(16, nodes);
    EXPECT_NE(e.find(fmt::format("--nodes {} (for --nccl-tests-log a.log) is out of range; {}", nodes, valid_nodes)),
              std::string::npos)
        << e;
  }
  std::string e = error_of(16, 17);  // fewer ranks than nodes
  EXPECT_NE(e.find(fmt::format("--ranks 16 (for --nccl-tests-log a.log) is out of range for --nodes 17; valid: "
                               "17..{}",
                               17 * kMaxNodeGpus)),
            std::string::npos)
      << e;
  e = error_of(2 * kMaxNodeGpus + 1, 2);
  EXPECT_NE(e.find(fmt::format("valid: 2..{} (each node runs 1 to {} ranks)", 2 * kMaxNodeGpus, kMaxNodeGpus)),
            std::string::npos)
      << e;
  EXPECT_NE(error_of(0, 1).find("--ranks 0"), std::string::npos);
}

TEST(CalibrateFit, CommittedH200DataGiveTheProfileRoundTrip) {
  CalibrateFitOptions options;
  options.inputs = {kData};
  // From the repository root, as the data README runs it: the profile's power source names the path.
  options.power_summary = "tools/data/h200-2026-12-01-power/run1/summary.json";
  std::vector<std::string> notes;
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(CLUSTERSIM_SOURCE_DIR);
  const CalibrationProfile p = fit_calibration_profile(options, &notes);
  std::filesystem::current_path(cwd);
  EXPECT_EQ(p.name, "h200-2026-11-29");
  EXPECT_EQ(p.machine.gpu, "NVIDIA H200");
  EXPECT_EQ(p.machine.sm_count, 132);
  EXPECT_EQ(p.machine.driver, "580.159.04");
  EXPECT_EQ(p.machine.date, "2026-11-29");
  // Launch overhead: launch.csv's eager_device and graph_device medians.
  const calibrate::RawTable launch = calibrate::read_raw_table_file(kData + "/launch.csv");
  const size_t test = launch.column_index("test");
  const size_t median = launch.column_index("median_us");
  for (const auto& row : launch.rows) {
    if (row[test] == "eager_device") {
      EXPECT_EQ(*p.launch_eager, Duration::microseconds(std::stod(row[median])));
    }
    if (row[test] == "graph_device") {
      EXPECT_EQ(*p.launch_graph, Duration::microseconds(std::stod(row[median])));
    }
  }
  // Copy bandwidth: the median of the d2d copy plateau, i.e. within 5 % of the fastest copy.
  const calibrate::RawTable memory = calibrate::read_raw_table_file(kData + "/memory.csv");
  double fastest = 0;
  for (const auto& row : memory.rows) {
    if (row[memory.column_index("test")] == "d2d_copy") {
      fastest = std::max(fastest, std::stod(row[memory.column_index("bandwidth_gbps")]));
    }
  }
  ASSERT_TRUE(p.copy_bandwidth.has_value());
  EXPECT_GE(p.copy_bandwidth->gigabytes_per_second(), 0.95 * fastest);
  EXPECT_LE(p.copy_bandwidth->gigabytes_per_second(), fastest);
  // Every PyTorch kernel path and every attention shape of framework.csv / attention.csv.
  EXPECT_EQ(p.kernel_bandwidths.size(), 10u);
  EXPECT_EQ(p.attention_samples.size(), 14u);
  // NCCL: the one-GPU file is skipped; the two-GPU file gives a fit per op × algorithm × protocol.
  ASSERT_FALSE(p.collectives_json.empty());
  const CollectiveProfile collectives = parse_collective_profile(p.collectives_json);
  // all_reduce: automatic, and Ring and Tree × LL, LL128, Simple (7); all_gather, reduce_scatter,
  // broadcast: automatic and Ring × 3 protocols (4 each); all_to_all and send_recv automatic: 21.
  EXPECT_EQ(collectives.fits.size(), 7u + 3 * 4 + 2);
  for (const CollectiveFit& fit : collectives.fits) {
    EXPECT_EQ(fit.ranks, 2);
    EXPECT_LE(fit.segments.size(), 3u);
  }
  // The profile round trip: what is written reads back the same.
  const std::string path = ::testing::TempDir() + "h200.json";
  save_calibration_profile(p, path);
  const CalibrationProfile back = load_calibration_profile(path);
  std::remove(path.c_str());
  ASSERT_EQ(back.gemm_samples.size(), p.gemm_samples.size());
  for (size_t i = 0; i < p.gemm_samples.size(); ++i) {
    EXPECT_EQ(back.gemm_samples[i].shape, p.gemm_samples[i].shape);
    EXPECT_EQ(back.gemm_samples[i].time, p.gemm_samples[i].time);
  }
  EXPECT_EQ(back.kernel_bandwidths, p.kernel_bandwidths);
  EXPECT_EQ(back.copy_bandwidth->bytes_per_second(), p.copy_bandwidth->bytes_per_second());
  ASSERT_TRUE(back.power.has_value());
  EXPECT_EQ(back.power->held_power.in_watts(), 692.1);  // the median of the capped runs (power_summary_test)
  EXPECT_EQ(back.power->gemm_bf16.full_rate, 800.9e12);
  EXPECT_EQ(back.power->copy.settled_power.in_watts(), 662.8);
  EXPECT_EQ(to_json(parse_collective_profile(back.collectives_json)), to_json(parse_collective_profile(p.collectives_json)));
  // The committed profile is this fit.
  const CalibrationProfile committed =
      load_calibration_profile(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/profiles/h200-2026-11-29.json");
  EXPECT_EQ(to_json(committed), to_json(p));
}

TEST(CalibrateFit, RejectsInputWithoutAMachine) {
  CalibrateFitOptions options;
  EXPECT_THROW(fit_calibration_profile(options, nullptr), InputError);
  options.inputs = {kPublishedSweep};  // an nccl file converted from a log: no sm_count
  EXPECT_THROW(fit_calibration_profile(options, nullptr), InputError);
}

}  // namespace calibrate_fit_test
}  // namespace clustersim
