#include "tools/calibrator/sample_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace clustersim::calibrate {

SampleSummary summarize(std::vector<double> samples) {
  check_invariant(!samples.empty(), "summarize: no samples");
  for (double s : samples) check_invariant(!std::isnan(s), "summarize: NaN sample");
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  SampleSummary summary;
  summary.count = static_cast<int64_t>(n);
  summary.min = samples.front();
  summary.max = samples.back();
  summary.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return summary;
}

int64_t repeats_for_target(double estimate_s, double target_s, int64_t min_count, int64_t max_count) {
  check_invariant(min_count >= 1 && min_count <= max_count, "repeats_for_target: bad bounds");
  if (!(estimate_s > 0)) return max_count;
  const double wanted = std::ceil(target_s / estimate_s);
  if (!(wanted < static_cast<double>(max_count))) return max_count;
  return std::clamp(static_cast<int64_t>(wanted), min_count, max_count);
}

std::vector<int64_t> geometric_sizes(int64_t min_bytes, int64_t max_bytes, int64_t factor) {
  if (min_bytes <= 0 || min_bytes > max_bytes || factor < 2) {
    throw InputError("size sweep " + std::to_string(min_bytes) + ".." + std::to_string(max_bytes) +
                     " B by factor " + std::to_string(factor) +
                     " is invalid: need 0 < min <= max and factor >= 2");
  }
  std::vector<int64_t> sizes;
  for (int64_t size = min_bytes; size <= max_bytes; size *= factor) {
    sizes.push_back(size);
    if (size > max_bytes / factor) break;  // the next step would pass max (or overflow)
  }
  return sizes;
}

std::string format_number(double value, int significant) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", significant, value);
  return buffer;
}

std::string join_samples(const std::vector<double>& samples, int significant) {
  std::string text;
  for (double s : samples) {
    if (!text.empty()) text += ' ';
    text += format_number(s, significant);
  }
  return text;
}

}  // namespace clustersim::calibrate
