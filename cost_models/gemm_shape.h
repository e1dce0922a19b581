#pragma once

#include <cstdint>

#include "core/data_type.h"

namespace clustersim {

// One (optionally batched) matrix product C[M, N] = A[M, K] · B[K, N], repeated `batch` times with
// independent operands (torch.bmm). Shapes are as one GPU sees them. FLOPs count a multiply-add as
// 2, the convention of Megatron-LM and cuBLAS benchmarks: 2·M·N·K·batch.
//
// Operand storage decides which dimensions are leading dimensions (row strides), and a leading
// dimension that is not a multiple of 16 bytes sends cuBLAS to a slow kernel (see
// gemm_efficiency_model.h). Forward and data-gradient GEMMs of a linear layer store A as [M, K]
// and B/C with row stride N or K: their leading dimensions are N and K. The weight-gradient GEMM
// dW[out, in] = dY^T · X reads dY[tokens, out] transposed, so A is stored [K, M] and its leading
// dimension is M: set `a_transposed` for it.
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  DataType dtype = DataType::kBf16;
  bool a_transposed = false;

  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
           static_cast<double>(batch);
  }
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

}  // namespace clustersim
