#pragma once

// Timing of device work with CUDA events, as METHOD.md prescribes: warm up first, time batches of
// back-to-back calls between two events (events resolve about 0.5 us, so short calls are batched),
// repeat, and report every batch's time per call so the caller can take the median.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "tools/calibrator/options.h"

namespace clustersim::calibrate {

// How much effort one measured point gets.
struct TimingPolicy {
  double seconds_per_point = 0.25;  // total time of the timed batches of one point
  int64_t min_samples = 5;          // batches per point, at least
  int64_t max_samples = 50;         // and at most
  double batch_seconds = 1e-3;      // target length of one batch
  int64_t max_inner = 200;          // calls per batch, at most
};

TimingPolicy timing_policy(const CalibrateOptions& options);

// Enqueues `op(i)` for i = 0..calls-1 on `stream` between two events and returns the elapsed
// seconds divided by `calls` (after waiting for the stream). `op` must enqueue on `stream`.
double time_per_call(cudaStream_t stream, int64_t calls, const std::function<void(int64_t)>& op);

// Samples of one point: `samples` batches, each timed by events around `batch(b)`, divided by
// `calls_per_batch`. All batches are enqueued before the first is read back, so host overhead
// between batches does not leave the device idle. Returns seconds per call, one value per batch.
std::vector<double> time_batches(cudaStream_t stream, int64_t samples, int64_t calls_per_batch,
                                 const std::function<void(int64_t)>& batch);

// The samples of one measured point.
struct BatchTiming {
  std::string timing;           // "graph" (batches replayed from a CUDA graph) or "eager"
  int64_t calls_per_batch = 0;
  std::vector<double> seconds;  // time per call of each batch
};

// Measures `call(i)` (which must enqueue on `stream` and use call index i to rotate its buffers):
// two warm-up calls, an estimate from three timed calls, then calls per batch so that a batch
// lasts about policy.batch_seconds (at most policy.max_inner) and enough batches to fill
// policy.seconds_per_point (within [min_samples, max_samples]). With `use_graph` the batch is
// captured once into a CUDA graph and replayed (no host launch cost between calls); if capture
// fails the batch is launched eagerly and `timing` says so. Throws DeviceError from `call`.
BatchTiming measure_calls(cudaStream_t stream, const TimingPolicy& policy,
                          const std::function<void(int64_t)>& call, bool use_graph);

}  // namespace clustersim::calibrate
