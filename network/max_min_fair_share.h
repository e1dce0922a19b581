#pragma once

// Max-min fair rates of flows sharing capacitated links, by progressive filling (Bertsekas &
// Gallager, "Data Networks", 2nd ed., §6.5.2): all unfrozen flows grow at the same rate; the link
// whose remaining capacity per unfrozen flow is smallest saturates first, its flows freeze at that
// share, their rates are taken off every other link they cross, and the filling continues.
// Each flow ends with the largest rate it can have without lowering the rate of a flow that has
// no more than it.
//
// Implementation: filling proceeds in rounds, one per distinct rate level: a scan of the links that
// still carry unfrozen flows finds the lowest share, every link at that share (within a relative
// 1e-12, so rounding does not split symmetric links) saturates, and its flows freeze. One solve
// costs O(Σ route lengths + levels × links); flow-level networks have few distinct levels (the
// link speeds and their sharing counts), so this beats a priority queue of links, whose updates
// cost a log factor per frozen flow. Results depend only on the input order (deterministic).
// The object keeps its buffers between solves (no allocation in steady state).

#include <cstdint>
#include <span>
#include <vector>

namespace clustersim {

class MaxMinFairShare {
 public:
  // Forgets all links and flows.
  void reset();
  // Adds a link of `capacity` (> 0, any rate unit); returns its index 0, 1, ...
  int add_link(double capacity);
  // Adds a flow crossing `links` (indices from add_link, each at most once); flows are numbered in
  // the order added.
  void add_flow(std::span<const int> links);
  // Solves; rates()[f] is flow f's max-min fair rate in the capacity unit (> 0 for a flow that
  // crosses a link; a flow crossing no link gets 0, meaning "unconstrained").
  const std::vector<double>& solve();
  const std::vector<double>& rates() const { return rates_; }

 private:
  std::vector<double> capacity_;
  std::vector<int> flow_begin_;  // CSR: links of flow f are flow_links_[flow_begin_[f] .. flow_begin_[f+1])
  std::vector<int> flow_links_;
  std::vector<int> link_begin_;  // CSR built by solve(): flows of link l
  std::vector<int> link_flows_;
  std::vector<int> active_;     // links with unfrozen flows
  std::vector<int> saturated_;  // links saturating in the current round
  std::vector<int> cursor_;
  std::vector<double> remaining_;  // capacity not yet given to frozen flows
  std::vector<double> share_;      // this round's remaining capacity per unfrozen flow, by active_
  std::vector<int> unfrozen_;
  std::vector<double> rates_;
};

}  // namespace clustersim
