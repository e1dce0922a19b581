// Checks the committed raw samples (tools/data/testdata/README.md): they parse, are complete, and every
// derived column follows from the raw ones by the formula the calibrator documents. The
// `clustersim calibrate fit` tests use the same files.

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tools/calibrator/collective_sizes.h"
#include "tools/calibrator/raw_table.h"

namespace clustersim::calibrate {
namespace testdata_test {

std::string testdata(const std::string& name) {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/tools/data/testdata/" + name;
}

double number(const RawTable& t, const std::vector<std::string>& row, const char* column) {
  return std::stod(row[t.column_index(column)]);
}

std::vector<double> samples(const RawTable& t, const std::vector<std::string>& row) {
  std::istringstream in(row[t.column_index("samples_us")]);
  std::vector<double> values;
  for (double v; in >> v;) values.push_back(v);
  return values;
}

// Values are written with 6 significant digits.
constexpr double kPrinted = 2e-5;

void expect_median_consistent(const RawTable& t, const std::vector<std::string>& row, const char* median_column) {
  const std::vector<double> s = samples(t, row);
  ASSERT_EQ(static_cast<double>(s.size()), number(t, row, "samples"));
  const double median = number(t, row, median_column);
  EXPECT_LE(number(t, row, "min_us"), median * (1 + kPrinted));
  EXPECT_GE(number(t, row, "max_us"), median * (1 - kPrinted));
}

TEST(Testdata, H200GemmSamples) {
  const RawTable t = read_raw_table_file(testdata("h200_smoke_gemm.csv"));
  EXPECT_TRUE(t.complete());
  EXPECT_EQ(*t.find_metadata("gpu_name"), "NVIDIA H200");
  EXPECT_EQ(*t.find_metadata("kind"), "gemm");
  int ok = 0;
  for (const auto& row : t.rows) {
    const std::string status = row[t.column_index("status")];
    const double m = number(t, row, "m");
    const double n = number(t, row, "n");
    const double k = number(t, row, "k");
    if (status == "ok") {
      ++ok;
      expect_median_consistent(t, row, "median_us");
      // TFLOP/s = 2·M·N·K / t.
      const double tflops = 2 * m * n * k / (number(t, row, "median_us") * 1e-6) * 1e-12;
      EXPECT_NEAR(number(t, row, "tflops"), tflops, tflops * kPrinted);
    } else {
      // Only fp8 is refused, and only where a leading dimension (K of A and B, M of D) is not a
      // multiple of 16 elements: cuBLASLt's FP8 requirement of 16-byte aligned leading dimensions.
      EXPECT_EQ(status, "unsupported");
      EXPECT_EQ(row[t.column_index("dtype")], "fp8");
      EXPECT_TRUE(static_cast<int64_t>(k) % 16 != 0 || static_cast<int64_t>(m) % 16 != 0);
    }
  }
  EXPECT_GT(ok, 60);
}

TEST(Testdata, H200MemorySamples) {
  const RawTable t = read_raw_table_file(testdata("h200_smoke_memory.csv"));
  EXPECT_TRUE(t.complete());
  for (const auto& row : t.rows) {
    const std::string test = row[t.column_index("test")];
    const double size = number(t, row, "size_bytes");
    // Bytes moved: a copy reads and writes S; y = a·x + y reads 2S and writes S; host copies S.
    const double factor = test == "d2d_copy" ? 2 : test == "axpy_fp32" ? 3 : 1;
    EXPECT_EQ(number(t, row, "bytes_moved"), factor * size) << test;
    expect_median_consistent(t, row, "median_us");
    const double gbps = number(t, row, "bytes_moved") / (number(t, row, "median_us") * 1e-6) * 1e-9;
    EXPECT_NEAR(number(t, row, "bandwidth_gbps"), gbps, gbps * kPrinted);
  }
  EXPECT_EQ(t.rows.size(), 6u * 9u);  // six tests × 1 MiB..256 MiB (the --quick sweep)
}

TEST(Testdata, H200LaunchSamples) {
  const RawTable t = read_raw_table_file(testdata("h200_smoke_launch.csv"));
  EXPECT_TRUE(t.complete());
  ASSERT_EQ(t.rows.size(), 4u);
  for (const auto& row : t.rows) expect_median_consistent(t, row, "median_us");
}

TEST(Testdata, SkippedNcclFileHasHeaderAndReason) {
  const RawTable t = read_raw_table_file(testdata("h200_smoke_nccl_skipped.csv"));
  EXPECT_TRUE(t.complete());
  EXPECT_TRUE(t.rows.empty());
  ASSERT_NE(t.find_metadata("skipped"), nullptr);
  EXPECT_NE(t.find_metadata("skipped")->find("at least 2 ranks"), std::string::npos);
  EXPECT_NO_THROW(t.column_index("busbw_gbps"));
}

TEST(Testdata, PublishedNcclSweepFollowsNcclTestsBusBandwidth) {
  const RawTable t = read_raw_table_file(testdata("nccl_published_a3mega_h100x16.csv"));
  EXPECT_TRUE(t.complete());
  ASSERT_EQ(t.rows.size(), 31u);  // 8 B .. 8 GiB, ×2
  for (const auto& row : t.rows) {
    const int n = static_cast<int>(number(t, row, "nranks"));
    const double size = number(t, row, "size_bytes");
    const double algbw = size / (number(t, row, "time_us") * 1e-6) * 1e-9;
    // The source prints two decimals: allow half a unit in the last place besides 1 %.
    EXPECT_NEAR(number(t, row, "algbw_gbps"), algbw, 0.005 + 0.01 * algbw);
    const double busbw = algbw * bus_bandwidth_factor(Collective::kAllReduce, n);
    EXPECT_NEAR(number(t, row, "busbw_gbps"), busbw, 0.01 + 0.01 * busbw);
  }
}

}  // namespace testdata_test
}  // namespace clustersim::calibrate
