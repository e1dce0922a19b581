#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/gpu_spec.h"
#include "core/units.h"
#include "cost_models/attention_predictor.h"
#include "cost_models/calibration_profile.h"
#include "cost_models/gemm_efficiency_model.h"
#include "cost_models/gemm_kernel_model.h"
#include "cost_models/gemm_predictor.h"
#include "cost_models/gemm_shape.h"
#include "cost_models/power_model.h"

namespace clustersim {

enum class AttentionDirection { kForward, kBackward };

// Datasheet-based defaults, each measured on an H200 through PyTorch 2.11 / CUDA 13.0 on 2026-11-29
// (cost_models/testdata/measure_h200_sweep.py and measure_h200_attention.py):
//   HBM efficiency 0.871: a 2 GiB device-to-device copy moved 4180.8 GB/s (read + written) against
//     the 4.8 TB/s datasheet (other readings on such machines: 4.25–4.3 TB/s).
//   eager dispatch interval 7.57 µs: back-to-back tiny in-place adds from Python (framework dispatch
//     plus cudaLaunchKernel): the host cost of an eager elementwise op (workloads/host_costs.h); it
//     does not enter a kernel's GPU time.
//   kernel gap 1.23 µs: tiny kernels replayed from a CUDA graph.
//   memory-kernel latency 0.871 µs: what a kernel that moves data costs beyond the kernel gap and
//     its bytes at the copy rate. tools/data/h200-2026-11-29/memory.csv (the calibration profile's
//     own run, device copies replayed from a CUDA graph): a 1 MiB copy (2,097,152 B moved) takes
//     2.055 µs, against the profile's kernel gap 0.679 µs (a kernel that touches no memory) plus
//     2,097,152 B at its copy rate 4151.27 GB/s (0.505 µs): 2.055 − 0.679 − 0.505 = 0.871 µs. With it
//     gap + latency + bytes / rate reproduces that sweep's other copies within 0.45 µs from 4 MiB to
//     128 MiB moved (2.56 / 3.00, 3.57 / 3.78, 5.59 / 5.83, 9.63 / 9.84, 17.72 / 17.69,
//     33.88 / 33.44 µs predicted / measured), where without it every copy up to 64 MiB moved is
//     predicted 0.8–1.3 µs too fast (the DRAM round trip and the end-of-kernel write drain that a
//     kernel touching no memory skips). It applies to memory-bound kernels only: GEMM and attention
//     times come from their own samples.
//   fused attention 0.47 of the dense peak forward, 0.44 backward: cuDNN SDPA (the backend of
//     Transformer Engine on Hopper), bf16, causal, head dim 128, 32 heads, s = 2048–4096, FLOPs
//     counted causally (FlashAttention's benchmark convention); 435–467 TFLOP/s forward and
//     421–442 backward (at s = 8192 it reaches 604 / 522, so long sequences are underestimated).
//   PyTorch SDPA flash backend (FlashAttention-2) 0.255 forward, 0.212 backward: medians over 14
//     causal bf16 shapes (batch 1–16, 16–64 heads, GQA 1–8, s = 1024–8192, head dim 64–128) of
//     tools/data/h200-2026-11-29/attention.csv (252 and 210 TFLOP/s of 989; range
//     187–331 forward, 136–283 backward), used when no profile has attention samples.
struct ComputeDefaults {
  static constexpr double kHbmEfficiency = 0.871;
  static constexpr double kEagerDispatchUs = 7.57;
  static constexpr double kKernelGapUs = 1.23;
  static constexpr double kMemoryKernelLatencyUs = 0.871;
  static constexpr double kAttentionForwardEfficiency = 0.47;
  static constexpr double kAttentionBackwardEfficiency = 0.44;
  static constexpr double kSdpaFlashForwardEfficiency = 0.255;
  static constexpr double kSdpaFlashBackwardEfficiency = 0.212;
  // FlashAttention v1 runs the fused-attention FLOPs at 1/2 of the fused efficiencies above:
  // FlashAttention-2 "yields around 2× speedup compared to FlashAttention" (Dao 2023,
  // arXiv:2307.08691, abstract; its Fig. 4–6 on A100 show 1.7–3.0×).
  static constexpr double kFlashV1Slowdown = 2.0;
};

// Duration of each compute kernel on one GPU: a roofline with a shape-aware GEMM efficiency.
//   kernel duration = work + gap   (the GPU's time: when the host thread issues it is the step
//                                   simulation's, parallelism/step_simulation.h)
//   GEMM work       = max(FLOPs / (peak(dtype) × efficiency), bytes / HBM rate)
//                     bytes = (M·K + K·N + M·N) × element size × batch (each operand once)
//   memory-bound    = memory-kernel latency + bytes moved / rate of its memory access kind (the
//                     HBM rate for kStream; a profile's measured kernel rate or a default fraction
//                     of the HBM rate for PyTorch's kernel paths, cost_models/memory_access.h)
//   fused attention = max(kernel FLOPs / (peak × attention efficiency), bytes / HBM rate); for
//                     PyTorch's SDPA flash kernel the profile's attention samples
//                     (AttentionPredictor) or the default SDPA flash efficiencies
// The HBM rate is the datasheet bandwidth × 0.871 or a profile's measured copy rate. With a
// calibration profile, GEMM durations come from its samples (GemmPredictor, whose baseline is the
// same roofline with GemmKernelModel's tile-and-wave compute time) and the profile's launch
// numbers replace the defaults; what the profile lacks stays at the defaults, and describe() says
// which was used. The clock under the power limit is the step simulation's governor
// (set_power_governed). Not modelled: L2 reuse between kernels, concurrency of kernels on one GPU,
// overlap of communication kernels with compute on the SMs.
class ComputeCostModel {
 public:
  // Throws InputError if the GPU lacks an SM count (and the profile gives none) or a HBM bandwidth.
  // The profile is copied; it need not outlive the model.
  explicit ComputeCostModel(const GpuSpec& gpu, const CalibrationProfile* profile = nullptr);

  // Kernel duration of one GEMM. Throws InputError for a dtype without a datasheet peak.
  Duration gemm_time(const GemmShape& shape) const;
  Duration gemm_time(int64_t m, int64_t n, int64_t k, DataType dtype, int64_t batch = 1) const;
  // The achieved fraction of peak for `shape` under the default model (no memory floor, no launch).
  double gemm_efficiency(const GemmShape& shape) const { return gemm_model_.efficiency(shape); }
  // Kernel duration of a memory-bound kernel moving `bytes` (bytes read + bytes written) by the
  // access kind's rate (kernel_bandwidth()), plus the memory-kernel latency and the kernel gap.
  Duration memory_bound_time(Bytes bytes, MemoryAccess access = MemoryAccess::kStream) const;
  // The rate of a memory access kind: the HBM rate for kStream; else the profile's measured kernel
  // rate, or default_fraction_of_copy() × the HBM rate.
  Bandwidth kernel_bandwidth(MemoryAccess access) const;
  // Kernel duration of a fused attention kernel executing `kernel_flops` (as the kernel executes
  // them: a causal kernel skips the masked half) and moving `bytes`.
  // kFlashV1 runs at 1/kFlashV1Slowdown of those efficiencies; kSdpaFlash is priced as kCudnn here
  // (it needs a shape: the overload below).
  Duration attention_time(double kernel_flops, Bytes bytes, DataType dtype, AttentionDirection direction,
                          FusedAttentionKernel kernel = FusedAttentionKernel::kCudnn) const;
  // Kernel duration of a fused causal attention call of `shape` by `kernel`. kCudnn: as above from
  // the shape's FLOPs and `bytes`. kSdpaFlash: the profile's samples of that kernel when there are
  // any (AttentionPredictor), else the default SDPA flash efficiencies, floored by `bytes` / HBM
  // rate. Throws InputError for an invalid shape.
  Duration attention_time(const AttentionShape& shape, FusedAttentionKernel kernel, Bytes bytes,
                          AttentionDirection direction) const;
  // Whether attention_time prices a call of `shape` by `kernel` from the profile's samples. They
  // time the whole SDPA call (tools/calibrator/framework_benchmark.py), its small helper kernels
  // included (flash's split-KV combine, dot_do_o, convert_dq, GQA's group sums).
  bool attention_sampled(const AttentionShape& shape, FusedAttentionKernel kernel) const;
  // A kernel's time on the GPU for `work`: work + kernel gap.
  Duration kernel_duration(Duration work) const;

  Bandwidth memory_bandwidth() const { return memory_bandwidth_; }
  Duration kernel_gap() const { return kernel_gap_; }
  // ComputeDefaults::kMemoryKernelLatencyUs: added to every memory-bound kernel (see there).
  Duration memory_kernel_latency() const { return memory_latency_; }
  // The profile's measured eager dispatch interval (tiny in-place adds from Python, no autograd),
  // else ComputeDefaults::kEagerDispatchUs. No model reads it since the host thread replaced the
  // dispatch floor: the step's host costs are workloads/host_costs.h's, measured with autograd on.
  Duration dispatch_interval() const { return dispatch_interval_; }
  bool calibrated() const { return profile_name_.has_value(); }
  // The profile's GEMM predictor (its baseline is GemmKernelModel with this model's memory floor
  // and kernel gap), or nullptr without GEMM samples.
  const GemmPredictor* gemm_predictor() const { return predictor_ ? &*predictor_ : nullptr; }
  const GpuSpec& gpu() const { return gpu_; }
  // The GPU's power model, or nullptr when its preset gives no power limit.
  const PowerModel* power_model() const { return power_ ? &*power_ : nullptr; }

  // Whether the step simulation runs the GPU's clock governor on these kernels
  // (TrainingSimulationOptions::power_model). Then GEMM and fused-attention durations are returned
  // at full clock: the profile's samples and the default efficiencies are rates of kernels run back
  // to back, at the power limit where they reach it, and PowerModel::full_clock_gemm /
  // full_clock_attention undo the governor's slowdown of each kernel alone, which the governor then
  // applies again to the step's own mix. Memory-bound rates are left as measured (a 2 GiB copy runs
  // uncapped, cost_models/power_model.h). Throws InternalError when the GPU has no power model.
  void set_power_governed(bool governed);
  bool power_governed() const { return governed_; }

  // A straggler or a jittered step: every kernel time above is divided by `speed` (the fraction of
  // this GPU's rates it runs at, in (0, 4]; 1 by default). Throws InternalError outside that range.
  void set_speed(double speed);
  double speed() const { return speed_; }

  // One line for reports: which profile (name, GPU, date, what it covered) or that datasheet
  // defaults were used, with the numbers in force.
  std::string describe() const;

 private:
  // The default GEMM work time plus gap, with this model's bandwidth.
  Duration default_gemm_kernel(const GemmShape& shape) const;
  Duration at_speed(Duration full) const;
  // A sustained GEMM or attention duration at full clock when governed (set_power_governed).
  Duration gemm_at_clock(Duration sustained, const GemmShape& shape) const;
  Duration attention_at_clock(Duration sustained, double kernel_flops) const;

  GpuSpec gpu_;
  GemmEfficiencyModel gemm_model_;
  Bandwidth memory_bandwidth_;
  Duration kernel_gap_;
  Duration memory_latency_;
  Duration dispatch_interval_;
  std::optional<GemmPredictor> predictor_;
  std::map<MemoryAccess, Bandwidth> kernel_bandwidths_;  // measured by the profile
  std::optional<AttentionPredictor> sdpa_flash_;         // the profile's sdpa-flash samples
  std::optional<std::string> profile_name_;
  std::string profile_summary_;
  std::optional<PowerModel> power_;
  double speed_ = 1.0;
  bool governed_ = false;
};

// Leave-one-out evaluation of a profile's GEMM samples on `gpu` (see GemmPredictor): the check the
// calibration issue asks for (median ≤ 5 %, max ≤ 15 % on the H200).
LeaveOneOutResult leave_one_out_gemm(const CalibrationProfile& profile, const GpuSpec& gpu);

}  // namespace clustersim
