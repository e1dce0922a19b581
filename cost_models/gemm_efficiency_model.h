#pragma once

#include <cstdint>

#include "cost_models/gemm_shape.h"

namespace clustersim {

// How well a GEMM's leading dimensions suit cuBLAS's tensor-core kernels. Those kernels need every
// operand's row stride to be a multiple of 16 bytes (8 elements of a 16-bit type, 16 of fp8, 4 of
// tf32: cuBLAS documentation, "Tensor Core Usage" restrictions); otherwise a slow kernel runs.
// Measured on an H200 through PyTorch (cost_models/testdata/h200_pytorch_sweep.json): only the
// leading dimensions matter (4091×4096×4096 runs at full speed, 4096×4091×4096 and 4096×4096×4091
// at ~140 TFLOP/s), and strides that are multiples of 8 bytes (4100) are less slow than odd ones.
// fp32 GEMMs run on the CUDA cores and have no such path: every fp32 shape is kAligned (H200,
// tools/data/h200-2026-11-29/gemm.csv: 4091³ 52.2 TFLOP/s, 4096³ 50.0).
// The byte alignment of a GEMM's leading dimensions, as it selects cuBLAS's Hopper kernel family:
// kAligned every stride a multiple of 16 bytes (TMA kernels); kFourByteAligned the worst a multiple of
// 4 or 8 bytes; kMisaligned of 2 or 1. In the H200 sweeps cuBLASLt 13.1 ran 4- and 8-byte strides on
// the same algorithm (algo_id 23) at the same rate (bf16 4098×4096×4096 279.5 TFLOP/s against 280.0
// for 4100; 2050×2048×2048 164.6 against 166.0; tf32 with odd strides, 4-byte, ~130 like 8-byte
// 4098) and 2-byte strides on another (algo_id 24: 4097×4096×4096 96.0)
// (tools/data/h200-2026-11-29/gemm-align4-*.csv).
enum class GemmAlignment { kAligned, kFourByteAligned, kMisaligned };

// The default (uncalibrated) efficiency of one GEMM on one GPU: the fraction of the datasheet dense
// peak of its dtype that the kernel's arithmetic reaches. Memory traffic and launch overhead are not
// part of it; ComputeCostModel adds both.
//
// Modelled (each factor in (0, 1]):
//   peak fraction    the best a large, aligned GEMM sustains: bf16/fp16 0.75, fp8 0.71 (fitted,
//                    see below; tf32 and fp32 assumed equal to bf16, which the later H200 sweep
//                    confirms: 16384³ tf32 367 TFLOP/s = 0.74 of 494.5, fp32 51.2 = 0.76 of 67)
//   tile and wave    the output is cut into tiles (128×256, 256×128 or 128×128, as cuBLAS's Hopper
//   quantization     kernels use) run in waves over the SMs; padding of partial tiles and of the
//                    last partial wave is wasted. Split-K by 2 is allowed when it fills the SMs
//                    better (cuBLAS's split-K / stream-K kernels); the best candidate is taken.
//   depth ramp       each tile's main loop of K' = K/split steps pays a fixed prologue/epilogue
//                    worth K0 = 300 bytes of K (150 bf16 elements): factor K'/(K' + K0).
//   alignment        kFourByteAligned × 0.31, kMisaligned × 0.195 (measured ratios of slow-path to
//                    aligned throughput on the H200: 4091³ 146.5 vs ~700 TFLOP/s, 4096×50257×4096
//                    132 vs 683 TFLOP/s for 50304; 4100³ 213 TFLOP/s; the issue's own readings
//                    127 vs 696 and 129 vs 744 give 0.18). fp8 GEMMs need 16-element strides
//                    (torch._scaled_mm rejects others, Transformer Engine pads); misaligned fp8
//                    shapes get the same ratios, unmeasured.
// Fit: least squares on relative time error over the 84 aligned H200 samples of
// cost_models/testdata/h200_pytorch_sweep.json (bf16 and fp8, with ComputeCostModel's memory floor
// and 1.23 µs kernel gap) together with the 18 Hopper rows of docs/validation/published/gemm.csv
// (MAMF bf16/fp8, DeepGEMM fp8 H800 with M = 4096): median error 4.9 %, max 35 % (fp8 1024³, a
// 5.7 µs kernel). Its rates are those of GEMMs run back to back, at the power limit where they
// reach it (sustained 8192³ runs settle ~18 % below their first milliseconds); under the power
// model they are undone to full clock (PowerModel::full_clock_gemm) and the governor slows the
// step's own mix. Not modelled: data-dependent power, the exact cuBLAS heuristic.
class GemmEfficiencyModel {
 public:
  // `sm_count`: streaming multiprocessors of the GPU (132 on H100/H200 SXM). Throws InputError if it
  // is not positive. (The calibrated predictor's baseline is GemmKernelModel.)
  explicit GemmEfficiencyModel(int sm_count);

  // Largest split of K tried (fitted as above).
  static constexpr int kMaxSplitK = 2;
  // Fixed per-tile prologue/epilogue expressed as bytes of K (fitted as above; 150 bf16 or 300 fp8
  // elements).
  static constexpr double kDepthOverheadBytes = 300.0;

  struct Breakdown {
    double peak_fraction = 0;  // dtype's large-GEMM ceiling
    double quantization = 0;   // tile × wave utilisation of the chosen candidate
    double depth = 0;          // K'/(K' + K0)
    double alignment = 0;      // 1, 0.31 or 0.195
    int64_t tile_m = 0;
    int64_t tile_n = 0;
    int64_t split_k = 1;
    double efficiency() const { return peak_fraction * quantization * depth * alignment; }
  };

  // Efficiency in (0, 1] for `shape`. Throws InputError if a dimension or the batch is not positive.
  double efficiency(const GemmShape& shape) const { return explain(shape).efficiency(); }
  // The factors behind efficiency(), for reports and tests.
  Breakdown explain(const GemmShape& shape) const;

  int sm_count() const { return sm_count_; }

  // Alignment class of the shape's leading dimensions (see GemmShape::a_transposed).
  static GemmAlignment alignment_of(const GemmShape& shape);
  // The factor applied for an alignment class.
  static double alignment_factor(GemmAlignment alignment);
  // The large-GEMM ceiling for a dtype.
  static double peak_fraction(DataType dtype);

 private:
  int sm_count_;
};

}  // namespace clustersim
