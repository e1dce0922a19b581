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
// path problem", J. ACM 37(2), 1990, §3's multi-level buckets) over the 64-bit time in base 256:
// the time is read as 8 digits of 8 bits, and a key whose time first differs from the last popped
// time (last_) in digit L lies in bucket (L, its digit L), one of 8 × 256. The keys at exactly last_
// form a binary min-heap by (priority, sequence). When that heap is empty, the lowest non-empty
// bucket holds the earliest keys: a bucket of level 0 holds one exact time and becomes the heap;
// one of level L > 0 is spread over levels below L relative to its earliest key. A key thus moves
// at most 8 times, and once or twice when the pending events lie within 2^16 ps of each other
// (base 2 moved it once per differing bit). Buckets are chains of fixed-size blocks from one pool,
// so memory follows the keys pending, not the most any one bucket ever held. Keys are 24 bytes;
// priority and insertion sequence are packed into one 64-bit word. Callbacks live in a slot array
// reused through a free list (a slot's generation counter makes stale EventIds harmless).
// Cancellation marks the slot; cancelled keys are dropped when met (their pending flags are a byte
// array apart from the callbacks, read only while cancelled keys remain), and when they outnumber
// live ones (a flow network reschedules most of its completions at every rate change) every bucket
// is filtered, in O(keys). Priorities must lie in [kMinPriority, kMaxPriority].
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
  static constexpr int kDigitBits = 8;
  static constexpr int kDigits = 1 << kDigitBits;
  static constexpr int kLevels = 64 / kDigitBits;
  static constexpr uint32_t kNoBlock = UINT32_MAX;
  static constexpr uint32_t kBlockKeys = 20;  // 20 × 24 + 8 bytes: a 488-byte block
  struct Block {
    std::array<Key, kBlockKeys> keys;
    uint32_t size = 0;
    uint32_t next = kNoBlock;  // the bucket's next block (the pool's next free one when free)
  };
  // A bucket: a chain of blocks, appended at `tail`; head == kNoBlock when empty.
  struct Bucket {
    uint32_t head = kNoBlock;
    uint32_t tail = kNoBlock;
  };

  // Puts `key` (time >= last_) in the heap of keys at last_ or in its bucket.
  void insert(const Key& key);
  void append(int level, int digit, const Key& key);
  // Makes the heap hold the earliest live key at its top (moving the lowest bucket down if needed).
  // Returns false when no live key is left.
  bool settle();
  // The lowest non-empty bucket as level * kDigits + digit; -1 when every bucket is empty.
  int lowest_bucket() const;
  // Empties bucket `index`, returning its first block (the chain to walk and free).
  uint32_t take(int index);
  uint32_t new_block();
  void free_block(uint32_t block);
  // Pops cancelled keys off the top of the heap.
  void drop_cancelled_now();
  // Removes every cancelled key and frees its slot.
  void compact();
  static constexpr size_t kCompactAbove = 4096;  // fewer keys: cancelled ones are just skipped
  void release(uint32_t slot);
  // Asks for a callback's cache line ahead of its pop: with many events pending the callbacks
  // outgrow the core's cache, and a pop would otherwise wait for memory.
  void prefetch_callback(uint32_t slot) const { __builtin_prefetch(&slots_[slot]); }
  bool live(const Key& key) const { return pending_[key.slot] != 0; }
  // True while some key in the buckets or the heap is cancelled (then moves check live()).
  bool any_cancelled() const { return keys_ != live_; }

  std::vector<Key> now_heap_;  // keys at time last_, a binary min-heap by order
  std::array<Bucket, kLevels * kDigits> buckets_{};
  std::array<std::array<uint64_t, kDigits / 64>, kLevels> occupied_{};  // bit per non-empty bucket
  uint32_t occupied_levels_ = 0;                                         // bit per level with one
  std::vector<Block> blocks_;
  uint32_t free_blocks_ = kNoBlock;
  int64_t last_ = 0;  // the time all bucket indices are relative to (the last popped)
  size_t keys_ = 0;   // keys in all buckets and the heap, cancelled ones included
  struct Slot {
    Callback callback;
    uint32_t generation = 0;
  };
  std::vector<Slot> slots_;
  std::vector<uint8_t> pending_;  // 1 while the slot's event is scheduled and not cancelled
  std::vector<uint32_t> free_slots_;
  uint64_t next_sequence_ = 0;
  size_t live_ = 0;
};

}  // namespace clustersim
