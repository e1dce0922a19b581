// Context parallelism: zig-zag sharding of causal attention (docs/cases/moe_cp.md E2), the K/V
// volume of one ring step with GQA, and the Ulysses (all-to-all) alternative.

#include "workloads/context_parallel.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "workloads/test_models.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace context_parallel_test {

const Op& find(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  throw std::runtime_error("no op " + std::string(name));
}

bool has(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return true;
  }
  return false;
}

TEST(ContextParallel, E2ZigZagChunksOfEightTokens) {
  // cp = 2, tokens 1..8 cut into 4 chunks: rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2.
  EXPECT_EQ(context_parallel_tokens(8, 2, 0, SequenceSharding::kZigZag), (std::vector<int64_t>{1, 2, 7, 8}));
  EXPECT_EQ(context_parallel_tokens(8, 2, 1, SequenceSharding::kZigZag), (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_EQ(context_parallel_tokens(8, 2, 1, SequenceSharding::kContiguous), (std::vector<int64_t>{5, 6, 7, 8}));
}

TEST(ContextParallel, E2CausalWorkContiguousVersusZigZag) {
  // A query at position p attends to p keys. Contiguous at s = 8: rank 0 1+2+3+4 = 10, rank 1
  // 5+6+7+8 = 26 (26:10); zig-zag 1+2+7+8 = 3+4+5+6 = 18 each.
  EXPECT_EQ(causal_attention_work(8, 2, SequenceSharding::kContiguous), (std::vector<int64_t>{10, 26}));
  EXPECT_EQ(causal_attention_work(8, 2, SequenceSharding::kZigZag), (std::vector<int64_t>{18, 18}));
  // Contiguous tends to 3:1 for long sequences: (Σ_{s/2+1}^{s} p) / (Σ_1^{s/2} p) = (3s² + 2s)/(s² + 2s).
  for (int64_t s : {int64_t{1024}, int64_t{131072}}) {
    const std::vector<int64_t> w = causal_attention_work(s, 2, SequenceSharding::kContiguous);
    const double x = static_cast<double>(s);
    const double expected = (3 * x * x + 2 * x) / (x * x + 2 * x);
    EXPECT_DOUBLE_EQ(static_cast<double>(w[1]) / static_cast<double>(w[0]), expected);
  }
  EXPECT_NEAR(static_cast<double>(causal_attention_work(131072, 2, SequenceSharding::kContiguous)[1]) /
                  static_cast<double>(causal_attention_work(131072, 2, SequenceSharding::kContiguous)[0]),
              3.0, 1e-4);
  // Zig-zag: every rank equal, for any cp; the total is the whole causal triangle s(s+1)/2.
  for (int64_t cp : {2, 4, 16}) {
    const int64_t s = 128 * cp;
    const std::vector<int64_t> w = causal_attention_work(s, cp, SequenceSharding::kZigZag);
    int64_t total = 0;
    for (int64_t x : w) {
      EXPECT_EQ(x, w.front());
      total += x;
    }
    EXPECT_EQ(total, s * (s + 1) / 2);
  }
  // Sequences that do not split into 2·cp chunks are rejected.
  EXPECT_THROW(causal_attention_work(10, 4, SequenceSharding::kZigZag), InputError);
  EXPECT_THROW(context_parallel_tokens(8, 2, 2, SequenceSharding::kZigZag), InputError);
}

TEST(ContextParallel, E2RingStepMovesKvHeadsNotQueryHeads) {
  // Llama-3-8B: 32 query heads but 8 KV heads of 128. One ring step passes 2 × (s/cp) × 8 × 128 × 2
  // bytes (K and V in bf16), cp − 1 steps; not 32 heads.
  const int64_t s = 131072, cp = 16;
  const Transformer t(testing::llama3_8b(), testing::training(s, 1, Recompute::kNone, AttentionKernel::kFlash),
                      ShardSpec{.cp = cp});
  const Op& ring = find(t.layer_forward(), "attention.cp_kv_exchange");
  EXPECT_EQ(ring.comm_bytes.count(), 2 * (s / cp) * 8 * 128 * 2);
  EXPECT_NE(ring.comm_bytes.count(), 2 * (s / cp) * 32 * 128 * 2);
  EXPECT_EQ(ring.comm_steps, cp - 1);
  // Backward passes K, V and their gradients.
  EXPECT_EQ(find(t.layer_backward(), "attention.cp_kv_exchange.backward").comm_bytes.count(),
            2 * ring.comm_bytes.count());
  // Activations and attention FLOPs per rank are 1/cp of the unsharded sequence's.
  const Transformer one(testing::llama3_8b(), testing::training(s, 1, Recompute::kNone, AttentionKernel::kFlash));
  EXPECT_EQ(t.layer_activation_bytes() * cp, one.layer_activation_bytes());
  EXPECT_DOUBLE_EQ(find(t.layer_forward(), "flash_attention").flops * cp,
                   find(one.layer_forward(), "flash_attention").flops);
}

TEST(ContextParallel, UlyssesAllToAllsInsteadOfTheRing) {
  // cp_comm a2a: Q, K, V go from sequence to head shards (each rank sends its T × (q + k + v)), the
  // output comes back (T × q); no ring. Heads per rank must divide by cp.
  const int64_t s = 32768, cp = 4;
  const ModelSpec m = testing::llama3_8b();
  const Transformer t(m, testing::training(s, 1, Recompute::kNone, AttentionKernel::kFlash),
                      ShardSpec{.cp = cp, .cp_comm = ContextParallelComm::kAllToAll});
  const int64_t tokens = s / cp;
  EXPECT_FALSE(has(t.layer_forward(), "attention.cp_kv_exchange"));
  EXPECT_EQ(find(t.layer_forward(), "attention.cp_all_to_all").comm_bytes.count(),
            tokens * (32 + 2 * 8) * 128 * 2);
  EXPECT_EQ(find(t.layer_forward(), "attention.cp_all_to_all_output").comm_bytes.count(), tokens * 32 * 128 * 2);
  EXPECT_TRUE(has(t.layer_backward(), "attention.cp_all_to_all.backward"));
  // 8 KV heads over cp 16: not divisible.
  EXPECT_THROW(Transformer(m, testing::training(s, 1, Recompute::kNone, AttentionKernel::kFlash),
                           ShardSpec{.cp = 16, .cp_comm = ContextParallelComm::kAllToAll}),
               InputError);
}

}  // namespace context_parallel_test
}  // namespace clustersim
