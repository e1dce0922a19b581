#include "cost_models/power_model.h"

#include <cmath>
#include <gtest/gtest.h>

#include "core/error.h"

namespace clustersim {
namespace power_model_test {

// The H200 SXM as its preset gives it (scenarios/hardware/gpus/h200-sxm-141gb.yaml).
GpuSpec h200() {
  GpuSpec g;
  g.name = "H200-SXM-141GB";
  g.dense_peak[DataType::kBf16] = FlopRate::teraflop_per_s(989);
  g.dense_peak[DataType::kFp8] = FlopRate::teraflop_per_s(1979);
  g.dense_peak[DataType::kTf32] = FlopRate::teraflop_per_s(494.5);
  g.hbm_bandwidth = Bandwidth::gigabytes_per_s(4800);
  g.power_limit = Power::watts(700);
  g.idle_power = Power::watts(123.3);
  return g;
}

// Measured on the H200 (tools/data/h200-2026-12-01-power/README.md): bf16 8192³ peak,
// first 100 ms and settled rates (TFLOP/s).
constexpr double kBf16PeakTflops = 800.9;
constexpr double kBf16First100msTflops = 732.2;
constexpr double kBf16SettledTflops = 658.2;

// A bf16 GEMM kernel of `ms` at the measured full-clock rate.
PowerWork bf16_gemm(const PowerModel& m, Duration d) {
  return m.gemm(d, Duration::zero(), kBf16PeakTflops * 1e12 * d.to_seconds(), DataType::kBf16);
}

TEST(PowerModel, NeedsAPowerLimit) {
  GpuSpec g = h200();
  g.power_limit = Power::zero();
  EXPECT_THROW(PowerModel{g}, InputError);
}

TEST(PowerModel, DerivesTheFullClockGemmDemandFromTheSettledRate) {
  const PowerModel m(h200());
  // (settled power − idle) / (settled / peak)²: 964 W at full clock, inside the 950–990 W that the
  // GEMM : idle duty cycles imply.
  const double full_w = 123.3 + m.gemm_dynamic_w(DataType::kBf16);
  EXPECT_NEAR(full_w, 123.3 + (691.6 - 123.3) / (0.822 * 0.822), 1e-9);
  EXPECT_GT(full_w, 950);
  EXPECT_LT(full_w, 990);
  // A copy draws its measured 663 W.
  EXPECT_NEAR(123.3 + m.memory_dynamic_w(), 663.0, 1e-9);
}

TEST(PowerModel, MixUnderTheLimitRunsAtFullClock) {
  const PowerModel m(h200());
  PowerGovernor g(m);
  // GEMM 5 ms : idle 5 ms for 2 s (measured: 1980 MHz, no cap, 547 W).
  const Duration burst = Duration::milliseconds(5);
  const PowerWork w = bf16_gemm(m, burst);
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(g.run(burst, w), burst) << "burst " << i;
    g.idle_for(burst);
  }
  EXPECT_LT(g.average_w(), m.held_power().in_watts());
  // Energy: idle all the time plus the GEMMs' dynamic energy.
  EXPECT_NEAR(g.energy_joules(), 123.3 * 2.0 + 200 * w.clock_bound_joules, 1e-6);
}

TEST(PowerModel, SustainedMixAtTwiceTheLimitRunsAtTheCurvesRate) {
  const PowerModel m(h200());
  PowerGovernor g(m);
  // Clock-bound work drawing 2 × 700 W at full clock: dynamic D = 1400 − idle.
  const Duration piece = Duration::milliseconds(1);
  const double dynamic = 1400.0 - 123.3;
  PowerWork w;
  w.clock_bound = piece;
  w.clock_bound_joules = dynamic * piece.to_seconds();
  // The curve: idle + D·f² = held ⇒ f = √((held − idle) / D).
  const double f = std::sqrt((m.held_power().in_watts() - 123.3) / dynamic);
  Duration last;
  for (int i = 0; i < 2000; ++i) last = g.run(piece, w);
  EXPECT_NEAR(last.to_seconds(), piece.to_seconds() / f, 1e-12);
  EXPECT_NEAR(g.average_w(), m.held_power().in_watts(), 1e-9);
}

TEST(PowerModel, BurstShorterThanTheWindowRunsAtFullClock) {
  const PowerModel m(h200());
  // From idle, the average of a 964 W demand reaches the held 691 W after τ·ln((964 − 123)/(964 − 691)).
  const double full_w = 123.3 + m.gemm_dynamic_w(DataType::kBf16);
  const double held = m.held_power().in_watts();
  const double onset_s = PowerModel::kWindowSeconds * std::log((full_w - 123.3) / (full_w - held));
  EXPECT_GT(onset_s, 0.024);  // measured onsets 24–38 ms
  EXPECT_LT(onset_s, 0.038);
  const Duration burst = Duration::seconds(0.6 * onset_s);
  PowerGovernor short_burst(m);
  EXPECT_EQ(short_burst.run(burst, bf16_gemm(m, burst)), burst);
  // A burst longer than the onset is slowed after it.
  const Duration longer = Duration::seconds(3 * onset_s);
  PowerGovernor long_burst(m);
  EXPECT_GT(long_burst.run(longer, bf16_gemm(m, longer)), longer);
}

// The targets for long GEMM runs on the H200: settled rate and first 100 ms within 5 %.
TEST(PowerModel, SustainedGemmRatesMatchTheH200Measurements) {
  const PowerModel m(h200());
  PowerGovernor g(m);
  const Duration piece = Duration::milliseconds(1);
  const PowerWork w = bf16_gemm(m, piece);
  double work_in_100ms = 0;  // full-clock milliseconds of work done in the first 100 ms
  Duration elapsed;
  Duration last;
  for (int i = 0; i < 5000; ++i) {
    last = g.run(piece, w);
    if (elapsed < Duration::milliseconds(100)) {
      const double left = (Duration::milliseconds(100) - elapsed).to_seconds();
      work_in_100ms += std::min(1.0, left / last.to_seconds());
    }
    elapsed += last;
  }
  const double first_100ms = kBf16PeakTflops * work_in_100ms / 100.0;
  const double settled = kBf16PeakTflops * piece.to_seconds() / last.to_seconds();
  EXPECT_NEAR(settled / kBf16SettledTflops, 1.0, 0.05);
  EXPECT_NEAR(first_100ms / kBf16First100msTflops, 1.0, 0.05);
  RecordProperty("settled_tflops", std::to_string(settled));
  RecordProperty("first_100ms_tflops", std::to_string(first_100ms));
}

TEST(PowerModel, MemoryBoundWorkSlowsMuchLessThanGemms) {
  const PowerModel m(h200());
  const Duration d = Duration::milliseconds(1);
  const PowerWork copy = m.memory_bound(d, Duration::zero(), Bytes::of(static_cast<int64_t>(4268e9 * 1e-3)));
  const double f = 0.82;
  const double copy_slowdown = PowerModel::duration_at(d, copy, f).to_seconds() / d.to_seconds();
  EXPECT_NEAR(copy_slowdown, 1 + PowerModel::kMemoryClockShare * (1 / f - 1), 1e-9);
  EXPECT_LT(copy_slowdown, 1.05);
}

TEST(PowerModel, ScalesOtherGpusByTheirLimit) {
  GpuSpec b200 = h200();
  b200.name = "B200";
  b200.dense_peak[DataType::kBf16] = FlopRate::teraflop_per_s(2250);
  b200.power_limit = Power::watts(1000);
  b200.idle_power = Power::zero();  // the preset default: a fraction of the limit
  const PowerModel h(h200());
  const PowerModel b(b200);
  EXPECT_NEAR(b.gemm_dynamic_w(DataType::kBf16), h.gemm_dynamic_w(DataType::kBf16) * 1000.0 / 700.0, 1e-9);
  EXPECT_NEAR(b.idle().in_watts(), 1000.0 * kDefaultIdleFractionOfLimit, 1e-9);
  // A GEMM at half the reference fraction of its peak: the rate-following share of its dynamic
  // power halves, the rest stays.
  const Duration d = Duration::milliseconds(1);
  const double half_rate = 0.5 * 800.9 / 989 * 2250e12;
  EXPECT_NEAR(b.gemm(d, Duration::zero(), half_rate * 1e-3, DataType::kBf16).clock_bound_joules,
              (1 - 0.5 * PowerModel::kRateShare) * b.gemm_dynamic_w(DataType::kBf16) * 1e-3, 1e-9);
}

// A GEMM measured back to back at its settled rate runs, at full clock, at the rate of its first
// milliseconds: the settled 8192³ run (658.2 TFLOP/s) undone gives 800.9 within the rate curve's
// error; and run again back to back under the governor, it settles at the measured duration.
TEST(PowerModel, FullClockOfASustainedGemmIsItsBurstRateAndTheGovernorGivesItBack) {
  const PowerModel m(h200());
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  const Duration sustained = Duration::seconds(flops / (kBf16SettledTflops * 1e12));
  const Duration full = m.full_clock_gemm(sustained, Duration::zero(), flops, DataType::kBf16);
  EXPECT_NEAR(flops / full.to_seconds() * 1e-12 / kBf16PeakTflops, 1.0, 0.05);
  PowerGovernor g(m);
  const PowerWork w = m.gemm(full, Duration::zero(), flops, DataType::kBf16);
  Duration last;
  for (int i = 0; i < 200; ++i) last = g.run(full, w);  // 0.3 s: settled
  EXPECT_NEAR(last.to_seconds() / sustained.to_seconds(), 1.0, 1e-6);
  // A GEMM whose demand stays under the limit was measured at full clock: unchanged.
  const double small = 2.0 * 1024 * 1024 * 1024;
  const Duration slow = Duration::seconds(small / 200e12);  // 200 TFLOP/s: well under the limit
  const Duration gap = Duration::microseconds(1);
  EXPECT_EQ(m.full_clock_gemm(slow + gap, gap, small, DataType::kBf16), slow + gap);
}

// A profile's power section replaces the H200 defaults; the same figures give the same model.
TEST(PowerModel, TakesItsParametersFromAProfile) {
  ProfilePower p;
  p.power_limit = Power::watts(700);
  p.idle_power = Power::watts(100);
  p.held_power = Power::watts(680);
  p.window = Duration::milliseconds(50);
  p.memory_clock_share = 0.5;
  for (size_t i = 0; i < std::size(ProfilePower::kClassKeys); ++i) {
    *p.power_class(i) = ProfilePowerClass{500e12, 0.8, Power::watts(680)};
  }
  p.copy = ProfilePowerClass{4000e9, 1.0, Power::watts(600)};
  GpuSpec g = h200();
  g.idle_power = Power::zero();
  const PowerModel m(g, &p);
  EXPECT_TRUE(m.measured());
  EXPECT_EQ(m.idle().in_watts(), 100);
  EXPECT_NEAR(m.held_power().in_watts(), 680, 1e-9);
  EXPECT_EQ(m.window(), Duration::milliseconds(50));
  EXPECT_EQ(m.memory_clock_share(), 0.5);
  EXPECT_NEAR(m.gemm_dynamic_w(DataType::kBf16), (680.0 - 100) / 0.64, 1e-9);
  EXPECT_NEAR(m.memory_dynamic_w(), 500.0, 1e-9);
  // At twice the limit, every power doubles; the idle power of the preset wins over the profile's.
  g.power_limit = Power::watts(1400);
  g.idle_power = Power::watts(150);
  const PowerModel twice(g, &p);
  EXPECT_NEAR(twice.gemm_dynamic_w(DataType::kBf16), 2 * m.gemm_dynamic_w(DataType::kBf16), 1e-9);
  EXPECT_EQ(twice.idle().in_watts(), 150);
  EXPECT_NEAR(twice.held_power().in_watts(), 1360, 1e-9);
}

}  // namespace power_model_test
}  // namespace clustersim
