#include "engine/event_queue.h"

#include <algorithm>
#include <bit>

#include "core/error.h"

namespace clustersim {

namespace {
// Bucket 0's binary heap: std::push_heap / pop_heap with this "less" keep the smallest order on top.
bool later_order(const auto& a, const auto& b) { return a.order > b.order; }
}  // namespace

int EventQueue::bucket_of(int64_t time_ps) const {
  const uint64_t differ = static_cast<uint64_t>(time_ps) ^ static_cast<uint64_t>(last_);
  return differ == 0 ? 0 : 64 - std::countl_zero(differ);
}

void EventQueue::insert(const Key& key) {
  const int b = bucket_of(key.time_ps);
  std::vector<Key>& bucket = buckets_[static_cast<size_t>(b)];
  bucket.push_back(key);
  if (b == 0) {
    std::push_heap(bucket.begin(), bucket.end(), later_order<Key, Key>);
  } else {
    const uint64_t bit = uint64_t{1} << (b - 1);
    int64_t& earliest = bucket_min_[static_cast<size_t>(b)];
    earliest = (occupied_ & bit) != 0 ? std::min(earliest, key.time_ps) : key.time_ps;
    occupied_ |= bit;
  }
}

EventId EventQueue::push(Time time, int32_t priority, Callback callback) {
  check_invariant(time.ps() >= last_, "EventQueue: an event pushed before the last popped one");
  check_invariant(priority >= kMinPriority && priority <= kMaxPriority, "EventQueue: priority out of range");
  check_invariant(next_sequence_ < (uint64_t{1} << 48), "EventQueue: sequence space exhausted");
  uint32_t slot = 0;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    check_invariant(slots_.size() < UINT32_MAX, "EventQueue: too many pending events");
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.callback = std::move(callback);
  s.pending = true;
  const uint64_t order = (static_cast<uint64_t>(priority - kMinPriority) << 48) | next_sequence_++;
  insert(Key{time.ps(), order, slot});
  ++keys_;
  ++live_;
  return EventId{slot, s.generation};
}

bool EventQueue::cancel(EventId id) {
  if (!id.valid() || id.slot >= slots_.size()) return false;
  Slot& s = slots_[id.slot];
  if (!s.pending || s.generation != id.generation) return false;
  s.pending = false;
  s.callback = nullptr;
  --live_;
  if (keys_ > kCompactAbove && keys_ > 2 * live_) compact();
  return true;
}

void EventQueue::compact() {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    std::vector<Key>& bucket = buckets_[b];
    std::erase_if(bucket, [this](const Key& k) {
      if (live(k)) return false;
      release(k.slot);
      return true;
    });
    if (b == 0) {
      std::make_heap(bucket.begin(), bucket.end(), later_order<Key, Key>);
    } else if (bucket.empty()) {
      occupied_ &= ~(uint64_t{1} << (b - 1));
    } else {
      int64_t earliest = INT64_MAX;
      for (const Key& k : bucket) earliest = std::min(earliest, k.time_ps);
      bucket_min_[b] = earliest;
    }
  }
  keys_ = live_;
}

void EventQueue::release(uint32_t slot) {
  ++slots_[slot].generation;
  free_slots_.push_back(slot);
}

void EventQueue::drop_cancelled_now() {
  std::vector<Key>& zero = buckets_[0];
  while (!zero.empty() && !live(zero.front())) {
    const uint32_t slot = zero.front().slot;
    std::pop_heap(zero.begin(), zero.end(), later_order<Key, Key>);
    zero.pop_back();
    --keys_;
    release(slot);
  }
}

bool EventQueue::settle() {
  std::vector<Key>& zero = buckets_[0];
  while (true) {
    drop_cancelled_now();
    if (!zero.empty()) return true;
    if (occupied_ == 0) return false;
    // The lowest non-empty bucket holds the next time: move its live keys down relative to its
    // earliest key (cancelled or not: no live key is earlier, so every key lands in a lower bucket).
    const int b = std::countr_zero(occupied_) + 1;
    occupied_ &= ~(uint64_t{1} << (b - 1));
    last_ = bucket_min_[static_cast<size_t>(b)];
    std::vector<Key>& from = buckets_[static_cast<size_t>(b)];
    for (const Key& k : from) {
      if (live(k)) {
        insert(k);
      } else {
        release(k.slot);
        --keys_;
      }
    }
    from.clear();
  }
}

Time EventQueue::next_time() {
  // A peek leaves last_ where it is, so that events may still be pushed at any time from the last
  // popped one on (Simulator::run_until stops the clock before the next event).
  std::vector<Key>& zero = buckets_[0];
  drop_cancelled_now();
  if (!zero.empty()) return Time::from_ps(last_);
  for (uint64_t rest = occupied_; rest != 0; rest &= rest - 1) {
    const std::vector<Key>& bucket = buckets_[static_cast<size_t>(std::countr_zero(rest) + 1)];
    int64_t earliest = INT64_MAX;
    for (const Key& k : bucket) {
      if (live(k)) earliest = std::min(earliest, k.time_ps);
    }
    if (earliest != INT64_MAX) return Time::from_ps(earliest);
  }
  check_invariant(false, "EventQueue::next_time on an empty queue");
  return Time::zero();
}

EventQueue::Callback EventQueue::pop(Time& time) {
  const bool any = settle();
  check_invariant(any, "EventQueue::pop on an empty queue");
  std::vector<Key>& zero = buckets_[0];
  const Key top = zero.front();
  std::pop_heap(zero.begin(), zero.end(), later_order<Key, Key>);
  zero.pop_back();
  --keys_;
  Slot& s = slots_[top.slot];
  Callback callback = std::move(s.callback);
  s.callback = nullptr;
  s.pending = false;
  release(top.slot);
  --live_;
  time = Time::from_ps(top.time_ps);
  return callback;
}

}  // namespace clustersim
