#include "cost_models/gemm_predictor.h"

#include <gtest/gtest.h>

#include <cmath>

namespace clustersim {
namespace gemm_predictor_test {

// A baseline of 1 ps per FLOP: expectations below follow from ratios to it.
Duration flat_baseline(const GemmShape& s) { return Duration::picoseconds(static_cast<int64_t>(s.flops())); }

GemmShape shape(int64_t m, int64_t n, int64_t k, DataType dtype = DataType::kBf16) {
  return GemmShape{m, n, k, 1, dtype, false};
}

GemmSample sample(const GemmShape& s, double ratio) { return {s, flat_baseline(s).scaled(ratio)}; }

// The ratio the predictor applies to the baseline for `s`.
double ratio_of(const GemmPredictor& p, const GemmShape& s) {
  return static_cast<double>(p.predict(s).ps()) / static_cast<double>(flat_baseline(s).ps());
}

TEST(GemmPredictor, ASampledShapeReturnsItsTimeAndLeaveOneOutExcludesIt) {
  const GemmPredictor p({sample(shape(1024, 1024, 1024), 1.5), sample(shape(2048, 2048, 2048), 1.2)}, flat_baseline);
  EXPECT_EQ(p.predict(shape(1024, 1024, 1024)), p.samples()[0].time);
  // Without it, the only other sample's ratio applies.
  EXPECT_NEAR(static_cast<double>(p.predict_without(shape(1024, 1024, 1024), 0).ps()) /
                  static_cast<double>(flat_baseline(shape(1024, 1024, 1024)).ps()),
              1.2, 1e-6);
}

TEST(GemmPredictor, ATwinSampleAloneCorrectsItsShape) {
  // 1026 and 1028 (4- and 8-byte strides, one class) run the same kernel: the twin's ratio applies,
  // not a weighted mean with the samples an octave away.
  const GemmPredictor p({sample(shape(1024, 1028, 1024), 1.8), sample(shape(2048, 2052, 2048), 1.0),
                         sample(shape(1024, 2052, 1024), 1.0), sample(shape(2048, 1028, 1024), 1.0)},
                        flat_baseline);
  EXPECT_NEAR(ratio_of(p, shape(1024, 1026, 1024)), 1.8, 1e-6);
  // 0.1 octave away is not a twin: the neighbours' weights count.
  const double r = ratio_of(p, shape(1100, 1028, 1024));
  EXPECT_LT(r, 1.8);
  EXPECT_GT(r, 1.0);
  // The other 16-bit dtype is never a twin (two octaves away).
  EXPECT_LT(ratio_of(p, shape(1024, 1026, 1024, DataType::kFp16)), 1.8);
}

TEST(GemmPredictor, InterpolatesLogRatiosWithGaussianWeights) {
  // Two samples one octave away in M on either side: equal weights, geometric mean of the ratios.
  const GemmPredictor p({sample(shape(1024, 2048, 2048), 1.0), sample(shape(4096, 2048, 2048), 2.0)}, flat_baseline);
  EXPECT_NEAR(ratio_of(p, shape(2048, 2048, 2048)), std::sqrt(2.0), 1e-6);
  // Closer to one sample (M = 3072 is 0.415 octave from 4096, 1.585 from 1024): weights exp(-d²/2).
  const double d_near = std::log2(4096.0 / 3072.0);
  const double d_far = std::log2(3072.0 / 1024.0);
  const double w_near = std::exp(-d_near * d_near / 2);
  const double w_far = std::exp(-d_far * d_far / 2);
  EXPECT_NEAR(ratio_of(p, shape(3072, 2048, 2048)), std::exp(w_near * std::log(2.0) / (w_near + w_far)), 1e-6);
}

TEST(GemmPredictor, AConstantRatioIsPredictedExactlyEverywhere) {
  std::vector<GemmSample> samples;
  for (const int64_t m : {256, 512, 1024, 2048, 4096}) {
    for (const int64_t k : {512, 4096}) samples.push_back(sample(shape(m, 1024, k), 1.3));
  }
  const GemmPredictor p(samples, flat_baseline);
  const LeaveOneOutResult loo = evaluate_leave_one_out(p);
  ASSERT_EQ(loo.rows.size(), samples.size());
  EXPECT_LT(loo.max_abs_error, 1e-6);
  EXPECT_NEAR(ratio_of(p, shape(3000, 777, 1500)), 1.3, 1e-6);
}

TEST(GemmPredictor, TheOther16BitDtypeCountsTwoOctavesAway) {
  // bf16 samples far from the target (ratio 1) and an fp16 sample of the target's own shape
  // (ratio 2): the fp16 one weighs exp(-2²/2) against exp(-d²/2) of the bf16 ones.
  const GemmShape target = shape(2048, 2048, 2048);
  const GemmShape far = shape(8192, 2048, 2048);  // 2 octaves in M
  const GemmPredictor p({sample(far, 1.0), sample(shape(2048, 2048, 2048, DataType::kFp16), 2.0)}, flat_baseline);
  EXPECT_NEAR(ratio_of(p, target), std::sqrt(2.0), 1e-6);  // equal distances, equal weights
  // The fp16 sample's own shape is still predicted from its measurement.
  EXPECT_EQ(p.predict(shape(2048, 2048, 2048, DataType::kFp16)), p.samples()[1].time);
  // Other dtypes never mix: fp8 and tf32 have no samples, so the baseline stands alone.
  EXPECT_FALSE(p.covers(shape(2048, 2048, 2048, DataType::kFp8)));
  EXPECT_EQ(p.predict(shape(2048, 2048, 2048, DataType::kTf32)), flat_baseline(shape(2048, 2048, 2048)));
}

TEST(GemmPredictor, MisalignedShapesAreCorrectedByTheirOwnClass) {
  // Aligned samples at ratio 1, misaligned ones at ratio 3: a misaligned target takes 3 however
  // close the aligned samples are, an aligned target 1.
  const GemmPredictor p({sample(shape(4096, 4096, 4096), 1.0), sample(shape(4096, 4096, 2048), 1.0),
                         sample(shape(4096, 8191, 4096), 3.0), sample(shape(8192, 8191, 8192), 3.0)},
                        flat_baseline);
  EXPECT_NEAR(ratio_of(p, shape(4096, 4095, 4096)), 3.0, 1e-6);
  EXPECT_NEAR(ratio_of(p, shape(4096, 4096, 3072)), 1.0, 1e-6);
}

TEST(GemmPredictor, Fp32HasNoSlowPathClass) {
  // fp32 runs on the CUDA cores: an odd-stride shape is corrected by every fp32 sample by distance,
  // not by the odd-stride samples alone.
  const GemmShape even = shape(4096, 4096, 4096, DataType::kFp32);
  const GemmShape odd = shape(8191, 8191, 8191, DataType::kFp32);
  const GemmPredictor p({sample(even, 0.5), sample(odd, 2.0)}, flat_baseline);
  const double d_even = std::log2(4500.0 / 4096.0);
  const double d_odd = std::log2(8191.0 / 4500.0);
  const double w_even = std::exp(-3 * d_even * d_even / 2);
  const double w_odd = std::exp(-3 * d_odd * d_odd / 2);
  EXPECT_NEAR(ratio_of(p, shape(4500, 4500, 4500, DataType::kFp32)),
              std::exp((w_even * std::log(0.5) + w_odd * std::log(2.0)) / (w_even + w_odd)), 1e-6);
  // 4091³ is 4096³'s twin (0.003 octaves away): its ratio alone applies, odd strides or not.
  EXPECT_NEAR(ratio_of(p, shape(4091, 4091, 4091, DataType::kFp32)), 0.5, 1e-6);
}

}  // namespace gemm_predictor_test
}  // namespace clustersim
