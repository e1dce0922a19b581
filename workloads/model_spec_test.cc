#include "workloads/model_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "workloads/shard_spec.h"
#include "workloads/test_models.h"
#include "workloads/training_spec.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace model_spec_test {

std::string error_of(const ModelSpec& model, const ShardSpec& shard) {
  try {
    shard_model(model, shard);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(VocabularyPadding, M6PadsToMultiplesOfTheDivisorTimesTp) {
  // docs/cases/memory.md M6 (Megatron _vocab_size_with_padding, divisor 128 × tp).
  EXPECT_EQ(padded_vocab_size(50257, 128, 1), 50304);
  EXPECT_EQ(padded_vocab_size(50257, 128, 4), 50688);
  EXPECT_EQ(padded_vocab_size(50257, 128, 8), 51200);
  EXPECT_EQ(padded_vocab_size(151669, 128, 4), 152064);
  // 151,936 = 1,187 × 128: with divisor 1,187 every power-of-two tp up to 128 keeps it unpadded.
  for (int64_t tp = 1; tp <= 128; tp *= 2) EXPECT_EQ(padded_vocab_size(151936, 1187, tp), 151936) << tp;
  EXPECT_THROW(padded_vocab_size(50257, 0, 1), InputError);
}

TEST(ShardModel, L3HeadsMustDivideByTpAndTheErrorListsValidTp) {
  ModelSpec m = testing::gpt3_175b();
  m.heads = 64;
  m.hidden = 8192;
  m.ffn_hidden = 4 * 8192;
  const std::string msg = error_of(m, ShardSpec{.tp = 3});
  EXPECT_NE(msg.find("parallelism.tp = 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.heads = 64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1, 2, 4, 8, 16, 32, 64"), std::string::npos) << msg;
}

TEST(ShardModel, L2KvHeadsAreReplicatedWhenFewerThanTp) {
  ModelSpec m = testing::llama3_70b();  // 64 query heads of 128
  m.kv_heads = 4;
  ShardedDims d = shard_model(m, ShardSpec{.tp = 8});
  EXPECT_EQ(d.kv_heads_per_rank, 1);
  EXPECT_EQ(d.kv_replication, 2);  // tp / kv = 8 / 4
  m.kv_heads = 2;
  d = shard_model(m, ShardSpec{.tp = 8});
  EXPECT_EQ(d.kv_heads_per_rank, 1);
  EXPECT_EQ(d.kv_replication, 4);
  m.kv_heads = 8;
  d = shard_model(m, ShardSpec{.tp = 4});
  EXPECT_EQ(d.kv_heads_per_rank, 2);
  EXPECT_EQ(d.kv_replication, 1);
  // kv = 3 with tp = 8: 8 % 3 ≠ 0 and 3 % 8 ≠ 0 → reject, naming both fields.
  m.heads = 24;
  m.hidden = 3072;
  m.kv_heads = 3;
  m.ffn_hidden = 8192;
  const std::string msg = error_of(m, ShardSpec{.tp = 8});
  EXPECT_NE(msg.find("model.kv_heads = 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("valid tp: 1, 3, 6, 12, 24"), std::string::npos) << msg;
}

TEST(ShardModel, RejectsFfnContextAndSequenceSplitsThatDoNotDivide) {
  ModelSpec m = testing::llama2_7b();
  m.ffn_hidden = 11004;  // not a multiple of 8
  EXPECT_NE(error_of(m, ShardSpec{.tp = 8}).find("model.ffn_hidden = 11004"), std::string::npos);
  EXPECT_NE(error_of(testing::llama2_7b(), ShardSpec{.tp = 0}).find("parallelism.tp"), std::string::npos);

  const TrainingSpec t = testing::training(4100, 1, Recompute::kNone, AttentionKernel::kFlash);
  // cp = 2 needs the sequence in 2·cp = 4 equal chunks: 4100 is fine, 4098 is not.
  EXPECT_NO_THROW(validate_sharding(testing::llama2_7b(), t, ShardSpec{.cp = 2}));
  TrainingSpec odd = t;
  odd.seq_len = 4098;
  EXPECT_THROW(validate_sharding(testing::llama2_7b(), odd, ShardSpec{.cp = 2}), InputError);
  // Sequence parallel over tp = 8 needs seq/cp divisible by 8: 4100 is not.
  EXPECT_THROW(validate_sharding(testing::llama2_7b(), t, ShardSpec{.tp = 8, .sequence_parallel = true}), InputError);
  // Context parallelism needs the fused attention kernel.
  TrainingSpec naive = testing::training(4096, 1, Recompute::kNone, AttentionKernel::kNaive);
  EXPECT_THROW(Transformer(testing::llama2_7b(), naive, ShardSpec{.cp = 2}), InputError);
}

TEST(ModelSpec, GroupLimitedRoutingNeedsBothKeysAndGroupsThatHoldTopK) {
  ModelSpec m = testing::deepseek_v3();
  EXPECT_NO_THROW(m.validate());
  auto refused = [](const ModelSpec& bad, const std::string& text) {
    try {
      bad.validate();
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  ModelSpec one = m;
  one.moe.router_num_groups = 0;  // group_topk 4 left: the pair is incomplete
  refused(one, "go together");
  ModelSpec uneven = m;
  uneven.moe.router_num_groups = 3;  // 256 experts do not split into 3 groups
  refused(uneven, "must divide");
  ModelSpec small = m;
  small.moe.router_num_groups = 64;  // 4 experts per group
  small.moe.router_group_topk = 1;   // 4 < top_k 8
  refused(small, "at least top_k");
  ModelSpec none = m;
  none.moe.router_num_groups = 0;
  none.moe.router_group_topk = 0;
  EXPECT_NO_THROW(none.validate());
}

TEST(ModelSpec, ValidationNamesTheFieldAndWhatIsValid) {
  ModelSpec m = testing::gpt3_175b();
  m.kv_heads = 5;  // does not divide 96
  EXPECT_THROW(m.validate(), InputError);
  m = testing::gpt3_175b();
  m.max_position_embeddings = 0;
  try {
    m.validate();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model.max_position_embeddings"), std::string::npos);
  }
  m = testing::gpt3_175b();
  m.layers = 0;
  EXPECT_THROW(m.validate(), InputError);
  m = testing::gpt3_175b();
  m.moe.num_experts = 8;  // experts without top_k and expert size
  EXPECT_THROW(m.validate(), InputError);
  m.moe.top_k = 9;
  m.moe.moe_ffn_hidden = 4096;
  EXPECT_THROW(m.validate(), InputError);  // top_k above the 8 experts
  m.moe.top_k = 2;
  EXPECT_NO_THROW(m.validate());
  m.moe.first_dense_layers = 96;  // every layer dense
  EXPECT_THROW(m.validate(), InputError);
  m = testing::gpt3_175b();
  m.moe.top_k = 2;  // MoE fields without experts
  EXPECT_THROW(m.validate(), InputError);
  m = testing::gpt3_175b();
  m.mla.kv_lora_rank = 512;  // latent attention needs RoPE (GPT-3 has learned positions)
  m.mla.rope_head_dim = 64;
  EXPECT_THROW(m.validate(), InputError);
  m = testing::gpt3_175b();
  m.hidden = 12290;  // not divisible by 96 heads, no explicit head_dim
  EXPECT_THROW(m.validate(), InputError);
  m.head_dim = 128;
  EXPECT_NO_THROW(m.validate());
  EXPECT_EQ(parse_mlp_kind("swiglu"), MlpKind::kSwiglu);
  EXPECT_THROW(parse_norm_kind("batchnorm"), InputError);
  EXPECT_EQ(parse_position_embedding("alibi"), PositionEmbedding::kAlibi);
  EXPECT_EQ(name_of(PositionEmbedding::kAlibi), "alibi");
  EXPECT_THROW(parse_position_embedding("sinusoidal"), InputError);
  EXPECT_EQ(parse_recompute("selective"), Recompute::kSelective);
  EXPECT_THROW(parse_attention_kernel("sdpa"), InputError);
}

TEST(TrainingSpec, ValidationNamesTheField) {
  const ModelSpec m = testing::gpt3_175b();
  TrainingSpec t = testing::training(2048, 2, Recompute::kNone, AttentionKernel::kFlash);
  t.global_batch = 7;
  EXPECT_THROW(t.validate(m), InputError);  // 7 is not a multiple of 2
  t = testing::training(4096, 1, Recompute::kNone, AttentionKernel::kFlash);
  EXPECT_THROW(t.validate(m), InputError);  // longer than the 2048 learned positions
  t = testing::training(2048, 1, Recompute::kNone, AttentionKernel::kFlash);
  t.compute_dtype = DataType::kFp32;
  EXPECT_THROW(t.validate(m), InputError);
  t.compute_dtype = DataType::kFp8;
  EXPECT_EQ(t.activation_dtype(), DataType::kBf16);
  t.hidden_dropout = 1.0;
  EXPECT_THROW(t.validate(m), InputError);
}

}  // namespace model_spec_test
}  // namespace clustersim
