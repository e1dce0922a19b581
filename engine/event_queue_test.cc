#include "engine/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace clustersim {
namespace event_queue_test {

Time at_ns(double ns) { return Time::zero() + Duration::nanoseconds(ns); }

TEST(EventQueue, OrdersByTimeThenPriorityThenInsertion) {
  EventQueue q;
  std::vector<int> order;
  q.push(at_ns(2), 0, [&] { order.push_back(4); });
  q.push(at_ns(1), 5, [&] { order.push_back(3); });
  q.push(at_ns(1), 0, [&] { order.push_back(1); });
  q.push(at_ns(1), 0, [&] { order.push_back(2); });
  q.push(at_ns(1), -1, [&] { order.push_back(0); });
  Time t;
  while (!q.empty()) q.pop(t)();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(EventQueue, CancelledEventsNeverRun) {
  EventQueue q;
  int ran = 0;
  EventId a = q.push(at_ns(1), 0, [&] { ran += 1; });
  q.push(at_ns(2), 0, [&] { ran += 10; });
  EXPECT_TRUE(q.cancel(a));
  EXPECT_FALSE(q.cancel(a));
  EXPECT_EQ(q.size(), 1U);
  Time t;
  q.pop(t)();
  EXPECT_EQ(ran, 10);
  EXPECT_EQ(t, at_ns(2));
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, StaleIdsDoNotCancelReusedSlots) {
  EventQueue q;
  int ran = 0;
  EventId a = q.push(at_ns(1), 0, [&] { ran += 1; });
  Time t;
  q.pop(t)();
  EventId b = q.push(at_ns(3), 0, [&] { ran += 2; });
  EXPECT_EQ(a.slot, b.slot);  // the slot was reused
  EXPECT_FALSE(q.cancel(a));  // ... but the old id is stale
  q.pop(t)();
  EXPECT_EQ(ran, 3);
}

// Cancelling most of a large queue compacts its heap (engine/event_queue.h); the survivors still run
// in (time, priority, insertion) order, stale ids of the dropped events stay harmless, and events
// pushed afterwards interleave correctly.
TEST(EventQueue, CompactionKeepsTheOrderOfTheLiveEvents) {
  EventQueue q;
  constexpr int kEvents = 20000;
  std::vector<EventId> ids;
  std::vector<int> order;
  for (int i = 0; i < kEvents; ++i) {
    // Times in a scrambled order with many ties, priorities alternating.
    const double ns = static_cast<double>((i * 7919) % 997);
    ids.push_back(q.push(at_ns(ns), i % 2, [&order, i] { order.push_back(i); }));
  }
  for (int i = 0; i < kEvents; ++i) {
    if (i % 10 != 0) {
      EXPECT_TRUE(q.cancel(ids[static_cast<size_t>(i)]));
    }
  }
  EXPECT_EQ(q.size(), static_cast<size_t>(kEvents / 10));
  for (int i = 0; i < kEvents; ++i) {
    if (i % 10 != 0) {
      EXPECT_FALSE(q.cancel(ids[static_cast<size_t>(i)]));  // already cancelled
    }
  }
  q.push(at_ns(500.5), 0, [&order] { order.push_back(-1); });
  Time t;
  Time last = Time::zero();
  std::vector<int> expected;
  for (int i = 0; i < kEvents; i += 10) expected.push_back(i);
  std::sort(expected.begin(), expected.end(), [](int a, int b) {
    const int ta = (a * 7919) % 997, tb = (b * 7919) % 997;
    if (ta != tb) return ta < tb;
    if (a % 2 != b % 2) return a % 2 < b % 2;
    return a < b;
  });
  expected.insert(std::find_if(expected.begin(), expected.end(), [](int i) { return (i * 7919) % 997 > 500; }), -1);
  while (!q.empty()) {
    q.pop(t)();
    EXPECT_GE(t, last);
    last = t;
  }
  EXPECT_EQ(order, expected);
}

}  // namespace event_queue_test
}  // namespace clustersim
