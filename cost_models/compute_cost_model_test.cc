#include "cost_models/compute_cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "cost_models/calibration_profile.h"
#include "cost_models/test_support.h"

namespace clustersim {
namespace compute_cost_model_test {

const std::string kSweep = std::string(CLUSTERSIM_SOURCE_DIR) + "/cost_models/testdata/h200_pytorch_sweep.json";

double achieved_tflops(const ComputeCostModel& model, const GemmShape& shape) {
  return shape.flops() / model.gemm_time(shape).to_seconds() * 1e-12;
}

GemmShape bf16(int64_t m, int64_t n, int64_t k) { return GemmShape{m, n, k, 1, DataType::kBf16, false}; }

TEST(ComputeCostModel, DefaultGemmTimesMatchTheIssuesH200Readings) {
  // The issue's PyTorch readings on an H200 (TFLOP/s): 4096³ ~696, 8192³ ~774, 4096×50304×4096
  // ~744, and the slow path 4091³ ~127, 4096×50257×4096 ~129. Tolerance 15 %: run-to-run spread of
  // such readings is ~10 % (this repository's own sweep measured 796 and 702 for the first two).
  const ComputeCostModel model(testing::h200(), nullptr);
  struct Reading {
    GemmShape shape;
    double tflops;
  };
  for (const Reading& r : {Reading{bf16(4096, 4096, 4096), 696}, Reading{bf16(8192, 8192, 8192), 774},
                           Reading{bf16(4096, 50304, 4096), 744}, Reading{bf16(4091, 4091, 4091), 127},
                           Reading{bf16(4096, 50257, 4096), 129}}) {
    EXPECT_NEAR(achieved_tflops(model, r.shape), r.tflops, 0.15 * r.tflops)
        << r.shape.m << "x" << r.shape.n << "x" << r.shape.k;
  }
}

TEST(ComputeCostModel, DefaultModelAgainstTheH200SweepSamples) {
  // Every aligned sample of the committed sweep (84 bf16/fp8 shapes from 256³ to 16384³, training
  // shapes of 7B and 175B layers at tp 1–8, skinny and batched GEMMs): the default model, without
  // the profile, must stay within 36 % on each and 6 % at the median (the fit gave 4.9 % / 35 %).
  const CalibrationProfile profile = load_calibration_profile(kSweep);
  const ComputeCostModel model(testing::h200(), nullptr);
  std::vector<double> errors;
  for (const GemmSample& s : profile.gemm_samples) {
    if (GemmEfficiencyModel::alignment_of(s.shape) != GemmAlignment::kAligned) continue;
    const double predicted = model.gemm_time(s.shape).to_seconds();
    const double error = (predicted - s.time.to_seconds()) / s.time.to_seconds();
    EXPECT_LE(std::fabs(error), 0.36) << s.shape.m << "x" << s.shape.n << "x" << s.shape.k << " b" << s.shape.batch;
    errors.push_back(std::fabs(error));
  }
  ASSERT_GE(errors.size(), 80u);
  std::sort(errors.begin(), errors.end());
  EXPECT_LE(errors[errors.size() / 2], 0.06);
}

TEST(ComputeCostModel, DefaultModelAgainstPublishedHopperGemms) {
  // docs/validation/published/gemm.csv: the Hopper rows (MAMF best shapes of H100/H200/GH200 in
  // bf16 and fp8; DeepGEMM fp8 on H800 with M ≥ 4096, whose smaller-M rows are memory-bound decode
  // shapes outside a training simulator's range). Tolerance 25 %: the GH200 rows run at a 900 W
  // power limit, DeepGEMM is a hand-tuned kernel 1.1–1.3× faster than CUTLASS.
  const std::string path = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/published/gemm.csv";
  std::istringstream csv(testing::read_file(path));
  std::string line;
  std::getline(csv, line);
  const auto header = testing::split_csv_line(line);
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const ComputeCostModel model(testing::h100(), nullptr);
  int checked = 0;
  while (std::getline(csv, line)) {
    const auto f = testing::split_csv_line(line);
    const std::string gpu = f[column("gpu_type")];
    const std::string dtype = f[column("dtype")];
    const bool hopper = gpu.find("H100") != std::string::npos || gpu.find("H200") != std::string::npos ||
                        gpu.find("H800") != std::string::npos || gpu.find("GH200") != std::string::npos;
    if (!hopper || f[column("source")].find("superseded") != std::string::npos ||
        f[column("notes")].find("superseded") != std::string::npos) {
      continue;
    }
    const int64_t m = std::stoll(f[column("m")]);
    if (m < 1024 || f[column("notes")].find("masked") != std::string::npos) continue;
    const GemmShape shape{m, std::stoll(f[column("n")]), std::stoll(f[column("k")]),
                          f[column("groups")].empty() ? 1 : std::stoll(f[column("groups")]),
                          dtype.rfind("FP8", 0) == 0 ? DataType::kFp8 : DataType::kBf16, false};
    const double measured = std::stod(f[column("tflops")]);
    EXPECT_NEAR(achieved_tflops(model, shape), measured, 0.25 * measured) << line;
    ++checked;
  }
  EXPECT_GE(checked, 13);
}

TEST(ComputeCostModel, MemoryBoundAndAttentionTimesFollowTheRoofline) {
  const GpuSpec gpu = testing::h200();
  const ComputeCostModel model(gpu, nullptr);
  const Bandwidth hbm = gpu.hbm_bandwidth * ComputeDefaults::kHbmEfficiency;
  const Duration gap = Duration::microseconds(ComputeDefaults::kKernelGapUs);
  const Duration latency = Duration::microseconds(ComputeDefaults::kMemoryKernelLatencyUs);
  EXPECT_EQ(model.memory_kernel_latency(), latency);
  EXPECT_EQ(model.memory_bound_time(Bytes::gigabytes(1)), latency + transfer_time(Bytes::gigabytes(1), hbm) + gap);
  // Fused attention, causal, 32 heads × 4096² × 128: forward FLOPs 4·h·s²·d / 2.
  const double flops = 4.0 * 32 * 4096.0 * 4096.0 * 128 / 2;
  EXPECT_EQ(model.attention_time(flops, Bytes::megabytes(100), DataType::kBf16, AttentionDirection::kForward),
            compute_time(flops, gpu.peak(DataType::kBf16) * ComputeDefaults::kAttentionForwardEfficiency) + gap);
  // A tiny kernel's GPU time is the memory-kernel latency and the gap: the host's dispatch is the
  // step simulation's.
  EXPECT_LT(model.memory_bound_time(Bytes::of(4096)), latency + gap + Duration::microseconds(0.01));
  EXPECT_EQ(model.dispatch_interval(), Duration::microseconds(ComputeDefaults::kEagerDispatchUs));
}

TEST(ComputeCostModel, FrameworkKernelPathsUseProfileRatesOrDefaultFractions) {
  const GpuSpec gpu = testing::h200();
  const Bandwidth hbm = gpu.hbm_bandwidth * ComputeDefaults::kHbmEfficiency;
  const Duration gap = Duration::microseconds(ComputeDefaults::kKernelGapUs) +
                       Duration::microseconds(ComputeDefaults::kMemoryKernelLatencyUs);
  const ComputeCostModel defaults(gpu, nullptr);
  // kStream is the HBM rate (Megatron's default path); the others a measured fraction of it.
  EXPECT_EQ(defaults.kernel_bandwidth(MemoryAccess::kStream), hbm);
  const Bytes gb = Bytes::gigabytes(1);
  EXPECT_EQ(defaults.memory_bound_time(gb, MemoryAccess::kWideningCast),
            transfer_time(gb, hbm * default_fraction_of_copy(MemoryAccess::kWideningCast)) + gap);
  // The widening cast (unrolled path) is measured at 2107–2612 GB/s against a 4073 GB/s copy.
  EXPECT_NEAR(default_fraction_of_copy(MemoryAccess::kWideningCast), 2359.86 / 4073.36, 1e-12);
  CalibrationProfile profile;
  profile.name = "rates";
  profile.machine.gpu = "NVIDIA H200";
  profile.machine.sm_count = 132;
  profile.kernel_bandwidths[MemoryAccess::kStrided] = Bandwidth::gigabytes_per_s(1500);
  const ComputeCostModel calibrated(gpu, &profile);
  EXPECT_EQ(calibrated.memory_bound_time(gb, MemoryAccess::kStrided),
            transfer_time(gb, Bandwidth::gigabytes_per_s(1500)) + gap);
  // A kind the profile did not measure keeps its default fraction.
  EXPECT_EQ(calibrated.kernel_bandwidth(MemoryAccess::kSoftmax), hbm * default_fraction_of_copy(MemoryAccess::kSoftmax));
}

TEST(ComputeCostModel, SdpaFlashAttentionUsesSamplesOrItsDefaultEfficiency) {
  const GpuSpec gpu = testing::h200();
  const AttentionShape shape{4, 16, 16, 2048, 128, DataType::kBf16};
  const Bytes bytes = Bytes::megabytes(100);
  const ComputeCostModel defaults(gpu, nullptr);
  const Duration gap = Duration::microseconds(ComputeDefaults::kKernelGapUs);
  EXPECT_EQ(defaults.attention_time(shape, FusedAttentionKernel::kSdpaFlash, bytes, AttentionDirection::kForward),
            compute_time(shape.forward_flops(), gpu.peak(DataType::kBf16) * ComputeDefaults::kSdpaFlashForwardEfficiency) +
                gap);
  // The cuDNN kernel keeps the efficiencies Megatron's model uses.
  EXPECT_EQ(defaults.attention_time(shape, FusedAttentionKernel::kCudnn, bytes, AttentionDirection::kBackward),
            defaults.attention_time(shape.backward_flops(), bytes, DataType::kBf16, AttentionDirection::kBackward));
  // A profile sample of the shape is its time (a back-to-back kernel duration, no gap added).
  CalibrationProfile profile;
  profile.name = "attention";
  profile.machine.gpu = "NVIDIA H200";
  profile.machine.sm_count = 132;
  AttentionSample a;
  a.kernel = "sdpa-flash";
  a.shape = shape;
  a.forward = Duration::microseconds(289.152);
  a.backward = Duration::microseconds(812.480);
  profile.attention_samples.push_back(a);
  const ComputeCostModel calibrated(gpu, &profile);
  EXPECT_EQ(calibrated.attention_time(shape, FusedAttentionKernel::kSdpaFlash, bytes, AttentionDirection::kForward),
            a.forward);
  EXPECT_EQ(calibrated.attention_time(shape, FusedAttentionKernel::kSdpaFlash, bytes, AttentionDirection::kBackward),
            a.backward);
}

TEST(ComputeCostModel, SkinnyGemmsAreBoundByTheirWeightsOrTheirTiles) {
  // 16×4096×4096 bf16 reads the 32 MiB weight once; its 16 rows fill 1/8 of a 128-row tile, so
  // the tile-quantized compute time and the memory floor are close. Either way the time is at least
  // the memory floor plus the gap, and the sweep measured 14.085 µs (tolerance 15 %).
  const GpuSpec gpu = testing::h200();
  const ComputeCostModel model(gpu, nullptr);
  const Bytes bytes = Bytes::of((16 * 4096 + 4096 * 4096 + 16 * 4096) * 2);
  const Duration floor = transfer_time(bytes, gpu.hbm_bandwidth * ComputeDefaults::kHbmEfficiency) +
                         Duration::microseconds(ComputeDefaults::kKernelGapUs);
  const Duration t = model.gemm_time(16, 4096, 4096, DataType::kBf16);
  EXPECT_GE(t, floor);
  EXPECT_NEAR(t.to_microseconds(), 14.085, 0.15 * 14.085);
  // At M = 512 the same weights feed 32× the FLOPs: compute-bound, above the memory floor.
  EXPECT_GT(model.gemm_time(512, 4096, 4096, DataType::kBf16), floor);
}

// The device copies of the H200 calibration run replayed from a CUDA graph
// (tools/data/h200-2026-11-29/memory.csv, d2d_copy: buffer bytes, median µs), against the model
// with that run's kernel gap (launch.csv, graph_device 0.679136 µs) and copy rate (4151.27 GB/s,
// the profile's): the 1 MiB copy sets the memory-kernel latency; the others up to 64 MiB follow within 0.45 µs,
// and without the latency the copies up to 16 MiB are predicted at least 0.6 µs too fast.
TEST(ComputeCostModel, MemoryKernelLatencyReproducesTheCalibrationCopySweep) {
  CalibrationProfile profile;
  profile.name = "copies";
  profile.machine.gpu = "NVIDIA H200";
  profile.machine.sm_count = 132;
  profile.copy_bandwidth = Bandwidth::gigabytes_per_s(4151.27);
  profile.launch_graph = Duration::microseconds(0.679136);
  const ComputeCostModel model(testing::h200(), &profile);
  const struct {
    int64_t buffer;
    double measured_us;
  } copies[] = {{1048576, 2.05499},  {2097152, 2.99676},  {4194304, 3.77839},  {8388608, 5.83124},
                {16777216, 9.83531}, {33554432, 17.6897}, {67108864, 33.44}};
  for (const auto& c : copies) {
    const Duration t = model.memory_bound_time(Bytes::of(2 * c.buffer));
    EXPECT_NEAR(t.to_microseconds(), c.measured_us, 0.45) << c.buffer;  // 33.88 against 33.44 the farthest
    if (c.buffer <= 16777216) {
      EXPECT_GT(c.measured_us - (t - model.memory_kernel_latency()).to_microseconds(), 0.6) << c.buffer;
    }
  }
  EXPECT_NEAR(model.memory_bound_time(Bytes::of(2 * 1048576)).to_microseconds(), 2.05499, 0.001);
}

TEST(ComputeCostModel, ProfileReplacesDefaultsAndDescribeSaysSo) {
  const CalibrationProfile profile = load_calibration_profile(kSweep);
  const ComputeCostModel calibrated(testing::h200(), &profile);
  EXPECT_TRUE(calibrated.calibrated());
  // A sampled shape returns its measured time.
  const GemmSample& s = profile.gemm_samples.front();
  EXPECT_EQ(calibrated.gemm_time(s.shape), s.time);
  EXPECT_EQ(calibrated.memory_bandwidth(), *profile.copy_bandwidth);
  EXPECT_EQ(calibrated.kernel_gap(), *profile.launch_graph);
  EXPECT_NE(calibrated.describe().find("h200-pytorch-sweep"), std::string::npos);

  const ComputeCostModel defaults(testing::h200());
  EXPECT_FALSE(defaults.calibrated());
  EXPECT_NE(defaults.describe().find("datasheet defaults"), std::string::npos);
}

TEST(ComputeCostModel, LeaveOneOutOnTheH200Sweep) {
  // Each of the sweep's samples predicted from the others (ratio to the calibrated baseline
  // interpolated in log space). The sweep is sparse (99 shapes scattered over 5 decades), so the
  // calibration issue's target (median ≤ 5 %, max ≤ 15 %) is asserted for the median only; the
  // median (4.2 %) and max (22.4 %, bf16 16×4096×4096) over this sweep are bounded at their level. The
  // median was 3.9 % before twins (GemmPredictor) and the slow path's 6 µs wave latency
  // (GemmKernelModel), which the cuBLASLt sweeps of the h200-2026-11-29 profile chose: 4.0 % with
  // the twins alone.
  const CalibrationProfile profile = load_calibration_profile(kSweep);
  const LeaveOneOutResult loo = leave_one_out_gemm(profile, testing::h200());
  ASSERT_EQ(loo.rows.size(), profile.gemm_samples.size());
  EXPECT_LE(loo.median_abs_error, 0.043);
  EXPECT_LE(loo.max_abs_error, 0.23);
  std::cout << "leave-one-out over " << loo.rows.size() << " samples: median " << 100 * loo.median_abs_error
            << " %, max " << 100 * loo.max_abs_error << " %\n";
}

TEST(ComputeCostModel, RejectsGpusWithoutSmCountOrBandwidth) {
  GpuSpec gpu = testing::h200();
  gpu.sm_count = 0;
  EXPECT_THROW(ComputeCostModel{gpu}, InputError);
  gpu = testing::h200();
  gpu.hbm_bandwidth = Bandwidth();
  EXPECT_THROW(ComputeCostModel{gpu}, InputError);
  gpu = testing::h200();
  gpu.dense_peak.erase(DataType::kFp8);
  const ComputeCostModel model(gpu);
  EXPECT_THROW(model.gemm_time(4096, 4096, 4096, DataType::kFp8), InputError);
}

}  // namespace compute_cost_model_test
}  // namespace clustersim
