// DeepEP dispatch traffic: the hit probabilities against their closed forms and against sampled
// routing, and the per-pair bytes of the dispatch matrix.

#include "workloads/deepep_traffic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/error.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace deepep_traffic_test {

MoeSpec deepseek_moe() { return testing::deepseek_v3().moe; }

// Π_{i<k} (E − E/B − i)/(E − i): the chance that k distinct uniform draws of E miss a block of E/B.
double miss(double experts, double block, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) p *= (experts - block - i) / (experts - i);
  return p;
}

// Routes `tokens` tokens as the router does under balance (group-limited when the spec says so:
// router_group_topk groups uniformly, then top_k distinct experts uniformly among theirs) and returns
// the fraction that hit block 0 of `blocks`.
double sampled_hit(const MoeSpec& moe, int64_t blocks, int tokens) {
  std::mt19937_64 rng(20261129);
  const int64_t per_block = moe.num_experts / blocks;
  std::vector<int64_t> pool;
  int hits = 0;
  for (int t = 0; t < tokens; ++t) {
    pool.clear();
    if (moe.router_num_groups > 0) {
      std::vector<int64_t> groups(static_cast<size_t>(moe.router_num_groups));
      std::iota(groups.begin(), groups.end(), 0);
      std::shuffle(groups.begin(), groups.end(), rng);
      const int64_t eg = moe.num_experts / moe.router_num_groups;
      for (int64_t g = 0; g < moe.router_group_topk; ++g) {
        for (int64_t e = 0; e < eg; ++e) pool.push_back(groups[static_cast<size_t>(g)] * eg + e);
      }
    } else {
      pool.resize(static_cast<size_t>(moe.num_experts));
      std::iota(pool.begin(), pool.end(), 0);
    }
    std::shuffle(pool.begin(), pool.end(), rng);
    const bool hit = std::any_of(pool.begin(), pool.begin() + moe.top_k, [&](int64_t e) { return e < per_block; });
    hits += hit ? 1 : 0;
  }
  return static_cast<double>(hits) / tokens;
}

TEST(DeepEpTraffic, HitProbabilitiesFollowTheClosedForms) {
  MoeSpec free = deepseek_moe();
  free.router_num_groups = 0;
  free.router_group_topk = 0;
  // 256 experts, top-8, no group limit: a node of 32 experts (8 nodes) and a GPU of 4 (64 GPUs).
  EXPECT_NEAR(expert_block_hit_probability(free, 8), 1 - miss(256, 32, 8), 1e-12);
  EXPECT_NEAR(expert_block_hit_probability(free, 64), 1 - miss(256, 4, 8), 1e-12);
  // DeepSeek-V3's 8 groups, 4 chosen: a node is one group, chosen with probability 1/2, and then
  // misses only if all 8 experts fall in the other 3 chosen groups (96 of 128).
  const MoeSpec limited = deepseek_moe();
  EXPECT_NEAR(expert_block_hit_probability(limited, 8), 0.5 * (1 - miss(128, 32, 8)), 1e-12);
  // A GPU's 4 experts lie inside one group.
  EXPECT_NEAR(expert_block_hit_probability(limited, 64), 0.5 * (1 - miss(128, 4, 8)), 1e-12);
  // Two groups per block (4 blocks of 64 experts): hypergeometric over the block's groups chosen.
  const double p1 = 2.0 * 6.0 * 5.0 * 4.0 / 6.0 / (8.0 * 7.0 * 6.0 * 5.0 / 24.0);  // C(2,1)·C(6,3)/C(8,4)
  const double p2 = 1.0 * 15.0 / 70.0;                                              // C(2,2)·C(6,2)/C(8,4)
  EXPECT_NEAR(expert_block_hit_probability(limited, 4), p1 * (1 - miss(128, 32, 8)) + p2 * (1 - miss(128, 64, 8)),
              1e-12);
  // Node-limited routing hits fewer nodes: 8 × 0.4536 = 3.63 of at most 4, against 5.29 without.
  EXPECT_NEAR(8 * expert_block_hit_probability(limited, 8), 3.629, 0.001);
  EXPECT_NEAR(8 * expert_block_hit_probability(free, 8), 8 * (1 - miss(256, 32, 8)), 1e-12);
  EXPECT_NEAR(8 * expert_block_hit_probability(free, 8), 5.295, 0.001);
}

TEST(DeepEpTraffic, HitProbabilitiesMatchSampledRouting) {
  MoeSpec free = deepseek_moe();
  free.router_num_groups = 0;
  free.router_group_topk = 0;
  for (const MoeSpec& moe : {deepseek_moe(), free}) {
    for (int64_t blocks : {4, 8, 64}) {
      // 40,000 tokens: a standard error below 0.0025 for any probability.
      EXPECT_NEAR(expert_block_hit_probability(moe, blocks), sampled_hit(moe, blocks, 40000), 0.01)
          << blocks << " blocks, groups " << moe.router_num_groups;
    }
  }
}

TEST(DeepEpTraffic, DispatchMatrixCrossesTheNetworkOncePerNode) {
  const MoeSpec moe = deepseek_moe();
  const int64_t n = 64, g = 8, nodes = 8, tokens = 4096;
  const double bytes = 7168;
  const std::vector<int64_t> m = deepep_dispatch_matrix(moe, n, g, tokens, bytes);
  ASSERT_EQ(m.size(), static_cast<size_t>(n * n));
  const double q_gpu = expert_block_hit_probability(moe, n);
  const double q_node = expert_block_hit_probability(moe, nodes);
  for (int64_t i = 0; i < n; ++i) {
    double network = 0, nvlink = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t b = m[static_cast<size_t>(i * n + j)];
      if (i == j) {
        EXPECT_EQ(b, 0);
      } else if (i / g == j / g) {
        nvlink += static_cast<double>(b);
      } else {
        network += static_cast<double>(b);
        if (i % g != j % g) {
          EXPECT_EQ(b, 0) << "off-rail network traffic " << i << " -> " << j;
        }
      }
    }
    // Over the network: once per remote node hit; over NVLink: once per local GPU hit, for its own
    // tokens and for those of the 7 remote senders on its rail.
    EXPECT_NEAR(network, (nodes - 1) * tokens * q_node * bytes, 8);
    EXPECT_NEAR(nvlink, (g - 1) * nodes * tokens * q_gpu * bytes, 8);
  }
  // Against the alltoall dispatcher, which sends every one of a token's 8 copies (7/8 of them off
  // the node): DeepEP with node-limited routing moves 0.45 of the network bytes.
  const double alltoall_network = tokens * 8.0 * (nodes - 1) / nodes * bytes;
  const double deepep_network = (nodes - 1) * tokens * q_node * bytes;
  EXPECT_NEAR(deepep_network / alltoall_network, 7 * q_node / 7.0, 1e-9);
  EXPECT_NEAR(deepep_network / alltoall_network, 0.4536, 0.0001);
  // One node: no network traffic; one GPU per node: no NVLink traffic.
  for (int64_t b : deepep_dispatch_matrix(moe, 8, 8, tokens, bytes)) EXPECT_GE(b, 0);
  const std::vector<int64_t> single = deepep_dispatch_matrix(moe, 8, 1, tokens, bytes);
  for (int64_t i = 0; i < 8; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      if (i != j) {
        EXPECT_NEAR(static_cast<double>(single[static_cast<size_t>(i * 8 + j)]),
                    tokens * expert_block_hit_probability(moe, 8) * bytes, 1);
      }
    }
  }
}

TEST(DeepEpTraffic, RejectsLayoutsThatDoNotSplit) {
  const MoeSpec moe = deepseek_moe();
  EXPECT_THROW(deepep_dispatch_matrix(moe, 64, 6, 4096, 7168), InputError);   // 6 does not divide 64
  EXPECT_THROW(deepep_dispatch_matrix(moe, 48, 8, 4096, 7168), InputError);   // 48 does not divide 256
  EXPECT_THROW(deepep_dispatch_matrix(moe, 64, 8, 0, 7168), InputError);
  EXPECT_THROW(expert_block_hit_probability(moe, 0), InputError);
}

}  // namespace deepep_traffic_test
}  // namespace clustersim
