#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "core/units.h"
#include "engine/event_queue.h"

namespace clustersim {

// A discrete-event simulator: a clock and an event queue. No global state; tests build several.
//
// Events scheduled for the same time run in (priority, insertion) order, so the same inputs give
// the same event sequence. fingerprint() folds every executed event's time, in order, into a hash
// (FNV-1a), which determinism tests compare between runs (as OMNeT++'s fingerprints).
class Simulator {
 public:
  using Callback = EventQueue::Callback;

  Time now() const { return now_; }

  // Schedules `callback` (any callable, or a Callback) at absolute time `at`; it is constructed
  // where the queue keeps it. Throws InternalError if `at` is in the past.
  template <class F>
  EventId schedule_at(Time at, F&& callback, int32_t priority = 0) {
    if (at < now_) throw_in_the_past(at);
    return queue_.push(at, priority, std::forward<F>(callback));
  }
  // Schedules `callback` after `delay` (>= 0) from now. Throws InternalError for a negative delay.
  template <class F>
  EventId schedule_after(Duration delay, F&& callback, int32_t priority = 0) {
    if (delay < Duration::zero()) throw_negative_delay();
    return queue_.push(now_ + delay, priority, std::forward<F>(callback));
  }
  // Cancels a pending event; false if it already ran or was cancelled.
  bool cancel(EventId id) { return queue_.cancel(id); }

  // Runs events until none is pending. Returns the time of the last event.
  Time run();
  // Runs as run(), calling `progress` after every `interval` (> 0) events it executes: how a long
  // run reports how far it got (clustersim run's progress lines). `progress` may read the
  // simulator but not schedule or cancel events. Throws InternalError for an interval of 0.
  Time run(uint64_t interval, const std::function<void()>& progress);
  // Runs events with time <= `until`; later events stay queued and the clock stops at `until`.
  void run_until(Time until);

  uint64_t events_executed() const { return events_executed_; }
  size_t pending_events() const { return queue_.size(); }
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  void execute_next();
  [[noreturn]] void throw_in_the_past(Time at) const;
  [[noreturn]] static void throw_negative_delay();

  EventQueue queue_;
  Time now_ = Time::zero();
  uint64_t events_executed_ = 0;
  uint64_t fingerprint_ = 14695981039346656037ULL;  // FNV-1a offset basis
};

}  // namespace clustersim
