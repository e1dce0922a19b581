#include "engine/event_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace clustersim {
namespace {

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

}  // namespace
}  // namespace clustersim
