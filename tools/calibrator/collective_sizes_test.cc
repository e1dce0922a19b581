#include "tools/calibrator/collective_sizes.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace clustersim::calibrate {
namespace collective_sizes_test {

TEST(CollectiveSizes, NamesRoundTrip) {
  for (Collective c : all_collectives()) EXPECT_EQ(parse_collective(collective_name(c)), c);
  EXPECT_EQ(all_collectives().size(), 6u);
  EXPECT_THROW(parse_collective("allreduce"), InputError);
}

TEST(CollectiveSizes, BusBandwidthFactorsOfNcclTests) {
  // nccl-tests doc/PERFORMANCE.md: allreduce 2(n-1)/n, allgather/reducescatter/alltoall (n-1)/n,
  // broadcast 1; point-to-point sendrecv 1.
  for (int n : {1, 2, 8, 16}) {
    const double d = n;
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllReduce, n), 2 * (d - 1) / d);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllGather, n), (d - 1) / d);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kReduceScatter, n), (d - 1) / d);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kAllToAll, n), (d - 1) / d);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kBroadcast, n), 1.0);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::kSendRecv, n), 1.0);
  }
  EXPECT_THROW(bus_bandwidth_factor(Collective::kAllReduce, 0), InputError);
}

TEST(CollectiveSizes, CountsFollowNcclTestsRounding) {
  const int n = 8;
  const int64_t es = 4;  // float
  const int64_t size = 1000;
  const int64_t count = size / es;      // 250 elements
  const int64_t per_rank = count / n;   // 31 elements per rank

  auto ar = collective_counts(Collective::kAllReduce, size, es, n);
  EXPECT_EQ(ar.send_count, count);
  EXPECT_EQ(ar.recv_count, count);
  EXPECT_EQ(ar.param_count, count);
  EXPECT_EQ(ar.total_bytes, count * es);

  auto ag = collective_counts(Collective::kAllGather, size, es, n);
  EXPECT_EQ(ag.send_count, per_rank);
  EXPECT_EQ(ag.recv_count, per_rank * n);
  EXPECT_EQ(ag.param_count, per_rank);
  EXPECT_EQ(ag.total_bytes, per_rank * n * es);  // S = sendcount · n · sizeof(type)

  auto rs = collective_counts(Collective::kReduceScatter, size, es, n);
  EXPECT_EQ(rs.send_count, per_rank * n);
  EXPECT_EQ(rs.recv_count, per_rank);
  EXPECT_EQ(rs.total_bytes, per_rank * n * es);  // S = recvcount · n · sizeof(type)

  auto a2a = collective_counts(Collective::kAllToAll, size, es, n);
  EXPECT_EQ(a2a.param_count, per_rank);  // count per peer
  EXPECT_EQ(a2a.send_count, per_rank * n);
  EXPECT_EQ(a2a.recv_count, per_rank * n);

  // 8 B over 8 ranks leaves no whole float per rank: nothing to measure.
  EXPECT_EQ(collective_counts(Collective::kAllGather, 8, es, n).total_bytes, 0);
  EXPECT_EQ(collective_counts(Collective::kSendRecv, 8, es, n).total_bytes, 8);

  EXPECT_THROW(collective_counts(Collective::kAllReduce, -1, es, n), InputError);
  EXPECT_THROW(collective_counts(Collective::kAllReduce, 8, 0, n), InputError);
  EXPECT_THROW(collective_counts(Collective::kAllReduce, 8, es, 0), InputError);
}

}  // namespace collective_sizes_test
}  // namespace clustersim::calibrate
