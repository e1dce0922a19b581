#pragma once

// The median of measured samples, as the fitting quotes it: the middle value, or the mean of the
// two middle values of an even count. Throws InternalError for no samples.

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace clustersim {

inline double median(std::vector<double> v) {
  check_invariant(!v.empty(), "median of nothing");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace clustersim
