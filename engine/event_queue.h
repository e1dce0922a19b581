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
// run is deterministic. Cancellation is O(1): the event's slot is marked and skipped when popped.
//
// Storage: a binary heap of 24-byte keys; callbacks live in a slot array reused through a free
// list (a slot's generation counter makes stale EventIds harmless).
class EventQueue {
 public:
  using Callback = std::function<void()>;

  // Schedules `callback` at `time`. Returns an id for cancel().
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
    int32_t priority;
    uint32_t slot;
    uint64_t sequence;
  };
  struct Slot {
    Callback callback;
    uint32_t generation = 0;
    bool pending = false;
  };
  // A function object rather than a function, so the heap algorithms inline the comparison.
  struct Later {
    bool operator()(const Key& a, const Key& b) const {
      if (a.time_ps != b.time_ps) return a.time_ps > b.time_ps;
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.sequence > b.sequence;
    }
  };
  void drop_cancelled_top();
  void release(uint32_t slot);

  std::vector<Key> heap_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_sequence_ = 0;
  size_t live_ = 0;
};

}  // namespace clustersim
