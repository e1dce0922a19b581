#include "workloads/op_cost.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "cost_models/test_support.h"
#include "workloads/test_models.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace op_cost_test {

TEST(OpCost, EachOpIsPricedByItsKind) {
  const ComputeCostModel cost(testing::h200());
  const Transformer t(testing::llama2_7b(), testing::training(4096, 1, Recompute::kNone, AttentionKernel::kFlash),
                      ShardSpec{.tp = 2});
  bool saw_gemm = false, saw_flash = false, saw_memory = false, saw_comm = false;
  for (const auto* ops : {&t.layer_forward(), &t.layer_backward()}) {
    for (const Op& op : *ops) {
      switch (op.cost) {
        case OpCost::kGemm:
          EXPECT_EQ(op_duration(op, cost), cost.gemm_time(op.gemm));
          saw_gemm = true;
          break;
        case OpCost::kFlashAttention:
          EXPECT_EQ(op_duration(op, cost),
                    cost.attention_time(op.kernel_flops, op.bytes_read + op.bytes_written, DataType::kBf16,
                                        op.pass == Pass::kBackward ? AttentionDirection::kBackward
                                                                   : AttentionDirection::kForward));
          saw_flash = true;
          break;
        case OpCost::kMemoryBound:
          EXPECT_EQ(op_duration(op, cost), cost.memory_bound_time(op.bytes_read + op.bytes_written));
          saw_memory = true;
          break;
        case OpCost::kCommunication:
          EXPECT_THROW(op_duration(op, cost), InternalError);
          saw_comm = true;
          break;
      }
    }
  }
  EXPECT_TRUE(saw_gemm && saw_flash && saw_memory && saw_comm);
}

TEST(OpCost, ALlamaLayerOnAnH200TakesMillisecondsDominatedByGemms) {
  // Llama-2-7B layer, s = 4096, b = 1, tp = 1: forward GEMM FLOPs 2·4096·(4h² + 3·h·ffn) ≈ 1.38e12 at
  // ~0.7 × 989 TFLOP/s ≈ 2 ms; the whole forward must be within [1.5, 4] ms and the GEMMs > 70 % of it.
  const ComputeCostModel cost(testing::h200());
  const Transformer t(testing::llama2_7b(), testing::training(4096, 1, Recompute::kNone, AttentionKernel::kFlash));
  Duration total, gemm;
  for (const Op& op : t.layer_forward()) {
    const Duration d = op_duration(op, cost);
    total += d;
    if (op.cost == OpCost::kGemm) gemm += d;
  }
  EXPECT_GT(total.to_seconds(), 1.5e-3);
  EXPECT_LT(total.to_seconds(), 4e-3);
  EXPECT_GT(gemm.to_seconds(), 0.7 * total.to_seconds());
}

}  // namespace op_cost_test
}  // namespace clustersim
