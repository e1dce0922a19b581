#include "cost_models/gemm_efficiency_model.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace clustersim {
namespace gemm_efficiency_model_test {

GemmShape bf16(int64_t m, int64_t n, int64_t k) { return GemmShape{m, n, k, 1, DataType::kBf16, false}; }

TEST(GemmEfficiencyModel, LargeAlignedGemmApproachesTheCeilingThroughTheDepthRamp) {
  // 4 SMs and a 1024×1024 output: every candidate tile fills whole waves (128×256 → 32 tiles = 8
  // waves), so only the ceiling and the depth ramp K/(K + 300 B / 2 B) remain.
  const GemmEfficiencyModel model(4);
  const auto b = model.explain(bf16(1024, 1024, 8192));
  EXPECT_DOUBLE_EQ(b.quantization, 1.0);
  EXPECT_EQ(b.split_k, 1);
  EXPECT_DOUBLE_EQ(b.depth, 8192.0 / (8192.0 + 150.0));
  EXPECT_DOUBLE_EQ(b.efficiency(), 0.75 * 8192.0 / 8342.0);
}

TEST(GemmEfficiencyModel, WaveQuantizationPenalisesOneTileTooMany) {
  // On 132 SMs, 132 tiles of 128×256 fill one wave; one more 128-row block needs a second wave for
  // few tiles. Splitting K or smaller tiles recover part of it, never all.
  const GemmEfficiencyModel model(132);
  const double full = model.efficiency(bf16(128 * 66, 256 * 2, 8192));   // 132 tiles, one wave
  const double spill = model.efficiency(bf16(128 * 67, 256 * 2, 8192));  // 134 tiles
  EXPECT_LT(spill, full);
  // A 128×256 output is one 128×256 tile or two 128×128 tiles; split-K by 2 makes that 4 CTAs on
  // 132 SMs: utilisation 4/132.
  const auto tiny = model.explain(bf16(128, 256, 8192));
  EXPECT_DOUBLE_EQ(tiny.quantization, 4.0 / 132.0);
  EXPECT_EQ(tiny.tile_n, 128);
  EXPECT_EQ(tiny.split_k, 2);
}

TEST(GemmEfficiencyModel, TileQuantizationWastesPaddedRowsAndColumns) {
  // 4 SMs, N = 256, M = 129: the 128-row tiles pad M to 256 (utilisation 129/256), the 256-row tile
  // likewise; wave quantization is exact (2 tiles of 128×256 split by 2 = 4 CTAs).
  const GemmEfficiencyModel model(4);
  const auto b = model.explain(bf16(129, 256, 8192));
  EXPECT_NEAR(b.quantization, 129.0 / 256.0, 1e-12);
}

TEST(GemmEfficiencyModel, OnlyLeadingDimensionsDecideAlignment) {
  // Measured on the H200 (cost_models/testdata/h200_pytorch_sweep.json): 4091×4096×4096 runs at
  // 712 TFLOP/s (aligned), 4096×4091×4096 at 138 and 4096×4096×4091 at 142 (slow path).
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(bf16(4091, 4096, 4096)), GemmAlignment::kAligned);
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(bf16(4096, 4091, 4096)), GemmAlignment::kMisaligned);
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(bf16(4096, 4096, 4091)), GemmAlignment::kMisaligned);
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(bf16(4100, 4100, 4100)), GemmAlignment::kFourByteAligned);
  // 4-byte strides run on the 8-byte strides' kernels (H200: bf16 4098 279.5, 4100 280.0 TFLOP/s).
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(bf16(4096, 4098, 4096)), GemmAlignment::kFourByteAligned);
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(bf16(4096, 4096, 4098)), GemmAlignment::kFourByteAligned);
  // tf32 strides are always whole 4-byte words: odd ones take the 4-byte kernels (~130 TFLOP/s).
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(GemmShape{4096, 4097, 4096, 1, DataType::kTf32, false}),
            GemmAlignment::kFourByteAligned);
  // The weight-gradient GEMM reads its A operand transposed, so M becomes a leading dimension.
  GemmShape wgrad = bf16(50257, 4096, 8192);
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(wgrad), GemmAlignment::kAligned);
  wgrad.a_transposed = true;
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(wgrad), GemmAlignment::kMisaligned);
  // 16 bytes = 8 bf16, 16 fp8, 4 tf32 elements.
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(GemmShape{4096, 4104, 4096, 1, DataType::kFp8, false}),
            GemmAlignment::kFourByteAligned);
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(GemmShape{4096, 4100, 4096, 1, DataType::kTf32, false}),
            GemmAlignment::kAligned);
  // fp32 runs on the CUDA cores, which have no slow path: the H200 ran fp32 4091³ at 52.2 TFLOP/s
  // and 4096³ at 50.0 (tools/data/h200-2026-11-29/gemm.csv).
  EXPECT_EQ(GemmEfficiencyModel::alignment_of(GemmShape{4091, 4091, 4091, 1, DataType::kFp32, false}),
            GemmAlignment::kAligned);
  const GemmEfficiencyModel model(132);
  EXPECT_DOUBLE_EQ(model.explain(GemmShape{4096, 4091, 4096, 1, DataType::kFp32, false}).alignment, 1.0);
}

TEST(GemmEfficiencyModel, MisalignedSlowPathMatchesMeasuredRatios) {
  const GemmEfficiencyModel model(132);
  // The H200 readings: 4091³ at ~127 TFLOP/s vs ~696 for 4096³; 4096×50257×4096 at ~129
  // vs ~744 for 50304. The model's ratio must be within 15 % of each measured ratio.
  const double cube = model.efficiency(bf16(4091, 4091, 4091)) / model.efficiency(bf16(4096, 4096, 4096));
  EXPECT_NEAR(cube, 127.0 / 696.0, 0.15 * 127.0 / 696.0);
  const double vocab = model.efficiency(bf16(4096, 50257, 4096)) / model.efficiency(bf16(4096, 50304, 4096));
  EXPECT_NEAR(vocab, 129.0 / 744.0, 0.15 * 129.0 / 744.0);
}

TEST(GemmEfficiencyModel, EfficiencyGrowsWithDepthAndStaysBelowOne) {
  const GemmEfficiencyModel model(132);
  double previous = 0;
  for (int64_t k = 64; k <= 65536; k *= 2) {
    const double e = model.efficiency(bf16(8192, 8192, k));
    EXPECT_GT(e, previous) << "k = " << k;
    EXPECT_LE(e, 0.75);
    previous = e;
  }
}

TEST(GemmEfficiencyModel, RejectsNonPositiveShapesAndSmCounts) {
  EXPECT_THROW(GemmEfficiencyModel(0), InputError);
  const GemmEfficiencyModel model(132);
  EXPECT_THROW(model.efficiency(bf16(0, 4096, 4096)), InputError);
  EXPECT_THROW(model.efficiency(GemmShape{16, 16, 16, 0, DataType::kBf16, false}), InputError);
}

}  // namespace gemm_efficiency_model_test
}  // namespace clustersim
