#include "tools/calibrator/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "core/error.h"
#include "tools/calibrator/device_error.h"

namespace clustersim::calibrate {

namespace {

constexpr int kThreads = 256;

// splitmix64 finaliser (Steele, Lea, Flood 2014): a well-mixed 64-bit hash of a counter.
__device__ uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [-1, 1) from the top 24 bits of the hash (exactly representable in float).
__device__ float uniform(uint64_t seed, uint64_t index) {
  const uint64_t bits = mix(seed * 0x9e3779b97f4a7c15ULL + index) >> 40;
  return static_cast<float>(bits) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) { return v; }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ __half from_float<__half>(float v) { return __float2half(v); }
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }

template <typename T>
__device__ float to_float(T v) { return static_cast<float>(v); }
template <>
__device__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <>
__device__ float to_float<__half>(__half v) { return __half2float(v); }

template <typename T>
__global__ void fill_uniform_kernel(T* data, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    data[i] = from_float<T>(uniform(seed, static_cast<uint64_t>(i)));
  }
}

template <typename T>
__global__ void convert_kernel(const T* data, int64_t count, float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = to_float<T>(data[i]);
  }
}

__global__ void fill_constant_kernel(float* data, int64_t count, float value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    data[i] = value;
  }
}

__global__ void axpy_kernel(float a, const float4* x, float4* y, int64_t count4) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count4;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float4 xv = x[i];
    float4 yv = y[i];
    yv.x = a * xv.x + yv.x;
    yv.y = a * xv.y + yv.y;
    yv.z = a * xv.z + yv.z;
    yv.w = a * xv.w + yv.w;
    y[i] = yv;
  }
}

__global__ void empty_kernel() {}

// Enough blocks to cover `count` elements once, at most 65536 (the loops stride beyond that).
unsigned grid_for(int64_t count) {
  return static_cast<unsigned>(std::clamp<int64_t>((count + kThreads - 1) / kThreads, 1, 65536));
}

}  // namespace

void fill_uniform(void* data, int64_t count, DataType type, uint64_t seed, cudaStream_t stream) {
  if (count <= 0) return;
  const unsigned grid = grid_for(count);
  switch (type) {
    case DataType::kFp32:
    case DataType::kTf32:
      fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(data), count, seed);
      break;
    case DataType::kBf16:
      fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, seed);
      break;
    case DataType::kFp16:
      fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(data), count, seed);
      break;
    case DataType::kFp8:
      fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), count, seed);
      break;
  }
  check_last_launch("fill_uniform_kernel");
}

void convert_to_float(const void* data, int64_t count, DataType type, float* out, cudaStream_t stream) {
  if (count <= 0) return;
  const unsigned grid = grid_for(count);
  switch (type) {
    case DataType::kFp32:
    case DataType::kTf32:
      convert_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const float*>(data), count, out);
      break;
    case DataType::kBf16:
      convert_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(data), count, out);
      break;
    case DataType::kFp16:
      convert_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(data), count, out);
      break;
    case DataType::kFp8:
      convert_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const __nv_fp8_e4m3*>(data), count, out);
      break;
  }
  check_last_launch("convert_kernel");
}

void fill_constant(float* data, int64_t count, float value, cudaStream_t stream) {
  if (count <= 0) return;
  fill_constant_kernel<<<grid_for(count), kThreads, 0, stream>>>(data, count, value);
  check_last_launch("fill_constant_kernel");
}

void axpy(float a, const float* x, float* y, int64_t count, int blocks, cudaStream_t stream) {
  check_invariant(count % 4 == 0, "axpy: count must be a multiple of 4");
  check_invariant(reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0,
                  "axpy: pointers must be 16-byte aligned");
  check_invariant(blocks > 0, "axpy: blocks must be positive");
  axpy_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      a, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), count / 4);
  check_last_launch("axpy_kernel");
}

void launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  check_last_launch("empty_kernel");
}

}  // namespace clustersim::calibrate
