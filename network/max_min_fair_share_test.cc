#include "network/max_min_fair_share.h"

#include <gtest/gtest.h>

#include <vector>

namespace clustersim {
namespace max_min_fair_share_test {

// k flows on one link get capacity / k each.
TEST(MaxMinFairShare, EqualSplitOnOneLink) {
  for (int k = 1; k <= 5; ++k) {
    MaxMinFairShare solver;
    solver.reset();
    const int link = solver.add_link(100.0);
    for (int f = 0; f < k; ++f) solver.add_flow(std::vector<int>{link});
    for (double rate : solver.solve()) EXPECT_DOUBLE_EQ(rate, 100.0 / k);
  }
}

// The classic example: A on link 1 (capacity c1 = 100), B on link 2 (c2 = 60), C on both.
// Link shares: c1/2 = 50, c2/2 = 30 → link 2 saturates first, B = C = c2/2 = 30; then A takes what
// C leaves on link 1: c1 − c2/2 = 70.
TEST(MaxMinFairShare, ThreeFlowsTwoLinks) {
  const double c1 = 100.0;
  const double c2 = 60.0;
  MaxMinFairShare solver;
  solver.reset();
  const int link1 = solver.add_link(c1);
  const int link2 = solver.add_link(c2);
  solver.add_flow(std::vector<int>{link1});         // A
  solver.add_flow(std::vector<int>{link2});         // B
  solver.add_flow(std::vector<int>{link1, link2});  // C
  const std::vector<double> rates = solver.solve();
  EXPECT_DOUBLE_EQ(rates[0], c1 - c2 / 2);
  EXPECT_DOUBLE_EQ(rates[1], c2 / 2);
  EXPECT_DOUBLE_EQ(rates[2], c2 / 2);
}

// A parking lot: a long flow over n links, each link also carrying one short flow. All links have
// capacity c, so every flow gets c/2 (each link is shared by exactly two flows).
TEST(MaxMinFairShare, ParkingLot) {
  const double c = 10.0;
  const int n = 4;
  MaxMinFairShare solver;
  solver.reset();
  std::vector<int> links;
  for (int l = 0; l < n; ++l) links.push_back(solver.add_link(c));
  solver.add_flow(links);
  for (int l = 0; l < n; ++l) solver.add_flow(std::vector<int>{links[l]});
  for (double rate : solver.solve()) EXPECT_DOUBLE_EQ(rate, c / 2);
}

// Rates never exceed any link's capacity, and every flow has a saturated link (max-min optimality).
TEST(MaxMinFairShare, EveryFlowHasASaturatedBottleneck) {
  MaxMinFairShare solver;
  solver.reset();
  const std::vector<double> capacity = {7.0, 3.0, 11.0, 5.0};
  for (double c : capacity) solver.add_link(c);
  const std::vector<std::vector<int>> flows = {{0}, {0, 1}, {1, 2}, {2, 3}, {3}, {0, 2, 3}};
  for (const auto& f : flows) solver.add_flow(f);
  const std::vector<double> rates = solver.solve();
  std::vector<double> load(capacity.size(), 0.0);
  for (size_t f = 0; f < flows.size(); ++f) {
    for (int l : flows[f]) load[l] += rates[f];
  }
  for (size_t l = 0; l < capacity.size(); ++l) EXPECT_LE(load[l], capacity[l] * (1 + 1e-12));
  for (size_t f = 0; f < flows.size(); ++f) {
    bool bottlenecked = false;
    for (int l : flows[f]) {
      bool saturated = load[l] >= capacity[l] * (1 - 1e-12);
      bool largest = true;
      for (size_t g = 0; g < flows.size(); ++g) {
        for (int m : flows[g]) {
          if (m == l && rates[g] > rates[f] * (1 + 1e-12)) largest = false;
        }
      }
      bottlenecked = bottlenecked || (saturated && largest);
    }
    EXPECT_TRUE(bottlenecked) << "flow " << f;
  }
}

TEST(MaxMinFairShare, SolverIsReusable) {
  MaxMinFairShare solver;
  for (int round = 0; round < 3; ++round) {
    solver.reset();
    const int link = solver.add_link(12.0);
    solver.add_flow(std::vector<int>{link});
    solver.add_flow(std::vector<int>{link});
    solver.add_flow(std::vector<int>{link});
    for (double rate : solver.solve()) EXPECT_DOUBLE_EQ(rate, 4.0);
  }
}

}  // namespace max_min_fair_share_test
}  // namespace clustersim
