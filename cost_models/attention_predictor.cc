#include "cost_models/attention_predictor.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {

namespace {

constexpr size_t kAttentionNeighbours = 6;

void features_of(const AttentionShape& s, double out[4]) {
  out[0] = std::log2(static_cast<double>(s.batch * s.heads));
  out[1] = std::log2(static_cast<double>(s.seq));
  out[2] = static_cast<double>(s.head_dim) / 32.0;
  out[3] = std::log2(static_cast<double>(s.heads) / static_cast<double>(s.kv_heads));
}

double flops_of(const AttentionShape& s, AttentionPredictor::Direction direction) {
  return direction == AttentionPredictor::Direction::kForward ? s.forward_flops() : s.backward_flops();
}

}  // namespace

std::string_view name_of(FusedAttentionKernel kernel) {
  switch (kernel) {
    case FusedAttentionKernel::kCudnn: return "cudnn";
    case FusedAttentionKernel::kSdpaFlash: return "sdpa-flash";
    case FusedAttentionKernel::kFlashV1: return "flash-v1";
  }
  throw InternalError("unknown FusedAttentionKernel value");
}

FusedAttentionKernel parse_fused_attention_kernel(std::string_view text) {
  if (text == "cudnn") return FusedAttentionKernel::kCudnn;
  if (text == "sdpa-flash") return FusedAttentionKernel::kSdpaFlash;
  if (text == "flash-v1") return FusedAttentionKernel::kFlashV1;
  throw InputError(fmt::format("unknown fused attention kernel \"{}\" (valid: cudnn, sdpa-flash, flash-v1)", excerpt(text)));
}

double AttentionShape::forward_flops() const {
  return 2.0 * static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(seq) *
         static_cast<double>(seq) * static_cast<double>(head_dim);
}

void validate_attention_shape(const AttentionShape& s, const std::string& where) {
  if (s.batch <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.seq <= 0 || s.head_dim <= 0) {
    throw InputError(fmt::format("{}: attention batch {}, heads {}, kv_heads {}, seq {}, head_dim {} must all be "
                                 "positive",
                                 where, s.batch, s.heads, s.kv_heads, s.seq, s.head_dim));
  }
  if (s.heads % s.kv_heads != 0) {
    throw InputError(fmt::format("{}: attention heads {} must be a multiple of kv_heads {}", where, s.heads,
                                 s.kv_heads));
  }
}

AttentionPredictor::AttentionPredictor(std::vector<AttentionSample> samples, FlopRate peak)
    : samples_(std::move(samples)), peak_(peak) {
  for (size_t i = 0; i < samples_.size(); ++i) {
    const AttentionSample& s = samples_[i];
    validate_attention_shape(s.shape, fmt::format("attention_samples[{}]", i));
    if (s.forward.ps() <= 0 || s.backward.ps() <= 0) {
      throw InputError(fmt::format("attention_samples[{}]: forward and backward times must be positive", i));
    }
  }
  if (!samples_.empty() && peak_.flop_per_second() <= 0) {
    throw InputError(fmt::format("attention samples of {} need a positive dense peak for {}", samples_.front().kernel,
                                 name_of(samples_.front().shape.dtype)));
  }
}

Duration AttentionPredictor::predict(const AttentionShape& shape, Direction direction) const {
  return predict_without(shape, direction, std::numeric_limits<size_t>::max());
}

Duration AttentionPredictor::predict_without(const AttentionShape& shape, Direction direction,
                                             size_t excluded) const {
  check_invariant(!samples_.empty(), "AttentionPredictor::predict needs samples");
  double target[4];
  features_of(shape, target);
  std::vector<std::pair<double, size_t>> by_distance;
  for (size_t i = 0; i < samples_.size(); ++i) {
    if (i == excluded) continue;
    double f[4];
    features_of(samples_[i].shape, f);
    double d2 = 0;
    for (int c = 0; c < 4; ++c) d2 += (f[c] - target[c]) * (f[c] - target[c]);
    by_distance.emplace_back(d2, i);
  }
  check_invariant(!by_distance.empty(), "AttentionPredictor: no sample left to predict from");
  const size_t k = std::min(kAttentionNeighbours, by_distance.size());
  std::partial_sort(by_distance.begin(), by_distance.begin() + static_cast<std::ptrdiff_t>(k), by_distance.end());
  const AttentionSample& nearest = samples_[by_distance.front().second];
  if (by_distance.front().first == 0 && nearest.shape == shape) {
    return direction == Direction::kForward ? nearest.forward : nearest.backward;
  }
  double weight_sum = 0;
  double weighted = 0;
  for (size_t j = 0; j < k; ++j) {
    const AttentionSample& s = samples_[by_distance[j].second];
    const Duration t = direction == Direction::kForward ? s.forward : s.backward;
    const double efficiency = flops_of(s.shape, direction) / (t.to_seconds() * peak_.flop_per_second());
    const double w = std::exp(-by_distance[j].first / 2.0);
    weight_sum += w;
    weighted += w * std::log(efficiency);
  }
  double log_efficiency = 0;
  if (weight_sum > 1e-12) {
    log_efficiency = weighted / weight_sum;
  } else {
    const Duration t = direction == Direction::kForward ? nearest.forward : nearest.backward;
    log_efficiency = std::log(flops_of(nearest.shape, direction) / (t.to_seconds() * peak_.flop_per_second()));
  }
  return compute_time(flops_of(shape, direction), peak_ * std::exp(log_efficiency));
}

}  // namespace clustersim
