#pragma once

// How a mixture-of-experts router spreads tokens over the experts, as an input of the simulation
// (a trained router is never perfectly balanced; DeepEP issues 250 and 343 report receivers with
// 1.7× the mean load). Every MoE layer and every expert-parallel group is given the same routing.

#include <cstdint>
#include <vector>

namespace clustersim {

struct ModelSpec;

struct MoeRouting {
  // The busiest expert's tokens over the mean expert's (1 = balanced); the other experts share the
  // remaining tokens evenly. Valid: 1 ≤ skew ≤ num_experts / top_k (an expert takes at most one
  // slot of each token). Expert 0 is the busiest, so the first expert-parallel rank holds it.
  double skew = 1.0;
  // A per-expert token histogram (any scale; num_experts entries) that replaces `skew` when given.
  std::vector<double> expert_load;
  // Megatron --moe-expert-capacity-factor: each expert takes at most capacity_factor × its balanced
  // share of tokens (tokens × top_k / num_experts) and drops the rest; 0 = dropless (the default).
  double capacity_factor = 0;

  bool balanced() const { return skew == 1.0 && expert_load.empty(); }
};

// The share of the step's routed token slots (tokens × top_k) each expert processes, in expert
// order: skew or histogram as above, then capped at capacity_factor / num_experts. Sums to 1
// without dropping, less with it. Throws InputError naming training.moe_routing.<key> for routing
// given to a dense model, skew outside [1, num_experts / top_k], a histogram of the wrong length,
// with negative entries, an all-zero sum or an expert above 1/top_k of the slots, and a negative
// capacity factor.
std::vector<double> expert_token_shares(const ModelSpec& model, const MoeRouting& routing);

// The shares of the expert-parallel ranks: rank r holds experts [r·E/ep, (r+1)·E/ep) and processes the
// sum of their shares. `ep` must divide the number of experts (InputError otherwise).
std::vector<double> expert_rank_shares(const std::vector<double>& expert_shares, int64_t ep);

// Whether every expert-parallel rank's share (expert_rank_shares) is 1/ep (to 1e-12): balanced
// all-to-alls. True for an empty list.
bool even_rank_shares(const std::vector<double>& rank_shares);

// The deepep dispatcher (workloads/deepep_traffic.h) is modelled for balanced routing only: throws
// InputError naming parallelism.moe_dispatcher unless even_rank_shares(rank_shares).
void require_even_shares_for_deepep(const std::vector<double>& rank_shares);

}  // namespace clustersim
