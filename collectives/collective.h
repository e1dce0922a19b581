#pragma once

// What a collective is asked to do, and how it may be done. Sizes follow nccl-tests conventions,
// so simulated results line up with users' nccl-tests logs:
//   all_reduce, broadcast, reduce: `size` is the buffer on each rank (count × dtype size);
//   all_gather: `size` is the gathered output on each rank (n × the per-rank input);
//   reduce_scatter: `size` is the input on each rank (n × the per-rank output);
//   all_to_all: `size` is what each rank sends in total (n equal blocks of size/n, one per peer),
//     unless `all_to_all_bytes` gives an explicit n × n matrix (row = sender, column = receiver);
//   send_recv: `size` bytes from group[0] to group[1].

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/data_type.h"
#include "core/units.h"
#include "topology/cluster.h"

namespace clustersim {

enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kSendRecv };

enum class CollectiveAlgorithm {
  kAuto,          // the NCCL-like selector decides
  kRing,          // multi-channel pipelined ring (NCCL ring)
  kTree,          // double binary tree (NCCL tree; all_reduce only)
  kNvls,          // NVLink SHARP in-switch reduction (NVSwitch nodes with supports_nvls)
  kHierarchical,  // intra-node reduce-scatter → inter-node all-reduce → intra-node all-gather
  kPairwise,      // pairwise / direct exchange (all_to_all, send_recv)
};

enum class Protocol { kAuto, kLL, kLL128, kSimple };

// The largest collective size simulated (`clustersim collective -e`, and a measured size of
// `validate --collectives`): 1 TiB, above the memory of any GPU of the presets (B200: 180 GB), so
// that derived sizes and times stay inside int64.
inline constexpr int64_t kMaxCollectiveBytes = int64_t{1} << 40;

// Names as users type them: "all_reduce", "ring", "LL128", ... The parsers throw InputError
// listing the valid names.
std::string_view name_of(CollectiveOp op);
std::string_view name_of(CollectiveAlgorithm algorithm);
std::string_view name_of(Protocol protocol);
CollectiveOp parse_collective_op(std::string_view text);
CollectiveAlgorithm parse_collective_algorithm(std::string_view text);
Protocol parse_protocol(std::string_view text);

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::vector<GpuId> group;  // the ranks, in rank order; distinct GPUs of the cluster
  Bytes size;                // see the conventions above
  DataType dtype = DataType::kBf16;
  int root = 0;              // index into `group` for broadcast and reduce
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;  // user override
  Protocol protocol = Protocol::kAuto;                         // user override
  std::vector<int64_t> all_to_all_bytes;  // optional n×n matrix in bytes (all_to_all only)
};

// What was chosen, and the channel count it runs with.
struct CollectiveChoice {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int channels = 1;
};

// nccl-tests' bus-bandwidth factor for `op` on n ranks: busbw = algbw × factor.
// all_reduce 2(n−1)/n; all_gather, reduce_scatter, all_to_all (n−1)/n; broadcast, reduce,
// send_recv 1. (nccl-tests doc/PERFORMANCE.md.)
double bus_bandwidth_factor(CollectiveOp op, int ranks);

}  // namespace clustersim
