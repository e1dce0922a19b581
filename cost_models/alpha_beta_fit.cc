#include "cost_models/alpha_beta_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "core/error.h"

namespace clustersim {

namespace {

void sort_by_size(std::vector<AlphaBetaPoint>& points) {
  std::stable_sort(points.begin(), points.end(),
                   [](const AlphaBetaPoint& a, const AlphaBetaPoint& b) { return a.size < b.size; });
}

double relative_error(const AlphaBetaSegment& s, const AlphaBetaPoint& p) {
  const double measured = static_cast<double>(p.time.ps());
  return (static_cast<double>(s.predict(p.size).ps()) - measured) / measured;
}

double squared_error(const AlphaBetaSegment& s, const std::vector<AlphaBetaPoint>& points) {
  double sum = 0;
  for (size_t i = s.first; i <= s.last; ++i) sum += relative_error(s, points[i]) * relative_error(s, points[i]);
  return sum;
}

// Geometric mean of two sizes, rounded down (the boundary between two regimes).
Bytes boundary(Bytes a, Bytes b) {
  return Bytes::of(static_cast<int64_t>(std::floor(std::sqrt(static_cast<double>(a.count()) *
                                                             static_cast<double>(b.count())))));
}

struct Partition {
  std::vector<size_t> starts;  // first index of each segment
  double error = std::numeric_limits<double>::infinity();
};

}  // namespace

const AlphaBetaSegment& AlphaBetaFit::segment_for(Bytes size) const {
  check_invariant(!segments.empty(), "AlphaBetaFit has no segments");
  for (const AlphaBetaSegment& s : segments) {
    if (size >= s.min_size && size <= s.max_size) return s;
  }
  return size < segments.front().min_size ? segments.front() : segments.back();
}

AlphaBetaSegment fit_alpha_beta(const std::vector<AlphaBetaPoint>& points, size_t first, size_t last) {
  if (points.empty() || first > last || last >= points.size()) {
    throw InputError(fmt::format("alpha-beta fit: empty point range [{}, {}] of {} points", first, last,
                                 points.size()));
  }
  const size_t n = last - first + 1;
  double max_size = 1;
  for (size_t i = first; i <= last; ++i) {
    if (points[i].time.ps() <= 0) {
      throw InputError(fmt::format("alpha-beta fit: measured time of {} B must be positive", points[i].size.count()));
    }
    max_size = std::max(max_size, static_cast<double>(points[i].size.count()));
  }
  // Unknowns: α in µs and β in µs per max_size bytes (scaled so both columns are O(1)). Row i is
  // divided by t_i: relative errors.
  Eigen::MatrixXd a(static_cast<Eigen::Index>(n), 2);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(n));
  for (size_t j = 0; j < n; ++j) {
    const AlphaBetaPoint& p = points[first + j];
    const double t = p.time.to_microseconds();
    a(static_cast<Eigen::Index>(j), 0) = 1.0 / t;
    a(static_cast<Eigen::Index>(j), 1) = static_cast<double>(p.size.count()) / max_size / t;
  }
  double alpha_us = 0;
  double beta_us = 0;  // µs per max_size bytes
  if (n >= 2) {
    const Eigen::Vector2d x = a.colPivHouseholderQr().solve(y);
    alpha_us = x(0);
    beta_us = x(1);
  }
  if (n < 2 || alpha_us < 0 || beta_us <= 0) {
    // The constrained optimum lies on an edge: α = 0 (bandwidth only) or β = 0 (latency only).
    const Eigen::VectorXd c0 = a.col(0);
    const Eigen::VectorXd c1 = a.col(1);
    const double alpha_only = c0.sum() / c0.squaredNorm();
    const double beta_only = c1.squaredNorm() > 0 ? c1.sum() / c1.squaredNorm() : 0;
    const double err_alpha = (c0 * alpha_only - y).squaredNorm();
    const double err_beta = beta_only > 0 ? (c1 * beta_only - y).squaredNorm() : std::numeric_limits<double>::infinity();
    if (err_beta < err_alpha && n >= 2) {
      alpha_us = 0;
      beta_us = beta_only;
    } else {
      alpha_us = alpha_only;
      beta_us = 0;
    }
  }
  AlphaBetaSegment s;
  s.first = first;
  s.last = last;
  s.min_size = points[first].size;
  s.max_size = points[last].size;
  s.latency = Duration::microseconds(alpha_us);
  if (beta_us > 0) {
    s.bandwidth = Bandwidth::bytes_per_s(max_size / (beta_us * 1e-6));
  } else {
    // Latency-bound: the largest size moves in one picosecond.
    s.bandwidth = Bandwidth::bytes_per_s(std::max(1.0, static_cast<double>(s.max_size.count())) * 1e12);
  }
  return s;
}

AlphaBetaFit fit_piecewise_alpha_beta(std::vector<AlphaBetaPoint> points, const PiecewiseFitOptions& options) {
  if (points.empty()) throw InputError("piecewise alpha-beta fit: no measured points");
  if (options.max_segments < 1 || options.min_points_per_segment < 1) {
    throw InputError(fmt::format("piecewise alpha-beta fit: max_segments {} and min_points_per_segment {} must be >= 1",
                                 options.max_segments, options.min_points_per_segment));
  }
  sort_by_size(points);
  const size_t n = points.size();
  const size_t m = static_cast<size_t>(options.min_points_per_segment);
  // Error of every admissible run [i, j] (memoised: runs are refitted many times otherwise).
  std::vector<std::vector<double>> cost(n, std::vector<double>(n, std::numeric_limits<double>::infinity()));
  auto run_cost = [&](size_t i, size_t j) {
    double& c = cost[i][j];
    if (std::isinf(c)) c = squared_error(fit_alpha_beta(points, i, j), points);
    return c;
  };
  std::vector<Partition> best(static_cast<size_t>(options.max_segments) + 1);
  best[1].starts = {0};
  best[1].error = run_cost(0, n - 1);
  if (options.max_segments >= 2 && n >= 2 * m) {
    for (size_t i = m; i + m <= n; ++i) {
      const double e = run_cost(0, i - 1) + run_cost(i, n - 1);
      if (e < best[2].error) best[2] = {{0, i}, e};
    }
  }
  if (options.max_segments >= 3 && n >= 3 * m) {
    for (size_t i = m; i + 2 * m <= n; ++i) {
      for (size_t j = i + m; j + m <= n; ++j) {
        const double e = run_cost(0, i - 1) + run_cost(i, j - 1) + run_cost(j, n - 1);
        if (e < best[3].error) best[3] = {{0, i, j}, e};
      }
    }
  }
  auto rms = [n](double error) { return std::sqrt(error / static_cast<double>(n)); };
  double best_rms = std::numeric_limits<double>::infinity();
  for (const Partition& p : best) best_rms = std::min(best_rms, rms(p.error));
  size_t chosen = 1;
  for (size_t k = 1; k < best.size(); ++k) {
    if (!std::isinf(best[k].error) && rms(best[k].error) <= best_rms + options.min_improvement) {
      chosen = k;
      break;
    }
  }
  AlphaBetaFit fit;
  const std::vector<size_t>& starts = best[chosen].starts;
  for (size_t s = 0; s < starts.size(); ++s) {
    const size_t first = starts[s];
    const size_t last = s + 1 < starts.size() ? starts[s + 1] - 1 : n - 1;
    fit.segments.push_back(fit_alpha_beta(points, first, last));
  }
  // Tile the size axis: [0, geometric boundary], (boundary, next boundary], ..., up to the largest size.
  fit.segments.front().min_size = Bytes::zero();
  for (size_t s = 0; s + 1 < fit.segments.size(); ++s) {
    const Bytes b = boundary(points[fit.segments[s].last].size, points[fit.segments[s + 1].first].size);
    fit.segments[s].max_size = b;
    fit.segments[s + 1].min_size = b + Bytes::of(1);
  }
  fit.rms_relative_error = rms(best[chosen].error);
  return fit;
}

std::vector<Duration> leave_one_out_alpha_beta(std::vector<AlphaBetaPoint> points, const PiecewiseFitOptions& options) {
  if (points.size() < 2) throw InputError("leave-one-out alpha-beta evaluation needs at least two points");
  sort_by_size(points);
  std::vector<Duration> predicted;
  for (size_t i = 0; i < points.size(); ++i) {
    std::vector<AlphaBetaPoint> others;
    for (size_t j = 0; j < points.size(); ++j) {
      if (j != i) others.push_back(points[j]);
    }
    predicted.push_back(fit_piecewise_alpha_beta(std::move(others), options).predict(points[i].size));
  }
  return predicted;
}

}  // namespace clustersim
