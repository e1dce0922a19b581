#include "tools/calibrator/sample_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

namespace clustersim::calibrate {
namespace sample_stats_test {

TEST(SampleStats, MedianMinMax) {
  auto odd = summarize({5.0, 1.0, 3.0});
  EXPECT_DOUBLE_EQ(odd.median, 3.0);
  EXPECT_DOUBLE_EQ(odd.min, 1.0);
  EXPECT_DOUBLE_EQ(odd.max, 5.0);
  EXPECT_EQ(odd.count, 3);
  // Even count: mean of the two middle values, (2 + 3) / 2.
  EXPECT_DOUBLE_EQ(summarize({4.0, 1.0, 3.0, 2.0}).median, 2.5);
  EXPECT_THROW(summarize({}), InternalError);
  EXPECT_THROW(summarize({1.0, std::nan("")}), InternalError);
}

TEST(SampleStats, RepeatsFillTheTarget) {
  // ceil(1 ms / 30 us) = 34.
  EXPECT_EQ(repeats_for_target(30e-6, 1e-3, 1, 1000), 34);
  EXPECT_EQ(repeats_for_target(1.0, 1e-3, 3, 50), 3);     // clamped up to the minimum
  EXPECT_EQ(repeats_for_target(1e-9, 1.0, 3, 50), 50);    // clamped down to the maximum
  EXPECT_EQ(repeats_for_target(0.0, 1.0, 3, 50), 50);     // no estimate: the maximum
  EXPECT_THROW(repeats_for_target(1.0, 1.0, 0, 5), InternalError);
}

TEST(SampleStats, GeometricSizes) {
  // nccl-tests -b 8 -e 8G -f 2: log2(8 GiB / 8 B) + 1 = 31 sizes.
  const auto nccl = geometric_sizes(8, int64_t{8} << 30, 2);
  ASSERT_EQ(nccl.size(), 31u);
  EXPECT_EQ(nccl.front(), 8);
  EXPECT_EQ(nccl.back(), int64_t{8} << 30);
  // 1 MiB .. 4 GiB: log2(4096) + 1 = 13 sizes.
  EXPECT_EQ(geometric_sizes(1 << 20, int64_t{4} << 30).size(), 13u);
  // A max that is not on the grid is not passed: 8, 16, 32.
  EXPECT_EQ(geometric_sizes(8, 63).back(), 32);
  EXPECT_THROW(geometric_sizes(0, 8), InputError);
  EXPECT_THROW(geometric_sizes(16, 8), InputError);
  EXPECT_THROW(geometric_sizes(8, 16, 1), InputError);
}

TEST(SampleStats, FormatsSamples) {
  EXPECT_EQ(join_samples({1.5, 2.25, 100.0}), "1.5 2.25 100");
  EXPECT_EQ(format_number(1234567.0, 3), "1.23e+06");
  EXPECT_EQ(join_samples({}), "");
}

}  // namespace sample_stats_test
}  // namespace clustersim::calibrate
