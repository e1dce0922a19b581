#include "collectives/all_reduce_nvls.h"

#include <gtest/gtest.h>

#include "collectives/test_layouts.h"

namespace clustersim {
namespace all_reduce_nvls_test {

CollectiveRequest all_reduce(Bytes size) {
  CollectiveRequest r;
  r.op = CollectiveOp::kAllReduce;
  r.size = size;
  return r;
}

// Every GPU's NVLink carries (n + 1)/n · S in each direction: S read by the switch plus the S/n
// reduced shard, and the S/n shard stored plus the S multicast back.
TEST(NvlsAllReduce, EachGpuMovesNPlusOneOverNOfTheBuffer) {
  const int n = 8;
  const GroupLayout layout = test_layouts::nvswitch(1, n, n);
  const Bytes size = Bytes::mebibytes(8 * 64);
  const TransferPlan plan = nvls_plan(all_reduce(size), layout, test_layouts::costs(), {});
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(plan.bytes_sent_by(rank), Bytes::of((n + 1) * size.count() / n));
    EXPECT_EQ(plan.bytes_received_by(rank), Bytes::of((n + 1) * size.count() / n));
  }
  for (const Transfer& t : plan.transfers()) EXPECT_EQ(t.path, TransferPath::kNvlsSwitch);
}

// Case C1: with in-switch reduction busbw = 2(n−1)/(n+1) · B · efficiencies, above the link for
// n ≥ 4 (≈ 480 GB/s measured on 8 × H100/H200 against 450 GB/s).
TEST(NvlsAllReduce, BusBandwidthCanExceedTheLink) {
  const int n = 8;
  const GroupLayout layout = test_layouts::nvswitch(1, n, n);
  const Bytes size = Bytes::mebibytes(8 * 1024);
  const StepCosts costs = test_layouts::costs();
  const Bandwidth rate = layout.intra_bandwidth * (layout.intra_efficiency * layout.nvls_efficiency);
  const Duration expected = costs.base + costs.intra_step + transfer_time(Bytes::of((n + 1) * size.count() / n), rate);
  const Duration t = nvls_estimate(all_reduce(size), layout, costs);
  EXPECT_EQ(t, expected);
  const double busbw = static_cast<double>(size.count()) / t.to_seconds() * 2.0 * (n - 1) / n;
  EXPECT_GT(busbw, rate.bytes_per_second());
  EXPECT_NEAR(busbw, 2.0 * (n - 1) / (n + 1) * rate.bytes_per_second(), 0.01 * rate.bytes_per_second());
}

TEST(NvlsAllReduce, NeedsOneNvlsCapableNode) {
  std::string why;
  EXPECT_FALSE(nvls_supports(CollectiveOp::kAllReduce, test_layouts::nvswitch(2, 8, 8), &why));
  EXPECT_NE(why.find("NVSwitch"), std::string::npos);
  EXPECT_TRUE(nvls_supports(CollectiveOp::kAllReduce, test_layouts::nvswitch(1, 8, 8), nullptr));
  EXPECT_FALSE(nvls_supports(CollectiveOp::kAllGather, test_layouts::nvswitch(1, 8, 8), &why));
}

}  // namespace all_reduce_nvls_test
}  // namespace clustersim
