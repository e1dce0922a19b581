#include "collectives/all_to_all.h"

#include <gtest/gtest.h>

#include <tuple>

#include "collectives/send_recv.h"
#include "collectives/test_layouts.h"

namespace clustersim {
namespace all_to_all_test {

// A matrix in units of `unit` bytes: entry [src][dst].
std::vector<int64_t> scaled(const std::vector<std::vector<int64_t>>& units, int64_t unit) {
  std::vector<int64_t> bytes;
  for (const auto& row : units) {
    for (int64_t value : row) bytes.push_back(value * unit);
  }
  return bytes;
}

CollectiveRequest all_to_all(const std::vector<int64_t>& matrix) {
  CollectiveRequest r;
  r.op = CollectiveOp::kAllToAll;
  r.size = Bytes::of(1);
  r.all_to_all_bytes = matrix;
  return r;
}

// Case C4: 8 GPUs on 8 nodes (network-bound). Balanced routing gives every GPU 112 tokens
// (16 from each of its 7 peers); a skewed routing with the same number of tokens sent sends one
// GPU 192. The time follows the busiest receiver: 192/112 = 1.71×.
TEST(AllToAll, BusiestReceiverSetsTheTime) {
  const int n = 8;
  const GroupLayout layout = test_layouts::nvswitch(n, 1, 1);
  std::vector<std::vector<int64_t>> balanced(n, std::vector<int64_t>(n, 16));
  std::vector<std::vector<int64_t>> skewed = balanced;
  for (int src = 0; src < n; ++src) balanced[static_cast<size_t>(src)][static_cast<size_t>(src)] = 0;
  // Skewed: receiver 0 gets 192 (the 7 peers send it 27, 27, 27, 27, 28, 28, 28); the tokens
  // they take from the others keep every sender at 112.
  skewed = balanced;
  const std::vector<int64_t> to_zero = {0, 27, 27, 27, 27, 28, 28, 28};
  for (int src = 1; src < n; ++src) {
    const int64_t extra = to_zero[static_cast<size_t>(src)] - 16;
    skewed[static_cast<size_t>(src)][0] = to_zero[static_cast<size_t>(src)];
    // Take `extra` tokens off this sender's other peers (never below zero).
    int64_t left = extra;
    for (int dst = 1; dst < n && left > 0; ++dst) {
      if (dst == src) continue;
      const int64_t take = std::min<int64_t>(left, 2);
      skewed[static_cast<size_t>(src)][static_cast<size_t>(dst)] -= take;
      left -= take;
    }
  }
  int64_t busiest = 0;
  for (int dst = 0; dst < n; ++dst) {
    int64_t received = 0;
    for (int src = 0; src < n; ++src) received += skewed[static_cast<size_t>(src)][static_cast<size_t>(dst)];
    busiest = std::max(busiest, received);
  }
  ASSERT_EQ(busiest, 192);

  const int64_t token = int64_t{7168} * 2 * 1024;  // hidden 7168 in bf16, 1,024 tokens per unit
  StepCosts costs = test_layouts::costs();
  const Duration balanced_time = all_to_all_estimate(all_to_all(scaled(balanced, token)), layout, costs);
  const Duration skewed_time = all_to_all_estimate(all_to_all(scaled(skewed, token)), layout, costs);
  const Duration fixed = costs.base + costs.inter_step;
  const Bandwidth nic = layout.nic_bandwidth * layout.nic_efficiency;
  EXPECT_EQ(balanced_time, fixed + transfer_time(Bytes::of(112 * token), nic));
  EXPECT_EQ(skewed_time, fixed + transfer_time(Bytes::of(192 * token), nic));
  EXPECT_NEAR((skewed_time - fixed).to_seconds() / (balanced_time - fixed).to_seconds(), 192.0 / 112.0, 1e-6);
}

// Skew inside a node slows the all-to-all even when per-node totals are balanced: every GPU has
// its own NIC, so the busiest GPU's NIC sets the time.
TEST(AllToAll, SkewInsideANodeMattersWhenEachGpuHasItsNic) {
  const GroupLayout layout = test_layouts::nvswitch(2, 4, 4);
  const int n = 8;
  std::vector<std::vector<int64_t>> even(n, std::vector<int64_t>(n, 0));
  for (int src = 0; src < 4; ++src) {
    for (int dst = 4; dst < 8; ++dst) even[static_cast<size_t>(src)][static_cast<size_t>(dst)] = 4;
  }
  std::vector<std::vector<int64_t>> lopsided(n, std::vector<int64_t>(n, 0));
  for (int src = 0; src < 4; ++src) {
    lopsided[static_cast<size_t>(src)][4] = 10;  // node 1 still receives 64 units in total
    lopsided[static_cast<size_t>(src)][5] = 2;
    lopsided[static_cast<size_t>(src)][6] = 2;
    lopsided[static_cast<size_t>(src)][7] = 2;
  }
  const int64_t unit = int64_t{1} << 24;
  const StepCosts costs = test_layouts::costs();
  const Duration fixed = costs.base + costs.inter_step;
  const Bandwidth nic = layout.nic_bandwidth * layout.nic_efficiency;
  EXPECT_EQ(all_to_all_estimate(all_to_all(scaled(even, unit)), layout, costs),
            fixed + transfer_time(Bytes::of(16 * unit), nic));
  EXPECT_EQ(all_to_all_estimate(all_to_all(scaled(lopsided, unit)), layout, costs),
            fixed + transfer_time(Bytes::of(40 * unit), nic));
}

// Without a matrix every rank sends size / n to every peer: (n−1)/n · S per rank.
TEST(AllToAll, EvenSplitWithoutAMatrix) {
  const int n = 8;
  const GroupLayout layout = test_layouts::nvswitch(1, n, n);
  CollectiveRequest r;
  r.op = CollectiveOp::kAllToAll;
  r.size = Bytes::mebibytes(64);
  const TransferPlan plan = all_to_all_plan(r, layout, test_layouts::costs(), {});
  EXPECT_EQ(plan.size(), static_cast<size_t>(n * (n - 1)));
  for (int rank = 0; rank < n; ++rank) EXPECT_EQ(plan.bytes_sent_by(rank), Bytes::of((n - 1) * r.size.count() / n));
  const StepCosts costs = test_layouts::costs();
  EXPECT_EQ(all_to_all_estimate(r, layout, costs),
            costs.base + costs.intra_step +
                transfer_time(Bytes::of((n - 1) * r.size.count() / n), layout.intra_bandwidth * layout.intra_efficiency));
}

// The even split's O(n) sums give the time of the same split written out as a matrix, on nodes whose
// GPUs share NICs and with a size that does not divide evenly.
TEST(AllToAll, EvenSplitAgreesWithItsMatrix) {
  for (const auto& [nodes, per_node, nics] : {std::tuple{4, 8, 2}, std::tuple{3, 4, 4}, std::tuple{1, 8, 8}}) {
    const GroupLayout layout = test_layouts::nvswitch(nodes, per_node, nics);
    const int n = nodes * per_node;
    CollectiveRequest even;
    even.op = CollectiveOp::kAllToAll;
    even.size = Bytes::of(1'000'003);
    std::vector<int64_t> matrix(static_cast<size_t>(n * n));
    for (int src = 0; src < n; ++src) {
      for (int dst = 0; dst < n; ++dst) {
        if (src != dst) matrix[static_cast<size_t>(src * n + dst)] = split_part(even.size, n, dst).count();
      }
    }
    const StepCosts costs = test_layouts::costs();
    EXPECT_EQ(all_to_all_estimate(even, layout, costs), all_to_all_estimate(all_to_all(matrix), layout, costs))
        << nodes << " x " << per_node << ", " << nics << " NICs";
  }
}

// Over the flow budget, pairwise rounds are grouped into phases; the bytes do not change.
TEST(AllToAll, LargeGroupsRunInPairwisePhases) {
  const int n = 64;
  const GroupLayout layout = test_layouts::nvswitch(8, 8, 8);
  CollectiveRequest r;
  r.op = CollectiveOp::kAllToAll;
  r.size = Bytes::mebibytes(64);
  PlanOptions options;
  options.flows_per_phase_budget = 1000;
  const TransferPlan plan = all_to_all_plan(r, layout, test_layouts::costs(), options);
  Bytes total;
  size_t flows = 0;
  for (const Transfer& t : plan.transfers()) {
    if (t.src == t.dst) continue;
    total += t.size;
    ++flows;
  }
  EXPECT_EQ(flows, static_cast<size_t>(n * (n - 1)));
  EXPECT_EQ(total, Bytes::of((n - 1) * r.size.count()));
  EXPECT_GT(plan.size(), flows);  // the joins between phases
}

TEST(SendRecv, OneTransferOverTheHop) {
  const GroupLayout layout = test_layouts::nvswitch(2, 1, 1);
  CollectiveRequest r;
  r.op = CollectiveOp::kSendRecv;
  r.size = Bytes::mebibytes(100);
  const StepCosts costs = test_layouts::costs();
  const TransferPlan plan = send_recv_plan(r, layout, costs, {});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan.transfer(0).path, TransferPath::kInterNode);
  EXPECT_EQ(send_recv_estimate(r, layout, costs),
            costs.base + costs.inter_step + transfer_time(r.size, layout.nic_bandwidth * layout.nic_efficiency));
  std::string why;
  EXPECT_FALSE(send_recv_supports(CollectiveOp::kSendRecv, test_layouts::nvswitch(1, 3, 3), &why));
  EXPECT_NE(why.find("exactly 2"), std::string::npos);
}

}  // namespace all_to_all_test
}  // namespace clustersim
