#include "engine/simulator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.h"

namespace clustersim {
namespace simulator_test {

TEST(Simulator, AdvancesClockToEachEvent) {
  Simulator sim;
  std::vector<int64_t> seen;
  sim.schedule_after(Duration::nanoseconds(5), [&] {
    seen.push_back(sim.now().ps());
    sim.schedule_after(Duration::nanoseconds(2), [&] { seen.push_back(sim.now().ps()); });
  });
  sim.schedule_after(Duration::nanoseconds(1), [&] { seen.push_back(sim.now().ps()); });
  const Time end = sim.run();
  EXPECT_EQ(seen, (std::vector<int64_t>{1000, 5000, 7000}));
  EXPECT_EQ(end.ps(), 7000);
  EXPECT_EQ(sim.events_executed(), 3U);
}

TEST(Simulator, RejectsEventsInThePast) {
  Simulator sim;
  sim.schedule_after(Duration::nanoseconds(5), [&] {
    EXPECT_THROW(sim.schedule_at(Time::zero(), [] {}), InternalError);
  });
  sim.run();
}

TEST(Simulator, RunUntilStopsAtTheBound) {
  Simulator sim;
  int ran = 0;
  sim.schedule_after(Duration::nanoseconds(1), [&] { ++ran; });
  sim.schedule_after(Duration::nanoseconds(10), [&] { ++ran; });
  sim.run_until(Time::zero() + Duration::nanoseconds(5));
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(sim.now(), Time::zero() + Duration::nanoseconds(5));
  EXPECT_EQ(sim.pending_events(), 1U);
  sim.run();
  EXPECT_EQ(ran, 2);
}

// Two simulators fed the same schedule produce the same fingerprint; a different schedule does not.
TEST(Simulator, FingerprintIsDeterministic) {
  auto build = [](int64_t shift) {
    Simulator sim;
    for (int i = 0; i < 100; ++i) {
      sim.schedule_after(Duration::picoseconds((i * 7919) % 101 + shift), [] {});
    }
    sim.run();
    return sim.fingerprint();
  };
  EXPECT_EQ(build(0), build(0));
  EXPECT_NE(build(0), build(1));
}

// The fingerprint is FNV-1a (offset basis 14695981039346656037, prime 1099511628211) over the 8
// bytes of each executed event's time in picoseconds, least significant byte first, recomputed
// here byte by byte for times of every width from 0 to 8 bytes (Simulator folds the zero bytes
// above the highest non-zero one at once).
TEST(Simulator, FingerprintIsFnv1aOverEveryEventTime) {
  std::vector<int64_t> times{0, 0, 1, 255, 256, 65535, 65536, int64_t{1} << 24, (int64_t{1} << 32) + 7,
                             (int64_t{1} << 40) - 1, int64_t{1} << 40, (int64_t{1} << 48) + 3,
                             (int64_t{1} << 56) + 255, INT64_MAX - 1, INT64_MAX};
  Simulator sim;
  for (int64_t t : times) sim.schedule_at(Time::from_ps(t), [] {});
  sim.run();
  uint64_t expected = 14695981039346656037ULL;
  for (int64_t t : times) {
    for (int i = 0; i < 8; ++i) {
      expected ^= (static_cast<uint64_t>(t) >> (8 * i)) & 0xffU;
      expected *= 1099511628211ULL;
    }
  }
  EXPECT_EQ(sim.events_executed(), times.size());
  EXPECT_EQ(sim.fingerprint(), expected);
}

}  // namespace simulator_test
}  // namespace clustersim
