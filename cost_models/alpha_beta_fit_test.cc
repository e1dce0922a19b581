#include "cost_models/alpha_beta_fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

namespace clustersim {
namespace alpha_beta_fit_test {

// Synthetic sweep t(S) = α + S/β over 8 B .. 1 GiB (×2), exact to the picosecond.
std::vector<AlphaBetaPoint> sweep(Duration alpha, Bandwidth beta, int64_t from = 8, int64_t to = int64_t{1} << 30) {
  std::vector<AlphaBetaPoint> points;
  for (int64_t s = from; s <= to; s *= 2) points.push_back({Bytes::of(s), alpha + transfer_time(Bytes::of(s), beta)});
  return points;
}

TEST(AlphaBetaFit, RecoversLatencyAndBandwidthOfASyntheticSweepWithinOnePercent) {
  const Duration alpha = Duration::microseconds(14.2);
  const Bandwidth beta = Bandwidth::gigabytes_per_s(120);
  const std::vector<AlphaBetaPoint> points = sweep(alpha, beta);
  const AlphaBetaSegment s = fit_alpha_beta(points, 0, points.size() - 1);
  EXPECT_NEAR(s.latency.to_microseconds(), 14.2, 0.01 * 14.2);
  EXPECT_NEAR(s.bandwidth.gigabytes_per_second(), 120, 0.01 * 120);
  // The piecewise fit needs one regime for one law.
  const AlphaBetaFit fit = fit_piecewise_alpha_beta(points);
  ASSERT_EQ(fit.segments.size(), 1u);
  EXPECT_LT(fit.rms_relative_error, 1e-6);
  EXPECT_EQ(fit.segments.front().min_size, Bytes::zero());
  EXPECT_EQ(fit.segments.front().max_size, Bytes::of(int64_t{1} << 30));
}

TEST(AlphaBetaFit, FindsTheBreakpointBetweenTwoRegimes) {
  // LL-like regime up to 64 KiB (α 5 µs, 10 GB/s), Simple-like beyond (α 40 µs, 200 GB/s): NCCL
  // switching protocol with size. The two laws cross at S = 35 µs / (1/10 − 1/200 GB/s) ≈ 368 KB,
  // but the sweep switches at 64 KiB, so the breakpoint lies between 64 KiB and 128 KiB.
  std::vector<AlphaBetaPoint> points = sweep(Duration::microseconds(5), Bandwidth::gigabytes_per_s(10), 8, 65536);
  const auto simple = sweep(Duration::microseconds(40), Bandwidth::gigabytes_per_s(200), 131072, int64_t{1} << 30);
  points.insert(points.end(), simple.begin(), simple.end());
  const AlphaBetaFit fit = fit_piecewise_alpha_beta(points);
  ASSERT_EQ(fit.segments.size(), 2u);
  // Boundary at the geometric mean of 64 KiB and 128 KiB: floor(sqrt(65536 · 131072)) = 92681 B.
  EXPECT_EQ(fit.segments[0].max_size, Bytes::of(92681));
  EXPECT_EQ(fit.segments[1].min_size, Bytes::of(92682));
  EXPECT_NEAR(fit.segments[0].latency.to_microseconds(), 5, 0.05);
  EXPECT_NEAR(fit.segments[0].bandwidth.gigabytes_per_second(), 10, 0.1);
  EXPECT_NEAR(fit.segments[1].latency.to_microseconds(), 40, 0.4);
  EXPECT_NEAR(fit.segments[1].bandwidth.gigabytes_per_second(), 200, 2);
  // Lookups between measured sizes land in the right regime.
  EXPECT_EQ(&fit.segment_for(Bytes::of(70000)), &fit.segments[0]);
  EXPECT_EQ(&fit.segment_for(Bytes::of(100000)), &fit.segments[1]);
}

TEST(AlphaBetaFit, AllowsAtMostThreeRegimes) {
  std::vector<AlphaBetaPoint> points = sweep(Duration::microseconds(3), Bandwidth::gigabytes_per_s(2), 8, 4096);
  const auto mid = sweep(Duration::microseconds(10), Bandwidth::gigabytes_per_s(40), 8192, 1 << 20);
  const auto big = sweep(Duration::microseconds(60), Bandwidth::gigabytes_per_s(300), 1 << 21, int64_t{1} << 32);
  points.insert(points.end(), mid.begin(), mid.end());
  points.insert(points.end(), big.begin(), big.end());
  const AlphaBetaFit fit = fit_piecewise_alpha_beta(points);
  ASSERT_EQ(fit.segments.size(), 3u);
  EXPECT_EQ(fit.segments[0].last, 9u);   // 8 B .. 4096 B are points 0..9
  EXPECT_EQ(fit.segments[1].last, 17u);  // 8 KiB .. 1 MiB are points 10..17
  EXPECT_LT(fit.rms_relative_error, 0.001);
  PiecewiseFitOptions two;
  two.max_segments = 2;
  EXPECT_EQ(fit_piecewise_alpha_beta(points, two).segments.size(), 2u);
}

TEST(AlphaBetaFit, ConstrainsLatencyAndBandwidthToPhysicalValues) {
  // Flat times (latency-bound): no negative bandwidth; the segment predicts the flat time.
  std::vector<AlphaBetaPoint> flat;
  for (int64_t s = 8; s <= 512; s *= 2) flat.push_back({Bytes::of(s), Duration::microseconds(s == 64 ? 12.0 : 12.5)});
  const AlphaBetaSegment f = fit_alpha_beta(flat, 0, flat.size() - 1);
  EXPECT_TRUE(f.bandwidth.is_positive());
  EXPECT_GE(f.latency, Duration::zero());
  EXPECT_NEAR(f.predict(Bytes::of(256)).to_microseconds(), 12.45, 0.1);
  // Pure bandwidth points (time ∝ size) never get a negative latency.
  const auto linear = sweep(Duration::zero(), Bandwidth::gigabytes_per_s(50), 1 << 20, 1 << 28);
  const AlphaBetaSegment l = fit_alpha_beta(linear, 0, linear.size() - 1);
  EXPECT_GE(l.latency, Duration::zero());
  EXPECT_NEAR(l.bandwidth.gigabytes_per_second(), 50, 0.5);
}

TEST(AlphaBetaFit, LeaveOneOutPredictsHeldOutPointsOfOneLaw) {
  const auto points = sweep(Duration::microseconds(20), Bandwidth::gigabytes_per_s(100), 1024, 1 << 26);
  const std::vector<Duration> predicted = leave_one_out_alpha_beta(points);
  ASSERT_EQ(predicted.size(), points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_NEAR(predicted[i].to_microseconds() / points[i].time.to_microseconds(), 1.0, 1e-3) << i;
  }
}

TEST(AlphaBetaFit, RejectsEmptyInputAndNonPositiveTimes) {
  EXPECT_THROW(fit_piecewise_alpha_beta({}), InputError);
  EXPECT_THROW(fit_piecewise_alpha_beta({{Bytes::of(8), Duration::zero()}}), InputError);
  EXPECT_THROW(leave_one_out_alpha_beta({{Bytes::of(8), Duration::microseconds(1)}}), InputError);
}

}  // namespace alpha_beta_fit_test
}  // namespace clustersim
