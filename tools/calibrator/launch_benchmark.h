#pragma once

// Kernel-launch overhead on one GPU, measured with an empty kernel (one block of one thread):
//   eager_device      back-to-back eager launches, device time per launch (events around a batch):
//                     the gap the device sees between dependent kernels of an eager framework
//   eager_host        host time per launch call, without waiting (the CPU cost of a launch)
//   graph_device      launches replayed from one CUDA graph, device time per kernel node
//   launch_sync       one launch then cudaStreamSynchronize, host time per round trip
// Source of the method: METHOD.md ("for many small launches, capture a graph and time its
// replays") and NOTES-device.md (≈ 1.1 us per kernel replayed from a graph through PyTorch).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/calibrator/event_timer.h"

namespace clustersim::calibrate {

struct LaunchMeasurement {
  std::string test;             // one of the names above
  std::string timer;            // "events" or "host_clock"
  int64_t calls_per_batch = 0;
  std::vector<double> seconds;  // seconds per launch, one value per batch
};

// Runs the four tests on `device`; `samples` batches of `launches_per_batch` launches each.
std::vector<LaunchMeasurement> measure_launch_overhead(int device, int64_t samples, int64_t launches_per_batch);

std::vector<std::string> launch_columns();
std::vector<std::string> launch_row(const LaunchMeasurement& m);

}  // namespace clustersim::calibrate
