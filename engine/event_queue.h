#pragma once

#include <array>
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
// run is deterministic. Times are monotone, as a discrete-event simulation's are: an event is never
// pushed before the time of the last one popped (InternalError otherwise).
//
// Storage: a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest
// path problem", J. ACM 37(2), 1990) over the 64-bit time: bucket b > 0 holds the keys whose time
// first differs from the last popped time in bit b − 1, bucket 0 the keys at exactly that time, kept
// as a binary min-heap by (priority, sequence). A pop that finds bucket 0 empty moves the lowest
// non-empty bucket's keys down by the new minimum; each key moves at most 64 times over its life
// and each move is a sequential append, where a comparison heap of n keys sifts through log n
// scattered levels per event. Keys are 24 bytes; priority and insertion sequence are packed into one
// 64-bit word. Callbacks live in a slot array reused through a free list (a slot's generation
// counter makes stale EventIds harmless). Cancellation marks the slot; cancelled keys are dropped
// when met, and when they outnumber live ones (a flow network reschedules most of its completions at
// every rate change) every bucket is filtered, in O(keys). Priorities must lie in [kMinPriority,
// kMaxPriority].
class EventQueue {
 public:
  using Callback = std::function<void()>;
  static constexpr int32_t kMinPriority = -32768;
  static constexpr int32_t kMaxPriority = 32767;

  // Schedules `callback` at `time`. Returns an id for cancel(). Throws InternalError for a time
  // before the last popped event's (or negative), a priority outside [kMinPriority, kMaxPriority],
  // or more than 2^48 events over the queue's life.
  EventId push(Time time, int32_t priority, Callback callback);
  // Cancels a pending event. Returns false if it already ran, was cancelled, or the id is stale.
  bool cancel(EventId id);
  // True when no live (non-cancelled) event is pending.
  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // Time of the earliest live event, without removing it (pushes at any time from the last popped
  // event's on stay allowed). Requires !empty().
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
  static constexpr int kBuckets = 65;
  // The bucket of a key at `time_ps` relative to last_: 0 when equal, else 1 + the index of the
  // highest bit in which they differ.
  int bucket_of(int64_t time_ps) const;
  void insert(const Key& key);
  // Makes bucket 0 hold the earliest live key at its top (moving a higher bucket down if needed).
  // Returns false when no live key is left.
  bool settle();
  // Pops cancelled keys off the top of bucket 0.
  void drop_cancelled_now();
  // Removes every cancelled key and frees its slot.
  void compact();
  static constexpr size_t kCompactAbove = 4096;  // fewer keys: cancelled ones are just skipped
  void release(uint32_t slot);
  bool live(const Key& key) const { return slots_[key.slot].pending; }

  std::array<std::vector<Key>, kBuckets> buckets_;
  // The earliest time in each bucket b > 0, cancelled keys included (a lower bound of its live
  // keys, and so of every later pop: moving a bucket down relative to it keeps the invariant).
  std::array<int64_t, kBuckets> bucket_min_{};
  uint64_t occupied_ = 0;  // bit b - 1 set when bucket b > 0 is non-empty
  int64_t last_ = 0;       // the time all bucket indices are relative to (the last popped)
  size_t keys_ = 0;        // keys in all buckets, cancelled ones included
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_sequence_ = 0;
  size_t live_ = 0;
};

}  // namespace clustersim
