#include "workloads/model_flops.h"

#include <gtest/gtest.h>

#include "workloads/test_models.h"

namespace clustersim {
namespace model_flops_test {

TEST(ModelFlops, Gpt3OpSumEqualsTheMegatronClosedForm) {
  // 72·B·s·L·h²·(1 + s/(6h) + V/(12·h·L)), GPT-3 175B, B = 1536, s = 2048, V = 51200.
  TrainingSpec t = testing::training(2048, 1, Recompute::kNone, AttentionKernel::kNaive);
  t.global_batch = 1536;
  const StepFlops f = step_flops(testing::gpt3_175b(), t);
  const double closed = megatron_gpt_model_flops(1536, 2048, 96, 12288, 51200);
  EXPECT_NEAR(f.model / closed, 1.0, 1e-12);
  // Causal convention: the attention core, 3 × 4·B·s²·h·L, counted half.
  EXPECT_NEAR(f.model_causal, closed - 0.5 * 3 * 4.0 * 1536 * 2048.0 * 2048 * 12288 * 96, closed * 1e-12);
  // No recompute: hardware = model.
  EXPECT_DOUBLE_EQ(f.hardware, f.model);
  // The attention kernel does not change model FLOPs.
  t.attention = AttentionKernel::kFlash;
  EXPECT_NEAR(step_flops(testing::gpt3_175b(), t).model / closed, 1.0, 1e-12);
}

TEST(ModelFlops, HardwareFlopsAddTheRecomputedForward) {
  // Full: + L·B·(24·s·h² + 4·s²·h) (every layer's forward); selective with naive attention:
  // + L·B·4·s²·h (QKᵀ and ·V); selective with the fused kernel: nothing.
  const double b = 64, s = 2048, h = 12288, l = 96;
  TrainingSpec t = testing::training(2048, 1, Recompute::kFull, AttentionKernel::kNaive);
  t.global_batch = 64;
  const StepFlops full = step_flops(testing::gpt3_175b(), t);
  EXPECT_NEAR(full.hardware - full.model, l * b * (24 * s * h * h + 4 * s * s * h), full.model * 1e-12);
  t.recompute = Recompute::kSelective;
  const StepFlops selective = step_flops(testing::gpt3_175b(), t);
  EXPECT_NEAR(selective.hardware - selective.model, l * b * 4 * s * s * h, selective.model * 1e-12);
  t.attention = AttentionKernel::kFlash;
  EXPECT_DOUBLE_EQ(step_flops(testing::gpt3_175b(), t).hardware, selective.model);
}

TEST(ModelFlops, ExecutedCountsAttentionAsItsKernelsRunIt) {
  // GPT-3 175B, B = 64, s = 2048. Naive attention runs the whole masked s × s matrix: executed =
  // hardware. The fused causal kernel runs F = 4·B·s²·h·L / 2 forward (QKᵀ and ·V over half the
  // score matrix) and 2.5·F backward, against the convention's 3 × 4·B·s²·h·L.
  const double b = 64, s = 2048, h = 12288, l = 96;
  TrainingSpec t = testing::training(2048, 1, Recompute::kNone, AttentionKernel::kNaive);
  t.global_batch = 64;
  const StepFlops naive = step_flops(testing::gpt3_175b(), t);
  EXPECT_NEAR(naive.executed, naive.hardware, naive.model * 1e-12);
  t.attention = AttentionKernel::kFlash;
  const StepFlops flash = step_flops(testing::gpt3_175b(), t);
  const double convention = 3 * 4 * b * s * s * h * l;
  const double forward = 4 * b * s * s * h * l / 2;
  EXPECT_NEAR(flash.executed, flash.model - convention + 3.5 * forward, flash.model * 1e-9);
  EXPECT_LT(flash.executed, flash.model);
  // Full recompute runs the forward kernel once more.
  t.recompute = Recompute::kFull;
  const StepFlops full = step_flops(testing::gpt3_175b(), t);
  EXPECT_NEAR(full.executed - flash.executed, full.hardware - full.model - 4 * b * s * s * h * l + forward,
              full.model * 1e-9);
}

TEST(ModelFlops, GeneralFormForGqaAndSwiGlu) {
  // Llama-3-70B per token and layer, forward: QKV 2·h·(h + 2·kv·d), proj 2h², SwiGLU 2·3·h·f,
  // attention 4·s·h (full convention); LM head 2·h·V (128,256 is a multiple of 128). Step = 3 × forward.
  const double s = 8192, h = 8192, f = 28672, kv = 8, d = 128, l = 80, v = 128256, batch = 16;
  TrainingSpec t = testing::training(8192, 1, Recompute::kNone, AttentionKernel::kFlash);
  t.global_batch = 16;
  const StepFlops flops = step_flops(testing::llama3_70b(), t);
  const double per_token_layer = 2 * h * (h + 2 * kv * d) + 2 * h * h + 6 * h * f + 4 * s * h;
  const double expected = 3 * batch * s * (l * per_token_layer + 2 * h * v);
  EXPECT_NEAR(flops.model / expected, 1.0, 1e-12);
}

TEST(ModelFlops, M6PaddedVocabularyCountsInTheLmHead) {
  // GPT-2's 50,257 tokens pad to 50,304 at tp = 1: the LM head's 3 × 2·B·s·h·V uses 50,304.
  ModelSpec m = testing::gpt3_175b();
  TrainingSpec t = testing::training(2048, 1, Recompute::kNone, AttentionKernel::kFlash);
  m.vocab = 51200;
  const double base = step_flops(m, t).model;
  m.vocab = 50257;
  EXPECT_NEAR(base - step_flops(m, t).model, 3 * 2 * 2048.0 * 12288 * (51200 - 50304), base * 1e-13);
}

}  // namespace model_flops_test
}  // namespace clustersim
