#pragma once

// The few CUDA kernels the calibrator needs, behind plain host functions (no CUDA syntax here, so
// the .cc files compile with the host compiler). Each function launches on `stream` and checks
// the launch (check_last_launch); none synchronizes.

#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/data_type.h"

namespace clustersim::calibrate {

// Writes `count` elements of `type` (fp8 = e4m3; tf32 is stored as fp32) with values uniform in
// [-1, 1), drawn from a counter-based hash of (seed, index) so that any buffer can be refilled
// identically. Random data, never zeros: METHOD.md reports GEMMs running 13 % faster on zeros.
void fill_uniform(void* data, int64_t count, DataType type, uint64_t seed, cudaStream_t stream);

// out[i] = float(data[i]) for `count` elements of `type`.
void convert_to_float(const void* data, int64_t count, DataType type, float* out, cudaStream_t stream);

// data[i] = value for `count` floats.
void fill_constant(float* data, int64_t count, float value, cudaStream_t stream);

// y[i] = a·x[i] + y[i] over `count` floats with 16-byte vector loads: reads 8·count bytes and
// writes 4·count. `count` must be a multiple of 4 and both pointers 16-byte aligned (InternalError
// otherwise). `blocks` thread blocks of 256 threads stride over the array.
void axpy(float a, const float* x, float* y, int64_t count, int blocks, cudaStream_t stream);

// A kernel that does nothing, one block of one thread: the launch overhead alone.
void launch_empty_kernel(cudaStream_t stream);

}  // namespace clustersim::calibrate
