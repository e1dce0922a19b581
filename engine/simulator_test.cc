#include "engine/simulator.h"

#include <gtest/gtest.h>

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

}  // namespace simulator_test
}  // namespace clustersim
