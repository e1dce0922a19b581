#pragma once

// Summaries of repeated timings and the choice of repeat counts.
//
// Method (METHOD.md of the GPU machine, nccl-tests): warm up, time many repetitions, report the
// median; where one operation is shorter than the timer's resolution, time a batch of `inner`
// back-to-back operations and divide.

#include <cstdint>
#include <string>
#include <vector>

namespace clustersim::calibrate {

// Median, minimum and maximum of a set of samples (any unit; the caller's).
struct SampleSummary {
  double median = 0;  // mean of the two middle values for an even count
  double min = 0;
  double max = 0;
  int64_t count = 0;
};

// Throws InternalError for an empty sample set or a NaN sample.
SampleSummary summarize(std::vector<double> samples);

// How many repetitions of an operation estimated at `estimate_s` seconds fill `target_s`
// seconds: ceil(target / estimate), clamped to [min_count, max_count]. A non-positive estimate
// gives max_count. Throws InternalError when min_count < 1 or min_count > max_count.
int64_t repeats_for_target(double estimate_s, double target_s, int64_t min_count, int64_t max_count);

// Sizes min, min·factor, min·factor², ... up to and including max (when max is reached exactly).
// Throws InputError unless 0 < min <= max and factor >= 2.
std::vector<int64_t> geometric_sizes(int64_t min_bytes, int64_t max_bytes, int64_t factor = 2);

// Space-separated samples with `significant` significant digits: "12.31 12.4 12.29".
std::string join_samples(const std::vector<double>& samples, int significant = 6);

// A number with `significant` significant digits, no exponent for ordinary magnitudes ("%.*g").
std::string format_number(double value, int significant = 6);

}  // namespace clustersim::calibrate
