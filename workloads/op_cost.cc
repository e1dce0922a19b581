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
      return cost.memory_bound_time(op.bytes_read + op.bytes_written, op.access);
    case OpCost::kCommunication:
      throw InternalError("op_duration: communication ops are priced by collectives/, not the compute cost model");
  }
  throw InternalError("unknown OpCost value");
}

}  // namespace clustersim
