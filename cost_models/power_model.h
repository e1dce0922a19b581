#pragma once

// The board power of a GPU and the clock its power limit leaves it (DESIGN.md, "Execution physics").
//
// What is modelled. A kernel draws the idle power of the board plus a dynamic power that depends on
// its class and its work rate (tensor-core GEMM per data type, fused attention, memory-bound
// kernels; FLOPs or bytes per second at full clock times a measured energy per FLOP or byte, capped
// at the class's measured full-clock power). The firmware averages the board power over a window
// (a first-order average with time constant `window()`); while that average would exceed the power
// it holds (`held_power()`), the clock is lowered so that the power equals it. Compute-bound work
// slows by the rate factor f (the GEMM rate relative to full clock); memory-bound kernels have only
// kMemoryClockShare of their time bound by the clock. The power-vs-rate curve is calibrated on the
// measured rates, not on the reported SM clock (which falls further than the rate: README of the
// data below, "The clock and the rate do not fall together"):
//   dynamic power of clock-bound work at rate factor f = D · f²  (D: dynamic power at full clock)
//   its duration                                       = T₁ / f
// so its dynamic energy is D·T₁·f. Memory-bound work keeps its energy per byte. A kernel's D is its
// class's measured value, scaled for its work rate by kRateShare.
//
// Measured (one H200 SXM, 700 W, tools/data/h200-2026-12-01-power/README.md, run1):
//   idle 123.3 W (context open); sustained bf16 8192³ GEMMs settle at 0.822 of their first-16 ms
//   peak of 800.9 TFLOP/s at 691.6 W; fp8 0.812 of 1474.5 at 691.1 W; tf32 0.821 of 414.6 at 690.9 W;
//   a 2 GiB device copy at 4268 GB/s draws 663 W uncapped; SDPA flash attention (bf16, fwd+bwd)
//   279.5 TFLOP/s at full clock, 0.988 of it at 689.1 W; fp32 on CUDA cores 51.2 TFLOP/s at 694 W
//   uncapped; the capped runs hold 689–692 W; the rate stays at its peak for 24–38 ms (median 34)
//   after a step from idle to GEMMs; copies lose 2–3 % of their rate beside capped GEMMs (GEMM rate
//   0.889 of peak in the 1 ms : 1 ms mix).
// Derived from those: D = (held − idle) / (settled/peak)² per GEMM dtype (bf16 841 W, i.e. 964 W at
//   full clock, inside the 950–990 W implied by the GEMM : idle duty cycles); attention
//   (689.1 − 123.3) / 0.988² = 580 W; memory-bound 540 W; held power 691/700 = 0.987 of the limit;
//   window τ = 34 ms / ln((964 − 123)/(964 − 691)) = 30 ms; memory clock share (1 − 4177/4268) /
//   (1 − 0.889) = 0.19.
// Chosen, not measured: kRateShare (below), and the power of kernels at other rates than the
//   measured ones follows it.
// Other GPUs: every power above scales with power_limit / 700 W (idle from the preset, else
// kDefaultIdleFractionOfLimit of the limit), and each class's full-clock rate with the GPU's
// datasheet peak (or HBM bandwidth): the same fraction of peak at the same fraction of the limit.
// This is a default, not a measurement: the A100 and Blackwell figures are untested, and
// simulation.power_model: auto runs the governor only where a calibration profile carries the GPU's
// own power section (CalibrationProfile::power). The H200 profile's is derived from the same run by
// `clustersim calibrate fit --power-summary` (tools/calibration/power_summary.h): held 692.1 W,
// window 32 ms (median onset 36 ms of all six capped GEMM runs), share 0.196; the defaults here
// keep the figures above, read from the run's tables.
// Sustained rates. The GEMM and attention rates of a profile, and of the default efficiency model,
// were measured back to back, long enough for the governor to settle on each kernel alone; under
// the governor they are first undone to full clock (full_clock_gemm, full_clock_attention), so that
// a step that mixes GEMMs with cooler kernels runs its GEMMs faster than their microbenchmark did.
// Not modelled: the 1 s slow loop (held at the same power here), the firmware's reaction delay,
// temperature, the power of NCCL kernels (communication and waits count as idle), and power
// differences between GEMM shapes beyond their rate.

#include <array>
#include <cstdint>
#include <optional>

#include "core/data_type.h"
#include "core/gpu_spec.h"
#include "core/units.h"
#include "cost_models/calibration_profile.h"

namespace clustersim {

// The work of compute kernels at full clock as the governor needs it; sums of it are exact (a run
// of kernels is priced as the mix of its parts).
struct PowerWork {
  Duration clock_bound;           // part of the full-clock duration that scales with 1 / rate factor
  double clock_bound_joules = 0;  // dynamic energy (above idle) of that part at full clock
  double fixed_joules = 0;        // dynamic energy of the rest (memory-bound traffic)

  PowerWork& operator+=(const PowerWork& o);
  PowerWork scaled(double share) const;
  bool empty() const { return clock_bound.ps() == 0 && clock_bound_joules == 0 && fixed_joules == 0; }
};

class PowerModel {
 public:
  // Measured on the H200 (see the header comment): the defaults of a GPU whose calibration profile
  // carries no power section (CalibrationProfile::power).
  static constexpr double kReferenceLimitW = 700.0;
  static constexpr double kHeldFractionOfLimit = 691.0 / 700.0;
  static constexpr double kWindowSeconds = 0.030;
  static constexpr double kMemoryClockShare = 0.19;
  static constexpr double kMinRateFactor = 0.3;  // the governor's floor (H200 min clock 345 of 1980 MHz ≈ 0.17)
  // The share of a kernel's dynamic power that follows its work rate (FLOP/s or bytes/s relative to
  // the class's measured full-clock rate); the rest is drawn whenever the kernel runs. Not measured
  // per kernel: 0.5 lies between 0 (the reference training steps all at 691 W, 20 % too slow) and 1
  // (520–650 W against the measured 650–689 W), chosen after seeing those three steps
  // (tests/power_reference_steps_test.cc).
  static constexpr double kRateShare = 0.5;

  // `measured`: the power section of the GPU's calibration profile; its idle, held power, window,
  // memory clock share and class figures replace the H200 defaults above (each class at the rate
  // it measured; powers scaled by gpu.power_limit / measured->power_limit, 1 when the preset's
  // limit is the one measured). Without it, the defaults are scaled to the GPU's limit and datasheet.
  // Throws InputError if the GPU has no power limit (GpuSpec::power_limit zero).
  explicit PowerModel(const GpuSpec& gpu, const ProfilePower* measured = nullptr);

  Power limit() const { return limit_; }
  Power idle() const { return idle_; }
  Power held_power() const { return held_; }
  Duration window() const { return Duration::seconds(window_s_); }
  double window_seconds() const { return window_s_; }
  double memory_clock_share() const { return memory_share_; }
  // Whether the parameters come from a profile's measurements (else the scaled H200 defaults).
  bool measured() const { return measured_; }

  // Full-clock power work of one kernel of `duration` (launch gap included: `gap` of it is idle).
  PowerWork gemm(Duration duration, Duration gap, double flops, DataType dtype) const;
  PowerWork attention(Duration duration, Duration gap, double kernel_flops) const;
  PowerWork memory_bound(Duration duration, Duration gap, Bytes bytes) const;

  // Dynamic power at full clock of sustained work of each class (W): GEMM by dtype, attention, memory.
  double gemm_dynamic_w(DataType dtype) const;
  double attention_dynamic_w() const { return attention_.dynamic_w; }
  double memory_dynamic_w() const { return memory_.dynamic_w; }

  // Duration of work `w` of full-clock duration `full` at rate factor f (0 < f <= 1).
  static Duration duration_at(Duration full, const PowerWork& w, double f);
  // Board power (W) while running it at rate factor f.
  double power_at(Duration full, const PowerWork& w, double f) const;
  // The rate factor at which that power equals `target_w` (1 when it is below at full clock;
  // kMinRateFactor when even that exceeds it).
  double rate_factor_for(Duration full, const PowerWork& w, double target_w) const;

  // Full-clock duration of a GEMM (or fused attention call) whose duration `sustained` (launch gap
  // `gap` included) was measured back to back, long enough for the governor to settle on that
  // kernel alone: the calibrator's points run 0.25 s of batches each (tools/calibrator/event_timer.h,
  // TimingPolicy), and the default GEMM efficiency was fitted to such runs
  // (cost_models/gemm_efficiency_model.h). Its busy part ran at the rate factor f at which the
  // kernel draws held_power() (f = 1 when it stays below it at full clock), so
  //   full = gap + (sustained − gap) · f,   power_at(full, work(full), f) = held_power().
  // Solved by bisection on f in [kMinRateFactor, 1]. `kernel_flops`: FLOPs the kernel executes.
  Duration full_clock_gemm(Duration sustained, Duration gap, double kernel_flops, DataType dtype) const;
  Duration full_clock_attention(Duration sustained, Duration gap, double kernel_flops) const;

 private:
  struct ClassPower {
    double dynamic_w = 0;      // at full clock, sustained
    double joules_per_unit = 0;  // per FLOP or per byte at full clock
  };
  // Dynamic energy of `units` (FLOPs, bytes) of class `c` run in `busy` at full clock.
  static double class_joules(const ClassPower& c, Duration busy, double units);
  // full_clock_gemm / full_clock_attention for a clock-bound kernel of class `c`.
  Duration full_clock(const ClassPower& c, Duration sustained, Duration gap, double units) const;

  Power limit_;
  Power idle_;
  Power held_;
  double window_s_ = kWindowSeconds;
  double memory_share_ = kMemoryClockShare;
  bool measured_ = false;
  std::array<ClassPower, 5> gemm_{};  // by DataType
  ClassPower attention_;
  ClassPower memory_;
};

// The clock governor of one GPU: a first-order average of the board power with the model's window,
// held at or below held_power() by lowering the rate factor. Energy is integrated as it runs.
class PowerGovernor {
 public:
  // Starts with the average at `average_w` (W), or from an idle GPU at full clock (idle power).
  explicit PowerGovernor(const PowerModel& model, std::optional<double> average_w = std::nullopt);

  // The GPU runs nothing for `d`: the average relaxes toward idle power.
  void idle_for(Duration d);
  // Runs work `w` of full-clock duration `full` (a kernel, or a run of kernels taken as their mix);
  // returns its duration under the governor.
  Duration run(Duration full, const PowerWork& w);

  double average_w() const { return average_w_; }
  double energy_joules() const { return energy_j_; }
  // Clock-bound full-clock time run so far, and the time it took (their ratio: the mean slowdown).
  Duration clock_bound_full() const { return clock_bound_full_; }
  Duration clock_bound_actual() const { return clock_bound_actual_; }

 private:
  // Runs the part `share` of (full, w) at rate factor f, relaxing the average toward its power.
  Duration run_part(Duration full, const PowerWork& w, double share, double f);

  const PowerModel* model_;
  double average_w_ = 0;
  double energy_j_ = 0;
  Duration clock_bound_full_;
  Duration clock_bound_actual_;
};

}  // namespace clustersim
