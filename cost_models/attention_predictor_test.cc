#include "cost_models/attention_predictor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

namespace clustersim {
namespace attention_predictor_test {

constexpr double kPeak = 989e12;  // H200 dense bf16 (docs/validation/published/hardware.csv)

// A sample whose kernel reaches `forward_eff` and `backward_eff` of the peak.
AttentionSample sample(int64_t b, int64_t heads, int64_t kv, int64_t s, int64_t d, double forward_eff,
                       double backward_eff) {
  AttentionSample a;
  a.kernel = "sdpa-flash";
  a.shape = {b, heads, kv, s, d, DataType::kBf16};
  a.forward = Duration::seconds(a.shape.forward_flops() / (kPeak * forward_eff));
  a.backward = Duration::seconds(a.shape.backward_flops() / (kPeak * backward_eff));
  return a;
}

TEST(AttentionPredictor, CountsCausalFlopsAsFlashAttentionBenchmarks) {
  const AttentionShape s{4, 16, 16, 2048, 128, DataType::kBf16};
  // 4·b·h·s²·d / 2 forward, 2.5 × that backward.
  EXPECT_DOUBLE_EQ(s.forward_flops(), 4.0 * 4 * 16 * 2048.0 * 2048 * 128 / 2);
  EXPECT_DOUBLE_EQ(s.backward_flops(), 2.5 * s.forward_flops());
}

TEST(AttentionPredictor, ReturnsMeasuredTimesAndInterpolatesEfficiency) {
  const std::vector<AttentionSample> samples{sample(4, 16, 16, 2048, 128, 0.24, 0.21),
                                            sample(4, 16, 16, 4096, 128, 0.30, 0.26)};
  const AttentionPredictor p(samples, FlopRate::flop_per_s(kPeak));
  EXPECT_EQ(p.predict(samples[0].shape, AttentionPredictor::Direction::kForward), samples[0].forward);
  EXPECT_EQ(p.predict(samples[1].shape, AttentionPredictor::Direction::kBackward), samples[1].backward);
  // Between the two sequence lengths (one octave apart, equal distances) the efficiency is the
  // geometric mean of the neighbours': sqrt(0.24 · 0.30).
  const AttentionShape mid{4, 16, 16, 2896, 128, DataType::kBf16};
  const double expected = mid.forward_flops() / (kPeak * std::sqrt(0.24 * 0.30));
  EXPECT_NEAR(p.predict(mid, AttentionPredictor::Direction::kForward).to_seconds() / expected, 1.0, 0.002);
  // Leaving one out, the other stands alone: its efficiency at the held-out shape.
  const Duration held_out = p.predict_without(samples[0].shape, AttentionPredictor::Direction::kForward, 0);
  EXPECT_NEAR(held_out.to_seconds() / (samples[0].shape.forward_flops() / (kPeak * 0.30)), 1.0, 1e-6);
}

TEST(AttentionPredictor, RejectsInvalidSamples) {
  AttentionSample bad = sample(1, 32, 32, 2048, 128, 0.2, 0.2);
  bad.shape.kv_heads = 5;
  EXPECT_THROW(AttentionPredictor({bad}, FlopRate::flop_per_s(kPeak)), InputError);
  bad = sample(1, 32, 32, 2048, 128, 0.2, 0.2);
  bad.forward = Duration::zero();
  EXPECT_THROW(AttentionPredictor({bad}, FlopRate::flop_per_s(kPeak)), InputError);
}

}  // namespace attention_predictor_test
}  // namespace clustersim
