#include "cost_models/gemm_efficiency_model.h"

#include <array>
#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"

namespace clustersim {

namespace {

// Large-GEMM ceilings (fraction of the dense datasheet peak), fitted as described in the header.
constexpr double kPeakFraction16Bit = 0.75;
constexpr double kPeakFractionFp8 = 0.71;
// Slow-path ratios measured on the H200 (header): strides 4- or 8-byte aligned, and worse.
constexpr double kFourByteAlignedFactor = 0.31;
constexpr double kMisalignedFactor = 0.195;

struct TileShape {
  int64_t m;
  int64_t n;
};
// Output tiles of cuBLAS's sm90 tensor-core kernels (kernel names carry "tilesize128x256x64" etc.).
constexpr std::array kTiles{TileShape{128, 256}, TileShape{256, 128}, TileShape{128, 128}};


GemmAlignment stride_alignment(int64_t elements, int64_t element_bytes) {
  const int64_t bytes = elements * element_bytes;
  if (bytes % 16 == 0) return GemmAlignment::kAligned;
  if (bytes % 4 == 0) return GemmAlignment::kFourByteAligned;
  return GemmAlignment::kMisaligned;
}

GemmAlignment worse(GemmAlignment a, GemmAlignment b) { return a > b ? a : b; }

}  // namespace

GemmEfficiencyModel::GemmEfficiencyModel(int sm_count) : sm_count_(sm_count) {
  if (sm_count <= 0) {
    throw InputError(fmt::format("GPU sm_count must be a positive number of streaming multiprocessors (got {}); "
                                 "e.g. 132 for H100/H200 SXM, 108 for A100",
                                 sm_count));
  }
}

GemmAlignment GemmEfficiencyModel::alignment_of(const GemmShape& shape) {
  if (shape.dtype == DataType::kFp32) return GemmAlignment::kAligned;  // CUDA-core kernels (header)
  const int64_t e = bytes_per_element(shape.dtype);
  const int64_t a_stride = shape.a_transposed ? shape.m : shape.k;
  return worse(stride_alignment(shape.n, e), stride_alignment(a_stride, e));
}

double GemmEfficiencyModel::alignment_factor(GemmAlignment alignment) {
  switch (alignment) {
    case GemmAlignment::kAligned:
      return 1.0;
    case GemmAlignment::kFourByteAligned:
      return kFourByteAlignedFactor;
    case GemmAlignment::kMisaligned:
      return kMisalignedFactor;
  }
  throw InternalError("unknown GemmAlignment value");
}

double GemmEfficiencyModel::peak_fraction(DataType dtype) {
  return dtype == DataType::kFp8 ? kPeakFractionFp8 : kPeakFraction16Bit;
}

GemmEfficiencyModel::Breakdown GemmEfficiencyModel::explain(const GemmShape& shape) const {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) {
    throw InputError(fmt::format("GEMM shape {}x{}x{} (batch {}) must have positive dimensions", shape.m, shape.n,
                                 shape.k, shape.batch));
  }
  Breakdown best;
  best.peak_fraction = peak_fraction(shape.dtype);
  best.alignment = alignment_factor(alignment_of(shape));
  const double k0 = kDepthOverheadBytes / static_cast<double>(bytes_per_element(shape.dtype));
  double best_score = -1;
  for (const TileShape& tile : kTiles) {
    const int64_t rows = ceil_div(shape.m, tile.m);
    const int64_t cols = ceil_div(shape.n, tile.n);
    const double utilisation = static_cast<double>(shape.m) * static_cast<double>(shape.n) /
                               (static_cast<double>(rows * tile.m) * static_cast<double>(cols * tile.n));
    for (int64_t split = 1; split <= kMaxSplitK; ++split) {
      if (split > shape.k) continue;
      const int64_t tiles = rows * cols * shape.batch * split;
      const int64_t waves = ceil_div(tiles, sm_count_);
      const double wave = static_cast<double>(tiles) / (static_cast<double>(waves) * sm_count_);
      const double k_split = static_cast<double>(shape.k) / static_cast<double>(split);
      const double depth = k_split / (k_split + k0);
      const double score = utilisation * wave * depth;
      if (score > best_score) {
        best_score = score;
        best.quantization = utilisation * wave;
        best.depth = depth;
        best.tile_m = tile.m;
        best.tile_n = tile.n;
        best.split_k = split;
      }
    }
  }
  return best;
}

}  // namespace clustersim
