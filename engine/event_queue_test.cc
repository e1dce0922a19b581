#include "engine/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"

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

// Interleaved pushes (at or after the last popped time), cancellations and pops, against the order
// (time, priority, insertion) computed by sorting: the radix heap moves keys between buckets, and
// this checks it never reorders them. Times spread over many bit widths (1 ps to 2^40 ps ahead).
TEST(EventQueue, InterleavedPushesPopsAndCancelsFollowTheSortedOrder) {
  EventQueue q;
  uint64_t lcg = 12345;
  auto next = [&lcg] {
    lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return lcg >> 33;
  };
  struct Pending {
    int64_t time;
    int32_t priority;
    int sequence;
    EventId id;
  };
  std::vector<Pending> pending;
  std::vector<int> ran;
  int sequence = 0;
  int64_t now = 0;
  for (int step = 0; step < 20000; ++step) {
    const uint64_t r = next() % 10;
    if (r < 5 || pending.empty()) {
      const int64_t ahead = static_cast<int64_t>(next() % 4 == 0 ? 0 : next() % (uint64_t{1} << (next() % 41)));
      const int32_t priority = static_cast<int32_t>(next() % 3) - 1;
      const int id = sequence++;
      const EventId e = q.push(Time::from_ps(now + ahead), priority, [&ran, id] { ran.push_back(id); });
      pending.push_back({now + ahead, priority, id, e});
    } else if (r < 7) {
      const size_t victim = next() % pending.size();
      EXPECT_TRUE(q.cancel(pending[victim].id));
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(victim));
    } else {
      const auto first = std::min_element(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
        return std::tie(a.time, a.priority, a.sequence) < std::tie(b.time, b.priority, b.sequence);
      });
      EXPECT_EQ(q.next_time(), Time::from_ps(first->time));
      Time t;
      q.pop(t)();
      ASSERT_FALSE(ran.empty());
      EXPECT_EQ(ran.back(), first->sequence);
      EXPECT_EQ(t, Time::from_ps(first->time));
      now = first->time;
      pending.erase(first);
    }
    ASSERT_EQ(q.size(), pending.size());
  }
}

TEST(EventQueue, PushesBeforeTheLastPoppedTimeAreRefused) {
  EventQueue q;
  q.push(at_ns(5), 0, [] {});
  Time t;
  q.pop(t)();
  EXPECT_NO_THROW(q.push(at_ns(5), 0, [] {}));  // the same time is fine
  EXPECT_THROW(q.push(at_ns(4), 0, [] {}), InternalError);
  // A peek does not move the floor: after next_time() reports 9 ns, 6 ns may still be pushed.
  EventQueue peek;
  peek.push(at_ns(9), 0, [] {});
  EXPECT_EQ(peek.next_time(), at_ns(9));
  EXPECT_NO_THROW(peek.push(at_ns(6), 0, [] {}));
  EXPECT_EQ(peek.next_time(), at_ns(6));
}

// Times in every one of the radix heap's 8 levels of base-256 digits (engine/event_queue.h), on
// both sides of digit boundaries and up to the largest time, with ties of time and priority, one
// cancelled, and two pushed after some pops (at the time just popped, at a priority that runs
// before the rest of that time, and 1 ps later): every event runs in (time, priority, insertion)
// order, and next_time() names the time of the next pop.
TEST(EventQueue, OrderHoldsAcrossEveryDigitLevel) {
  std::vector<int64_t> times;
  for (int level = 0; level < 8; ++level) {
    const int64_t digit = int64_t{1} << (8 * level);
    const int64_t top = (level == 7 ? 127 : 255) * digit;  // the highest digit below 2^63
    for (int64_t t : {digit - 1, digit, digit + 1, 3 * digit, top - 1, top}) times.push_back(t);
  }
  times.push_back(INT64_MAX - 256);
  times.push_back(INT64_MAX);
  struct Event {
    int64_t time;
    int32_t priority;
    int sequence;
    bool operator<(const Event& o) const {
      return std::tie(time, priority, sequence) < std::tie(o.time, o.priority, o.sequence);
    }
  };
  EventQueue q;
  std::vector<Event> pending;
  std::vector<Event> ran;
  int sequence = 0;
  auto push = [&](int64_t time, int32_t priority) {
    const Event e{time, priority, sequence++};
    pending.push_back(e);
    return q.push(Time::from_ps(time), priority, [&ran, e] { ran.push_back(e); });
  };
  for (size_t i = 0; i < times.size(); ++i) {  // a scrambled order: 7 is prime to the count
    const int64_t t = times[(i * 7) % times.size()];
    push(t, 0);
    push(t, -1);
    push(t, 0);
  }
  ASSERT_NE(times.size() % 7, 0U);
  EXPECT_TRUE(q.cancel(push(times[5], 0)));
  pending.pop_back();
  std::sort(pending.begin(), pending.end());
  std::vector<Event> expected(pending.begin(), pending.begin() + 10);
  Time t;
  for (int i = 0; i < 10; ++i) q.pop(t)();
  pending.erase(pending.begin(), pending.begin() + 10);
  push(t.ps(), -2);
  push(t.ps() + 1, 0);
  std::sort(pending.begin(), pending.end());
  expected.insert(expected.end(), pending.begin(), pending.end());
  while (!q.empty()) {
    const Time next = q.next_time();
    q.pop(t)();
    EXPECT_EQ(t, next);
    EXPECT_EQ(t.ps(), ran.back().time);
  }
  ASSERT_EQ(ran.size(), expected.size());
  for (size_t i = 0; i < ran.size(); ++i) {
    EXPECT_EQ(ran[i].sequence, expected[i].sequence) << "event " << i << " at " << expected[i].time << " ps";
  }
}

// A popped callback runs where its slot lies (pop_slot, run_popped) while it pushes thousands of
// events (new slot chunks): its captures stay readable after the pushes, and its slot is reused
// only once it has returned.
TEST(EventQueue, ACallbackRunsInPlaceWhileItPushesThousandsOfEvents) {
  EventQueue q;
  std::vector<int> ran;
  const std::string name = "a capture longer than any small-string buffer";
  std::string seen;
  q.push(at_ns(1), 0, [&q, &ran, &seen, name] {
    for (int i = 0; i < 5000; ++i) q.push(at_ns(2), 0, [&ran, i] { ran.push_back(i); });
    seen = name;  // read after the pushes
  });
  Time t;
  const uint32_t slot = q.pop_slot(t);
  EXPECT_EQ(t, at_ns(1));
  q.run_popped(slot);
  EXPECT_EQ(seen, name);
  EXPECT_EQ(q.size(), 5000U);
  while (!q.empty()) q.run_popped(q.pop_slot(t));
  ASSERT_EQ(ran.size(), 5000U);
  for (int i = 0; i < 5000; ++i) EXPECT_EQ(ran[static_cast<size_t>(i)], i);
}

// Pushes at the current time while its events run: a higher priority (lower value) than pending
// ones runs before them, an equal or lower one after them, in insertion order.
TEST(EventQueue, PushesAtTheCurrentTimeTakeTheirPlaceAmongItsPendingEvents) {
  EventQueue q;
  std::vector<int> order;
  q.push(at_ns(5), 0, [&] {
    order.push_back(0);
    q.push(at_ns(5), -3, [&] { order.push_back(1); });
    q.push(at_ns(5), 7, [&] { order.push_back(5); });
    q.push(at_ns(5), 0, [&] { order.push_back(4); });
    q.push(at_ns(5), -3, [&] { order.push_back(2); });
  });
  q.push(at_ns(5), 0, [&] { order.push_back(3); });
  q.push(at_ns(6), -10, [&] { order.push_back(6); });
  Time t;
  while (!q.empty()) q.pop(t)();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
}

// Compaction while the events of the current time are half popped keeps the rest in order.
TEST(EventQueue, CompactionInTheMiddleOfATimeKeepsItsOrder) {
  EventQueue q;
  std::vector<int> ran;
  std::vector<EventId> ids;
  constexpr int kEvents = 10000;
  for (int i = 0; i < kEvents; ++i) ids.push_back(q.push(at_ns(3), i % 3, [&ran, i] { ran.push_back(i); }));
  Time t;
  for (int i = 0; i < 100; ++i) q.pop(t)();
  std::vector<int> expected(ran);
  for (int p = 0; p < 3; ++p) {
    for (int i = 0; i < kEvents; ++i) {
      if (i % 3 != p || std::find(ran.begin(), ran.end(), i) != ran.end()) continue;
      if (i % 7 == 0) {
        expected.push_back(i);
      } else {
        EXPECT_TRUE(q.cancel(ids[static_cast<size_t>(i)]));  // the later cancels compact
      }
    }
  }
  while (!q.empty()) q.pop(t)();
  EXPECT_EQ(ran, expected);
}

// A callback that throws still frees its slot: the queue goes on, and the slot is reused.
TEST(EventQueue, ACallbackThatThrowsFreesItsSlot) {
  EventQueue q;
  q.push(at_ns(1), 0, [] { throw std::runtime_error("model error"); });
  Time t;
  const uint32_t slot = q.pop_slot(t);
  EXPECT_THROW(q.run_popped(slot), std::runtime_error);
  int ran = 0;
  const EventId next = q.push(at_ns(2), 0, [&ran] { ++ran; });
  EXPECT_EQ(next.slot, slot);
  q.pop(t)();
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(q.empty());
}

// Callbacks still pending (or cancelled and not yet dropped) when the queue goes are destroyed.
TEST(EventQueue, PendingAndCancelledCallbacksAreDestroyedWithTheQueue) {
  auto owned = std::make_shared<int>(0);
  {
    EventQueue q;
    q.push(at_ns(1), 0, [owned] {});
    const EventId id = q.push(at_ns(2), 0, [owned] {});
    EXPECT_EQ(owned.use_count(), 3);
    EXPECT_TRUE(q.cancel(id));
    EXPECT_EQ(owned.use_count(), 2);  // a cancelled callback goes at once
  }
  EXPECT_EQ(owned.use_count(), 1);
}

}  // namespace event_queue_test
}  // namespace clustersim
