#include "engine/simulator.h"

#include <array>
#include <bit>

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

namespace {
constexpr uint64_t kFnvPrime = 1099511628211ULL;

// kFnvPrime^k for k = 0 .. 8 (mod 2^64).
constexpr std::array<uint64_t, 9> kFnvPrimePowers = [] {
  std::array<uint64_t, 9> powers{};
  powers[0] = 1;
  for (size_t k = 1; k < powers.size(); ++k) powers[k] = powers[k - 1] * kFnvPrime;
  return powers;
}();

// FNV-1a over the 8 bytes of `value`, least significant first. A zero byte only multiplies the
// hash by the prime, so the zero bytes above the highest non-zero one (three of the eight for
// times below 2^40 ps, about a second) are folded in by one multiplication by a power of it.
uint64_t fold(uint64_t hash, uint64_t value) {
  const int bytes = (71 - std::countl_zero(value)) / 8;  // up to the highest non-zero byte
  for (int i = 0; i < bytes; ++i) {
    hash ^= (value >> (8 * i)) & 0xffU;
    hash *= kFnvPrime;
  }
  return hash * kFnvPrimePowers[static_cast<size_t>(8 - bytes)];
}
}  // namespace

void Simulator::throw_in_the_past(Time at) const {
  throw InternalError(fmt::format("event scheduled in the past: at {} ps, now {} ps", at.ps(), now_.ps()));
}

void Simulator::throw_negative_delay() {
  throw InternalError("Simulator::schedule_after with a negative delay");
}

void Simulator::execute_next() {
  Time at;
  const uint32_t slot = queue_.pop_slot(at);
  check_invariant(at >= now_, "Simulator: time went backwards");
  now_ = at;
  ++events_executed_;
  fingerprint_ = fold(fingerprint_, static_cast<uint64_t>(at.ps()));
  queue_.run_popped(slot);
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
