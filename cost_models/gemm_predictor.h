#pragma once

#include <functional>
#include <vector>

#include "core/units.h"
#include "cost_models/calibration_profile.h"
#include "cost_models/gemm_shape.h"

namespace clustersim {

// Predicts GEMM kernel durations from measured samples (a calibration profile).
//
// Method: a baseline model (ComputeCostModel's roofline with GemmKernelModel's compute time, which
// carries the kernel family, tile and wave quantization, per-wave latency, operand feed, the memory
// floor and the alignment slow path) is corrected by the measured/baseline time ratio of nearby
// samples. The log-ratios of the k = 8 nearest samples of the same class are averaged with Gaussian
// weights exp(-d²/2σ²), σ = 1 octave, where d is the distance in log2 space over (M, N, K, batch).
// Interpolating the ratio rather than the time keeps the sawtooth of quantization that a smooth
// interpolation would blur. A class is a dtype and an alignment class (GemmAlignment): misaligned
// shapes are corrected only by misaligned samples, those with the same unaligned operands (the
// output's stride, the A operand's, or both) first; when a class has no samples the aligned samples
// of the dtype are used (the baseline already carries the slow-path factor), and when the dtype has
// none the baseline stands alone. fp32 has no slow path: all its shapes are one class. bf16 and
// fp16 run the same cuBLAS kernels (the same algorithm, tile and split in 30 of the 45 shapes the
// H200 sweep measured in both, time ratio fp16/bf16 median 1.00, range 0.92–1.20:
// tools/data/h200-2026-11-29/gemm.csv), so a sample of the other one joins the class at a
// distance of 2 octaves added in quadrature: it weighs where the dtype's own samples are far. A
// sample of the same dtype and alignment class at most 0.05 octaves away (the distance above; 3.5 %
// in one dimension) is a twin: its ratio alone corrects the shape. In the H200 alignment sweep such
// twins (1026 and 1028, 2050 and 2052, 4098 and 4100, as M, K or both) ran the same cuBLAS
// algorithm, tile and split in all 18 pairs, while bf16 and fp16 of one shape did not always (fp16 1024×1026×1024 on a 70 TFLOP/s
// kernel, bf16 on a 101 TFLOP/s one; tools/data/h200-2026-11-29/gemm-align4-*.csv). A
// shape with a sample's (M, N, K, batch), dtype and alignment class returns that sample's time
// (whether A is stored transposed changes which dimensions are leading, i.e. the alignment class,
// and otherwise only the kernel variant: the calibrator times one layout for all).
class GemmPredictor {
 public:
  using Baseline = std::function<Duration(const GemmShape&)>;

  GemmPredictor(std::vector<GemmSample> samples, Baseline baseline);

  Duration predict(const GemmShape& shape) const;
  // True when `shape`'s dtype has samples (the prediction is calibrated, not the baseline).
  bool covers(const GemmShape& shape) const;
  // predict() as if sample `excluded` were absent (leave-one-out evaluation).
  Duration predict_without(const GemmShape& shape, size_t excluded) const;
  const std::vector<GemmSample>& samples() const { return samples_; }

 private:
  struct Point {
    GemmShape shape;
    double log_ratio;  // ln(measured / baseline)
    double coords[4];  // log2 of m, n, k, batch
  };
  std::vector<GemmSample> samples_;
  std::vector<Point> points_;
  Baseline baseline_;
};

// Leave-one-out evaluation: each sample predicted from all the others.
struct LeaveOneOutResult {
  struct Row {
    GemmShape shape;
    Duration measured;
    Duration predicted;
    double relative_error;  // (predicted - measured) / measured
  };
  std::vector<Row> rows;
  double median_abs_error = 0;  // median of |relative_error|
  double max_abs_error = 0;
};

LeaveOneOutResult evaluate_leave_one_out(const GemmPredictor& predictor);

}  // namespace clustersim
