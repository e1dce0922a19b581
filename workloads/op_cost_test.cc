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

// A helper kernel of an SDPA call (flash's dot_do_o) is priced by its bytes, unless the call is
// priced from calibration samples, which time the whole call: then it adds no GPU time or energy.
TEST(OpCost, AttentionHelperKernelsAreInsideASampledCall) {
  Op op;
  op.cost = OpCost::kMemoryBound;
  op.access = MemoryAccess::kStream;
  op.bytes_read = Bytes::of(64 << 20);
  op.within_attention_call = true;
  op.attention = AttentionShape{1, 16, 16, 2048, 128, DataType::kBf16};
  op.attention_kernel = FusedAttentionKernel::kSdpaFlash;
  const ComputeCostModel defaults(testing::h200());
  EXPECT_EQ(op_duration(op, defaults), defaults.memory_bound_time(op.bytes_read, MemoryAccess::kStream));
  CalibrationProfile profile;
  profile.name = "attention";
  profile.machine.gpu = "NVIDIA H200";
  profile.machine.sm_count = 132;
  AttentionSample a;
  a.kernel = "sdpa-flash";
  a.shape = op.attention;
  a.forward = Duration::microseconds(289.152);
  a.backward = Duration::microseconds(812.480);
  profile.attention_samples.push_back(a);
  const ComputeCostModel calibrated(testing::h200(), &profile);
  EXPECT_EQ(op_duration(op, calibrated), Duration::zero());
  EXPECT_TRUE(op_power(op, Duration::zero(), calibrated).empty());
  op.attention_kernel = FusedAttentionKernel::kCudnn;  // not what the samples time
  EXPECT_EQ(op_duration(op, calibrated), calibrated.memory_bound_time(op.bytes_read, MemoryAccess::kStream));
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
