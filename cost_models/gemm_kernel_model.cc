#include "cost_models/gemm_kernel_model.h"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <numeric>
#include <optional>

#include "core/error.h"
#include "cost_models/gemm_efficiency_model.h"

namespace clustersim {

namespace {

// A 128-byte L2 cache line: the unit a row of a 128-byte-swizzled TMA box is fetched in.
constexpr int64_t kLineBytes = 128;

// The large tiles of the tf32, slow-path and CUDA-core kernels: cuBLASLt tile_id 23, 24 and 20 in
// gemm.csv (CUBLASLT_MATMUL_TILE_128x256, _256x128, _128x128).
constexpr std::array<std::pair<int64_t, int64_t>, 3> kLargeTiles{{{128, 256}, {256, 128}, {128, 128}}};


}  // namespace

GemmKernelModel::GemmKernelModel(int sm_count) : sm_count_(sm_count) {
  if (sm_count <= 0) {
    throw InputError(
        fmt::format("GPU sm_count must be a positive number of streaming multiprocessors (got {}); "
                    "e.g. 132 for H100/H200 SXM, 108 for A100",
                    sm_count));
  }
  // One side a whole number of 64-row warpgroups (1, 2 or 4), the other a multiple of 16 up to 256.
  for (const int64_t rows : {64, 128, 256}) {
    for (int64_t cols = 16; cols <= 256; cols += 16) {
      wgmma_tiles_.push_back({rows, cols});
      if (cols != rows) wgmma_tiles_.push_back({cols, rows});
    }
  }
  for (const auto& [m, n] : kLargeTiles) large_tiles_.push_back({m, n});
  std::sort(wgmma_tiles_.begin(), wgmma_tiles_.end(),
            [](const Tile& a, const Tile& b) { return a.m != b.m ? a.m < b.m : a.n < b.n; });
  wgmma_tiles_.erase(std::unique(wgmma_tiles_.begin(), wgmma_tiles_.end(),
                                 [](const Tile& a, const Tile& b) { return a.m == b.m && a.n == b.n; }),
                     wgmma_tiles_.end());
}

GemmKernelFamily GemmKernelModel::family_of(const GemmShape& shape) {
  if (shape.dtype == DataType::kFp32) return GemmKernelFamily::kCudaCore;
  if (GemmEfficiencyModel::alignment_of(shape) != GemmAlignment::kAligned) return GemmKernelFamily::kTensorCoreSlowPath;
  return GemmKernelFamily::kTensorCore;
}

double GemmKernelModel::line_straddle(int64_t stride_elements, DataType dtype) {
  const int64_t bytes = checked_mul(stride_elements, bytes_per_element(dtype), "GEMM stride");
  // Rows start at multiples of the stride: a fraction 1 - gcd(stride, 128)/128 of them is off a line.
  const double off_line = 1.0 - static_cast<double>(std::gcd(bytes, kLineBytes)) / static_cast<double>(kLineBytes);
  return 1.0 + kLineStraddleCost * off_line;
}

GemmKernelModel::Breakdown GemmKernelModel::explain(const GemmShape& shape, FlopRate peak) const {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) {
    throw InputError(fmt::format("GEMM shape {}x{}x{} (batch {}) must have positive dimensions", shape.m, shape.n,
                                 shape.k, shape.batch));
  }
  if (!(peak.flop_per_second() > 0)) {
    throw InputError(fmt::format("GEMM peak rate for {} must be positive", name_of(shape.dtype)));
  }
  const GemmKernelFamily family = family_of(shape);
  const bool cuda_core = family == GemmKernelFamily::kCudaCore;
  const double slow_path = family == GemmKernelFamily::kTensorCoreSlowPath
                               ? GemmEfficiencyModel::alignment_factor(GemmEfficiencyModel::alignment_of(shape))
                               : 1.0;
  const FlopRate per_sm =
      peak * (GemmEfficiencyModel::peak_fraction(shape.dtype) * slow_path / static_cast<double>(sm_count_));
  const Duration latency = cuda_core ? Duration::zero()
                           : family == GemmKernelFamily::kTensorCoreSlowPath
                               ? Duration::microseconds(kSlowPathWaveLatencyUs)
                               : Duration::microseconds(kWaveLatencyUs);
  const double depth_overhead =
      cuda_core ? 0.0 : GemmEfficiencyModel::kDepthOverheadBytes / static_cast<double>(bytes_per_element(shape.dtype));
  int64_t max_split = kTensorCoreMaxSplitK;
  if (cuda_core) {
    const int64_t square_tiles = checked_mul(
        checked_mul(ceil_div(shape.m, 128), ceil_div(shape.n, 128), "GEMM tiles"), shape.batch, "GEMM tiles");
    max_split = square_tiles < kCudaCoreSplitWaves * sm_count_ ? kCudaCoreMaxSplitK : 1;
  }
  // Line straddling of the A operand (leading dimension K, or M when stored transposed) and of B
  // (leading dimension N); only the TMA-fed fast path pays it.
  const bool fed = family == GemmKernelFamily::kTensorCore;
  const double lambda_a = fed ? line_straddle(shape.a_transposed ? shape.m : shape.k, shape.dtype) : 1.0;
  const double lambda_b = fed ? line_straddle(shape.n, shape.dtype) : 1.0;

  const std::vector<Tile>& tiles =
      family == GemmKernelFamily::kTensorCore && shape.dtype != DataType::kTf32 ? wgmma_tiles_ : large_tiles_;

  // Candidates are ranked by their cost in seconds (a double, for speed: ~100 tiles × splits per
  // call); the chosen one's wave time is then computed in integer picoseconds. A tile is skipped when
  // a lower bound of its cost (all its work spread evenly over the SMs, or one wave of the deepest
  // split) cannot beat the best so far.
  const double latency_s = latency.to_seconds();
  const double per_sm_rate = per_sm.flop_per_second();
  const double k = static_cast<double>(shape.k);
  const int64_t splits = std::min(max_split, shape.k);
  std::optional<Tile> best_tile;
  int64_t best_split = 1;
  int64_t best_waves = 0;
  double best_feed = 1;
  double best_cost = 0;
  for (const Tile& tile : tiles) {
    const int64_t ctas_per_split = checked_mul(
        checked_mul(ceil_div(shape.m, tile.m), ceil_div(shape.n, tile.n), "GEMM tiles"), shape.batch, "GEMM tiles");
    const double m = static_cast<double>(tile.m);
    const double n = static_cast<double>(tile.n);
    const double feed = fed ? std::min(1.0, m * n / ((m * lambda_a + n * lambda_b) * kOperandFeedElements)) : 1.0;
    const double seconds_per_depth = 2.0 * m * n / (per_sm_rate * feed);  // one CTA, one element of K
    const double lower_bound =
        std::max(static_cast<double>(ctas_per_split) * seconds_per_depth * k / static_cast<double>(sm_count_),
                 latency_s + seconds_per_depth * (k / static_cast<double>(splits) + depth_overhead));
    if (best_tile && lower_bound >= best_cost) continue;
    for (int64_t split = 1; split <= splits; ++split) {
      const int64_t waves = ceil_div(checked_mul(ctas_per_split, split, "GEMM tiles"), sm_count_);
      const double cost = static_cast<double>(waves) *
                          (latency_s + seconds_per_depth * (k / static_cast<double>(split) + depth_overhead));
      if (!best_tile || cost < best_cost) {
        best_tile = tile;
        best_split = split;
        best_waves = waves;
        best_feed = feed;
        best_cost = cost;
      }
    }
  }
  Breakdown best;
  best.family = family;
  best.tile_m = best_tile->m;
  best.tile_n = best_tile->n;
  best.split_k = best_split;
  best.waves = best_waves;
  best.operand_feed = best_feed;
  const double depth = k / static_cast<double>(best_split) + depth_overhead;
  best.wave_time = latency + clustersim::compute_time(2.0 * static_cast<double>(best.tile_m * best.tile_n) * depth,
                                                      per_sm * best_feed);
  return best;
}

}  // namespace clustersim
