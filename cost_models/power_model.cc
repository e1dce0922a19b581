#include "cost_models/power_model.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

namespace {

// H200 SXM measurements (tools/calibrate/data/h200-2026-12-01-power/README.md, run1 table "Idle and
// sustained work"): the idle power, and per class the full-clock rate, the settled rate factor and
// the settled power of a sustained run.
constexpr double kH200IdleW = 123.3;
struct Measured {
  double full_rate;      // FLOP/s or bytes/s at full clock (first 16 ms peak)
  double datasheet;      // the H200 datasheet figure of the same (dense peak or HBM bandwidth)
  double settled_ratio;  // settled rate / full rate (1: not capped)
  double settled_w;      // board power of the settled (or uncapped) run
};
constexpr Measured kBf16{800.9e12, 989e12, 0.822, 691.6};   // bf16 8192³ torch.mm
constexpr Measured kFp8{1474.5e12, 1979e12, 0.812, 691.1};  // fp8 e4m3 8192³ torch._scaled_mm
constexpr Measured kTf32{414.6e12, 494.5e12, 0.821, 690.9}; // tf32 8192³
constexpr Measured kFp32{51.2e12, 67e12, 1.0, 694.0};       // fp32 8192³ on CUDA cores, uncapped
constexpr Measured kAttention{279.5e12, 989e12, 0.988, 689.1};  // SDPA flash bf16 fwd+bwd, kernel FLOPs
constexpr Measured kCopy{4268e9, 4800e9, 1.0, 663.0};        // 2 GiB device copy, read + write, uncapped

// Dynamic power at full clock (W) on the H200: (settled power − idle) / settled_ratio² (power of
// clock-bound work ∝ rate², see the header).
constexpr double dynamic_w(const Measured& m) { return (m.settled_w - kH200IdleW) / (m.settled_ratio * m.settled_ratio); }

double seconds(Duration d) { return d.to_seconds(); }

Duration busy_time(Duration duration, Duration gap) { return std::max(Duration::zero(), duration - gap); }

}  // namespace

PowerWork& PowerWork::operator+=(const PowerWork& o) {
  clock_bound += o.clock_bound;
  clock_bound_joules += o.clock_bound_joules;
  fixed_joules += o.fixed_joules;
  return *this;
}

PowerWork PowerWork::scaled(double share) const {
  PowerWork w;
  w.clock_bound = Duration::picoseconds(std::llround(static_cast<double>(clock_bound.ps()) * share));
  w.clock_bound_joules = clock_bound_joules * share;
  w.fixed_joules = fixed_joules * share;
  return w;
}

PowerModel::PowerModel(const GpuSpec& gpu) {
  if (!(gpu.power_limit > Power::zero())) {
    throw InputError(fmt::format("GPU {} has no power_limit; give one in its preset (e.g. power_limit: \"700 W\") or "
                                 "set simulation.power_model: false",
                                 gpu.name));
  }
  limit_ = gpu.power_limit;
  idle_ = gpu.idle_power > Power::zero() ? gpu.idle_power : gpu.power_limit * kDefaultIdleFractionOfLimit;
  held_ = limit_ * kHeldFractionOfLimit;
  const double scale = limit_.in_watts() / kReferenceLimitW;
  // The same fraction of this GPU's datasheet figure at the same fraction of its limit.
  auto class_power = [scale](const Measured& m, double datasheet) {
    ClassPower c;
    c.dynamic_w = dynamic_w(m) * scale;
    c.joules_per_unit = c.dynamic_w / (m.full_rate / m.datasheet * datasheet);
    return c;
  };
  auto peak_or = [&gpu](DataType t, double fallback) {
    const auto it = gpu.dense_peak.find(t);
    return it != gpu.dense_peak.end() ? it->second.flop_per_second() : fallback;
  };
  const double bf16_peak = peak_or(DataType::kBf16, peak_or(DataType::kFp16, kBf16.datasheet));
  gemm_[static_cast<size_t>(DataType::kBf16)] = class_power(kBf16, bf16_peak);
  gemm_[static_cast<size_t>(DataType::kFp16)] = class_power(kBf16, peak_or(DataType::kFp16, bf16_peak));  // as bf16
  gemm_[static_cast<size_t>(DataType::kFp8)] = class_power(kFp8, peak_or(DataType::kFp8, 2 * bf16_peak));
  gemm_[static_cast<size_t>(DataType::kTf32)] = class_power(kTf32, peak_or(DataType::kTf32, bf16_peak / 2));
  gemm_[static_cast<size_t>(DataType::kFp32)] = class_power(kFp32, peak_or(DataType::kFp32, bf16_peak / 15));
  attention_ = class_power(kAttention, bf16_peak);
  memory_ = class_power(kCopy, gpu.hbm_bandwidth.bytes_per_second() > 0 ? gpu.hbm_bandwidth.bytes_per_second()
                                                                        : kCopy.datasheet);
}

double PowerModel::class_joules(const ClassPower& c, Duration busy, double units) {
  const double at_full_power = c.dynamic_w * seconds(busy);
  const double by_work = c.joules_per_unit * std::max(0.0, units);
  return std::min(at_full_power, (1 - kRateShare) * at_full_power + kRateShare * by_work);
}

double PowerModel::gemm_dynamic_w(DataType dtype) const { return gemm_[static_cast<size_t>(dtype)].dynamic_w; }

PowerWork PowerModel::gemm(Duration duration, Duration gap, double flops, DataType dtype) const {
  const ClassPower& c = gemm_[static_cast<size_t>(dtype)];
  const Duration busy = busy_time(duration, gap);
  PowerWork w;
  w.clock_bound = busy;
  w.clock_bound_joules = class_joules(c, busy, flops);
  return w;
}

PowerWork PowerModel::attention(Duration duration, Duration gap, double kernel_flops) const {
  const Duration busy = busy_time(duration, gap);
  PowerWork w;
  w.clock_bound = busy;
  w.clock_bound_joules = class_joules(attention_, busy, kernel_flops);
  return w;
}

PowerWork PowerModel::memory_bound(Duration duration, Duration gap, Bytes bytes) const {
  const Duration busy = busy_time(duration, gap);
  const double joules = class_joules(memory_, busy, static_cast<double>(bytes.count()));
  PowerWork w;
  w.clock_bound = Duration::picoseconds(std::llround(static_cast<double>(busy.ps()) * kMemoryClockShare));
  w.clock_bound_joules = joules * kMemoryClockShare;
  w.fixed_joules = joules - w.clock_bound_joules;
  return w;
}

Duration PowerModel::duration_at(Duration full, const PowerWork& w, double f) {
  const Duration bound = std::min(w.clock_bound, full);
  return Duration::picoseconds(std::llround(static_cast<double>(bound.ps()) / f)) + (full - bound);
}

double PowerModel::power_at(Duration full, const PowerWork& w, double f) const {
  const double t = seconds(duration_at(full, w, f));
  if (t <= 0) return idle_.in_watts();
  return idle_.in_watts() + (w.clock_bound_joules * f + w.fixed_joules) / t;
}

double PowerModel::rate_factor_for(Duration full, const PowerWork& w, double target_w) const {
  if (power_at(full, w, 1.0) <= target_w) return 1.0;
  const double ec = w.clock_bound_joules;
  const double tc = seconds(std::min(w.clock_bound, full));
  if (ec <= 0 || tc <= 0) return 1.0;  // nothing the clock could slow
  const double h = target_w - idle_.in_watts();
  if (h <= 0) return kMinRateFactor;
  // idle + (ec·f + em) / (tc/f + tm) = target  ⇔  ec·f² + (em − h·tm)·f − h·tc = 0.
  const double tm = seconds(full) - tc;
  const double b = w.fixed_joules - h * tm;
  const double f = (-b + std::sqrt(b * b + 4 * ec * h * tc)) / (2 * ec);
  return std::clamp(f, kMinRateFactor, 1.0);
}

PowerGovernor::PowerGovernor(const PowerModel& model, std::optional<double> average_w)
    : model_(&model), average_w_(average_w.value_or(model.idle().in_watts())) {}

void PowerGovernor::idle_for(Duration d) {
  if (d <= Duration::zero()) return;
  const double idle = model_->idle().in_watts();
  average_w_ = idle + (average_w_ - idle) * std::exp(-seconds(d) / PowerModel::kWindowSeconds);
  energy_j_ += idle * seconds(d);
}

Duration PowerGovernor::run_part(Duration full, const PowerWork& w, double share, double f) {
  const Duration whole = PowerModel::duration_at(full, w, f);
  const Duration d = share == 1.0 ? whole
                                  : Duration::picoseconds(std::llround(static_cast<double>(whole.ps()) * share));
  const double p = model_->power_at(full, w, f);
  average_w_ = p + (average_w_ - p) * std::exp(-seconds(d) / PowerModel::kWindowSeconds);
  energy_j_ += p * seconds(d);
  const Duration bound = std::min(w.clock_bound, full);
  const Duration bound_full = share == 1.0 ? bound : Duration::picoseconds(std::llround(static_cast<double>(bound.ps()) * share));
  clock_bound_full_ += bound_full;
  clock_bound_actual_ += f == 1.0 ? bound_full : Duration::picoseconds(std::llround(static_cast<double>(bound_full.ps()) / f));
  return d;
}

Duration PowerGovernor::run(Duration full, const PowerWork& w) {
  if (full <= Duration::zero()) return Duration::zero();
  const double held = model_->held_power().in_watts();
  const double full_clock_w = model_->power_at(full, w, 1.0);
  if (full_clock_w <= held) return run_part(full, w, 1.0, 1.0);
  // Full clock until the average reaches the held power (A(t) = P + (A₀ − P)·e^(−t/τ)), then the
  // rate factor that draws exactly the held power, which keeps the average there.
  double share_at_full = 0;
  if (average_w_ < held) {
    const double t_cross = PowerModel::kWindowSeconds * std::log((full_clock_w - average_w_) / (full_clock_w - held));
    share_at_full = std::min(1.0, t_cross / seconds(full));
  }
  Duration d;
  if (share_at_full > 0) d += run_part(full, w, share_at_full, 1.0);
  if (share_at_full < 1.0) {
    const double f = model_->rate_factor_for(full, w, held);
    d += run_part(full, w, 1.0 - share_at_full, f);
    if (f > PowerModel::kMinRateFactor) average_w_ = held;
  }
  return d;
}

}  // namespace clustersim
