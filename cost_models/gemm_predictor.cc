#include "cost_models/gemm_predictor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "cost_models/gemm_efficiency_model.h"

namespace clustersim {

namespace {

constexpr size_t kGemmNeighbours = 8;
constexpr double kSigmaOctaves = 1.0;
// Distance added between a bf16 and an fp16 sample (header).
constexpr double kOtherDtypeOctaves = 2.0;
// A sample this close (octaves) of the same class is a twin (header).
constexpr double kTwinOctaves = 0.05;

void coordinates_of(const GemmShape& s, double out[4]) {
  out[0] = std::log2(static_cast<double>(s.m));
  out[1] = std::log2(static_cast<double>(s.n));
  out[2] = std::log2(static_cast<double>(s.k));
  out[3] = std::log2(static_cast<double>(s.batch));
}

bool is_16_bit(DataType t) { return t == DataType::kBf16 || t == DataType::kFp16; }

// Whether cuBLAS runs the same kernels for the two dtypes: the same dtype, or bf16 and fp16.
bool same_kernels(DataType a, DataType b) { return a == b || (is_16_bit(a) && is_16_bit(b)); }

bool same_class(const GemmShape& a, const GemmShape& b) {
  return a.dtype == b.dtype && GemmEfficiencyModel::alignment_of(a) == GemmEfficiencyModel::alignment_of(b);
}

// same_class() up to bf16/fp16: the samples that may correct a shape.
bool kernel_class(const GemmShape& a, const GemmShape& b) {
  return same_kernels(a.dtype, b.dtype) && GemmEfficiencyModel::alignment_of(a) == GemmEfficiencyModel::alignment_of(b);
}

// Which leading dimensions are off the 16-byte grid: bit 0 the output's (n, also B's row stride),
// bit 1 the A operand's (k, or m when A is stored transposed); 0 for an aligned shape (every fp32
// shape is). cuBLAS runs a different slow-path kernel family for an unaligned output than for
// unaligned inputs (H200: ~100 TFLOP/s with only the output's stride odd, 120–140 with the inputs'
// odd, tools/data/h200-2026-11-29/gemm.csv).
int misaligned_operands(const GemmShape& s) {
  if (GemmEfficiencyModel::alignment_of(s) == GemmAlignment::kAligned) return 0;
  const int64_t e = bytes_per_element(s.dtype);
  int operands = 0;
  if ((s.n * e) % 16 != 0) operands |= 1;
  if (((s.a_transposed ? s.m : s.k) * e) % 16 != 0) operands |= 2;
  return operands;
}

}  // namespace

GemmPredictor::GemmPredictor(std::vector<GemmSample> samples, Baseline baseline)
    : samples_(std::move(samples)), baseline_(std::move(baseline)) {
  check_invariant(static_cast<bool>(baseline_), "GemmPredictor needs a baseline model");
  points_.reserve(samples_.size());
  for (const GemmSample& s : samples_) {
    Point p;
    p.shape = s.shape;
    const double base = static_cast<double>(baseline_(s.shape).ps());
    check_invariant(base > 0, "GemmPredictor baseline returned a non-positive time");
    p.log_ratio = std::log(static_cast<double>(s.time.ps()) / base);
    coordinates_of(s.shape, p.coords);
    points_.push_back(p);
  }
}

bool GemmPredictor::covers(const GemmShape& shape) const {
  return std::any_of(points_.begin(), points_.end(), [&](const Point& p) { return p.shape.dtype == shape.dtype; });
}

Duration GemmPredictor::predict(const GemmShape& shape) const {
  return predict_without(shape, std::numeric_limits<size_t>::max());
}

Duration GemmPredictor::predict_without(const GemmShape& shape, size_t excluded) const {
  const Duration base = baseline_(shape);
  double target[4];
  coordinates_of(shape, target);
  // Candidates: same kernel class with the same unaligned operands; else same kernel class; else
  // aligned samples of the same kernels. A sample of the other 16-bit dtype counts as
  // kOtherDtypeOctaves further away.
  std::vector<std::pair<double, size_t>> by_distance;  // (squared distance, index)
  const int operands = misaligned_operands(shape);
  for (int pass = 0; pass < 3 && by_distance.empty(); ++pass) {
    for (size_t i = 0; i < points_.size(); ++i) {
      if (i == excluded) continue;
      const Point& p = points_[i];
      const bool eligible =
          pass == 0   ? kernel_class(p.shape, shape) && misaligned_operands(p.shape) == operands
          : pass == 1 ? kernel_class(p.shape, shape)
                      : same_kernels(p.shape.dtype, shape.dtype) &&
                            GemmEfficiencyModel::alignment_of(p.shape) == GemmAlignment::kAligned;
      if (!eligible) continue;
      double d2 = p.shape.dtype == shape.dtype ? 0 : kOtherDtypeOctaves * kOtherDtypeOctaves;
      for (int c = 0; c < 4; ++c) d2 += (p.coords[c] - target[c]) * (p.coords[c] - target[c]);
      by_distance.emplace_back(d2, i);
    }
  }
  if (by_distance.empty()) return base;
  const size_t k = std::min(kGemmNeighbours, by_distance.size());
  std::partial_sort(by_distance.begin(), by_distance.begin() + static_cast<std::ptrdiff_t>(k), by_distance.end());
  if (by_distance.front().first == 0 && same_class(points_[by_distance.front().second].shape, shape)) {
    return samples_[by_distance.front().second].time;
  }
  if (by_distance.front().first <= kTwinOctaves * kTwinOctaves &&
      same_class(points_[by_distance.front().second].shape, shape)) {
    return base.scaled(std::exp(points_[by_distance.front().second].log_ratio));
  }
  double weight_sum = 0;
  double weighted = 0;
  for (size_t j = 0; j < k; ++j) {
    const double w = std::exp(-by_distance[j].first / (2 * kSigmaOctaves * kSigmaOctaves));
    weight_sum += w;
    weighted += w * points_[by_distance[j].second].log_ratio;
  }
  // Far from every sample the weights vanish; fall back to the nearest sample's ratio.
  const double log_ratio = weight_sum > 1e-12 ? weighted / weight_sum : points_[by_distance.front().second].log_ratio;
  return base.scaled(std::exp(log_ratio));
}

LeaveOneOutResult evaluate_leave_one_out(const GemmPredictor& predictor) {
  LeaveOneOutResult result;
  std::vector<double> errors;
  for (size_t i = 0; i < predictor.samples().size(); ++i) {
    const GemmSample& s = predictor.samples()[i];
    const Duration predicted = predictor.predict_without(s.shape, i);
    const double error =
        (static_cast<double>(predicted.ps()) - static_cast<double>(s.time.ps())) / static_cast<double>(s.time.ps());
    result.rows.push_back({s.shape, s.time, predicted, error});
    errors.push_back(std::fabs(error));
  }
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    const size_t n = errors.size();
    result.median_abs_error = n % 2 == 1 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
    result.max_abs_error = errors.back();
  }
  return result;
}

}  // namespace clustersim
