#include "tools/calibration/power_summary.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/excerpt.h"
#include "tools/calibration/median.h"

namespace clustersim {
namespace {

using nlohmann::json;

// The summary's scenarios by name, and the errors that name the file.
class Summary {
 public:
  Summary(std::string_view text, const std::string& path) : path_(path) {
    try {
      doc_ = json::parse(text);
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{}: not valid JSON: {}", path_, excerpt(e.what(), 300)));
    }
    if (!doc_.is_object() || !doc_.contains("scenarios") || !doc_["scenarios"].is_array()) {
      throw InputError(fmt::format("{}: expected the summary of power_clock_analyze.py, an object with a "
                                   "\"scenarios\" list",
                                   path_));
    }
  }

  const json& scenario(const std::string& name) const {
    for (const json& s : doc_["scenarios"]) {
      if (s.is_object() && s.value("name", "") == name) return s;
    }
    throw InputError(fmt::format("{}: no scenario \"{}\" (a power_clock.py run of the power stage has it)", path_,
                                 name));
  }
  const json& scenarios() const { return doc_["scenarios"]; }

  // A positive, finite number of `s`.
  double positive(const json& s, const std::string& field) const {
    const std::string name = s.value("name", "?");
    auto it = s.find(field);
    if (it == s.end() || it->is_null()) {
      throw InputError(fmt::format("{}: scenario \"{}\": missing the number \"{}\"", path_, name, field));
    }
    if (!it->is_number()) {
      throw InputError(fmt::format("{}: scenario \"{}\": \"{}\" is {}, not a number", path_, name, field,
                                   excerpt(it->dump(), 60)));
    }
    const double v = it->get<double>();
    if (!std::isfinite(v) || !(v > 0)) {
      throw InputError(fmt::format("{}: scenario \"{}\": \"{}\" is {}; expected a positive number", path_, name,
                                   field, v));
    }
    return v;
  }

  double power_limit() const {
    const json* nvml = doc_.contains("run") && doc_["run"].is_object() && doc_["run"].contains("nvml")
                           ? &doc_["run"]["nvml"]
                           : nullptr;
    if (nvml == nullptr || !nvml->is_object() || !nvml->contains("enforced_power_limit_w")) {
      throw InputError(fmt::format("{}: missing run.nvml.enforced_power_limit_w", path_));
    }
    if (!(*nvml)["enforced_power_limit_w"].is_number()) {
      throw InputError(fmt::format("{}: run.nvml.enforced_power_limit_w is {}, not a number (watts)", path_,
                                   excerpt((*nvml)["enforced_power_limit_w"].dump(), 60)));
    }
    const double w = (*nvml)["enforced_power_limit_w"].get<double>();
    if (!std::isfinite(w) || !(w > 0)) {
      throw InputError(fmt::format("{}: run.nvml.enforced_power_limit_w is {}; expected a positive power", path_, w));
    }
    return w;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  json doc_;
};

// v rounded to 1 / per_unit (per_unit 10: tenths); the quotient is the double nearest the decimal.
double round_to(double v, double per_unit) { return std::round(v * per_unit) / per_unit; }
// v (> 1e3) rounded to `digits` significant digits: a whole number, exact in a double.
double significant(double v, int digits) {
  const double step = std::pow(10.0, std::floor(std::log10(v)) - (digits - 1));
  return std::round(v / step) * step;
}
std::string watts(double w) { return fmt::format("{:.1f} W", round_to(w, 10)); }

bool capped(const json& s) {
  const std::string kind = s.value("kind", "");
  auto share = s.find("frac_samples_sw_power_cap");
  return (kind == "gemm" || kind == "attn") && share != s.end() && share->is_number() && share->get<double>() >= 0.5;
}

}  // namespace

ProfilePower derive_profile_power(std::string_view summary_json, const std::string& path) {
  const Summary summary(summary_json, path);
  const double limit = summary.power_limit();
  const double idle = summary.positive(summary.scenario("idle_ctx"), "avg_power_w");

  std::vector<double> held_samples;
  std::vector<double> onsets;
  for (const json& s : summary.scenarios()) {
    if (!s.is_object() || !capped(s)) continue;
    held_samples.push_back(summary.positive(s, "settled_power_w"));
    if (s.value("kind", "") == "gemm") onsets.push_back(summary.positive(s, "rate_drop_onset_ms"));
  }
  if (held_samples.empty() || onsets.empty()) {
    throw InputError(fmt::format("{}: no capped sustained GEMM run (kind gemm, software power cap in at least half of "
                                 "its samples): the held power and the window need one",
                                 path));
  }
  const double held = median(held_samples);

  json section;
  section["source"] = fmt::format(
      "{}, derived by `clustersim calibrate fit --power-summary` (tools/calibration/power_summary.h): full_rate = "
      "max(first-16 ms peak, settled rate), settled_ratio and settled_power of the settled part, held_power = median "
      "settled power of the {} capped sustained runs, window = median onset / ln((D - idle) / (D - held)), "
      "memory_clock_share from mix_gemm_copy_1ms",
      path, held_samples.size());
  section["power_limit"] = watts(limit);
  section["idle_power"] = watts(idle);
  section["held_power"] = watts(held);

  struct ClassSource {
    const char* key;
    const char* scenario;
    const char* unit;
  };
  double bf16_ratio = 0;
  double copy_full = 0;
  for (const ClassSource& c : {ClassSource{"gemm_bf16", "gemm_bf16_8192", "FLOP/s"},
                               ClassSource{"gemm_fp8", "gemm_fp8_8192", "FLOP/s"},
                               ClassSource{"gemm_tf32", "gemm_tf32_8192", "FLOP/s"},
                               ClassSource{"gemm_fp32", "gemm_fp32_8192", "FLOP/s"},
                               ClassSource{"attention", "attn_flash_bf16", "FLOP/s"},
                               ClassSource{"copy", "copy_2gib", "B/s"}}) {
    const json& s = summary.scenario(c.scenario);
    const double settled = summary.positive(s, "rate_settled");
    const double full = significant(std::max(summary.positive(s, "rate_peak_first_16ms"), settled), 4);
    const double ratio = std::min(1.0, round_to(settled / full, 1000));
    section[c.key] = {{"full_rate", fmt::format("{} {}", full, c.unit)},
                      {"settled_ratio", ratio},
                      {"settled_power", watts(summary.positive(s, "settled_power_w"))}};
    if (std::string(c.key) == "gemm_bf16") bf16_ratio = ratio;
    if (std::string(c.key) == "copy") copy_full = full;
  }

  // The window: where the first-order average of a step from idle to D crosses the held power.
  const double demand = idle + (held - idle) / (bf16_ratio * bf16_ratio);
  const double onset_ms = median(onsets);
  const double tau_ms = onset_ms / std::log((demand - idle) / (demand - held));
  if (!std::isfinite(tau_ms) || !(tau_ms > 0)) {
    throw InputError(fmt::format("{}: the window comes out as {} ms (onset {} ms, idle {} W, held {} W, full-clock "
                                 "power {} W); the held power must lie between idle and the GEMMs' full-clock power",
                                 path, tau_ms, onset_ms, idle, held, demand));
  }
  section["window"] = fmt::format("{:.1f} ms", round_to(tau_ms, 10));

  const json& mix = summary.scenario("mix_gemm_copy_1ms");
  const double gemm_4096 = summary.positive(summary.scenario("gemm_bf16_4096"), "rate_peak_first_16ms");
  const double gemm_slowdown = 1 - summary.positive(mix, "gemm_rate_all") / gemm_4096;
  const double copy_slowdown = 1 - summary.positive(mix, "copy_rate_all") / copy_full;
  if (!(gemm_slowdown > 0)) {
    throw InputError(fmt::format("{}: scenario \"mix_gemm_copy_1ms\": its GEMMs ran at full rate, so the copies' "
                                 "share of clock-bound time cannot be derived",
                                 path));
  }
  section["memory_clock_share"] = round_to(std::clamp(copy_slowdown / gemm_slowdown, 0.0, 1.0), 1000);
  // The profile's own checks (held between idle and the limit, each class above idle, ...).
  return parse_profile_power(section.dump(), path);
}

}  // namespace clustersim
