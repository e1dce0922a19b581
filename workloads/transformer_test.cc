#include "workloads/transformer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace transformer_test {

std::vector<std::string> names_of(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const Op& op : ops) out.emplace_back(op.name);
  return out;
}

const Op& find(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  throw std::runtime_error("no op " + std::string(name));
}

TEST(Transformer, LayerForwardFollowsMegatronOrder) {
  const TrainingSpec t = testing::training(2048, 1, Recompute::kNone, AttentionKernel::kNaive);
  const Transformer one(testing::gpt3_175b(), t);
  EXPECT_EQ(names_of(one.layer_forward()),
            (std::vector<std::string>{"input_norm", "qkv", "attention_scores", "softmax", "attention_dropout",
                                      "attention_values", "proj", "attention_residual", "post_attention_norm", "fc1",
                                      "activation", "fc2", "mlp_residual"}));
  const Transformer tp(testing::gpt3_175b(), t, ShardSpec{.tp = 8});
  EXPECT_EQ(names_of(tp.layer_forward()),
            (std::vector<std::string>{"input_norm", "qkv", "attention_scores", "softmax", "attention_dropout",
                                      "attention_values", "proj", "attention.tp_all_reduce", "attention_residual",
                                      "post_attention_norm", "fc1", "activation", "fc2", "mlp.tp_all_reduce",
                                      "mlp_residual"}));
  TrainingSpec flash = t;
  flash.attention = AttentionKernel::kFlash;
  const Transformer sp(testing::llama2_7b(), flash, ShardSpec{.tp = 8, .sequence_parallel = true});
  EXPECT_EQ(names_of(sp.layer_forward()),
            (std::vector<std::string>{"input_norm", "attention.tp_all_gather", "qkv", "rope", "flash_attention",
                                      "proj", "attention.tp_reduce_scatter", "attention_residual",
                                      "post_attention_norm", "mlp.tp_all_gather", "fc1", "activation", "fc2",
                                      "mlp.tp_reduce_scatter", "mlp_residual"}));
}

TEST(Transformer, GemmShapesAsOneTensorParallelRankSeesThem) {
  // Llama-3-70B, tp = 8, b = 2, s = 4096: M = 8192 tokens; QKV N = (64/8 + 2·8/8)·128 = 1280; proj
  // K = 64/8·128 = 1024; fc1 N = 2·28672/8 = 7168 (gate and up); fc2 K = 3584.
  const Transformer t(testing::llama3_70b(), testing::training(4096, 2, Recompute::kNone, AttentionKernel::kFlash),
                      ShardSpec{.tp = 8});
  const auto& f = t.layer_forward();
  EXPECT_EQ(find(f, "qkv").gemm, (GemmShape{8192, 1280, 8192, 1, DataType::kBf16, false}));
  EXPECT_EQ(find(f, "proj").gemm, (GemmShape{8192, 8192, 1024, 1, DataType::kBf16, false}));
  EXPECT_EQ(find(f, "fc1").gemm, (GemmShape{8192, 7168, 8192, 1, DataType::kBf16, false}));
  EXPECT_EQ(find(f, "fc2").gemm, (GemmShape{8192, 8192, 3584, 1, DataType::kBf16, false}));
  EXPECT_DOUBLE_EQ(find(f, "qkv").flops, 2.0 * 8192 * 1280 * 8192);
  // Backward: per forward GEMM (M, N, K) a data gradient (M, K, N) and a weight gradient (N, K, M)
  // with A transposed; together twice the forward FLOPs.
  const auto& b = t.layer_backward();
  for (const char* name : {"qkv", "proj", "fc1", "fc2"}) {
    const GemmShape fwd = find(f, name).gemm;
    const GemmShape dgrad = find(b, std::string(name) + ".dgrad").gemm;
    const GemmShape wgrad = find(b, std::string(name) + ".wgrad").gemm;
    EXPECT_EQ(dgrad, (GemmShape{fwd.m, fwd.k, fwd.n, 1, DataType::kBf16, false})) << name;
    EXPECT_EQ(wgrad, (GemmShape{fwd.n, fwd.k, fwd.m, 1, DataType::kBf16, true})) << name;
    EXPECT_DOUBLE_EQ(dgrad.flops() + wgrad.flops(), 2 * fwd.flops()) << name;
  }
  // Fused causal attention: 4·b·s²·(a/t)·d over the full score matrix, half of it executed.
  const Op& attention = find(f, "flash_attention");
  EXPECT_DOUBLE_EQ(attention.flops, 4.0 * 2 * 4096.0 * 4096.0 * 8 * 128);
  EXPECT_DOUBLE_EQ(attention.kernel_flops, attention.flops / 2);
  EXPECT_DOUBLE_EQ(find(b, "flash_attention.backward").kernel_flops, 2.5 * attention.kernel_flops);
  EXPECT_DOUBLE_EQ(find(b, "flash_attention.backward").flops, 2 * attention.flops);
}

TEST(Transformer, NaiveAttentionIsBatchedGemmsOverHeads) {
  // GPT-3 at tp = 8, b = 1, s = 2048: 12 heads per rank of 128; QKᵀ is 12 GEMMs of 2048×2048×128.
  const Transformer t(testing::gpt3_175b(), testing::training(2048, 1, Recompute::kNone, AttentionKernel::kNaive),
                      ShardSpec{.tp = 8});
  EXPECT_EQ(find(t.layer_forward(), "attention_scores").gemm, (GemmShape{2048, 2048, 128, 12, DataType::kBf16, false}));
  EXPECT_EQ(find(t.layer_forward(), "attention_values").gemm, (GemmShape{2048, 128, 2048, 12, DataType::kBf16, false}));
  EXPECT_EQ(find(t.layer_backward(), "attention_scores.wgrad").gemm,
            (GemmShape{2048, 128, 2048, 12, DataType::kBf16, true}));
}

TEST(Transformer, TensorParallelCommunicationPointsAndSizes) {
  // Without sequence parallelism: an all-reduce of [b, s, h] after proj and after fc2, mirrored in
  // backward on the input gradients of QKV and fc1. With it: reduce-scatter / all-gather pairs,
  // plus the re-all-gather of the saved sharded inputs of QKV and fc1 for their weight gradients.
  const int64_t b = 1, s = 4096, h = 4096, e = 2;
  const TrainingSpec t = testing::training(s, b, Recompute::kNone, AttentionKernel::kFlash);
  auto count = [](const std::vector<Op>& ops, CommKind kind) {
    int n = 0;
    for (const Op& op : ops) {
      if (op.comm == kind) {
        EXPECT_EQ(op.comm_bytes.count(), b * s * h * e) << op.name;
        ++n;
      }
    }
    return n;
  };
  const Transformer plain(testing::llama2_7b(), t, ShardSpec{.tp = 4});
  EXPECT_EQ(count(plain.layer_forward(), CommKind::kTpAllReduce), 2);
  EXPECT_EQ(count(plain.layer_backward(), CommKind::kTpAllReduce), 2);
  EXPECT_EQ(count(plain.layer_forward(), CommKind::kTpAllGather), 0);
  const Transformer sp(testing::llama2_7b(), t, ShardSpec{.tp = 4, .sequence_parallel = true});
  EXPECT_EQ(count(sp.layer_forward(), CommKind::kTpAllGather), 2);
  EXPECT_EQ(count(sp.layer_forward(), CommKind::kTpReduceScatter), 2);
  EXPECT_EQ(count(sp.layer_backward(), CommKind::kTpAllGather), 4);
  EXPECT_EQ(count(sp.layer_backward(), CommKind::kTpReduceScatter), 2);
  EXPECT_EQ(count(sp.layer_forward(), CommKind::kTpAllReduce), 0);
  // tp = 1: no collectives at all.
  const Transformer single(testing::llama2_7b(), t);
  for (const auto* ops : {&single.layer_forward(), &single.layer_backward(), &single.head_forward()}) {
    for (const Op& op : *ops) EXPECT_NE(op.cost, OpCost::kCommunication) << op.name;
  }
}

TEST(Transformer, ContextParallelRingExchangesKvHeads) {
  // docs/cases/moe_cp.md E2: per ring step 2 × (s/cp) × kv_heads × head_dim × bytes; with GQA
  // the KV heads (Llama-3-70B: 8, per rank at tp 8: 1), cp − 1 steps.
  const int64_t s = 8192, cp = 4;
  const Transformer t(testing::llama3_70b(), testing::training(s, 1, Recompute::kNone, AttentionKernel::kFlash),
                      ShardSpec{.tp = 8, .cp = cp});
  const Op& ring = find(t.layer_forward(), "attention.cp_kv_exchange");
  EXPECT_EQ(ring.comm_bytes.count(), 2 * (s / cp) * 1 * 128 * 2);
  EXPECT_EQ(ring.comm_steps, cp - 1);
  EXPECT_EQ(t.tokens(), s / cp);
  // Per rank the attention FLOPs are 1/cp of the unsharded sequence's.
  EXPECT_DOUBLE_EQ(find(t.layer_forward(), "flash_attention").flops, 4.0 * (s / cp) * s * 8 * 128);
}

TEST(Transformer, LmHeadUsesThePaddedVocabularyAndFp32CrossEntropy) {
  // M6: GPT-2's 50,257 tokens at tp = 4 pad to 50,688: the LM head GEMM has N = 12,672 per rank.
  ModelSpec gpt2 = testing::gpt3_175b();
  gpt2.vocab = 50257;
  gpt2.layers = 2;
  const int64_t s = 2048;
  const Transformer t(gpt2, testing::training(s, 1, Recompute::kNone, AttentionKernel::kFlash), ShardSpec{.tp = 4});
  const Op& head = find(t.head_forward(), "lm_head");
  EXPECT_EQ(head.gemm.n, 50688 / 4);
  EXPECT_DOUBLE_EQ(head.flops, 2.0 * s * (50688 / 4) * 12288);
  // fp32 logits kept for backward plus their fp32 gradient: T × V/tp × (4 + 4).
  EXPECT_EQ(t.logits_bytes().count(), s * (50688 / 4) * 6);  // tools/data/h200-2026-12-02-cross-entropy
  int all_reduces = 0;
  for (const Op& op : t.head_forward()) {
    if (op.comm == CommKind::kTpAllReduce) {
      EXPECT_EQ(op.comm_bytes.count(), s * 4);  // [T] fp32: max, target logit, sum of exponentials
      ++all_reduces;
    }
  }
  EXPECT_EQ(all_reduces, 3);
  EXPECT_EQ(find(t.head_backward(), "lm_head.wgrad").gemm, (GemmShape{50688 / 4, 12288, s, 1, DataType::kBf16, true}));
}

TEST(Transformer, RecomputeListsRerunTheRightForwardOps) {
  const ModelSpec m = testing::gpt3_175b();
  const Transformer full(m, testing::training(2048, 1, Recompute::kFull, AttentionKernel::kFlash), ShardSpec{.tp = 8});
  ASSERT_EQ(full.layer_recompute().size(), full.layer_forward().size());
  for (size_t i = 0; i < full.layer_recompute().size(); ++i) {
    EXPECT_EQ(full.layer_recompute()[i].name, full.layer_forward()[i].name);
    EXPECT_EQ(full.layer_recompute()[i].pass, Pass::kRecompute);
  }
  const Transformer selective(m, testing::training(2048, 1, Recompute::kSelective, AttentionKernel::kNaive));
  EXPECT_EQ(names_of(selective.layer_recompute()),
            (std::vector<std::string>{"attention_scores", "softmax", "attention_dropout", "attention_values"}));
  // M4: with the fused kernel selective recompute has nothing to re-run.
  const Transformer flash(m, testing::training(2048, 1, Recompute::kSelective, AttentionKernel::kFlash));
  EXPECT_TRUE(flash.layer_recompute().empty());
  EXPECT_TRUE(Transformer(m, testing::training(2048, 1, Recompute::kNone, AttentionKernel::kFlash))
                  .layer_recompute()
                  .empty());
}

TEST(Transformer, OptimizerStepBytesFollowThePrecisionPolicy) {
  // Megatron mixed-precision Adam: reads grad 4 + master 4 + m 4 + v 4 = 16 B/param, writes master,
  // m, v and the bf16 copy = 14 B/param; the gradient-norm pass reads 4 B/param.
  const int64_t p = 1'000'000;
  const auto ops = optimizer_step_ops(p, PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam);
  EXPECT_EQ(find(ops, "optimizer.step").bytes_read.count(), 16 * p);
  EXPECT_EQ(find(ops, "optimizer.step").bytes_written.count(), 14 * p);
  EXPECT_EQ(find(ops, "optimizer.grad_norm").bytes_read.count(), 4 * p);
  // Pure fp32 Adam: reads param, grad, m, v; writes param, m, v.
  const auto fp32 = optimizer_step_ops(p, PrecisionPolicy::pure_fp32(), OptimizerKind::kAdam);
  EXPECT_EQ(find(fp32, "optimizer.step").bytes_read.count(), 16 * p);
  EXPECT_EQ(find(fp32, "optimizer.step").bytes_written.count(), 12 * p);
  EXPECT_THROW(optimizer_step_ops(-1, PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam), InputError);
}

}  // namespace transformer_test
}  // namespace clustersim
