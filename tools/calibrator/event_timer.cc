#include "tools/calibrator/event_timer.h"

#include "core/error.h"
#include "tools/calibrator/cuda_resources.h"
#include "tools/calibrator/sample_stats.h"

namespace clustersim::calibrate {

TimingPolicy timing_policy(const CalibrateOptions& options) {
  TimingPolicy policy;
  policy.seconds_per_point = options.seconds_per_point;
  policy.min_samples = options.min_samples;
  policy.max_samples = options.max_samples;
  return policy;
}

double time_per_call(cudaStream_t stream, int64_t calls, const std::function<void(int64_t)>& op) {
  check_invariant(calls > 0, "time_per_call: calls must be positive");
  Event start;
  Event end;
  start.record(stream);
  for (int64_t i = 0; i < calls; ++i) op(i);
  end.record(stream);
  return elapsed_seconds(start, end) / static_cast<double>(calls);
}

std::vector<double> time_batches(cudaStream_t stream, int64_t samples, int64_t calls_per_batch,
                                 const std::function<void(int64_t)>& batch) {
  check_invariant(samples > 0 && calls_per_batch > 0, "time_batches: counts must be positive");
  std::vector<Event> starts(static_cast<size_t>(samples));
  std::vector<Event> ends(static_cast<size_t>(samples));
  for (int64_t b = 0; b < samples; ++b) {
    starts[static_cast<size_t>(b)].record(stream);
    batch(b);
    ends[static_cast<size_t>(b)].record(stream);
  }
  std::vector<double> per_call;
  per_call.reserve(static_cast<size_t>(samples));
  for (int64_t b = 0; b < samples; ++b) {
    per_call.push_back(elapsed_seconds(starts[static_cast<size_t>(b)], ends[static_cast<size_t>(b)]) /
                       static_cast<double>(calls_per_batch));
  }
  return per_call;
}

BatchTiming measure_calls(cudaStream_t stream, const TimingPolicy& policy,
                          const std::function<void(int64_t)>& call, bool use_graph) {
  call(0);
  call(1);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (warm-up)");
  const double estimate = time_per_call(stream, 3, call);
  BatchTiming result;
  result.calls_per_batch = repeats_for_target(estimate, policy.batch_seconds, 1, policy.max_inner);
  const int64_t inner = result.calls_per_batch;
  const int64_t samples = repeats_for_target(estimate * static_cast<double>(inner), policy.seconds_per_point,
                                             policy.min_samples, policy.max_samples);
  Graph graph;
  result.timing = "eager";
  if (use_graph) {
    try {
      graph.begin_capture(stream);
      try {
        for (int64_t i = 0; i < inner; ++i) call(i);
      } catch (const DeviceError&) {
        Graph::abort_capture(stream);
        throw;
      }
      graph.end_capture(stream);
      graph.launch(stream);  // the first replay uploads the graph: keep it out of the samples
      check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (graph warm-up)");
      result.timing = "graph";
    } catch (const DeviceError&) {
      cudaGetLastError();
    }
  }
  if (result.timing == "graph") {
    result.seconds = time_batches(stream, samples, inner, [&](int64_t) { graph.launch(stream); });
  } else {
    result.seconds = time_batches(stream, samples, inner, [&](int64_t) {
      for (int64_t i = 0; i < inner; ++i) call(i);
    });
  }
  return result;
}

}  // namespace clustersim::calibrate
