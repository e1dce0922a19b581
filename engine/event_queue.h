#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/units.h"

namespace clustersim {

// Identifies a scheduled event so that it can be cancelled. Ids are never reused within a queue.
struct EventId {
  uint32_t slot = UINT32_MAX;
  uint32_t generation = 0;
  bool valid() const { return slot != UINT32_MAX; }
  bool operator==(const EventId&) const = default;
};

// A priority queue of callbacks ordered by (time, priority, insertion sequence): events at the same
// time run lower priority values first, and equal priorities in the order they were scheduled, so a
// run is deterministic. Cancellation is O(1) amortized: the event's slot is marked and skipped when
// popped, and when cancelled keys outnumber live ones (a flow network reschedules most of its
// completions at every rate change) the heap drops them and is rebuilt, in O(heap size); the order
// of the live events does not depend on the heap's shape.
//
// Storage: a 4-ary heap of 24-byte keys (a node's four children share about one cache line, so a
// pop touches half the levels a binary heap would); priority and insertion sequence are packed into
// one 64-bit word. Callbacks live in a slot array reused through a free list (a slot's generation
// counter makes stale EventIds harmless). Priorities must lie in [kMinPriority, kMaxPriority].
class EventQueue {
 public:
  using Callback = std::function<void()>;
  static constexpr int32_t kMinPriority = -32768;
  static constexpr int32_t kMaxPriority = 32767;

  // Schedules `callback` at `time`. Returns an id for cancel(). Throws InternalError for a priority
  // outside [kMinPriority, kMaxPriority] or more than 2^48 events over the queue's life.
  EventId push(Time time, int32_t priority, Callback callback);
  // Cancels a pending event. Returns false if it already ran, was cancelled, or the id is stale.
  bool cancel(EventId id);
  // True when no live (non-cancelled) event is pending.
  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // Time of the earliest live event. Requires !empty().
  Time next_time();
  // Removes the earliest live event, stores its time in `time` and returns its callback.
  // Requires !empty().
  Callback pop(Time& time);

 private:
  struct Key {
    int64_t time_ps;
    uint64_t order;  // (priority + 32768) << 48 | insertion sequence
    uint32_t slot;
  };
  struct Slot {
    Callback callback;
    uint32_t generation = 0;
    bool pending = false;
  };
  static bool earlier(const Key& a, const Key& b) {
    return a.time_ps != b.time_ps ? a.time_ps < b.time_ps : a.order < b.order;
  }
  void sift_up(size_t index);
  void sift_down(size_t index);
  void remove_top();
  void drop_cancelled_top();
  // Removes every cancelled key, frees its slot and rebuilds the heap.
  void compact();
  static constexpr size_t kCompactAbove = 4096;  // smaller heaps just skip cancelled tops
  void release(uint32_t slot);

  std::vector<Key> heap_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_sequence_ = 0;
  size_t live_ = 0;
};

}  // namespace clustersim
