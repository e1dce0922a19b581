#pragma once

// Reader of the text output of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf, ...), the
// logs users already have. The table (nccl-tests src/common.cu print_header):
//
//   #                                                  out-of-place                       in-place
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
//              8             2     float     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0
//   ...
//   # Out of bounds values : 0 OK
//   # Avg bus bandwidth    : 70.742
//
// Versions before the `root` column and logs with an `error` column instead of `#wrong` (older
// nccl-tests print the maximum error there) are read too; `N/A` stands for a value not measured.
// Sizes follow nccl-tests' convention (doc/PERFORMANCE.md), which clustersim's collectives use:
// all_gather's size is the gathered output, reduce_scatter's the input. Lines before the header
// (the command, `# nThread ...`, the device list) are read for the collective's name and the ranks
// and hosts listed; NCCL's own debug lines ("host:pid:tid NCCL INFO ...") are skipped anywhere.

#include <cstdint>
#include <istream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective.h"
#include "core/units.h"

namespace clustersim {

struct NcclTestsRow {
  int line = 0;  // 1-based line in the log
  Bytes size;    // the "size" column, bytes
  int64_t count = 0;
  std::string type;   // float, half, bfloat16, ...
  std::string redop;  // sum, none, ...
  int64_t root = -1;  // -1 when the column is absent or for rootless collectives
  Duration out_of_place_time;
  double out_of_place_algbw_gbps = 0;
  double out_of_place_busbw_gbps = 0;
  std::optional<int64_t> out_of_place_wrong;  // absent when N/A or an `error` column
  std::optional<Duration> in_place_time;      // absent when N/A
  double in_place_algbw_gbps = 0;
  double in_place_busbw_gbps = 0;
};

struct NcclTestsLog {
  std::string source;
  // The collective, when the log names its test binary (e.g. "all_reduce_perf" in the command
  // line or "# Collective test starting: all_reduce_perf"); nccl-tests' names map to clustersim's:
  // alltoall → all_to_all, sendrecv → send_recv.
  std::optional<CollectiveOp> op;
  std::vector<NcclTestsRow> rows;
  std::optional<double> average_bus_bandwidth_gbps;  // the "# Avg bus bandwidth" footer
  int listed_ranks = 0;                               // "#  Rank N Group ... on HOST device ..." lines
  std::set<std::string> hosts;                        // the HOSTs of those lines
};

// Parses a log; `source` names it in messages. Throws InputError "source:line: ..." naming the
// column and the value for a table row that does not parse (wrong number of columns, a size or
// count that is not a non-negative integer, a time that is not a positive number), an unexpected
// header, no header, no rows, or rows of several data types or reduction ops (run one -d/-o each).
NcclTestsLog parse_nccl_tests_log(std::istream& in, std::string_view source);
// Reads and parses a file. Throws InputError if it cannot be read.
NcclTestsLog read_nccl_tests_log(const std::string& path);

// The collective of an nccl-tests binary name ("all_reduce_perf", "alltoall_perf", ...), or nullopt.
std::optional<CollectiveOp> collective_of_nccl_test(std::string_view binary);

}  // namespace clustersim
