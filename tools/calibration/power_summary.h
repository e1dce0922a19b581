#pragma once

// A calibration profile's `power` section (cost_models/calibration_profile.h, ProfilePower)
// derived from the summary of a power and clock run: the `summary.json` that
// tools/reference/power_clock_analyze.py writes from the raw samples of power_clock.py
// (tools/data/h200-2026-12-01-power/README.md describes the run and the file). The rules, each
// applied to the named scenarios of that run:
//   power_limit        run.nvml.enforced_power_limit_w;
//   idle_power         `idle_ctx` avg_power_w (a CUDA context open, nothing running);
//   each class         gemm_bf16 <- `gemm_bf16_8192`, gemm_fp8 <- `gemm_fp8_8192`, gemm_tf32 <-
//                      `gemm_tf32_8192`, gemm_fp32 <- `gemm_fp32_8192`, attention <-
//                      `attn_flash_bf16`, copy <- `copy_2gib`:
//                        full_rate     = max(rate_peak_first_16ms, rate_settled) (an uncapped run's
//                                        first 16 ms include its start from idle),
//                        settled_ratio = rate_settled / full_rate,
//                        settled_power = settled_power_w (the mean over the run's settled part);
//   held_power         the median settled_power_w of the capped sustained runs (kind gemm or attn,
//                      software power cap in at least half of the samples);
//   window             τ = onset / ln((D − idle) / (D − held)): the first-order average of the power
//                      with time constant τ, stepping from idle to the bf16 GEMMs' full-clock power
//                      D = idle + (held − idle) / settled_ratio(bf16)² (the model's D · f² curve,
//                      cost_models/power_model.h), crosses the held power after `onset`, the median
//                      rate_drop_onset_ms of the capped GEMM runs;
//   memory_clock_share (1 − c / copy full_rate) / (1 − g / G): in `mix_gemm_copy_1ms` (1 ms of
//                      bf16 4096³ GEMMs, 1 ms of copies, capped) the copies' rate c and the GEMMs'
//                      rate g, G the full rate of `gemm_bf16_4096`: the share of a copy's time that
//                      slows with the clock as the GEMMs do.
// Rounded to what the run resolves: powers to 0.1 W, rates to 4 significant digits, ratios and the
// share to 3 decimals, the window to 0.1 ms. `source` names the file and these rules.
//
// Throws InputError naming `path` and the scenario and field for a file that is not JSON, lacks a
// scenario or field above, or holds a value out of its range (a non-positive rate or power, a
// held power not between idle and the limit, a share outside [0, 1]).

#include <string>
#include <string_view>

#include "cost_models/calibration_profile.h"

namespace clustersim {

ProfilePower derive_profile_power(std::string_view summary_json, const std::string& path);

}  // namespace clustersim
