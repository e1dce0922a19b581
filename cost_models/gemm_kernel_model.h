#pragma once

#include <cstdint>
#include <vector>

#include "core/units.h"
#include "cost_models/gemm_shape.h"

namespace clustersim {

// The kind of cuBLAS kernel a GEMM runs on Hopper, as cuBLASLt 13.1 chose them for the H200 sweep
// (tools/data/h200-2026-11-29/gemm.csv, columns algo_id and tile_id).
enum class GemmKernelFamily {
  kTensorCore,          // bf16, fp16, fp8, tf32 with every leading dimension on the 16-byte grid
  kTensorCoreSlowPath,  // a leading dimension off the 16-byte grid (GemmAlignment)
  kCudaCore,            // fp32: FMA on the CUDA cores, no stride requirement
};

// Duration of the arithmetic of one cuBLAS GEMM kernel on one GPU, from its tiles and waves: the
// baseline that GemmPredictor corrects with measured samples (ComputeCostModel with a calibration
// profile adds the memory floor and the inter-kernel gap). The default, uncalibrated model is
// GemmEfficiencyModel; this one adds what the H200 sweep shows for small and mid-size kernels,
// where a fraction of peak alone cannot follow the measured times.
//
// Modelled, per candidate output tile (tm × tn) and split of K (cuBLAS's split-K / stream-K), the
// fastest candidate taken:
//   waves          ceil(tiles × batch × split / SMs); each wave costs as much as a full one
//   wave time      latency + 2·tm·tn·(K/split + K0) / (rate per SM × operand feed)
//   rate per SM    dense peak × GemmEfficiencyModel::peak_fraction × slow-path factor / SMs
//   latency        2 µs per wave of a tensor-core kernel (TMA/wgmma pipeline fill and epilogue):
//                  bf16 256³, one wave of a few-MFLOP tile, ran 2.61 µs back to back of which
//                  0.68 µs is the profile's inter-kernel gap (gemm.csv, h200-2026-11-29.json)
//   K0             GemmEfficiencyModel's depth overhead, 300 bytes of K, for tensor-core kernels
//   operand feed   min(1, tm·tn / ((tm·λ_A + tn·λ_B) × 64)): a tile reaches the tensor cores' rate
//                  when it reuses each loaded element at least 64 times (tm·tn/(tm+tn) ≥ 64, i.e.
//                  128×128 and larger); λ = 1 + 0.5 × (fraction of an operand's rows that start off
//                  a 128-byte line, from its leading dimension): a row of a 128-byte-swizzled TMA
//                  box that starts off a line touches two 128-byte L2 lines instead of one. In the
//                  H200 sweep, without λ, the aligned shapes whose leading dimensions are not
//                  multiples of 128 bytes came out slower relative to this model than those whose
//                  are, among 10–100 µs kernels by 3 % (bf16), 9 % (fp16), 12 % (fp8), 16 % (tf32)
//                  (bf16 1000³: 7.23 µs against 5.45 for 1024³). The 64 elements and the 0.5 line
//                  were chosen, with the 2 µs latency, by the leave-one-out evaluation of that sweep
//                  (1.5–3 µs, 32/48/64 and 0–1 tried; docs/validation/calibration.md). Choosing them
//                  on a random half of its shapes and scoring the other half gave a maximum error of
//                  17.7 % on average over 200 halves (14.5 % on the chosen half): the leave-one-out
//                  maximum over all shapes understates that of unseen shapes by about 2 points.
// Families (family_of):
//   kTensorCore        16-bit and fp8: the wgmma tile catalogue, one side 64, 128 or 256 (warpgroups
//                      of 64 rows), the other any multiple of 16 up to 256 (cuBLAS chose 33 tile
//                      shapes from 64×8 to 320×128 for these dtypes in the sweep); split-K ≤ 4 (these
//                      kernels report split 1 but spread the last wave over K, stream-K, which a
//                      split stands in for; with 1 or 2 the leave-one-out maximum is 34 % or 17 %).
//                      tf32: 128×128, 128×256 and 256×128 only. cuBLAS also runs 64×64 and 128×64
//                      tf32 tiles, but they reach under half the rate per SM (1024³ on 128×64
//                      tiles 177 TFLOP/s, 2048³ on 128×256 364 TFLOP/s), so a padded 128×128
//                      wave is the better stand-in.
//   kTensorCoreSlowPath the three large tiles, GemmEfficiencyModel::alignment_factor on the rate,
//                      no operand-feed term (TMA needs 16-byte strides, so these kernels load
//                      otherwise); split-K ≤ 4; a per-wave latency of 6 µs, not 2: without TMA the
//                      prologue and epilogue of a wave take longer (bf16 1024×1024×1025, one wave
//                      of 128×128 tiles, ran 28.6 µs where 2 µs of latency leaves 22 µs). The 6 µs
//                      was chosen by the leave-one-out maximum over the 437 samples of the profile
//                      among 2, 4, 6, 8 and 10 µs (20.5, 15.9, 14.6, 15.6, 19.2 %);
//                      docs/validation/calibration.md also checks it on 79 shapes outside the
//                      profile.
//   kCudaCore          the three large tiles, split-K ≤ 8 (cuBLAS chose up to 6 for fp32 in the
//                      sweep), neither latency nor K0: small CUDA-core CTAs share an SM and overlap
//                      one's prologue with another's main loop. K is split only when 128×128 tiles
//                      fill fewer than kCudaCoreSplitWaves waves: in the sweep cuBLAS split every
//                      fp32 grid of up to 4.4 such waves whose last wave was not nearly full (3071³:
//                      4.36 waves, split 5) and none of 5.2 waves or more (2048×5461×2048: 5.21
//                      waves, split 1, 42 TFLOP/s, the rate of six full waves; 4097³: 8.25, split 1).
// Not modelled: cuBLAS's exact heuristic (it sometimes picks a slower tile than the best candidate),
// clock changes, the partial last K-step.
class GemmKernelModel {
 public:
  // `sm_count`: streaming multiprocessors of the GPU. Throws InputError if it is not positive.
  explicit GemmKernelModel(int sm_count);

  // Per-wave latency of tensor-core kernels and the operand-feed constants (see the class comment).
  static constexpr double kWaveLatencyUs = 2.0;
  static constexpr double kSlowPathWaveLatencyUs = 6.0;  // kTensorCoreSlowPath kernels
  static constexpr double kOperandFeedElements = 64.0;
  static constexpr double kLineStraddleCost = 0.5;
  // Largest split of K tried: tensor-core kernels (slow-path kernels chose 1 to 4 in the sweep) and
  // CUDA-core kernels.
  static constexpr int64_t kTensorCoreMaxSplitK = 4;
  static constexpr int64_t kCudaCoreMaxSplitK = 8;
  // CUDA-core kernels split K only below this many waves of 128×128 tiles (see the class comment).
  static constexpr int64_t kCudaCoreSplitWaves = 5;

  struct Breakdown {
    GemmKernelFamily family = GemmKernelFamily::kTensorCore;
    int64_t tile_m = 0;
    int64_t tile_n = 0;
    int64_t split_k = 1;
    int64_t waves = 0;
    double operand_feed = 1;  // fraction of the per-SM rate the tile's operand loads sustain
    Duration wave_time;       // one wave: latency + main loop
    Duration compute() const { return wave_time * waves; }
  };

  // The fastest candidate for `shape` on a GPU whose dense peak for the shape's dtype is `peak`.
  // Throws InputError if a dimension or the batch is not positive or the peak is not positive.
  Breakdown explain(const GemmShape& shape, FlopRate peak) const;
  Duration compute_time(const GemmShape& shape, FlopRate peak) const { return explain(shape, peak).compute(); }

  int sm_count() const { return sm_count_; }

  static GemmKernelFamily family_of(const GemmShape& shape);
  // λ of an operand whose rows are `stride_elements` of `dtype` apart: 1 when every row starts on a
  // 128-byte line, up to 1 + kLineStraddleCost × 7/8 when rows are only 16-byte aligned.
  static double line_straddle(int64_t stride_elements, DataType dtype);

 private:
  struct Tile {
    int64_t m;
    int64_t n;
  };
  int sm_count_;
  std::vector<Tile> wgmma_tiles_;  // the 16-bit and fp8 tensor-core catalogue
  std::vector<Tile> large_tiles_;  // tf32, slow path, CUDA cores
};

}  // namespace clustersim
