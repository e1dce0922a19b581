#include "workloads/parameter_count.h"

#include <gtest/gtest.h>

#include "workloads/test_models.h"

namespace clustersim {
namespace parameter_count_test {

TEST(ParameterCount, Llama2SevenBillionExactly) {
  // 32 layers × (4h² + 3·h·ffn + 2h) + 2·V·h + h, h = 4096, ffn = 11008, V = 32000.
  const int64_t h = 4096, ffn = 11008, v = 32000, layers = 32;
  const int64_t expected = layers * (4 * h * h + 3 * h * ffn + 2 * h) + 2 * v * h + h;
  EXPECT_EQ(expected, 6'738'415'616);
  const ParameterCounts c = count_parameters(testing::llama2_7b());
  EXPECT_EQ(c.total(), expected);
  EXPECT_EQ(c.layer.total(), 4 * h * h + 3 * h * ffn + 2 * h);
  EXPECT_EQ(c.word_embedding, v * h);
  EXPECT_EQ(c.lm_head, v * h);
  EXPECT_EQ(c.final_norm, h);
}

TEST(ParameterCount, Gpt3WithBiasesLayerNormLearnedPositionsAndTiedEmbeddings) {
  // Per layer: QKV 3h² + 3h, proj h² + h, two LayerNorms 4h, fc1 4h² + 4h, fc2 4h² + h = 12h² + 13h;
  // plus V·h (tied), 2048·h positions, final LayerNorm 2h. ≈ 174.6 B (Narayanan et al. 2021, Table 2).
  const int64_t h = 12288;
  const ParameterCounts c = count_parameters(testing::gpt3_175b());
  EXPECT_EQ(c.layer.total(), 12 * h * h + 13 * h);
  EXPECT_EQ(c.total(), 96 * (12 * h * h + 13 * h) + 51200 * h + 2048 * h + 2 * h);
  EXPECT_NEAR(static_cast<double>(c.total()) / 1e9, 174.6, 0.05);
  // Tied: the last pipeline stage keeps its own copy of the word embedding.
  EXPECT_EQ(c.stage(12, false, true, true), 12 * c.layer.total() + 2 * h + 51200 * h);
  EXPECT_EQ(c.stage(12, true, false, true), 12 * c.layer.total() + 51200 * h + 2048 * h);
  EXPECT_EQ(c.stage(96, true, true, false), c.total());
}

TEST(ParameterCount, TensorParallelSplitKeepsNormsAndRowParallelBiasesWhole) {
  const int64_t h = 12288, t = 8;
  const ParameterCounts c = count_parameters(testing::gpt3_175b(), ShardSpec{.tp = t});
  EXPECT_EQ(c.layer.qkv_weight, 3 * h * h / t);
  EXPECT_EQ(c.layer.qkv_bias, 3 * h / t);
  EXPECT_EQ(c.layer.proj_weight, h * h / t);
  EXPECT_EQ(c.layer.proj_bias, h);
  EXPECT_EQ(c.layer.fc1_weight, 4 * h * h / t);
  EXPECT_EQ(c.layer.fc2_bias, h);
  EXPECT_EQ(c.layer.input_norm, 2 * h);
  EXPECT_EQ(c.word_embedding, 51200 / t * h);
  // Llama-2-7B at tp = 8 pads 32,000 to a multiple of 128 × 8 = 1,024: 32,768 rows, 4,096 per rank.
  const ParameterCounts l = count_parameters(testing::llama2_7b(), ShardSpec{.tp = 8});
  EXPECT_EQ(l.word_embedding, 4096 * 4096);
  EXPECT_EQ(l.lm_head, 4096 * 4096);
}

TEST(ParameterCount, L2ReplicatedKvHeadsHoldOneHeadOfKAndV) {
  // kv = 4, head_dim 128, tp = 8: each rank's K/V projection is h × 128 × 2 (1/kv of the total K/V
  // weights, not 1/tp); the query part is h × (64/8) × 128.
  ModelSpec m = testing::llama3_70b();
  m.kv_heads = 4;
  const int64_t h = 8192, d = 128;
  const ParameterCounts c = count_parameters(m, ShardSpec{.tp = 8});
  const int64_t query = h * (64 / 8) * d;
  EXPECT_EQ(c.layer.qkv_weight - query, h * d * 2);
  const int64_t total_kv = h * 4 * d * 2;
  EXPECT_EQ(c.layer.qkv_weight - query, total_kv / 4);
  // kv = 8, tp = 4: two KV heads per rank.
  const ParameterCounts c4 = count_parameters(testing::llama3_70b(), ShardSpec{.tp = 4});
  EXPECT_EQ(c4.layer.qkv_weight, h * (64 / 4 + 2 * 2) * d);
}

}  // namespace parameter_count_test
}  // namespace clustersim
