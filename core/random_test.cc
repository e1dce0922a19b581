#include "core/random.h"

#include <gtest/gtest.h>

#include <cmath>

namespace clustersim {
namespace random_test {

// The first outputs of SplitMix64 from seed 0 (Vigna's reference splitmix64.c: 0xe220a8397b1dcdaf,
// 0x6e789e6aa1b965f4, 0x06c45d188009454f).
TEST(SplitMix64, IsTheReferenceStream) {
  SplitMix64 r(0);
  EXPECT_EQ(r.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(r.next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(r.next(), 0x06c45d188009454fULL);
}

// 200,000 draws: means and spread within 1 % of the distributions' (standard errors 0.2–0.5 %).
TEST(SplitMix64, DistributionsHaveTheirMoments) {
  SplitMix64 r(42);
  const int n = 200'000;
  double e = 0, z = 0, z2 = 0, l = 0, l2 = 0;
  for (int i = 0; i < n; ++i) {
    e += r.exponential(3.0);
    const double x = r.normal();
    z += x;
    z2 += x * x;
    const double y = r.lognormal_mean_one(0.05);
    l += y;
    l2 += y * y;
  }
  EXPECT_NEAR(e / n, 3.0, 0.03);
  EXPECT_NEAR(z / n, 0.0, 0.01);
  EXPECT_NEAR(z2 / n, 1.0, 0.01);
  EXPECT_NEAR(l / n, 1.0, 0.001);
  EXPECT_NEAR(std::sqrt(l2 / n - (l / n) * (l / n)), 0.05, 0.0005);
}

}  // namespace random_test
}  // namespace clustersim
