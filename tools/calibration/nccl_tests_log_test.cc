#include "tools/calibration/nccl_tests_log.h"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.h"

namespace clustersim {
namespace nccl_tests_log_test {

const std::string kLog = std::string(CLUSTERSIM_SOURCE_DIR) + "/tools/data/published/nccl_tests_a3mega_h100x16_all_reduce.log";

std::string error_of(const std::string& text) {
  std::istringstream in(text);
  try {
    parse_nccl_tests_log(in, "test.log");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kHeader =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";

TEST(NcclTestsLog, ReadsAPublishedAllReduceLog) {
  const NcclTestsLog log = read_nccl_tests_log(kLog);
  ASSERT_TRUE(log.op.has_value());
  EXPECT_EQ(*log.op, CollectiveOp::kAllReduce);  // from ".../all_reduce_perf" in the command line
  EXPECT_EQ(log.listed_ranks, 16);
  EXPECT_EQ(log.hosts.size(), 2u);
  ASSERT_EQ(log.rows.size(), 31u);  // 8 B .. 8 GiB, ×2
  ASSERT_TRUE(log.average_bus_bandwidth_gbps.has_value());
  EXPECT_DOUBLE_EQ(*log.average_bus_bandwidth_gbps, 70.742);
  const NcclTestsRow& first = log.rows.front();
  EXPECT_EQ(first.size, Bytes::of(8));
  EXPECT_EQ(first.count, 2);
  EXPECT_EQ(first.type, "float");
  EXPECT_EQ(first.redop, "sum");
  EXPECT_EQ(first.root, -1);
  EXPECT_EQ(first.out_of_place_time, Duration::microseconds(135.8));
  ASSERT_TRUE(first.in_place_time.has_value());
  EXPECT_EQ(*first.in_place_time, Duration::microseconds(123.5));
  EXPECT_EQ(first.out_of_place_wrong, 0);
  // nccl-tests' columns are consistent with its definitions (doc/PERFORMANCE.md): algbw = size /
  // time, busbw = algbw · 2(n − 1)/n for all_reduce; both printed with two decimals.
  const NcclTestsRow& last = log.rows.back();
  EXPECT_EQ(last.size, Bytes::of(int64_t{8} << 30));
  const double algbw = static_cast<double>(last.size.count()) / last.out_of_place_time.to_seconds() * 1e-9;
  EXPECT_NEAR(last.out_of_place_algbw_gbps, algbw, 0.006);
  EXPECT_NEAR(last.out_of_place_busbw_gbps, algbw * 2 * 15 / 16, 0.01);
}

TEST(NcclTestsLog, MalformedRowsNameTheLineAndColumn) {
  const std::string head = std::string("# nThread 1 nGpus 8\n") + kHeader;
  // Line 4: too few columns.
  std::string e = error_of(head + "           8             2     float     sum      -1    135.8    0.00\n");
  EXPECT_NE(e.find("test.log:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("expected 13 columns"), std::string::npos) << e;
  // Line 5: a time that is not a number, after a good row.
  e = error_of(head +
               "           8             2     float     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0\n"
               "          16             4     float     sum      -1    fast    0.00    0.00      0    122.3    0.00    0.00      0\n");
  EXPECT_NE(e.find("test.log:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("out-of-place time"), std::string::npos) << e;
  EXPECT_NE(e.find("fast"), std::string::npos) << e;
  // A negative size.
  e = error_of(head + "          -8             2     float     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0\n");
  EXPECT_NE(e.find("test.log:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("size"), std::string::npos) << e;
  // No table, an empty table, an unexpected header, two data types.
  EXPECT_NE(error_of("# nThread 1\nhello\n").find("no nccl-tests table"), std::string::npos);
  EXPECT_NE(error_of(head).find("no rows"), std::string::npos);
  EXPECT_NE(error_of("#  size  count  type  redop  time  algbw\n").find("test.log:1:"), std::string::npos);
  e = error_of(head +
               "           8             2     float     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0\n"
               "           8             4      half     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0\n");
  EXPECT_NE(e.find("test.log:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("-d TYPE"), std::string::npos) << e;
  // Binary data is named with its line, also before the table.
  e = error_of(head + "garbage" + '\0' + "here\n");
  EXPECT_NE(e.find("test.log:4: binary data (a NUL byte) at line 4"), std::string::npos) << e;
}

TEST(NcclTestsLog, ReadsOlderColumnsAndSkipsNcclDebugLines) {
  // Before the root column, with the maximum error printed instead of a count of wrong values, and
  // with NCCL_DEBUG=INFO output interleaved; in-place not measured (N/A).
  const std::string text =
      "# Collective test starting: all_gather_perf\n"
      "#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  const std::string header_only_error = error_of(text + "     1048576        262144     float   203.2\n");
  EXPECT_NE(header_only_error.find("unexpected nccl-tests header"), std::string::npos) << header_only_error;
  const std::string old =
      "# Collective test starting: all_gather_perf\n"
      "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)                       (ms)  (GB/s)  (GB/s)            (ms)  (GB/s)  (GB/s)\n"
      "     1048576        262144     float    none    0.200    5.24    4.59  0e+00      N/A     N/A     N/A    N/A\n"
      "node1:1234:1234 [0] NCCL INFO comm 0x1 rank 0 nranks 8 - Init COMPLETE\n"
      "     2097152        524288     float    none    0.300    6.99    6.12  0e+00      N/A     N/A     N/A    N/A\n"
      "# Avg bus bandwidth    : 5.355\n";
  std::istringstream in(old);
  const NcclTestsLog log = parse_nccl_tests_log(in, "old.log");
  EXPECT_EQ(log.op, CollectiveOp::kAllGather);
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_EQ(log.rows[0].root, -1);
  EXPECT_EQ(log.rows[0].out_of_place_time, Duration::microseconds(200));  // (ms) units
  EXPECT_FALSE(log.rows[0].in_place_time.has_value());
  EXPECT_FALSE(log.rows[0].out_of_place_wrong.has_value());
  EXPECT_EQ(log.rows[1].line, 6);
}

TEST(NcclTestsLog, MapsTestBinariesToCollectives) {
  EXPECT_EQ(collective_of_nccl_test("/opt/nccl-tests/build/alltoall_perf"), CollectiveOp::kAllToAll);
  EXPECT_EQ(collective_of_nccl_test("sendrecv_perf"), CollectiveOp::kSendRecv);
  EXPECT_EQ(collective_of_nccl_test("reduce_scatter_perf"), CollectiveOp::kReduceScatter);
  EXPECT_FALSE(collective_of_nccl_test("hypercube_perf").has_value());
}

}  // namespace nccl_tests_log_test
}  // namespace clustersim
