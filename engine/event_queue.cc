#include "engine/event_queue.h"

#include <algorithm>
#include <bit>

#include "core/error.h"

namespace clustersim {

namespace {
// The order of the now set (a function object, which the algorithms inline).
constexpr auto earlier_order = [](const auto& a, const auto& b) { return a.order < b.order; };
}  // namespace

uint32_t EventQueue::new_block() {
  if (free_blocks_ != kNoBlock) {
    const uint32_t block = free_blocks_;
    free_blocks_ = blocks_[block].next;
    blocks_[block].size = 0;
    blocks_[block].next = kNoBlock;
    return block;
  }
  check_invariant(blocks_.size() < kNoBlock, "EventQueue: too many pending events");
  blocks_.emplace_back();
  return static_cast<uint32_t>(blocks_.size() - 1);
}

void EventQueue::free_block(uint32_t block) {
  blocks_[block].next = free_blocks_;
  free_blocks_ = block;
}

void EventQueue::append(int level, int digit, int64_t time_ps, uint64_t order, uint32_t slot) {
  Bucket& bucket = buckets_[static_cast<size_t>(level * kDigits + digit)];
  if (bucket.tail == kNoBlock) {
    const uint32_t block = new_block();
    bucket.head = block;
    bucket.tail = block;
    bucket.tail_size = 0;
    occupied_[static_cast<size_t>(level)][static_cast<size_t>(digit / 64)] |= uint64_t{1} << (digit % 64);
    occupied_levels_ |= uint32_t{1} << level;
  } else if (bucket.tail_size == kBlockKeys) {
    const uint32_t block = new_block();
    blocks_[bucket.tail].next = block;
    bucket.tail = block;
    bucket.tail_size = 0;
  }
  Block& tail = blocks_[bucket.tail];
  Key& key = tail.keys[bucket.tail_size];
  key.time_ps = time_ps;
  key.order = order;
  key.slot = slot;
  tail.size = ++bucket.tail_size;
}

void EventQueue::insert(int64_t time_ps, uint64_t order, uint32_t slot) {
  const uint64_t differ = static_cast<uint64_t>(time_ps) ^ static_cast<uint64_t>(last_);
  if (differ == 0) {
    if (now_empty()) {
      now_.clear();
      now_next_ = 0;
    }
    const Key key{time_ps, order, slot};
    if (now_.empty() || now_.back().order < order) {
      now_.push_back(key);  // the usual case: insertion sequences only grow
    } else {
      // A lower priority than a pending key's at this time: its place among those not yet popped.
      const auto at = std::upper_bound(now_.begin() + static_cast<std::ptrdiff_t>(now_next_), now_.end(), key, earlier_order);
      now_.insert(at, key);
    }
    return;
  }
  const int level = (63 - std::countl_zero(differ)) / kDigitBits;
  const int digit = static_cast<int>((static_cast<uint64_t>(time_ps) >> (level * kDigitBits)) & (kDigits - 1));
  append(level, digit, time_ps, order, slot);
}

int EventQueue::lowest_bucket() const {
  if (occupied_levels_ == 0) return -1;
  const int level = std::countr_zero(occupied_levels_);
  const auto& words = occupied_[static_cast<size_t>(level)];
  for (size_t w = 0; w < words.size(); ++w) {
    if (words[w] != 0) return level * kDigits + static_cast<int>(w) * 64 + std::countr_zero(words[w]);
  }
  return -1;  // unreachable: occupied_levels_ marks only levels with a non-empty bucket
}

uint32_t EventQueue::take(int index) {
  const int level = index / kDigits;
  const int digit = index % kDigits;
  auto& words = occupied_[static_cast<size_t>(level)];
  words[static_cast<size_t>(digit / 64)] &= ~(uint64_t{1} << (digit % 64));
  static_assert(kDigits / 64 == 4);
  if ((words[0] | words[1] | words[2] | words[3]) == 0) {
    occupied_levels_ &= ~(uint32_t{1} << level);
  }
  Bucket& bucket = buckets_[static_cast<size_t>(index)];
  const uint32_t head = bucket.head;
  bucket = Bucket{};
  return head;
}

uint32_t EventQueue::add_key(Time time, int32_t priority) {
  check_invariant(time.ps() >= last_, "EventQueue: an event pushed before the last popped one");
  check_invariant(priority >= kMinPriority && priority <= kMaxPriority, "EventQueue: priority out of range");
  check_invariant(next_sequence_ < (uint64_t{1} << 48), "EventQueue: sequence space exhausted");
  uint32_t slot = 0;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    check_invariant(slot_count_ < UINT32_MAX, "EventQueue: too many pending events");
    slot = slot_count_++;
    if ((slot >> kChunkBits) == chunks_.size()) chunks_.push_back(std::make_unique<Chunk>());
    pending_.push_back(0);
  }
  pending_[slot] = 1;
  const uint64_t order = (static_cast<uint64_t>(priority - kMinPriority) << 48) | next_sequence_++;
  insert(time.ps(), order, slot);
  ++keys_;
  ++live_;
  return slot;
}

bool EventQueue::cancel(EventId id) {
  if (!id.valid() || id.slot >= slot_count_) return false;
  Slot& s = slot_at(id.slot);
  if (pending_[id.slot] == 0 || s.generation != id.generation) return false;
  pending_[id.slot] = 0;
  s.callback.reset();
  --live_;
  if (keys_ > kCompactAbove && keys_ > 2 * live_) compact();
  return true;
}

void EventQueue::compact() {
  now_.erase(now_.begin(), now_.begin() + static_cast<std::ptrdiff_t>(now_next_));
  now_next_ = 0;
  std::erase_if(now_, [this](const Key& k) {
    if (live(k)) return false;
    release(k.slot);
    return true;
  });
  std::vector<int> indices;
  for (int level = 0; level < kLevels; ++level) {
    for (int digit = 0; digit < kDigits; ++digit) {
      if (buckets_[static_cast<size_t>(level * kDigits + digit)].head != kNoBlock) {
        indices.push_back(level * kDigits + digit);
      }
    }
  }
  std::vector<Key> survivors;
  for (const int index : indices) {
    survivors.clear();
    for (uint32_t block = take(index); block != kNoBlock;) {
      const Block& b = blocks_[block];
      for (uint32_t i = 0; i < b.size; ++i) {
        if (live(b.keys[i])) {
          survivors.push_back(b.keys[i]);
        } else {
          release(b.keys[i].slot);
        }
      }
      const uint32_t next = b.next;
      free_block(block);
      block = next;
    }
    for (const Key& k : survivors) append(index / kDigits, index % kDigits, k.time_ps, k.order, k.slot);
  }
  keys_ = live_;
}

void EventQueue::release(uint32_t slot) {
  ++slot_at(slot).generation;
  free_slots_.push_back(slot);
}

void EventQueue::drop_cancelled_now() {
  if (!any_cancelled()) return;  // the flags are read only while cancelled keys remain
  while (!now_empty() && !live(now_[now_next_])) {
    --keys_;
    release(now_[now_next_++].slot);
  }
}

bool EventQueue::settle() {
  while (true) {
    drop_cancelled_now();
    if (!now_empty()) return true;
    now_.clear();
    now_next_ = 0;
    const int index = lowest_bucket();
    if (index < 0) return false;
    const bool check = any_cancelled();
    const uint32_t chain = take(index);
    if (index >= kDigits) {
      // The earliest live key of a higher bucket becomes last_; no live key is earlier, so every
      // live key of the bucket lands in a lower one (or the now set).
      // When every key is cancelled last_ stays: the keys are only dropped.
      bool found = false;  // a flag, not a sentinel: INT64_MAX is a valid time
      int64_t earliest = INT64_MAX;
      for (uint32_t block = chain; block != kNoBlock; block = blocks_[block].next) {
        const Block& b = blocks_[block];
        for (uint32_t i = 0; i < b.size; ++i) {
          if (!check || live(b.keys[i])) {
            found = true;
            earliest = std::min(earliest, b.keys[i].time_ps);
          }
        }
      }
      if (found) last_ = earliest;
    } else {
      // A bucket of level 0 holds exactly one time, the last one's with its lowest digit replaced.
      last_ = (last_ & ~int64_t{kDigits - 1}) | index;
    }
    for (uint32_t block = chain; block != kNoBlock;) {
      for (uint32_t i = 0; i < blocks_[block].size; ++i) {
        const Key k = blocks_[block].keys[i];  // a copy: append() may grow blocks_
        if (check && !live(k)) {
          release(k.slot);
          --keys_;
        } else {
          if (k.time_ps == last_) {
            // Runs within the next few events. (Asking for every key of a level-1 bucket, thousands,
            // filled the core's miss buffers and stalled the spread.)
            prefetch_callback(k.slot);
            now_.push_back(k);
          } else {
            insert(k.time_ps, k.order, k.slot);
          }
        }
      }
      const uint32_t next = blocks_[block].next;
      free_block(block);
      block = next;
    }
    // In insertion order; sorted already unless the time's keys have several priorities.
    if (!std::is_sorted(now_.begin(), now_.end(), earlier_order)) std::sort(now_.begin(), now_.end(), earlier_order);
    if (index < kDigits) prefetch_next_time();
  }
}

void EventQueue::prefetch_next_time() const {
  const auto& words = occupied_[0];
  for (size_t w = 0; w < words.size(); ++w) {
    if (words[w] == 0) continue;
    const size_t next = w * 64 + static_cast<size_t>(std::countr_zero(words[w]));
    const uint32_t block = buckets_[next].head;
    const Block& b = blocks_[block];
    for (uint32_t i = 0; i < b.size; ++i) prefetch_callback(b.keys[i].slot);
    return;
  }
}

Time EventQueue::next_time() {
  // A peek leaves last_ where it is, so that events may still be pushed at any time from the last
  // popped one on (Simulator::run_until stops the clock before the next event). Buckets are
  // visited in time order: lower levels first, then lower digits.
  drop_cancelled_now();
  if (!now_empty()) return Time::from_ps(last_);
  for (uint32_t levels = occupied_levels_; levels != 0; levels &= levels - 1) {
    const int level = std::countr_zero(levels);
    const auto& words = occupied_[static_cast<size_t>(level)];
    for (size_t w = 0; w < words.size(); ++w) {
      for (uint64_t rest = words[w]; rest != 0; rest &= rest - 1) {
        const size_t index = static_cast<size_t>(level * kDigits) + w * 64 + static_cast<size_t>(std::countr_zero(rest));
        bool found = false;  // a flag, not a sentinel: INT64_MAX is a valid time
        int64_t earliest = INT64_MAX;
        for (uint32_t block = buckets_[index].head; block != kNoBlock; block = blocks_[block].next) {
          const Block& b = blocks_[block];
          for (uint32_t i = 0; i < b.size; ++i) {
            if (live(b.keys[i])) {
              found = true;
              earliest = std::min(earliest, b.keys[i].time_ps);
            }
          }
        }
        if (found) return Time::from_ps(earliest);
      }
    }
  }
  check_invariant(false, "EventQueue::next_time on an empty queue");
  return Time::zero();
}

uint32_t EventQueue::pop_slot(Time& time) {
  const bool any = settle();
  check_invariant(any, "EventQueue::pop on an empty queue");
  const Key top = now_[now_next_++];
  --keys_;
  pending_[top.slot] = 0;
  --live_;
  time = Time::from_ps(top.time_ps);
  return top.slot;
}

void EventQueue::run_popped(uint32_t slot) {
  struct Release {  // frees the slot after the callback, also when it throws
    EventQueue& queue;
    uint32_t slot;
    ~Release() {
      queue.slot_at(slot).callback.reset();
      queue.release(slot);
    }
  } release{*this, slot};
  slot_at(slot).callback();
}

EventQueue::Callback EventQueue::pop(Time& time) {
  const uint32_t slot = pop_slot(time);
  Callback callback = std::move(slot_at(slot).callback);
  release(slot);
  return callback;
}

}  // namespace clustersim
