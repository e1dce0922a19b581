#include "tools/calibrator/memory_benchmark.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "tools/calibrator/cuda_resources.h"
#include "tools/calibrator/kernels.h"
#include "tools/calibrator/sample_stats.h"

namespace clustersim::calibrate {

namespace {

constexpr size_t kMemoryHeadroomBytes = size_t{1} << 30;

struct MemoryTestName {
  MemoryTest test;
  std::string_view name;
};
constexpr MemoryTestName kMemoryTestNames[] = {
    {MemoryTest::kDeviceCopy, "d2d_copy"},
    {MemoryTest::kAxpy, "axpy_fp32"},
    {MemoryTest::kHostToDevicePinned, "h2d_pinned"},
    {MemoryTest::kDeviceToHostPinned, "d2h_pinned"},
    {MemoryTest::kHostToDevicePageable, "h2d_pageable"},
    {MemoryTest::kDeviceToHostPageable, "d2h_pageable"},
};

bool is_device_test(MemoryTest test) { return test == MemoryTest::kDeviceCopy || test == MemoryTest::kAxpy; }

}  // namespace

std::vector<MemoryTest> all_memory_tests() {
  std::vector<MemoryTest> tests;
  for (const auto& entry : kMemoryTestNames) tests.push_back(entry.test);
  return tests;
}

std::string_view memory_test_name(MemoryTest test) {
  for (const auto& entry : kMemoryTestNames) {
    if (entry.test == test) return entry.name;
  }
  throw InternalError("memory_test_name: test outside the table");
}

int64_t memory_bytes_moved(MemoryTest test, int64_t size_bytes) {
  switch (test) {
    case MemoryTest::kDeviceCopy: return 2 * size_bytes;
    case MemoryTest::kAxpy: return 3 * size_bytes;
    default: return size_bytes;
  }
}

struct MemoryBenchmark::State {
  int device = 0;
  TimingPolicy policy;
  int64_t max_host_bytes = 0;
  int64_t l2_bytes = 0;
  int sm_count = 0;
  Stream stream;
  std::unique_ptr<PinnedBuffer> pinned;
  std::unique_ptr<char[]> pageable;
  std::unique_ptr<DeviceBuffer> host_peer;  // device side of host copies
};

MemoryBenchmark::MemoryBenchmark(int device, TimingPolicy policy, int64_t max_host_bytes) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  state_ = std::make_unique<State>();
  state_->device = device;
  state_->policy = policy;
  state_->max_host_bytes = max_host_bytes;
  int value = 0;
  check_cuda(cudaDeviceGetAttribute(&value, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
  state_->l2_bytes = value;
  check_cuda(cudaDeviceGetAttribute(&state_->sm_count, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(SMs)");
}

MemoryBenchmark::~MemoryBenchmark() = default;

MemoryMeasurement MemoryBenchmark::measure(MemoryTest test, int64_t size_bytes) {
  State& st = *state_;
  check_cuda(cudaSetDevice(st.device), "cudaSetDevice");
  check_invariant(size_bytes > 0 && size_bytes % 16 == 0, "memory benchmark: size must be a multiple of 16 B");
  const cudaStream_t stream = st.stream.get();
  const auto size = static_cast<size_t>(size_bytes);
  MemoryMeasurement result;
  result.test = test;
  result.size_bytes = size_bytes;

  if (is_device_test(test)) {
    // Two pools (source/destination, or x/y) of `slots` buffers each, covering at least 3× L2.
    const auto rotation = static_cast<size_t>(3 * st.l2_bytes);
    const size_t slots = std::max<size_t>(1, (rotation + size - 1) / size);
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    if (2 * slots * size + kMemoryHeadroomBytes > free_bytes) {
      result.status = "out_of_memory";
      return result;
    }
    DeviceBuffer first(slots * size);
    DeviceBuffer second(slots * size);
    const int64_t floats = size_bytes / 4;
    fill_uniform(first.data(), floats * static_cast<int64_t>(slots), DataType::kFp32, 11, stream);
    fill_uniform(second.data(), floats * static_cast<int64_t>(slots), DataType::kFp32, 12, stream);
    char* a = first.as<char>();
    char* b = second.as<char>();
    // Elementwise grid: one float4 per thread, capped at 32 blocks of 256 threads per SM (4× the
    // 2048 resident threads of a Hopper SM); larger arrays are covered by the grid-stride loop.
    const int blocks =
        static_cast<int>(std::clamp<int64_t>((floats / 4 + 255) / 256, 1, int64_t{32} * st.sm_count));
    std::function<void(int64_t)> call;
    if (test == MemoryTest::kDeviceCopy) {
      call = [&](int64_t i) {
        const size_t offset = static_cast<size_t>(i) % slots * size;
        check_cuda(cudaMemcpyAsync(b + offset, a + offset, size, cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync D2D");
      };
    } else {
      call = [&](int64_t i) {
        const size_t offset = static_cast<size_t>(i) % slots * size;
        axpy(0.5f, reinterpret_cast<const float*>(a + offset), reinterpret_cast<float*>(b + offset), floats, blocks,
             stream);
      };
    }
    BatchTiming timing = measure_calls(stream, st.policy, call, /*use_graph=*/true);
    result.timing = timing.timing;
    result.calls_per_batch = timing.calls_per_batch;
    result.seconds = std::move(timing.seconds);
    result.status = "ok";
    return result;
  }

  // Host tests: buffers of the largest size, allocated once and touched so first-touch page
  // faults stay out of the timings.
  check_invariant(size_bytes <= st.max_host_bytes, "memory benchmark: host size above the maximum");
  if (st.host_peer == nullptr) {
    st.host_peer = std::make_unique<DeviceBuffer>(static_cast<size_t>(st.max_host_bytes));
    fill_uniform(st.host_peer->data(), st.max_host_bytes / 4, DataType::kFp32, 13, stream);
  }
  void* device = st.host_peer->data();
  const bool to_device = test == MemoryTest::kHostToDevicePinned || test == MemoryTest::kHostToDevicePageable;
  if (test == MemoryTest::kHostToDevicePinned || test == MemoryTest::kDeviceToHostPinned) {
    if (st.pinned == nullptr) {
      st.pinned = std::make_unique<PinnedBuffer>(static_cast<size_t>(st.max_host_bytes));
      std::memset(st.pinned->data(), 0x3c, st.pinned->bytes());
    }
    void* host = st.pinned->data();
    auto call = [&](int64_t) {
      check_cuda(to_device ? cudaMemcpyAsync(device, host, size, cudaMemcpyHostToDevice, stream)
                           : cudaMemcpyAsync(host, device, size, cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync pinned");
    };
    BatchTiming timing = measure_calls(stream, st.policy, call, /*use_graph=*/false);
    result.timing = timing.timing;
    result.calls_per_batch = timing.calls_per_batch;
    result.seconds = std::move(timing.seconds);
    result.status = "ok";
    return result;
  }
  if (st.pageable == nullptr) {
    st.pageable = std::make_unique<char[]>(static_cast<size_t>(st.max_host_bytes));
    std::memset(st.pageable.get(), 0x3c, static_cast<size_t>(st.max_host_bytes));
  }
  char* host = st.pageable.get();
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  auto copy_once = [&] {
    check_cuda(to_device ? cudaMemcpy(device, host, size, cudaMemcpyHostToDevice)
                         : cudaMemcpy(host, device, size, cudaMemcpyDeviceToHost),
               "cudaMemcpy pageable");
  };
  using Clock = std::chrono::steady_clock;
  copy_once();  // warm-up
  auto start = Clock::now();
  copy_once();
  const double estimate = std::chrono::duration<double>(Clock::now() - start).count();
  const TimingPolicy& policy = st.policy;
  result.calls_per_batch = repeats_for_target(estimate, policy.batch_seconds, 1, policy.max_inner);
  const int64_t samples = repeats_for_target(estimate * static_cast<double>(result.calls_per_batch),
                                             policy.seconds_per_point, policy.min_samples, policy.max_samples);
  for (int64_t s = 0; s < samples; ++s) {
    start = Clock::now();
    for (int64_t i = 0; i < result.calls_per_batch; ++i) copy_once();
    result.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count() /
                             static_cast<double>(result.calls_per_batch));
  }
  result.timing = "host_clock";
  result.status = "ok";
  return result;
}

std::vector<std::string> memory_columns() {
  return {"test", "size_bytes", "bytes_moved", "status", "timing", "calls_per_batch", "samples",
          "median_us", "min_us", "max_us", "bandwidth_gbps", "samples_us"};
}

std::vector<std::string> memory_row(const MemoryMeasurement& m) {
  const bool timed = !m.seconds.empty();
  std::vector<double> us;
  for (double s : m.seconds) us.push_back(s * 1e6);
  SampleSummary summary;
  if (timed) summary = summarize(us);
  const int64_t moved = memory_bytes_moved(m.test, m.size_bytes);
  // GB/s = bytes / (t_us · 1e-6 s) / 1e9 = bytes / t_us · 1e-3.
  const double gbps = timed ? static_cast<double>(moved) / summary.median * 1e-3 : 0.0;
  return {std::string(memory_test_name(m.test)),
          std::to_string(m.size_bytes),
          std::to_string(moved),
          m.status,
          m.timing,
          timed ? std::to_string(m.calls_per_batch) : "",
          timed ? std::to_string(summary.count) : "",
          timed ? format_number(summary.median) : "",
          timed ? format_number(summary.min) : "",
          timed ? format_number(summary.max) : "",
          timed ? format_number(gbps) : "",
          join_samples(us)};
}

}  // namespace clustersim::calibrate
