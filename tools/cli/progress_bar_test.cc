#include "tools/cli/progress_bar.h"

#include <gtest/gtest.h>

namespace clustersim {
namespace {

// Before a window has passed: the rate since the start.
TEST(RecentRate, IsTheRateSinceTheStartWithinTheFirstWindow) {
  RecentRate r;
  EXPECT_EQ(r.rate(), 0.0);
  r.observe(1.0, 800'000);
  EXPECT_DOUBLE_EQ(r.rate(), 800'000.0);
  r.observe(4.0, 3'200'000);
  EXPECT_DOUBLE_EQ(r.rate(), 800'000.0);
}

// A slow start (0.8 M/s for 5 s, then 3 M/s): after two windows the rate is the recent 3 M/s, where
// the rate since the start would still be (4 M + 30 M) / 15 s = 2.27 M/s.
TEST(RecentRate, ForgetsASlowStartAfterTwoWindows) {
  RecentRate r;
  uint64_t done = 0;
  for (int s = 1; s <= 15; ++s) {
    done += s <= 5 ? 800'000 : 3'000'000;
    r.observe(static_cast<double>(s), done);
  }
  // Windows start at 0, 5, 10 and 15 s: the rate is over 10 .. 15 s, all at 3 M/s.
  EXPECT_DOUBLE_EQ(r.rate(), 3'000'000.0);
  r.observe(16.0, done + 3'000'000);
  EXPECT_DOUBLE_EQ(r.rate(), 3'000'000.0);  // over 10 .. 16 s
}

// No work since the window began: 0 (an ETA then shows as unknown), never a division by zero.
TEST(RecentRate, StalledWorkHasNoRate) {
  RecentRate r;
  r.observe(5.0, 0);
  r.observe(10.0, 0);
  EXPECT_EQ(r.rate(), 0.0);
}

}  // namespace
}  // namespace clustersim
