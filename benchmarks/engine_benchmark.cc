// Events per second of the Simulator: the cost of scheduling, ordering and running an event with
// a small callback. Target: ≥ 20 M events/s on one core with 65,536 events pending
// (BM_SteadyState/65536, as the completions of a large flow-level all-to-all).

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/units.h"
#include "engine/simulator.h"

namespace clustersim {
namespace {

// Schedules `n` events at scattered times (a fixed multiplicative hash of the index, so the heap
// does real work), then runs them all. items_per_second = events scheduled and executed.
void BM_ScheduleThenRun(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    Simulator sim;
    uint64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t when = static_cast<int64_t>((static_cast<uint64_t>(i) * 2654435761U) % 1000003U);
      sim.schedule_at(Time::from_ps(when), [&sum, i] { sum += static_cast<uint64_t>(i); });
    }
    sim.run();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_ScheduleThenRun)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

// `k` concurrent activities, each rescheduling itself after a varying delay, as ranks and flows
// do in a run: the queue holds k events in steady state. items_per_second = events executed.
void BM_SteadyState(benchmark::State& state) {
  const int64_t k = state.range(0);
  constexpr int64_t kEventsPerIteration = 1 << 20;
  for (auto _ : state) {
    struct Context {
      Simulator sim;
      int64_t remaining = kEventsPerIteration;
    } context;
    // 16 bytes, so std::function stores it without allocating (as the model's small lambdas).
    struct Activity {
      Context* context;
      uint32_t state;
      void operator()() {
        if (--context->remaining <= 0) return;
        state = state * 1664525U + 1013904223U;  // LCG step: the next delay
        context->sim.schedule_after(Duration::picoseconds(1 + (state >> 20)), *this);
      }
    };
    for (int64_t i = 0; i < k; ++i) {
      context.sim.schedule_after(Duration::picoseconds(i), Activity{&context, static_cast<uint32_t>(i)});
    }
    context.sim.run();
    benchmark::DoNotOptimize(context.sim.fingerprint());
  }
  state.SetItemsProcessed(state.iterations() * kEventsPerIteration);
}
BENCHMARK(BM_SteadyState)->Arg(16)->Arg(1024)->Arg(65536);

// Cancel and reschedule, as the network does when a flow's rate changes.
void BM_CancelAndReschedule(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    Simulator sim;
    std::vector<EventId> ids;
    ids.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ids.push_back(sim.schedule_at(Time::from_ps(1000 + i), [] {}));
    for (int64_t i = 0; i < n; ++i) {
      sim.cancel(ids[static_cast<size_t>(i)]);
      ids[static_cast<size_t>(i)] = sim.schedule_at(Time::from_ps(2000 + i), [] {});
    }
    sim.run();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_CancelAndReschedule)->Arg(1 << 16);

}  // namespace
}  // namespace clustersim

BENCHMARK_MAIN();
