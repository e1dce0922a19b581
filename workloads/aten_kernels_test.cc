#include "workloads/aten_kernels.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace clustersim {
namespace aten_kernels_test {

int64_t moved(const std::vector<AtenKernel>& kernels) {
  int64_t total = 0;
  for (const AtenKernel& k : kernels) total += k.read + k.written;
  return total;
}

// Llama 13B at s = 2048, b = 1, no tensor parallelism: [2048, 5120] bf16 activations.
constexpr int64_t kTokens = 2048;
constexpr int64_t kHidden = 5120;

TEST(AtenKernels, RmsNormInPytorchOpsMovesThirteenAndTwentySevenTimesItsInput) {
  const int64_t b = kTokens * kHidden * 2;  // the bf16 input
  const int64_t t = kTokens * 2;            // one bf16 value per token
  // pow, mean, + eps, rsqrt, the broadcast multiply, .float(), .type_as(), × weight.
  const auto forward = rms_norm_forward_kernels(kTokens, kHidden, 2);
  EXPECT_EQ(forward.size(), 8u);
  EXPECT_EQ(moved(forward), 13 * b + 6 * t);
  const auto backward = rms_norm_backward_kernels(kTokens, kHidden, 2);
  EXPECT_EQ(backward.size(), 13u);
  EXPECT_EQ(moved(backward), 27 * b + 6 * t);
  // With fp32 input .float() and .type_as() return their input: no copy kernels.
  const int64_t f = kTokens * kHidden * 4;
  const auto fp32 = rms_norm_forward_kernels(kTokens, kHidden, 4);
  EXPECT_EQ(fp32.size(), 6u);
  EXPECT_EQ(moved(fp32), 7 * f + 6 * kTokens * 4);
  EXPECT_EQ(rms_norm_backward_kernels(kTokens, kHidden, 4).size(), 11u);
  EXPECT_EQ(forward.front().step, "pow");
  EXPECT_EQ(forward.back().access, MemoryAccess::kBroadcast);
}

TEST(AtenKernels, RopeSwigluAndSoftmaxBytes) {
  const int64_t n = kTokens * kHidden;
  const int64_t b = 2 * n;
  EXPECT_EQ(moved(rope_forward_kernels(n)), 9 * b);     // 4b strided + 3b adds + 2b cat
  EXPECT_EQ(moved(rope_backward_kernels(n)), 15 * b);   // 7b strided + 8b contiguous
  // apply_rotary's kernels, one per PyTorch operation: the same bytes plus the bf16 tables, t bytes
  // each, cast from fp32 (3t moved each) and read by every multiply.
  const int64_t table_elements = kTokens * 32;
  const int64_t t = 2 * table_elements;
  const auto rope = apply_rotary_forward_kernels(n, table_elements);
  EXPECT_EQ(rope.size(), 9u);  // 2 table casts, 4 multiplies, sub, add, cat
  EXPECT_EQ(moved(rope), 9 * b + 6 * t + 4 * t);
  const auto rope_backward = apply_rotary_backward_kernels(n, table_elements);
  EXPECT_EQ(rope_backward.size(), 12u);  // 4 multiplies, neg, 2 add_, 2 × (fill + copy), add_
  EXPECT_EQ(moved(rope_backward), 15 * b + 4 * t);
  EXPECT_EQ(moved(swiglu_forward_kernels(n)), 5 * b);   // silu 2·half + product 3·half
  EXPECT_EQ(moved(swiglu_backward_kernels(n)), 13 * b);
  const auto softmax = masked_softmax_forward_kernels(n, 2);
  EXPECT_EQ(softmax.size(), 3u);
  EXPECT_EQ(moved(softmax), 6 * b + n);  // + the broadcast boolean mask; fused: 2b
  EXPECT_EQ(moved(masked_softmax_backward_kernels(n, 2)), 5 * b + n);
  EXPECT_EQ(softmax.back().access, MemoryAccess::kSoftmax);
}

TEST(AtenKernels, RefusesNegativeSizesAndOddElementBytes) {
  EXPECT_THROW(rope_forward_kernels(-1), InputError);
  EXPECT_THROW(apply_rotary_backward_kernels(8, -1), InputError);
  EXPECT_THROW(swiglu_backward_kernels(-5), InputError);
  EXPECT_THROW(rms_norm_forward_kernels(-1, kHidden, 2), InputError);
  EXPECT_THROW(rms_norm_backward_kernels(kTokens, kHidden, 1), InputError);
  EXPECT_THROW(masked_softmax_forward_kernels(16, 3), InputError);
}

}  // namespace aten_kernels_test
}  // namespace clustersim
