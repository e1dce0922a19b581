#include "collectives/collective.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace clustersim {
namespace collective_test {

TEST(Collective, NamesRoundTrip) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                          CollectiveOp::kBroadcast, CollectiveOp::kReduce, CollectiveOp::kAllToAll,
                          CollectiveOp::kSendRecv}) {
    EXPECT_EQ(parse_collective_op(name_of(op)), op);
  }
  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree, CollectiveAlgorithm::kNvls,
        CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kPairwise}) {
    EXPECT_EQ(parse_collective_algorithm(name_of(algorithm)), algorithm);
  }
  for (Protocol protocol : {Protocol::kAuto, Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
    EXPECT_EQ(parse_protocol(name_of(protocol)), protocol);
  }
}

TEST(Collective, UnknownNamesListTheValidOnes) {
  try {
    parse_collective_op("allreduce");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("\"allreduce\""), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("all_reduce"), std::string::npos);
  }
  try {
    parse_collective_algorithm("butterfly");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("butterfly"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("ring, tree, nvls"), std::string::npos);
  }
  EXPECT_THROW(parse_protocol("ll"), InputError);
}

// Case C1, nccl-tests doc/PERFORMANCE.md: busbw = algbw × factor.
TEST(Collective, BusBandwidthFactorsFollowNcclTests) {
  for (int n : {1, 2, 3, 8, 1024}) {
    const double ranks = n;
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllReduce, n), 2.0 * (ranks - 1) / ranks);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllGather, n), (ranks - 1) / ranks);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kReduceScatter, n), (ranks - 1) / ranks);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllToAll, n), (ranks - 1) / ranks);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kBroadcast, n), 1.0);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kReduce, n), 1.0);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kSendRecv, n), 1.0);
  }
  EXPECT_THROW(bus_bandwidth_factor(CollectiveOp::kAllReduce, 0), InputError);
}

}  // namespace collective_test
}  // namespace clustersim
