#pragma once

// Calibrated collective times, measured on real hardware (nccl-tests sweeps fitted by the
// calibration tools). For one (op, algorithm, protocol, ranks, nodes) a fit is piecewise α–β over
// size regimes: time = latency + size / bandwidth inside [min_size, max_size]. When a fit covers a
// request, CollectiveRunner::estimate() and the selector use it instead of the closed form (the
// report says which was used). Pure data; JSON reading and writing keep nlohmann::json out of this
// header.
//
// JSON form (dimensioned values carry their unit, DESIGN.md):
//   {"name": "dgx-h100 2025-06",
//    "fits": [{"op": "all_reduce", "algorithm": "ring", "protocol": "Simple", "ranks": 8, "nodes": 1,
//              "segments": [{"min_size": "0 B", "max_size": "1048576 B",
//                            "latency": "14.2 us", "bandwidth": "120 GB/s"}, ...]}]}
// "nodes" may be omitted (or 0): the fit then applies to any node count. "algorithm" or "protocol"
// "auto" marks a sweep measured with NCCL's own choice (nccl-tests without NCCL_ALGO/NCCL_PROTO): it
// prices every candidate alike, so the selector's pick runs in the measured time; exact fits win.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective.h"
#include "core/units.h"

namespace clustersim {

struct CollectiveFitSegment {
  Bytes min_size;       // inclusive
  Bytes max_size;       // inclusive
  Duration latency;     // α
  Bandwidth bandwidth;  // algorithm bandwidth (size / time for large sizes), > 0
};

struct CollectiveFit {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int ranks = 0;  // group size
  int nodes = 0;  // nodes spanned; 0 matches any
  std::vector<CollectiveFitSegment> segments;
};

struct CollectiveProfile {
  std::string name;
  std::vector<CollectiveFit> fits;

  // latency + transfer_time(size, bandwidth) of the first fit whose key matches and one of whose
  // segments contains `size` (fits of the exact algorithm and protocol before "auto" ones); nullopt
  // when none does.
  std::optional<Duration> lookup(CollectiveOp op, CollectiveAlgorithm algorithm, Protocol protocol, int ranks,
                                 int nodes, Bytes size) const;
};

// Parses the JSON form above. Throws InputError naming the key path ("fits[2].segments[0].latency")
// and the problem for malformed JSON, a missing or unknown key, a bare number where a unit string
// is needed, a non-positive bandwidth or ranks, or min_size > max_size.
CollectiveProfile parse_collective_profile(std::string_view json_text);

// The JSON form, exact: sizes in bytes ("4096 B"), latencies in picoseconds ("14200000 ps"),
// bandwidths in bytes per second with 17 significant digits, so parsing it gives `profile` back
// (sizes and latencies below 2^53).
std::string to_json(const CollectiveProfile& profile);

}  // namespace clustersim
