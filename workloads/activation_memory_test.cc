// Activation memory per layer from the ops' saved bytes against the closed forms of Korthikanti et
// al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", Sec. 4 and Table 2):
//   no parallelism                 sbh(34 + 5as/h)
//   tensor parallel t              sbh(10 + 24/t + 5as/(ht))
//   tensor + sequence parallel     sbh/t · (34 + 5as/h)
//   tensor parallel + selective    sbh(10 + 24/t)
//   tensor + sequence + selective  34·sbh/t
//   full recompute                 2sbh (the layer input; /t with sequence parallel)
// with 16-bit activations and 1-byte dropout masks. Integer byte counts: 5as/h · sbh = 5·a·s²·b.
#include <gtest/gtest.h>

#include "cost_models/memory_model.h"
#include "workloads/test_models.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace activation_memory_test {


struct Gpt {
  ModelSpec model = testing::gpt3_175b();
  int64_t s = 2048, b = 1, h = 12288, a = 96;
  int64_t sbh() const { return s * b * h; }
  int64_t scores() const { return 5 * a * s * s * b; }  // 5as/h · sbh
  int64_t layer(int64_t tp, bool sp, Recompute r, AttentionKernel k) const {
    const Transformer t(model, testing::training(s, b, r, k), ShardSpec{.tp = tp, .sequence_parallel = sp});
    return t.layer_activation_bytes().count();
  }
};

TEST(ActivationMemory, KorthikantiClosedFormsComeOutOfTheOps) {
  const Gpt g;
  const int64_t t = 8;
  using R = Recompute;
  const auto naive = AttentionKernel::kNaive;
  EXPECT_EQ(g.layer(1, false, R::kNone, naive), 34 * g.sbh() + g.scores());
  EXPECT_EQ(g.layer(t, false, R::kNone, naive), 10 * g.sbh() + 24 * g.sbh() / t + g.scores() / t);
  EXPECT_EQ(g.layer(t, true, R::kNone, naive), (34 * g.sbh() + g.scores()) / t);
  EXPECT_EQ(g.layer(t, false, R::kSelective, naive), 10 * g.sbh() + 24 * g.sbh() / t);
  EXPECT_EQ(g.layer(t, true, R::kSelective, naive), 34 * g.sbh() / t);
  EXPECT_EQ(g.layer(1, false, R::kFull, naive), 2 * g.sbh());
  EXPECT_EQ(g.layer(t, false, R::kFull, naive), 2 * g.sbh());
  EXPECT_EQ(g.layer(t, true, R::kFull, naive), 2 * g.sbh() / t);
}

TEST(ActivationMemory, M4FlashAttentionRemovesTheScoreTermsAndMakesSelectiveANoOp) {
  // docs/cases/memory.md M4: with a fused kernel ≈ 34·sbh whether or not selective recompute
  // is on; without it, none = sbh(34 + 5as/h) and selective = 34·sbh.
  const Gpt g;
  const auto flash = AttentionKernel::kFlash;
  EXPECT_EQ(g.layer(1, false, Recompute::kNone, flash), 34 * g.sbh());
  EXPECT_EQ(g.layer(1, false, Recompute::kSelective, flash), 34 * g.sbh());
  EXPECT_EQ(g.layer(1, false, Recompute::kSelective, AttentionKernel::kNaive), 34 * g.sbh());
  EXPECT_EQ(g.layer(8, true, Recompute::kNone, flash), 34 * g.sbh() / 8);
  EXPECT_EQ(g.layer(8, false, Recompute::kNone, flash), 10 * g.sbh() + 24 * g.sbh() / 8);
}

TEST(ActivationMemory, GroupedQueryAttentionSwiGluAndNoDropout) {
  // Llama-3-70B (kv = 8 of 128, SwiGLU ffn f, no dropout), flash, tp = 8 with sp, s = 8192, b = 1.
  // From Korthikanti's 34 sbh: K and V shrink from 4sbh to 4·s·b·kv·d (GQA); the MLP saves fc1's
  // input 2sbh, SwiGLU's input 2·2sbf and fc2's input 2sbf instead of 2 + 8 + 8 sbh; no dropout
  // removes the two 1-byte masks (2sbh). Everything is then divided over t = 8 ranks:
  //   [4sbh (norms) + 2sbh (QKV input) + 2sbh (Q) + 4·s·b·kv·d (K, V) + 2sbh (proj input)
  //    + 2sbh (fc1 input) + 4sbf + 2sbf] / t
  ModelSpec m = testing::llama3_70b();
  TrainingSpec tr = testing::training(8192, 1, Recompute::kNone, AttentionKernel::kFlash);
  tr.hidden_dropout = 0;
  tr.attention_dropout = 0;
  const int64_t s = 8192, h = 8192, f = 28672, kv = 8, d = 128, t = 8;
  const Transformer x(m, tr, ShardSpec{.tp = t, .sequence_parallel = true});
  const int64_t expected = (4 * s * h + 2 * s * h + 2 * s * h + 4 * s * kv * d + 2 * s * h + 2 * s * h + 4 * s * f +
                            2 * s * f) /
                           t;
  EXPECT_EQ(x.layer_activation_bytes().count(), expected);
  // With tp = 16 > kv = 8 each rank would keep one replicated KV head: K, V = 4·s·b·1·d per rank.
}

TEST(ActivationMemory, M3Gpt3OnSixtyFourA100) {
  // docs/cases/memory.md M3: GPT-3 175B, s 2048, b 1, tp 8, pp 8, interleaved with v = 3 chunks:
  // the first stage holds 12 layers × p·(1 + (p−1)/(p·v)) micro-batches = 96 layers × 31/24.
  // No recompute, no sequence parallel → 66.84 GiB; sequence parallel + selective → 12.35 GiB.
  const ModelSpec m = testing::gpt3_175b();
  const MemoryModel memory(PrecisionPolicy::megatron_mixed(DataType::kFp16), OptimizerKind::kAdam, 0, 1);
  const double in_flight = 8.0 * (1.0 + 7.0 / 24.0);
  auto stage_activations = [&](bool sp, Recompute r) {
    const Transformer t(m, testing::training(2048, 1, r, AttentionKernel::kNaive),
                        ShardSpec{.tp = 8, .sequence_parallel = sp});
    return memory
        .rank_memory({.activations_per_microbatch = t.layer_activation_bytes() * 12,
                      .in_flight_microbatches = in_flight})
        .activations;
  };
  const int64_t sbh = 2048LL * 12288;
  const Bytes plain = stage_activations(false, Recompute::kNone);
  EXPECT_NEAR(static_cast<double>(plain.count()), sbh * (10 + 24.0 / 8 + 5.0 * 96 * 2048 / (12288 * 8)) * 96 * 31 / 24,
              1.0);
  EXPECT_NEAR(plain.to_gib(), 66.84, 0.005);
  const Bytes reduced = stage_activations(true, Recompute::kSelective);
  EXPECT_NEAR(static_cast<double>(reduced.count()), 34.0 * sbh / 8 * 96 * 31 / 24, 1.0);
  EXPECT_NEAR(reduced.to_gib(), 12.35, 0.005);
}

TEST(ActivationMemory, EmbeddingAndHeadActivations) {
  // Embedding dropout mask sbh (/t with sp); final-norm input 2sbh and LM-head input 2sbh.
  const Gpt g;
  const Transformer t(g.model, testing::training(g.s, g.b, Recompute::kNone, AttentionKernel::kFlash),
                      ShardSpec{.tp = 8, .sequence_parallel = true});
  EXPECT_EQ(t.embedding_activation_bytes().count(), g.sbh() / 8);
  EXPECT_EQ(t.head_activation_bytes().count(), 4 * g.sbh() / 8);
}

}  // namespace activation_memory_test
}  // namespace clustersim
