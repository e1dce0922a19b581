#include "tools/calibrator/launch_benchmark.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "tools/calibrator/cuda_resources.h"
#include "tools/calibrator/kernels.h"
#include "tools/calibrator/sample_stats.h"

namespace clustersim::calibrate {

std::vector<LaunchMeasurement> measure_launch_overhead(int device, int64_t samples, int64_t launches_per_batch) {
  check_invariant(samples > 0 && launches_per_batch > 0, "launch benchmark: counts must be positive");
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  Stream stream;
  const cudaStream_t s = stream.get();
  using Clock = std::chrono::steady_clock;
  // Warm-up: module load and the first launch stay out of the samples.
  for (int i = 0; i < 100; ++i) launch_empty_kernel(s);
  stream.synchronize();

  std::vector<LaunchMeasurement> results;
  LaunchMeasurement eager_device{"eager_device", "events", launches_per_batch, {}};
  eager_device.seconds = time_batches(s, samples, launches_per_batch, [&](int64_t) {
    for (int64_t i = 0; i < launches_per_batch; ++i) launch_empty_kernel(s);
  });
  results.push_back(eager_device);

  LaunchMeasurement eager_host{"eager_host", "host_clock", launches_per_batch, {}};
  for (int64_t b = 0; b < samples; ++b) {
    stream.synchronize();
    const auto start = Clock::now();
    for (int64_t i = 0; i < launches_per_batch; ++i) launch_empty_kernel(s);
    eager_host.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count() /
                                 static_cast<double>(launches_per_batch));
  }
  stream.synchronize();
  results.push_back(eager_host);

  Graph graph;
  graph.begin_capture(s);
  try {
    for (int64_t i = 0; i < launches_per_batch; ++i) launch_empty_kernel(s);
  } catch (const DeviceError&) {
    Graph::abort_capture(s);
    throw;
  }
  graph.end_capture(s);
  graph.launch(s);  // upload
  stream.synchronize();
  LaunchMeasurement graph_device{"graph_device", "events", launches_per_batch, {}};
  graph_device.seconds = time_batches(s, samples, launches_per_batch, [&](int64_t) { graph.launch(s); });
  results.push_back(graph_device);

  const int64_t round_trips = std::max<int64_t>(1, launches_per_batch / 10);
  LaunchMeasurement launch_sync{"launch_sync", "host_clock", round_trips, {}};
  for (int64_t b = 0; b < samples; ++b) {
    const auto start = Clock::now();
    for (int64_t i = 0; i < round_trips; ++i) {
      launch_empty_kernel(s);
      stream.synchronize();
    }
    launch_sync.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count() /
                                  static_cast<double>(round_trips));
  }
  results.push_back(launch_sync);
  return results;
}

std::vector<std::string> launch_columns() {
  return {"test", "timer", "calls_per_batch", "samples", "median_us", "min_us", "max_us", "samples_us"};
}

std::vector<std::string> launch_row(const LaunchMeasurement& m) {
  std::vector<double> us;
  for (double s : m.seconds) us.push_back(s * 1e6);
  const SampleSummary summary = summarize(us);
  return {m.test,
          m.timer,
          std::to_string(m.calls_per_batch),
          std::to_string(summary.count),
          format_number(summary.median),
          format_number(summary.min),
          format_number(summary.max),
          join_samples(us)};
}

}  // namespace clustersim::calibrate
