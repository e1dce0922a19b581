#include "engine/simulator.h"

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

namespace {
constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t fold(uint64_t hash, uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    hash ^= (value >> (8 * i)) & 0xffU;
    hash *= kFnvPrime;
  }
  return hash;
}
}  // namespace

EventId Simulator::schedule_at(Time at, Callback callback, int32_t priority) {
  if (at < now_) {
    throw InternalError(fmt::format("event scheduled in the past: at {} ps, now {} ps", at.ps(), now_.ps()));
  }
  return queue_.push(at, priority, std::move(callback));
}

EventId Simulator::schedule_after(Duration delay, Callback callback, int32_t priority) {
  check_invariant(delay >= Duration::zero(), "Simulator::schedule_after with a negative delay");
  return queue_.push(now_ + delay, priority, std::move(callback));
}

void Simulator::execute_next() {
  Time at;
  Callback callback = queue_.pop(at);
  check_invariant(at >= now_, "Simulator: time went backwards");
  now_ = at;
  ++events_executed_;
  fingerprint_ = fold(fingerprint_, static_cast<uint64_t>(at.ps()));
  callback();
}

Time Simulator::run() {
  while (!queue_.empty()) execute_next();
  return now_;
}

Time Simulator::run(uint64_t interval, const std::function<void()>& progress) {
  if (interval == 0) throw InternalError("Simulator::run: a progress interval of 0 events");
  uint64_t next = events_executed_ + interval;
  while (!queue_.empty()) {
    execute_next();
    if (events_executed_ == next) {
      progress();
      next += interval;
    }
  }
  return now_;
}

void Simulator::run_until(Time until) {
  while (!queue_.empty() && queue_.next_time() <= until) execute_next();
  if (now_ < until) now_ = until;
}

}  // namespace clustersim
