#pragma once

#include <cstddef>
#include <vector>

#include "core/units.h"

namespace clustersim {

// One measured transfer-like operation: `time` for `size` bytes (a collective of nccl-tests'
// size convention, a copy, ...).
struct AlphaBetaPoint {
  Bytes size;
  Duration time;
};

// time = latency + size / bandwidth inside [min_size, max_size] (both inclusive): the α–β
// (Hockney) model of a size regime.
struct AlphaBetaSegment {
  Bytes min_size;
  Bytes max_size;
  Duration latency;     // α >= 0
  Bandwidth bandwidth;  // 1/β > 0
  size_t first = 0;     // index range [first, last] of the fitted points (sorted by size)
  size_t last = 0;

  Duration predict(Bytes size) const { return latency + transfer_time(size, bandwidth); }
};

// A piecewise α–β fit over consecutive size regimes; segments tile [0, largest fitted size].
struct AlphaBetaFit {
  std::vector<AlphaBetaSegment> segments;
  double rms_relative_error = 0;  // sqrt(mean((predicted − measured)² / measured²)) over the points

  // The segment containing `size` (the last one beyond the largest fitted size, extrapolating).
  // Throws InternalError when there are no segments.
  const AlphaBetaSegment& segment_for(Bytes size) const;
  Duration predict(Bytes size) const { return segment_for(size).predict(size); }
};

// Least squares of one α–β segment over points[first..last] (sorted by size), minimising the sum of
// squared relative errors Σ((α + β·S_i − t_i) / t_i)² with Eigen (column-pivoting QR on the
// weighted 2-column system), so that small sizes weigh as much as large ones. Constraints: α < 0
// refits with α = 0 (pure bandwidth); β <= 0 (time not growing with size: latency-bound) refits
// with β = 0 and gives the segment the bandwidth that moves its largest size in one picosecond.
// min_size/max_size are the fitted points' sizes. Throws InputError for an empty range or a
// non-positive time.
AlphaBetaSegment fit_alpha_beta(const std::vector<AlphaBetaPoint>& points, size_t first, size_t last);

struct PiecewiseFitOptions {
  int max_segments = 3;          // at most this many size regimes
  int min_points_per_segment = 3;  // each regime is fitted to at least this many points
  // A regime more must lower the RMS relative error by at least this much (absolute, 0.01 = one
  // percentage point) compared with the best fit using the maximum count; otherwise fewer win.
  double min_improvement = 0.01;
};

// Piecewise α–β fit. Rule for the regime breakpoints: for each segment count k = 1..max_segments,
// the partition of the size-sorted points into k contiguous runs (each of at least
// min_points_per_segment points) that minimises the total squared relative error is found by
// exhaustive search; the chosen k is the smallest whose RMS relative error is within
// min_improvement of the best k's. A boundary between two regimes lies at the geometric mean of
// the last size of one and the first size of the next; the first regime starts at 0 B. With fewer
// points than 2·min_points_per_segment, one segment. Points are sorted by size first. Throws
// InputError for no points or a non-positive time.
AlphaBetaFit fit_piecewise_alpha_beta(std::vector<AlphaBetaPoint> points, const PiecewiseFitOptions& options = {});

// Leave-one-out: for each point (in size order), the piecewise fit of all the others (same rule)
// predicts it. Returns the predictions in size order. Needs at least two points.
std::vector<Duration> leave_one_out_alpha_beta(std::vector<AlphaBetaPoint> points,
                                               const PiecewiseFitOptions& options = {});

}  // namespace clustersim
