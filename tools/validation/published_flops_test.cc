#include "tools/validation/published_flops.h"

#include <gtest/gtest.h>

#include "workloads/model_flops.h"

namespace clustersim {
namespace published_flops_test {

// GPT-3 175B as SC21 and Korthikanti et al. count it.
constexpr double kB = 1536, kS = 2048, kL = 96, kH = 12288, kV = 51200;

TEST(PublishedFlops, MegatronFormulaOfAGptLayerIsKorthikantisModelFlops) {
  // MHA (g = a), head size h/a, ffn = 4h, GeLU: 12BsLh²(2 + s/h + 4 + V/(2Lh)) = 72BsLh²(1 + s/6h + V/12hL).
  const double megatron = megatron_step_flops(kB, kS, kL, kH, 96, 96, kH / 96, 4 * kH, false, kV);
  EXPECT_DOUBLE_EQ(megatron / megatron_gpt_model_flops(kB, kS, kL, kH, kV), 1.0);
}

TEST(PublishedFlops, Sc21CountsOneMoreForwardOfTheLayers) {
  // eq. 3 = 4/3 × the layers' model FLOPs 72BsLh²(1 + s/6h) + the logits' forward and backward 6BshV.
  const double layers = 72 * kB * kS * kL * kH * kH * (1 + kS / (6 * kH));
  const double logits = 6 * kB * kS * kH * kV;
  EXPECT_NEAR(sc21_step_flops(kB, kS, kL, kH, kV) / (layers * 4 / 3 + logits), 1.0, 1e-12);
}

TEST(PublishedFlops, SelectiveRecomputationAddsTheAttentionCoreOnce) {
  // 72BsLh²(1 + s/3h + ...) − 72BsLh²(1 + s/6h + ...) = 72BsLh² · s/6h = 12·B·s²·h·L.
  const double extra = korthikanti_selective_hardware_flops(kB, kS, kL, kH, kV) - megatron_gpt_model_flops(kB, kS, kL, kH, kV);
  EXPECT_NEAR(extra / (12 * kB * kS * kS * kH * kL), 1.0, 1e-12);
}

TEST(PublishedFlops, MegatronBridgeLlamaFormula) {
  // Llama 3 8B (32 layers, h 4096, 32 heads, 8 KV heads of 128, ffn 14336, V 128256) at s = 8192:
  // per token 6 × (the layer GEMMs' weights: Q and O h², K and V h·g·d each, SwiGLU 3·h·ffn) × L
  // + 6·V·h for the logits + the causal attention core 6·L·h·s.
  const double L = 32, h = 4096, g = 8, d = 128, ffn = 14336, V = 128256, s = 8192;
  const double per_token = 6 * L * (2 * h * h + 2 * h * g * d + 3 * h * ffn) + 6 * V * h + 6 * L * h * s;
  EXPECT_NEAR(megatron_bridge_step_flops(1, s, L, h, 32, g, ffn, V) / s / per_token, 1.0, 1e-12);
  // The performance summary's DGX-H100 Llama 3 8B row gives 744 model TFLOP/s at 14,451 tokens/s
  // per GPU: 51.48 GFLOP per token, which the formula reproduces to the rounding of the table.
  EXPECT_NEAR(per_token / (744e12 / 14451), 1.0, 1e-3);
}

TEST(PublishedFlops, LlmFoundryFormulaReproducesItsOwnTable) {
  // llm-foundry README, MPT-70B on 512 H100 (bf16, seq 2048, activation checkpointing): 1007 tokens/s
  // per GPU with NumParams 64,862,437,376 gives MFU 41.25 % and HFU 55.0 % on a 989 TFLOP/s peak.
  const double seq_per_s = 1007.0 * 512 / 2048;
  const double per_step_mfu = llm_foundry_step_flops(1, 2048, 80, 8192, 64862437376.0, false);
  const double per_step_hfu = llm_foundry_step_flops(1, 2048, 80, 8192, 64862437376.0, true);
  EXPECT_NEAR(per_step_mfu * seq_per_s / (512 * 989e12) * 100, 41.25, 0.05);
  EXPECT_NEAR(per_step_hfu * seq_per_s / (512 * 989e12) * 100, 55.0, 0.05);
  EXPECT_DOUBLE_EQ(per_step_hfu / per_step_mfu, 4.0 / 3.0);
}

TEST(PublishedFlops, PalmCountsSixFlopsPerParameterAndTheFullAttention) {
  const double N = 13e9, L = 40, h = 5120, s = 2048;
  EXPECT_DOUBLE_EQ(palm_step_flops(2, s, L, h, N), 2 * s * (6 * N + 12 * L * h * s));
}

}  // namespace published_flops_test
}  // namespace clustersim
