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
  heap_.push_back(Key{time.ps(), priority, slot, next_sequence_++});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
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
  return true;
}

void EventQueue::release(uint32_t slot) {
  ++slots_[slot].generation;
  free_slots_.push_back(slot);
}

void EventQueue::drop_cancelled_top() {
  while (!heap_.empty() && !slots_[heap_.front().slot].pending) {
    const uint32_t slot = heap_.front().slot;
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
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
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  heap_.pop_back();
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
