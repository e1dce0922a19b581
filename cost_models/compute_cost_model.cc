#include "cost_models/compute_cost_model.h"

#include <algorithm>
#include <fmt/format.h>

#include <cmath>

#include "core/error.h"

namespace clustersim {

namespace {

int sm_count_of(const GpuSpec& gpu, const CalibrationProfile* profile) {
  if (gpu.sm_count > 0) return gpu.sm_count;
  if (profile != nullptr && profile->machine.sm_count > 0) return profile->machine.sm_count;
  throw InputError(fmt::format("GPU \"{}\" has no sm_count; give the number of streaming multiprocessors "
                               "(e.g. 132 for H100/H200 SXM, 108 for A100) or a calibration profile",
                               gpu.name));
}

// Operand traffic of a GEMM: (M·K + K·N + M·N) × element size × batch, each operand once.
Bytes gemm_operand_bytes(const GemmShape& shape) {
  const int64_t e = bytes_per_element(shape.dtype);
  const int64_t elements = checked_add(checked_add(checked_mul(shape.m, shape.k, "GEMM operand A"),
                                                   checked_mul(shape.k, shape.n, "GEMM operand B"), "GEMM operands"),
                                       checked_mul(shape.m, shape.n, "GEMM output"), "GEMM operands");
  return Bytes::of(checked_mul(checked_mul(elements, e, "GEMM bytes"), shape.batch, "GEMM bytes"));
}

// The default GEMM kernel duration: roofline of compute (shape-aware efficiency) and operand
// traffic, plus the inter-kernel gap.
Duration default_gemm_kernel_time(const GemmEfficiencyModel& model, const GpuSpec& gpu, Bandwidth bandwidth,
                                  Duration gap, const GemmShape& shape) {
  const Duration compute = compute_time(shape.flops(), gpu.peak(shape.dtype) * model.efficiency(shape));
  return std::max(compute, transfer_time(gemm_operand_bytes(shape), bandwidth)) + gap;
}

// The calibrated predictor's baseline: the same roofline with GemmKernelModel's tile-and-wave time.
// A free function so that the predictor can hold it by value.
Duration baseline_gemm_kernel_time(const GemmKernelModel& model, const GpuSpec& gpu, Bandwidth bandwidth,
                                   Duration gap, const GemmShape& shape) {
  const Duration compute = model.compute_time(shape, gpu.peak(shape.dtype));
  return std::max(compute, transfer_time(gemm_operand_bytes(shape), bandwidth)) + gap;
}

// The dtype of a profile's SDPA flash samples (one dtype per kernel; bf16 when none says otherwise).
DataType flash_dtype_of(const std::vector<AttentionSample>& samples) {
  for (const AttentionSample& a : samples) {
    if (a.kernel == name_of(FusedAttentionKernel::kSdpaFlash)) return a.shape.dtype;
  }
  return DataType::kBf16;
}

}  // namespace

ComputeCostModel::ComputeCostModel(const GpuSpec& gpu, const CalibrationProfile* profile)
    : gpu_(gpu), gemm_model_(sm_count_of(gpu, profile)) {
  if (!gpu.hbm_bandwidth.is_positive() && (profile == nullptr || !profile->copy_bandwidth)) {
    throw InputError(fmt::format("GPU \"{}\" has no hbm_bandwidth; give its datasheet memory bandwidth "
                                 "(e.g. \"4.8 TB/s\" for H200) or a calibration profile with a copy bandwidth",
                                 gpu.name));
  }
  memory_bandwidth_ = gpu.hbm_bandwidth * ComputeDefaults::kHbmEfficiency;
  kernel_gap_ = Duration::microseconds(ComputeDefaults::kKernelGapUs);
  memory_latency_ = Duration::microseconds(ComputeDefaults::kMemoryKernelLatencyUs);
  dispatch_interval_ = Duration::microseconds(ComputeDefaults::kEagerDispatchUs);
  if (gpu.power_limit > Power::zero()) {
    power_.emplace(gpu, profile != nullptr && profile->power ? &*profile->power : nullptr);
  }
  if (profile == nullptr) return;

  profile_name_ = profile->name;
  std::vector<std::string> used;
  if (profile->copy_bandwidth) {
    if (!profile->copy_bandwidth->is_positive()) {
      throw InputError(fmt::format("calibration profile \"{}\": memory.copy_bandwidth must be positive", profile->name));
    }
    memory_bandwidth_ = *profile->copy_bandwidth;
    used.push_back(fmt::format("copy {}", to_string(memory_bandwidth_)));
  }
  if (profile->launch_eager) {
    dispatch_interval_ = *profile->launch_eager;
    used.push_back(fmt::format("eager dispatch {}", to_string(dispatch_interval_)));
  }
  if (profile->launch_graph) {
    kernel_gap_ = *profile->launch_graph;
    used.push_back(fmt::format("kernel gap {}", to_string(kernel_gap_)));
  }
  if (!profile->kernel_bandwidths.empty()) {
    kernel_bandwidths_ = profile->kernel_bandwidths;
    used.push_back(fmt::format("{} framework kernel rates", kernel_bandwidths_.size()));
  }
  std::vector<AttentionSample> flash;
  for (const AttentionSample& a : profile->attention_samples) {
    if (a.kernel == name_of(FusedAttentionKernel::kSdpaFlash)) flash.push_back(a);
  }
  if (!flash.empty()) {
    const size_t count = flash.size();
    sdpa_flash_.emplace(std::move(flash), gpu_.peak(flash_dtype_of(profile->attention_samples)));
    used.push_back(fmt::format("{} SDPA flash attention samples", count));
  }
  if (!profile->gemm_samples.empty()) {
    predictor_.emplace(profile->gemm_samples, [model = GemmKernelModel(gemm_model_.sm_count()), gpu = gpu_,
                                               bandwidth = memory_bandwidth_, gap = kernel_gap_](const GemmShape& s) {
      return baseline_gemm_kernel_time(model, gpu, bandwidth, gap, s);
    });
    used.push_back(fmt::format("{} GEMM samples", profile->gemm_samples.size()));
  }
  std::string joined;
  for (const auto& u : used) joined += (joined.empty() ? "" : ", ") + u;
  profile_summary_ = fmt::format("calibration profile \"{}\" ({}, {}): {}; datasheet defaults for the rest",
                                 profile->name, profile->machine.gpu,
                                 profile->machine.date.empty() ? "undated" : profile->machine.date,
                                 joined.empty() ? "nothing usable" : joined);
}

Duration ComputeCostModel::kernel_duration(Duration work) const {
  return work + kernel_gap_;
}

Duration ComputeCostModel::default_gemm_kernel(const GemmShape& shape) const {
  return default_gemm_kernel_time(gemm_model_, gpu_, memory_bandwidth_, kernel_gap_, shape);
}

void ComputeCostModel::set_speed(double speed) {
  if (!(speed > 0) || speed > 4) throw InternalError(fmt::format("ComputeCostModel::set_speed: {} is not in (0, 4]", speed));
  speed_ = speed;
}

Duration ComputeCostModel::at_speed(Duration full) const {
  return speed_ == 1.0 ? full : Duration::picoseconds(std::llround(static_cast<double>(full.ps()) / speed_));
}

void ComputeCostModel::set_power_governed(bool governed) {
  if (governed && !power_) {
    throw InternalError(fmt::format("ComputeCostModel::set_power_governed: GPU {} has no power model", gpu_.name));
  }
  governed_ = governed;
}

Duration ComputeCostModel::gemm_at_clock(Duration sustained, const GemmShape& shape) const {
  return governed_ ? power_->full_clock_gemm(sustained, kernel_gap_, shape.flops(), shape.dtype) : sustained;
}

Duration ComputeCostModel::attention_at_clock(Duration sustained, double kernel_flops) const {
  return governed_ ? power_->full_clock_attention(sustained, kernel_gap_, kernel_flops) : sustained;
}

Duration ComputeCostModel::gemm_time(const GemmShape& shape) const {
  if (predictor_ && predictor_->covers(shape)) {
    const Duration measured_like = predictor_->predict(shape);  // already a back-to-back kernel duration
    return at_speed(gemm_at_clock(measured_like, shape));
  }
  return at_speed(gemm_at_clock(default_gemm_kernel(shape), shape));
}

Duration ComputeCostModel::gemm_time(int64_t m, int64_t n, int64_t k, DataType dtype, int64_t batch) const {
  return gemm_time(GemmShape{m, n, k, batch, dtype, false});
}

Bandwidth ComputeCostModel::kernel_bandwidth(MemoryAccess access) const {
  if (access == MemoryAccess::kStream) return memory_bandwidth_;
  if (auto it = kernel_bandwidths_.find(access); it != kernel_bandwidths_.end()) return it->second;
  return memory_bandwidth_ * default_fraction_of_copy(access);
}

Duration ComputeCostModel::memory_bound_time(Bytes bytes, MemoryAccess access) const {
  return at_speed(kernel_duration(memory_latency_ + transfer_time(bytes, kernel_bandwidth(access))));
}

Duration ComputeCostModel::attention_time(const AttentionShape& shape, FusedAttentionKernel kernel, Bytes bytes,
                                          AttentionDirection direction) const {
  validate_attention_shape(shape, "fused attention");
  const double flops = direction == AttentionDirection::kForward ? shape.forward_flops() : shape.backward_flops();
  if (kernel != FusedAttentionKernel::kSdpaFlash) return attention_time(flops, bytes, shape.dtype, direction, kernel);
  const Duration floor = transfer_time(bytes, memory_bandwidth_);
  if (sdpa_flash_ && shape.dtype == sdpa_flash_->samples().front().shape.dtype) {
    const Duration measured_like = sdpa_flash_->predict(
        shape, direction == AttentionDirection::kForward ? AttentionPredictor::Direction::kForward
                                                         : AttentionPredictor::Direction::kBackward);
    // Samples are back-to-back kernel durations (inter-kernel gaps included), like GEMM samples.
    return at_speed(attention_at_clock(std::max(measured_like, floor), flops));
  }
  const double efficiency = direction == AttentionDirection::kForward ? ComputeDefaults::kSdpaFlashForwardEfficiency
                                                                       : ComputeDefaults::kSdpaFlashBackwardEfficiency;
  return at_speed(
      attention_at_clock(kernel_duration(std::max(compute_time(flops, gpu_.peak(shape.dtype) * efficiency), floor)), flops));
}

bool ComputeCostModel::attention_sampled(const AttentionShape& shape, FusedAttentionKernel kernel) const {
  return kernel == FusedAttentionKernel::kSdpaFlash && sdpa_flash_ &&
         shape.dtype == sdpa_flash_->samples().front().shape.dtype;
}

Duration ComputeCostModel::attention_time(double kernel_flops, Bytes bytes, DataType dtype,
                                          AttentionDirection direction, FusedAttentionKernel kernel) const {
  double efficiency = direction == AttentionDirection::kForward ? ComputeDefaults::kAttentionForwardEfficiency
                                                                : ComputeDefaults::kAttentionBackwardEfficiency;
  if (kernel == FusedAttentionKernel::kFlashV1) efficiency /= ComputeDefaults::kFlashV1Slowdown;
  const Duration compute = compute_time(kernel_flops, gpu_.peak(dtype) * efficiency);
  return at_speed(attention_at_clock(kernel_duration(std::max(compute, transfer_time(bytes, memory_bandwidth_))),
                                     kernel_flops));
}

std::string ComputeCostModel::describe() const {
  const std::string launch = fmt::format("kernel gap {}, memory-kernel latency {}", to_string(kernel_gap_),
                                         to_string(memory_latency_));
  if (profile_name_) return fmt::format("{} [{}]", profile_summary_, launch);
  return fmt::format(
      "datasheet defaults for {}: GEMM efficiency from the shape-aware default model (large-GEMM ceiling "
      "{:.2f} bf16/fp16, {:.2f} fp8; tile/wave quantization over {} SMs; slow path for misaligned strides), "
      "HBM {} ({:.3f} of datasheet), fused attention {:.2f}/{:.2f} of peak (forward/backward) [{}]",
      gpu_.name, GemmEfficiencyModel::peak_fraction(DataType::kBf16),
      GemmEfficiencyModel::peak_fraction(DataType::kFp8), gemm_model_.sm_count(), to_string(memory_bandwidth_),
      ComputeDefaults::kHbmEfficiency, ComputeDefaults::kAttentionForwardEfficiency,
      ComputeDefaults::kAttentionBackwardEfficiency, launch);
}

LeaveOneOutResult leave_one_out_gemm(const CalibrationProfile& profile, const GpuSpec& gpu) {
  // The calibrated model's own predictor: its baseline with the profile's bandwidth and kernel gap.
  const ComputeCostModel calibrated(gpu, &profile);
  if (calibrated.gemm_predictor() == nullptr) return {};
  return evaluate_leave_one_out(*calibrated.gemm_predictor());
}

}  // namespace clustersim
