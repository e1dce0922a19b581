#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/units.h"
#include "engine/event_callback.h"

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
// (the "now" set) are an array sorted by (priority, sequence), popped from the front. When it is
// empty, the lowest non-empty bucket holds the earliest keys: a bucket of level 0 holds one exact
// time and becomes the now set; one of level L > 0 is spread over levels below L relative to its
// earliest key. A bucket's keys are in insertion order (a spread fills only empty buckets, and
// later pushes append), so a level-0 bucket of one priority is already sorted, and a push at the
// current time appends unless its priority is lower than a pending one's: the now set needs no
// heap, whose comparisons a branch predictor cannot guess. A key thus moves
// at most 8 times, and once or twice when the pending events lie within 2^16 ps of each other
// (base 2 moved it once per differing bit). Buckets are chains of fixed-size blocks from one pool,
// so memory follows the keys pending, not the most any one bucket ever held. Keys are 24 bytes;
// priority and insertion sequence are packed into one 64-bit word. Callbacks (EventCallback: the
// model's small lambdas move as bytes, without an indirect call) live in slots of 64 bytes, one
// cache line each, reused through a free list (a slot's generation counter makes stale EventIds
// harmless). Slots are allocated in chunks that never move, so a popped event's callback runs
// where it lies (pop_slot, run_popped) while it schedules others.
// Cancellation marks the slot; cancelled keys are dropped when met (their pending flags are a byte
// array apart from the callbacks, read only while cancelled keys remain), and when they outnumber
// live ones (a flow network reschedules most of its completions at every rate change) every bucket
// is filtered, in O(keys). Priorities must lie in [kMinPriority, kMaxPriority].
class EventQueue {
 public:
  using Callback = EventCallback;
  static constexpr int32_t kMinPriority = -32768;
  static constexpr int32_t kMaxPriority = 32767;

  // Schedules `callback` at `time`. Returns an id for cancel(). Throws InternalError for a time
  // before the last popped event's (or negative), a priority outside [kMinPriority, kMaxPriority],
  // or more than 2^48 events over the queue's life.
  // `callback` is any callable or an EventCallback; it is constructed in its slot.
  template <class F>
  EventId push(Time time, int32_t priority, F&& callback) {
    const uint32_t slot = add_key(time, priority);
    Slot& s = slot_at(slot);
    s.callback.emplace(std::forward<F>(callback));
    return EventId{slot, s.generation};
  }
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
  // Removes the earliest live event as pop() does but leaves its callback in its slot, returning
  // the slot, for run_popped(). Requires !empty().
  uint32_t pop_slot(Time& time);
  // Runs the callback of a slot pop_slot() returned, then frees the slot (also when the callback
  // throws). The callback may push and cancel events.
  void run_popped(uint32_t slot);

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
    uint32_t size = 0;
    uint32_t next = kNoBlock;  // the bucket's next block (the pool's next free one when free)
    std::array<Key, kBlockKeys> keys;
  };
  // A bucket: a chain of blocks, appended at `tail`, which holds tail_size keys; head == kNoBlock
  // when empty. (tail_size repeats the tail block's size where an append reads it without waiting
  // for the block's cache line.)
  struct Bucket {
    uint32_t head = kNoBlock;
    uint32_t tail = kNoBlock;
    uint32_t tail_size = 0;
  };

  // push() but the callback: checks, takes a slot, marks it pending and files its key. Returns it.
  uint32_t add_key(Time time, int32_t priority);
  // Puts `key` (time >= last_) in the now set or in its bucket.
  // (A key's fields are passed apart, in registers: a Key just stored on the stack and read back
  // whole waited for the store each time.)
  void insert(int64_t time_ps, uint64_t order, uint32_t slot);
  void append(int level, int digit, int64_t time_ps, uint64_t order, uint32_t slot);
  // Makes the now set hold the earliest live key first (moving the lowest bucket down if needed).
  // Returns false when no live key is left.
  bool settle();
  // The lowest non-empty bucket as level * kDigits + digit; -1 when every bucket is empty.
  int lowest_bucket() const;
  // Empties bucket `index`, returning its first block (the chain to walk and free).
  uint32_t take(int index);
  uint32_t new_block();
  void free_block(uint32_t block);
  // Drops cancelled keys off the front of the now set.
  void drop_cancelled_now();
  // Removes every cancelled key and frees its slot.
  void compact();
  static constexpr size_t kCompactAbove = 4096;  // fewer keys: cancelled ones are just skipped
  void release(uint32_t slot);
  // Asks for a callback's cache line ahead of its pop: with many events pending the callbacks
  // outgrow the core's cache, and a pop would otherwise wait for memory.
  void prefetch_callback(uint32_t slot) const { __builtin_prefetch(&slot_at(slot)); }
  // Asks for the callbacks of the next time's keys (the first block of the lowest non-empty bucket
  // of level 0) while the current time's run: a now set formed from a bucket of level 0 otherwise
  // began with a wait for memory.
  void prefetch_next_time() const;
  bool live(const Key& key) const { return pending_[key.slot] != 0; }
  // True while some key in the buckets or the now set is cancelled (then moves check live()).
  bool any_cancelled() const { return keys_ != live_; }

  // The keys at time last_, sorted by order; those before now_next_ have been popped or dropped.
  std::vector<Key> now_;
  size_t now_next_ = 0;
  bool now_empty() const { return now_next_ == now_.size(); }
  std::array<Bucket, kLevels * kDigits> buckets_{};
  std::array<std::array<uint64_t, kDigits / 64>, kLevels> occupied_{};  // bit per non-empty bucket
  uint32_t occupied_levels_ = 0;                                         // bit per level with one
  std::vector<Block> blocks_;
  uint32_t free_blocks_ = kNoBlock;
  int64_t last_ = 0;  // the time all bucket indices are relative to (the last popped)
  size_t keys_ = 0;   // keys in all buckets and the now set, cancelled ones included
  struct alignas(64) Slot {
    Callback callback;
    uint32_t generation = 0;
  };
  static constexpr uint32_t kChunkBits = 10;  // 1,024 slots (64 KiB) a chunk
  struct Chunk {
    std::array<Slot, size_t{1} << kChunkBits> slots;
  };
  Slot& slot_at(uint32_t slot) const {
    return chunks_[slot >> kChunkBits]->slots[slot & ((uint32_t{1} << kChunkBits) - 1)];
  }
  std::vector<std::unique_ptr<Chunk>> chunks_;
  uint32_t slot_count_ = 0;  // slots ever made
  std::vector<uint8_t> pending_;  // 1 while the slot's event is scheduled and not cancelled
  std::vector<uint32_t> free_slots_;
  uint64_t next_sequence_ = 0;
  size_t live_ = 0;
};

}  // namespace clustersim
