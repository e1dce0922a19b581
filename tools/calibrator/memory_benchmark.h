#pragma once

// Memory bandwidth of one GPU: device-to-device copy, an elementwise kernel, and host<->device
// copies from pinned and pageable host memory.
//
// Bytes moved, the numerator of every bandwidth (METHOD.md: count each byte read and written):
//   d2d_copy        cudaMemcpyAsync device→device of S bytes: reads S, writes S → 2·S
//   axpy_fp32       y = a·x + y over S bytes per vector: reads x and y, writes y → 3·S
//   h2d_* / d2h_*   S bytes over PCIe/C2C (each byte crosses the link once) → S
// Device tests rotate among buffers covering at least 3× L2 (so small sizes are not served from
// L2) and replay batches from a CUDA graph; host tests use eager copies, pageable ones timed with
// the host clock around synchronous cudaMemcpy (the driver stages pageable memory itself).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tools/calibrator/event_timer.h"
#include "tools/calibrator/raw_table.h"

namespace clustersim::calibrate {

enum class MemoryTest { kDeviceCopy, kAxpy, kHostToDevicePinned, kDeviceToHostPinned, kHostToDevicePageable,
                        kDeviceToHostPageable };

// All six in output order.
std::vector<MemoryTest> all_memory_tests();

// "d2d_copy", "axpy_fp32", "h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable".
std::string_view memory_test_name(MemoryTest test);

// Bytes moved by one operation on `size_bytes` (see the table above).
int64_t memory_bytes_moved(MemoryTest test, int64_t size_bytes);

struct MemoryMeasurement {
  MemoryTest test = MemoryTest::kDeviceCopy;
  int64_t size_bytes = 0;
  std::string timing;  // "graph", "eager" (events) or "host_clock"
  int64_t calls_per_batch = 0;
  std::vector<double> seconds;  // time per operation of each batch
  std::string status;           // "ok" or "out_of_memory"
};

class MemoryBenchmark {
 public:
  // Uses `device`; host buffers are allocated lazily up to `max_host_bytes`.
  MemoryBenchmark(int device, TimingPolicy policy, int64_t max_host_bytes);
  ~MemoryBenchmark();
  MemoryBenchmark(const MemoryBenchmark&) = delete;
  MemoryBenchmark& operator=(const MemoryBenchmark&) = delete;

  // Times one test at one size (a multiple of 16 B). Reports "out_of_memory" instead of failing
  // when the device buffers do not fit. Throws DeviceError for failures of the machine.
  MemoryMeasurement measure(MemoryTest test, int64_t size_bytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::vector<std::string> memory_columns();
// The row of `m` in memory.csv: median/min/max in microseconds, bandwidth_gbps = bytes moved /
// median time in GB/s (1e9 B/s).
std::vector<std::string> memory_row(const MemoryMeasurement& m);

}  // namespace clustersim::calibrate
