#include "cost_models/power_model.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

namespace {

// H200 SXM measurements (tools/data/h200-2026-12-01-power/README.md, run1 table "Idle and
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

// Dynamic power at full clock (W) of a class measured with the board at `idle_w`: (settled power −
// idle) / settled_ratio² (power of clock-bound work ∝ rate², see the header).
constexpr double dynamic_w(const Measured& m, double idle_w) {
  return (m.settled_w - idle_w) / (m.settled_ratio * m.settled_ratio);
}

Measured from_profile(const ProfilePowerClass& c, double datasheet) {
  return Measured{c.full_rate, datasheet, c.settled_ratio, c.settled_power.in_watts()};
}

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

PowerModel::PowerModel(const GpuSpec& gpu, const ProfilePower* measured) : measured_(measured != nullptr) {
  if (!(gpu.power_limit > Power::zero())) {
    throw InputError(fmt::format("GPU {} has no power_limit; give one in its preset (e.g. power_limit: \"700 W\") or "
                                 "set simulation.power_model: false",
                                 gpu.name));
  }
  limit_ = gpu.power_limit;
  const double reference_limit = measured ? measured->power_limit.in_watts() : kReferenceLimitW;
  const double scale = limit_.in_watts() / reference_limit;
  const double measured_idle = measured ? measured->idle_power.in_watts() : kH200IdleW;
  idle_ = gpu.idle_power > Power::zero() ? gpu.idle_power
          : measured                     ? Power::watts(measured_idle * scale)
                                         : gpu.power_limit * kDefaultIdleFractionOfLimit;
  held_ = limit_ * (measured ? measured->held_power.in_watts() / reference_limit : kHeldFractionOfLimit);
  if (measured) {
    window_s_ = measured->window.to_seconds();
    memory_share_ = measured->memory_clock_share;
  }
  // The same fraction of this GPU's datasheet figure at the same fraction of its limit; a profile's
  // classes are this GPU's own (their full rates are taken as measured).
  auto class_power = [scale, measured_idle](const Measured& m, double datasheet) {
    ClassPower c;
    c.dynamic_w = dynamic_w(m, measured_idle) * scale;
    c.joules_per_unit = c.dynamic_w / (m.full_rate / m.datasheet * datasheet);
    return c;
  };
  auto peak_or = [&gpu](DataType t, double fallback) {
    const auto it = gpu.dense_peak.find(t);
    return it != gpu.dense_peak.end() ? it->second.flop_per_second() : fallback;
  };
  const double bf16_peak = peak_or(DataType::kBf16, peak_or(DataType::kFp16, kBf16.datasheet));
  const double hbm = gpu.hbm_bandwidth.bytes_per_second() > 0 ? gpu.hbm_bandwidth.bytes_per_second() : kCopy.datasheet;
  auto pick = [&](const Measured& fallback, const ProfilePowerClass ProfilePower::*field, double datasheet) {
    return measured ? from_profile(measured->*field, datasheet) : fallback;
  };
  const double fp16_peak = peak_or(DataType::kFp16, bf16_peak);
  const double fp8_peak = peak_or(DataType::kFp8, 2 * bf16_peak);
  const double tf32_peak = peak_or(DataType::kTf32, bf16_peak / 2);
  const double fp32_peak = peak_or(DataType::kFp32, bf16_peak / 15);
  gemm_[static_cast<size_t>(DataType::kBf16)] = class_power(pick(kBf16, &ProfilePower::gemm_bf16, bf16_peak), bf16_peak);
  // fp16 as bf16 (the same tensor-core rate)
  gemm_[static_cast<size_t>(DataType::kFp16)] = class_power(pick(kBf16, &ProfilePower::gemm_bf16, fp16_peak), fp16_peak);
  gemm_[static_cast<size_t>(DataType::kFp8)] = class_power(pick(kFp8, &ProfilePower::gemm_fp8, fp8_peak), fp8_peak);
  gemm_[static_cast<size_t>(DataType::kTf32)] = class_power(pick(kTf32, &ProfilePower::gemm_tf32, tf32_peak), tf32_peak);
  gemm_[static_cast<size_t>(DataType::kFp32)] = class_power(pick(kFp32, &ProfilePower::gemm_fp32, fp32_peak), fp32_peak);
  attention_ = class_power(pick(kAttention, &ProfilePower::attention, bf16_peak), bf16_peak);
  memory_ = class_power(pick(kCopy, &ProfilePower::copy, hbm), hbm);
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
  w.clock_bound = Duration::picoseconds(std::llround(static_cast<double>(busy.ps()) * memory_share_));
  w.clock_bound_joules = joules * memory_share_;
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

Duration PowerModel::full_clock(const ClassPower& c, Duration sustained, Duration gap, double units) const {
  const Duration busy = busy_time(sustained, gap);
  if (busy <= Duration::zero()) return sustained;
  const double t = seconds(sustained);
  const double b = seconds(busy);
  const double h = held_.in_watts() - idle_.in_watts();
  // Board power above idle of the busy part measured as `sustained` at rate factor f: its full-clock
  // energy class_joules(busy·f) times f over the measured time, the smaller of
  //   D·b·f² / t   and   ((1 − s)·D·b·f² + s·j·units·f) / t       (class_joules, s = kRateShare).
  // Both grow with f, so their minimum meets h at the larger of their roots.
  const double d = c.dynamic_w;
  const double a = (1 - kRateShare) * d * b;
  const double lin = kRateShare * c.joules_per_unit * std::max(0.0, units);
  if (std::min(d * b, a + lin) <= h * t) return sustained;  // under the held power at full clock
  const double capped_root = std::sqrt(h * t / (d * b));
  const double rate_root = a > 0 ? (-lin + std::sqrt(lin * lin + 4 * a * h * t)) / (2 * a) : h * t / lin;
  const double f = std::clamp(std::max(capped_root, rate_root), kMinRateFactor, 1.0);
  return gap + Duration::picoseconds(std::llround(static_cast<double>(busy.ps()) * f));
}

Duration PowerModel::full_clock_gemm(Duration sustained, Duration gap, double kernel_flops, DataType dtype) const {
  return full_clock(gemm_[static_cast<size_t>(dtype)], sustained, gap, kernel_flops);
}

Duration PowerModel::full_clock_attention(Duration sustained, Duration gap, double kernel_flops) const {
  return full_clock(attention_, sustained, gap, kernel_flops);
}

PowerGovernor::PowerGovernor(const PowerModel& model, std::optional<double> average_w)
    : model_(&model), average_w_(average_w.value_or(model.idle().in_watts())) {}

void PowerGovernor::idle_for(Duration d) {
  if (d <= Duration::zero()) return;
  const double idle = model_->idle().in_watts();
  average_w_ = idle + (average_w_ - idle) * std::exp(-seconds(d) / model_->window_seconds());
  energy_j_ += idle * seconds(d);
}

Duration PowerGovernor::run_part(Duration full, const PowerWork& w, double share, double f) {
  const Duration whole = PowerModel::duration_at(full, w, f);
  const Duration d = share == 1.0 ? whole
                                  : Duration::picoseconds(std::llround(static_cast<double>(whole.ps()) * share));
  const double p = model_->power_at(full, w, f);
  average_w_ = p + (average_w_ - p) * std::exp(-seconds(d) / model_->window_seconds());
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
    const double t_cross = model_->window_seconds() * std::log((full_clock_w - average_w_) / (full_clock_w - held));
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
