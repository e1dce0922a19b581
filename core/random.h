#pragma once

// A seeded random stream that is the same on every compiler and standard library (the
// distributions of <random> are implementation-defined): SplitMix64 (Steele, Lea and Flood,
// "Fast splittable pseudorandom number generators", OOPSLA 2014), and the distributions the
// campaign and the step jitter draw from, by inversion (exponential) and Box-Muller (normal).

#include <cmath>
#include <cstdint>
#include <numbers>

namespace clustersim {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1]: the top 53 bits.
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
  // Exponential with mean `mean`.
  double exponential(double mean) { return -mean * std::log(uniform()); }
  // Standard normal (the cosine half of a Box-Muller pair; the sine half is not kept).
  double normal() { return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * std::numbers::pi * uniform()); }
  // Log-normal with mean 1 and coefficient of variation `cv` (σ² = ln(1 + cv²), μ = −σ²/2).
  double lognormal_mean_one(double cv) {
    const double s2 = std::log1p(cv * cv);
    return std::exp(-s2 / 2 + std::sqrt(s2) * normal());
  }

 private:
  uint64_t state_;
};

}  // namespace clustersim
