#include "workloads/op_cost.h"

#include "core/error.h"

namespace clustersim {

Duration op_duration(const Op& op, const ComputeCostModel& cost) {
  switch (op.cost) {
    case OpCost::kGemm:
      return cost.gemm_time(op.gemm);
    case OpCost::kFlashAttention:
      if (op.attention.batch > 0) {
        return cost.attention_time(op.attention, op.attention_kernel, op.bytes_read + op.bytes_written,
                                   op.pass == Pass::kBackward ? AttentionDirection::kBackward
                                                              : AttentionDirection::kForward);
      }
      return cost.attention_time(op.kernel_flops, op.bytes_read + op.bytes_written, op.gemm.dtype,
                                 op.pass == Pass::kBackward ? AttentionDirection::kBackward
                                                            : AttentionDirection::kForward,
                                 op.attention_kernel);
    case OpCost::kMemoryBound:
      if (op.within_attention_call && cost.attention_sampled(op.attention, op.attention_kernel)) {
        return Duration::zero();
      }
      return cost.memory_bound_time(op.bytes_read + op.bytes_written, op.access);
    case OpCost::kCommunication:
      throw InternalError("op_duration: communication ops are priced by collectives/, not the compute cost model");
  }
  throw InternalError("unknown OpCost value");
}

PowerWork op_power(const Op& op, Duration duration, const ComputeCostModel& cost) {
  const PowerModel* power = cost.power_model();
  if (power == nullptr) return {};
  const Duration gap = cost.kernel_gap();
  if (op.within_attention_call && cost.attention_sampled(op.attention, op.attention_kernel)) return {};
  switch (op.cost) {
    case OpCost::kGemm: return power->gemm(duration, gap, op.kernel_flops, op.gemm.dtype);
    case OpCost::kFlashAttention: return power->attention(duration, gap, op.kernel_flops);
    case OpCost::kMemoryBound: return power->memory_bound(duration, gap, op.bytes_read + op.bytes_written);
    case OpCost::kCommunication: return {};
  }
  return {};
}

}  // namespace clustersim
