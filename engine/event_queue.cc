#include "engine/event_queue.h"

#include <algorithm>

#include "core/error.h"

namespace clustersim {

EventId EventQueue::push(Time time, int32_t priority, Callback callback) {
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
  check_invariant(priority >= kMinPriority && priority <= kMaxPriority, "EventQueue: priority out of range");
  check_invariant(next_sequence_ < (uint64_t{1} << 48), "EventQueue: sequence space exhausted");
  const uint64_t order = (static_cast<uint64_t>(priority - kMinPriority) << 48) | next_sequence_++;
  heap_.push_back(Key{time.ps(), order, slot});
  sift_up(heap_.size() - 1);
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
  if (heap_.size() > kCompactAbove && heap_.size() > 2 * live_) compact();
  return true;
}

void EventQueue::compact() {
  std::erase_if(heap_, [this](const Key& k) {
    if (slots_[k.slot].pending) return false;
    release(k.slot);
    return true;
  });
  for (size_t i = heap_.size() / 4 + 1; i-- > 0;) {
    if (i < heap_.size()) sift_down(i);
  }
}

// 4-ary heap: the children of node i are 4i + 1 .. 4i + 4.
void EventQueue::sift_up(size_t index) {
  const Key key = heap_[index];
  while (index > 0) {
    const size_t parent = (index - 1) / 4;
    if (!earlier(key, heap_[parent])) break;
    heap_[index] = heap_[parent];
    index = parent;
  }
  heap_[index] = key;
}

void EventQueue::sift_down(size_t index) {
  const size_t n = heap_.size();
  const Key key = heap_[index];
  while (true) {
    const size_t first = 4 * index + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t last = std::min(first + 4, n);
    for (size_t c = first + 1; c < last; ++c) {
      if (earlier(heap_[c], heap_[best])) best = c;
    }
    if (!earlier(heap_[best], key)) break;
    heap_[index] = heap_[best];
    index = best;
  }
  heap_[index] = key;
}

void EventQueue::remove_top() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
}

void EventQueue::release(uint32_t slot) {
  ++slots_[slot].generation;
  free_slots_.push_back(slot);
}

void EventQueue::drop_cancelled_top() {
  while (!heap_.empty() && !slots_[heap_.front().slot].pending) {
    const uint32_t slot = heap_.front().slot;
    remove_top();
    release(slot);
  }
}

Time EventQueue::next_time() {
  drop_cancelled_top();
  check_invariant(!heap_.empty(), "EventQueue::next_time on an empty queue");
  return Time::from_ps(heap_.front().time_ps);
}

EventQueue::Callback EventQueue::pop(Time& time) {
  drop_cancelled_top();
  check_invariant(!heap_.empty(), "EventQueue::pop on an empty queue");
  const Key top = heap_.front();
  remove_top();
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
