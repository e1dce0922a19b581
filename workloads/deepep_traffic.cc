#include "workloads/deepep_traffic.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace clustersim {

namespace {

// ln C(n, k); −inf when k > n (the choice is impossible).
double log_choose(double n, double k) {
  if (k < 0 || k > n) return -INFINITY;
  return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
}

// C(n − removed, k) / C(n, k): the chance that k uniform distinct draws from n miss `removed` of them.
double miss_probability(double n, double removed, double k) {
  return std::exp(log_choose(n - removed, k) - log_choose(n, k));
}

}  // namespace

double expert_block_hit_probability(const MoeSpec& moe, int64_t blocks) {
  if (blocks <= 0 || moe.num_experts <= 0 || moe.num_experts % blocks != 0) {
    throw InputError(fmt::format("deepep dispatch: {} experts do not split into {} equal blocks (one per node or "
                                 "per expert-parallel rank)",
                                 moe.num_experts, blocks));
  }
  const double e = static_cast<double>(moe.num_experts);
  const double k = static_cast<double>(moe.top_k);
  const double per_block = e / static_cast<double>(blocks);
  const int64_t groups = moe.router_num_groups;
  const int64_t chosen = moe.router_group_topk;
  if (groups > 0 && chosen > 0 && groups % blocks == 0) {
    const int64_t s = groups / blocks;
    const double eg = e / static_cast<double>(groups);
    const double pool = static_cast<double>(chosen) * eg;
    double p = 0;
    for (int64_t j = 1; j <= std::min(s, chosen); ++j) {
      const double pj = std::exp(log_choose(static_cast<double>(s), static_cast<double>(j)) +
                                 log_choose(static_cast<double>(groups - s), static_cast<double>(chosen - j)) -
                                 log_choose(static_cast<double>(groups), static_cast<double>(chosen)));
      p += pj * (1.0 - miss_probability(pool, static_cast<double>(j) * eg, k));
    }
    return p;
  }
  if (groups > 0 && chosen > 0 && blocks % groups == 0) {
    const double eg = e / static_cast<double>(groups);
    const double pool = static_cast<double>(chosen) * eg;
    return static_cast<double>(chosen) / static_cast<double>(groups) * (1.0 - miss_probability(pool, per_block, k));
  }
  return 1.0 - miss_probability(e, per_block, k);
}

std::vector<int64_t> deepep_dispatch_matrix(const MoeSpec& moe, int64_t ep, int64_t ranks_per_node, int64_t tokens,
                                            double token_bytes) {
  if (tokens <= 0 || !(token_bytes > 0)) {
    throw InputError(fmt::format("deepep dispatch: {} tokens of {} bytes; both must be positive", tokens, token_bytes));
  }
  if (ep <= 0 || ranks_per_node <= 0 || ep % ranks_per_node != 0) {
    throw InputError(fmt::format("deepep dispatch: {} expert-parallel ranks do not split into nodes of {}", ep,
                                 ranks_per_node));
  }
  const int64_t n = ep;
  const int64_t g = ranks_per_node;
  const int64_t nodes = n / g;
  const double q_gpu = expert_block_hit_probability(moe, n);
  const double q_node = expert_block_hit_probability(moe, nodes);
  const double t = static_cast<double>(tokens);
  const auto local = static_cast<int64_t>(std::llround(t * q_gpu * token_bytes * static_cast<double>(nodes)));
  const auto remote = static_cast<int64_t>(std::llround(t * q_node * token_bytes));
  std::vector<int64_t> m(static_cast<size_t>(n * n), 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const bool same_node = i / g == j / g;
      const bool same_rail = i % g == j % g;
      if (same_node) {
        m[static_cast<size_t>(i * n + j)] = local;
      } else if (same_rail) {
        m[static_cast<size_t>(i * n + j)] = remote;
      }
    }
  }
  return m;
}

}  // namespace clustersim
