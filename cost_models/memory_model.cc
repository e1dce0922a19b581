#include "cost_models/memory_model.h"

#include <cmath>
#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

MemoryModel::MemoryModel(PrecisionPolicy precision, OptimizerKind optimizer, int zero_stage, int64_t dp,
                         int64_t expert_dp, Bytes runtime_overhead)
    : precision_(precision),
      optimizer_(optimizer),
      zero_stage_(zero_stage),
      dp_(dp),
      expert_dp_(expert_dp),
      runtime_overhead_(runtime_overhead) {
  precision_.validate();
  if (zero_stage < 0 || zero_stage > 3) {
    throw InputError(fmt::format("parallelism.zero must be 0, 1, 2 or 3 (got {}); the distributed optimizer is 1",
                                 zero_stage));
  }
  if (dp < 1) throw InputError(fmt::format("parallelism.dp must be at least 1 (got {})", dp));
  if (expert_dp < 1) throw InputError(fmt::format("expert data-parallel size must be at least 1 (got {})", expert_dp));
}

MemoryModel::Shards MemoryModel::shards(bool expert) const {
  const int64_t group = expert ? expert_dp_ : dp_;
  return Shards{zero_stage_ >= 3 ? group : 1, zero_stage_ >= 2 ? group : 1, zero_stage_ >= 1 ? group : 1};
}

MemoryModel::BytesPerParameter MemoryModel::bytes_per_parameter(bool expert) const {
  const Shards s = shards(expert);
  BytesPerParameter b;
  b.params = static_cast<double>(precision_.param_bytes()) / static_cast<double>(s.params);
  b.grads = static_cast<double>(precision_.grad_bytes()) / static_cast<double>(s.grads);
  b.optimizer = static_cast<double>(precision_.optimizer_bytes(optimizer_)) / static_cast<double>(s.optimizer);
  return b;
}

MemoryBreakdown MemoryModel::rank_memory(const RankMemoryInputs& in) const {
  if (in.dense_params < 0 || in.expert_params < 0) {
    throw InputError(fmt::format("parameter counts on a rank cannot be negative (dense {}, expert {})",
                                 in.dense_params, in.expert_params));
  }
  if (!std::isfinite(in.in_flight_microbatches) || in.in_flight_microbatches < 0) {
    throw InputError(fmt::format("in-flight micro-batches must be a finite non-negative number (got {})",
                                 in.in_flight_microbatches));
  }
  auto sharded = [](int64_t count, int64_t bytes_each, int64_t shards) {
    return Bytes::of(checked_mul(count, bytes_each, "model-state bytes")).divided_ceil(shards);
  };
  const Shards dense = shards(false);
  const Shards expert = shards(true);
  const int64_t optimizer_bytes = precision_.optimizer_bytes(optimizer_);
  MemoryBreakdown m;
  m.params = sharded(in.dense_params, precision_.param_bytes(), dense.params) +
             sharded(in.expert_params, precision_.param_bytes(), expert.params);
  m.grads = sharded(in.dense_params, precision_.grad_bytes(), dense.grads) +
            sharded(in.expert_params, precision_.grad_bytes(), expert.grads);
  m.optimizer_state = sharded(in.dense_params, optimizer_bytes, dense.optimizer) +
                      sharded(in.expert_params, optimizer_bytes, expert.optimizer);
  m.activations = in.activations_per_microbatch.scaled(in.in_flight_microbatches);
  m.logits = in.logits;
  m.comm_buffers = in.comm_buffers;
  m.runtime_overhead = runtime_overhead_;
  return m;
}

}  // namespace clustersim
