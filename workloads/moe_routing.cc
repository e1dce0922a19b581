#include "workloads/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

#include "core/error.h"
#include "workloads/model_spec.h"

namespace clustersim {

std::vector<double> expert_token_shares(const ModelSpec& model, const MoeRouting& routing) {
  const int64_t experts = model.moe.num_experts;
  if (experts <= 0) {
    if (!routing.balanced() || routing.capacity_factor != 0) {
      throw InputError(fmt::format("training.moe_routing is set but model \"{}\" has no experts (model.moe.num_experts "
                                   "= 0); remove it for a dense model",
                                   model.name))
          .about({"training.moe_routing", "model.moe.num_experts"});
    }
    return {};
  }
  const double e = static_cast<double>(experts);
  const double k = static_cast<double>(model.moe.top_k);
  // An expert takes at most one of the top_k slots of each token: share <= 1/top_k.
  const double most = 1.0 / k;
  std::vector<double> shares(static_cast<size_t>(experts), 1.0 / e);
  if (!routing.expert_load.empty()) {
    if (static_cast<int64_t>(routing.expert_load.size()) != experts) {
      throw InputError(fmt::format("training.moe_routing.expert_load has {} entries; the model has {} experts (one "
                                   "token count per expert)",
                                   routing.expert_load.size(), experts))
          .about({"training.moe_routing.expert_load"});
    }
    double total = 0;
    for (size_t i = 0; i < routing.expert_load.size(); ++i) {
      const double load = routing.expert_load[i];
      if (!std::isfinite(load) || load < 0) {
        throw InputError(fmt::format("training.moe_routing.expert_load[{}] = {}: token counts must be >= 0", i, load))
            .about({"training.moe_routing.expert_load"});
      }
      total += load;
    }
    if (total <= 0)
      throw InputError("training.moe_routing.expert_load sums to 0: at least one expert needs tokens")
          .about({"training.moe_routing.expert_load"});
    for (size_t i = 0; i < shares.size(); ++i) shares[i] = routing.expert_load[i] / total;
    const auto busiest = std::max_element(shares.begin(), shares.end());
    if (*busiest > most * (1 + 1e-9)) {
      throw InputError(fmt::format("training.moe_routing.expert_load: expert {} has {:.1f} % of the routed slots, more "
                                   "than 1/top_k = {:.1f} % "
                                   "(an expert takes at most one slot of each token)",
                                   busiest - shares.begin(), 100 * *busiest, 100 * most))
          .about({"training.moe_routing.expert_load"});
    }
  } else if (routing.skew != 1.0) {
    const double s = routing.skew;
    if (!std::isfinite(s) || s < 1 || s > e / k * (1 + 1e-12)) {
      throw InputError(fmt::format("training.moe_routing.skew = {}: must be in [1, num_experts / top_k = {:g}] (the "
                                   "busiest expert's tokens over the mean; 1 = balanced)",
                                   s, e / k))
          .about({"training.moe_routing.skew"});
    }
    shares[0] = s / e;
    if (experts > 1) {
      for (size_t i = 1; i < shares.size(); ++i) shares[i] = (1.0 - s / e) / (e - 1);
    }
  }
  if (routing.capacity_factor < 0 || !std::isfinite(routing.capacity_factor)) {
    throw InputError(
        fmt::format("training.moe_routing.capacity_factor = {}: must be >= 0 (0 = dropless)", routing.capacity_factor))
        .about({"training.moe_routing.capacity_factor"});
  }
  if (routing.capacity_factor > 0) {
    const double cap = routing.capacity_factor / e;
    for (double& share : shares) share = std::min(share, cap);
  }
  return shares;
}

bool even_rank_shares(const std::vector<double>& rank_shares) {
  return std::all_of(rank_shares.begin(), rank_shares.end(), [&](double share) {
    return std::abs(share - 1.0 / static_cast<double>(rank_shares.size())) < 1e-12;
  });
}

void require_even_shares_for_deepep(const std::vector<double>& rank_shares) {
  if (!even_rank_shares(rank_shares)) {
    throw InputError(
        "parallelism.moe_dispatcher deepep is modelled for balanced routing only; remove "
        "training.moe_routing (skew, expert_load, capacity_factor) or use moe_dispatcher alltoall")
        .about({"parallelism.moe_dispatcher", "training.moe_routing"});
  }
}

std::vector<double> expert_rank_shares(const std::vector<double>& expert_shares, int64_t ep) {
  const int64_t experts = static_cast<int64_t>(expert_shares.size());
  if (ep < 1 || experts % ep != 0) {
    throw InputError(fmt::format("parallelism.ep = {} does not divide the {} experts", ep, experts))
        .about({"parallelism.ep"});
  }
  const int64_t local = experts / ep;
  std::vector<double> out(static_cast<size_t>(ep), 0.0);
  for (int64_t i = 0; i < experts; ++i) out[static_cast<size_t>(i / local)] += expert_shares[static_cast<size_t>(i)];
  return out;
}

}  // namespace clustersim
