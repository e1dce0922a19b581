#include "network/max_min_fair_share.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace clustersim {

namespace {
// Links whose shares differ by less than this relative amount saturate together: it absorbs
// rounding, so symmetric links do not cost one filling round each.
constexpr double kTie = 1e-12;
}  // namespace

void MaxMinFairShare::reset() {
  capacity_.clear();
  flow_begin_.assign(1, 0);
  flow_links_.clear();
}

int MaxMinFairShare::add_link(double capacity) {
  check_invariant(capacity > 0, "MaxMinFairShare: link capacity must be positive");
  capacity_.push_back(capacity);
  return static_cast<int>(capacity_.size()) - 1;
}

void MaxMinFairShare::add_flow(std::span<const int> links) {
  if (flow_begin_.empty()) flow_begin_.push_back(0);
  flow_links_.insert(flow_links_.end(), links.begin(), links.end());
  flow_begin_.push_back(static_cast<int>(flow_links_.size()));
}

const std::vector<double>& MaxMinFairShare::solve() {
  if (flow_begin_.empty()) flow_begin_.push_back(0);
  const size_t links = capacity_.size();
  const size_t flows = flow_begin_.size() - 1;
  // Flows of each link (CSR, counting sort by link).
  unfrozen_.assign(links, 0);
  for (int l : flow_links_) ++unfrozen_[l];
  link_begin_.assign(links + 1, 0);
  for (size_t l = 0; l < links; ++l) link_begin_[l + 1] = link_begin_[l] + unfrozen_[l];
  link_flows_.resize(flow_links_.size());
  cursor_.assign(link_begin_.begin(), link_begin_.end() - 1);
  for (size_t f = 0; f < flows; ++f) {
    for (int i = flow_begin_[f]; i < flow_begin_[f + 1]; ++i) {
      link_flows_[cursor_[flow_links_[i]]++] = static_cast<int>(f);
    }
  }
  rates_.assign(flows, -1.0);
  remaining_ = capacity_;
  active_.clear();
  for (size_t l = 0; l < links; ++l) {
    if (unfrozen_[l] > 0) active_.push_back(static_cast<int>(l));
  }
  while (!active_.empty()) {
    // The next water level: the smallest remaining capacity per unfrozen flow (each link's share
    // computed once a round).
    double level = std::numeric_limits<double>::infinity();
    share_.resize(active_.size());
    for (size_t a = 0; a < active_.size(); ++a) {
      const int l = active_[a];
      share_[a] = remaining_[l] / unfrozen_[l];
      level = std::min(level, share_[a]);
    }
    check_invariant(level > 0, "MaxMinFairShare: a saturated link still has unfrozen flows");
    // Every link at that level saturates now; its unfrozen flows freeze at the level.
    saturated_.clear();
    const double saturating = level * (1 + kTie);
    for (size_t a = 0; a < active_.size(); ++a) {
      if (share_[a] <= saturating) saturated_.push_back(active_[a]);
    }
    for (int link : saturated_) {
      for (int i = link_begin_[link]; i < link_begin_[link + 1]; ++i) {
        const int f = link_flows_[i];
        if (rates_[f] >= 0) continue;
        rates_[f] = level;
        for (int j = flow_begin_[f]; j < flow_begin_[f + 1]; ++j) {
          const int other = flow_links_[j];
          remaining_[other] = std::max(0.0, remaining_[other] - level);
          --unfrozen_[other];
        }
      }
    }
    std::erase_if(active_, [this](int l) { return unfrozen_[l] == 0; });
  }
  for (double& rate : rates_) rate = std::max(rate, 0.0);  // flows that cross no link
  return rates_;
}

}  // namespace clustersim
