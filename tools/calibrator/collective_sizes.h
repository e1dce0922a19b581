#pragma once

// Collectives the calibrator measures and the size conventions of nccl-tests, so that its rows
// can be compared with nccl-tests logs line by line.
//
// Source: nccl-tests doc/PERFORMANCE.md ("Bus bandwidth", summary of correction factors) and the
// *GetCollByteCount functions of nccl-tests src/*.cu. S, the size printed in the `size` column, is
// the total array: for all_gather sendcount·n·sizeof(type), for reduce_scatter recvcount·n·sizeof,
// for all_to_all the whole per-rank buffer (count per peer · n · sizeof); algbw = S / time and
// busbw = algbw · factor.

#include <cstdint>
#include <string_view>
#include <vector>

namespace clustersim::calibrate {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll, kSendRecv };

// All six, in output order.
std::vector<Collective> all_collectives();

// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv".
std::string_view collective_name(Collective collective);

// Parses the names above. Throws InputError naming the text and the valid names.
Collective parse_collective(std::string_view text);

// Element counts of one measurement.
struct CollectiveCounts {
  int64_t send_count = 0;   // elements in each rank's send buffer
  int64_t recv_count = 0;   // elements in each rank's receive buffer
  int64_t param_count = 0;  // the count passed to NCCL: per rank for all_gather/reduce_scatter,
                            // per peer for all_to_all, the whole buffer otherwise
  int64_t total_bytes = 0;  // S as nccl-tests prints it, after rounding down to whole elements
};

// Counts for a requested size of `size_bytes` over `nranks` ranks with elements of
// `element_bytes`. The count is size/element_bytes rounded down, then down to a multiple of nranks
// where the collective splits the buffer among ranks (nccl-tests does the same); total_bytes can
// therefore be below size_bytes, and is 0 when nothing is left. Throws InputError when
// size_bytes < 0, element_bytes <= 0 or nranks < 1.
CollectiveCounts collective_counts(Collective collective, int64_t size_bytes, int64_t element_bytes,
                                   int nranks);

// nccl-tests' factor busbw / algbw: all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all
// (n-1)/n; broadcast and send_recv 1. Throws InputError when nranks < 1.
double bus_bandwidth_factor(Collective collective, int nranks);

}  // namespace clustersim::calibrate
