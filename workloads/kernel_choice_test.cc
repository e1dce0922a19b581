// Kernel-level choices of the Megatron op lists: Transformer Engine's FP8 casts ahead of FP8 GEMMs
// and the fused attention kernel (cuDNN or FlashAttention-2 class).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "cost_models/compute_cost_model.h"
#include "cost_models/test_support.h"
#include "workloads/op_cost.h"
#include "workloads/test_models.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace {

TrainingSpec fp8_training(int64_t seq_len) {
  TrainingSpec t = testing::training(seq_len, 1, Recompute::kNone, AttentionKernel::kFlash);
  t.compute_dtype = DataType::kFp8;
  return t;
}

// The op before `name` in `ops`.
const Op& before(const std::vector<Op>& ops, std::string_view name, size_t back = 1) {
  for (size_t i = back; i < ops.size(); ++i) {
    if (ops[i].name == name) return ops[i - back];
  }
  throw std::runtime_error("no op " + std::string(name));
}

// The op after `name` in `ops`.
const Op& after(const std::vector<Op>& ops, std::string_view name) {
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    if (ops[i].name == name) return ops[i + 1];
  }
  throw std::runtime_error("no op after " + std::string(name));
}

const Op& find(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  throw std::runtime_error("no op " + std::string(name));
}

int count(const std::vector<Op>& ops, std::string_view name) {
  int n = 0;
  for (const Op& op : ops) n += op.name == name;
  return n;
}

TEST(Fp8Casts, EveryFp8GemmQuantizesItsActivationOperandOnce) {
  // Llama-3-8B, s = 4096, tp 1: T = 4096 tokens. Forward: the inputs of qkv [T, 4096], proj [T, 4096],
  // fc1 [T, 4096] and fc2 [T, 14336]; backward: the output gradients before each data-gradient GEMM
  // (the weight gradients use the transposed copies). Cast-transpose: 2 bytes read, 2 written (FP8 +
  // its transpose) per element.
  const Transformer t(testing::llama3_8b(), fp8_training(4096));
  const int64_t tokens = 4096;
  const auto& f = t.layer_forward();
  EXPECT_EQ(count(f, "fp8_cast"), 4);
  for (auto [gemm, k] : {std::pair{"qkv", 4096}, std::pair{"proj", 4096}, std::pair{"fc1", 4096},
                         std::pair{"fc2", 14336}}) {
    const Op& cast = before(f, gemm);
    EXPECT_EQ(cast.name, "fp8_cast") << gemm;
    EXPECT_EQ(cast.bytes_read, Bytes::of(tokens * k * 2)) << gemm;
    EXPECT_EQ(cast.bytes_written, Bytes::of(tokens * k * 2)) << gemm;
    EXPECT_EQ(cast.flops, 0);
  }
  const auto& b = t.layer_backward();
  EXPECT_EQ(count(b, "fp8_cast"), 4);
  // fc2.dgrad reads the [T, 4096] output gradient; fc1.dgrad the [T, 2·14336] one (gate and up).
  EXPECT_EQ(before(b, "fc2.dgrad").bytes_read, Bytes::of(tokens * 4096 * 2));
  EXPECT_EQ(before(b, "fc1.dgrad").bytes_read, Bytes::of(tokens * 2 * 14336 * 2));
  EXPECT_NE(before(b, "fc2.wgrad").name, "fp8_cast");
  // The LM head and attention stay in 16 bits: no casts outside the layers' linear GEMMs.
  EXPECT_EQ(count(t.head_forward(), "fp8_cast"), 0);
  // A bf16 model casts nothing.
  const Transformer bf16(testing::llama3_8b(), testing::training(4096, 1, Recompute::kNone, AttentionKernel::kFlash));
  EXPECT_EQ(count(bf16.layer_forward(), "fp8_cast"), 0);
  EXPECT_EQ(count(bf16.layer_backward(), "fp8_cast"), 0);
}

TEST(Fp8Casts, SequenceParallelGathersTheFp8Shard) {
  // tp 4 with sequence parallelism: the rank casts its T/4 rows, then all-gathers one byte per
  // element of the [T, h] input.
  const int64_t tp = 4, tokens = 4096, hidden = 4096;
  const Transformer t(testing::llama3_8b(), fp8_training(4096), ShardSpec{.tp = tp, .sequence_parallel = true});
  const auto& f = t.layer_forward();
  const Op& gather = before(f, "qkv");
  ASSERT_EQ(gather.comm, CommKind::kTpAllGather);
  EXPECT_EQ(gather.comm_bytes, Bytes::of(tokens * hidden));
  const Op& cast = before(f, "qkv", 2);
  EXPECT_EQ(cast.name, "fp8_cast");
  EXPECT_EQ(cast.bytes_read, Bytes::of(tokens / tp * hidden * 2));
  // The reduce-scatter after proj carries the 16-bit output.
  const Op& scatter = after(f, "proj");
  ASSERT_EQ(scatter.comm, CommKind::kTpReduceScatter);
  EXPECT_EQ(scatter.comm_bytes, Bytes::of(tokens * hidden * 2));
}

TEST(FlashKernel, FlashAttentionTwoIsPricedPerCallShape) {
  // Llama-3-8B, b = 2, s = 4096, tp 2: 16 query and 4 KV heads of 128 per rank.
  TrainingSpec t = testing::training(4096, 2, Recompute::kNone, AttentionKernel::kFlash);
  t.flash_kernel = FusedAttentionKernel::kSdpaFlash;
  const Transformer tr(testing::llama3_8b(), t, ShardSpec{.tp = 2});
  const Op& fwd = find(tr.layer_forward(), "flash_attention");
  const Op& bwd = find(tr.layer_backward(), "flash_attention.backward");
  const AttentionShape shape{2, 16, 4, 4096, 128, DataType::kBf16};
  EXPECT_EQ(fwd.attention_kernel, FusedAttentionKernel::kSdpaFlash);
  EXPECT_EQ(fwd.attention, shape);
  EXPECT_EQ(bwd.attention, shape);
  // The shape's causal FLOPs are the op's kernel FLOPs (half the full score matrix's).
  EXPECT_DOUBLE_EQ(shape.forward_flops(), fwd.kernel_flops);
  EXPECT_DOUBLE_EQ(shape.backward_flops(), bwd.kernel_flops);
  const ComputeCostModel cost(testing::h100());
  EXPECT_EQ(op_duration(fwd, cost), cost.attention_time(shape, FusedAttentionKernel::kSdpaFlash,
                                                        fwd.bytes_read + fwd.bytes_written,
                                                        AttentionDirection::kForward));
  // At the default efficiencies (0.255 of the peak against cuDNN's 0.47) the kernel is slower.
  const Transformer cudnn(testing::llama3_8b(), testing::training(4096, 2, Recompute::kNone, AttentionKernel::kFlash),
                          ShardSpec{.tp = 2});
  EXPECT_GT(op_duration(fwd, cost), op_duration(find(cudnn.layer_forward(), "flash_attention"), cost));
}

TEST(FlashKernel, NeedsFusedAttentionAndNoContextParallelism) {
  TrainingSpec naive = testing::training(4096, 1, Recompute::kNone, AttentionKernel::kNaive);
  naive.flash_kernel = FusedAttentionKernel::kSdpaFlash;
  EXPECT_THROW(Transformer(testing::llama3_8b(), naive), InputError);
  TrainingSpec flash = testing::training(4096, 1, Recompute::kNone, AttentionKernel::kFlash);
  flash.flash_kernel = FusedAttentionKernel::kSdpaFlash;
  try {
    const Transformer ring(testing::llama3_8b(), flash, ShardSpec{.cp = 2});
    FAIL() << "sdpa-flash with context parallelism was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("flash_kernel"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_fused_attention_kernel("sdpa-flash"), FusedAttentionKernel::kSdpaFlash);
  EXPECT_THROW(parse_fused_attention_kernel("triton"), InputError);
}

}  // namespace
}  // namespace clustersim
