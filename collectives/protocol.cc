#include "collectives/protocol.h"

#include <algorithm>
#include <array>

#include "collectives/link_efficiency.h"
#include "core/error.h"

namespace clustersim {
namespace {

// Indices of NCCL's tables.
enum Row { kTreeRow = 0, kRingRow = 1, kNvlsRow = 2 };
enum Hardware { kNvLinkHw = 0, kPciHw = 1, kNetHw = 2 };

size_t protocol_index(Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL:
      return 0;
    case Protocol::kLL128:
      return 1;
    case Protocol::kSimple:
      return 2;
    case Protocol::kAuto:
      break;
  }
  throw InternalError("protocol must be resolved before costing");
}

Row row_of(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kTree:
      return kTreeRow;
    case CollectiveAlgorithm::kNvls:
      return kNvlsRow;
    case CollectiveAlgorithm::kRing:
    case CollectiveAlgorithm::kHierarchical:  // a composition of rings
    case CollectiveAlgorithm::kPairwise:      // NCCL prices point-to-point steps like ring steps
      return kRingRow;
    case CollectiveAlgorithm::kAuto:
      break;
  }
  throw InternalError("algorithm must be resolved before costing");
}

// NCCL 2.20.3 src/graph/tuning.cc, baseLat[algorithm][LL, LL128, Simple] in microseconds
// (rows Tree, Ring, NVLS).
constexpr std::array<std::array<double, 3>, 3> kBaseLatencyUs = {{
    {6.8, 14.0, 0.0},
    {6.6, 14.0, 8.4},
    {0.0, 0.0, 0.0},
}};

// NCCL 2.20.3 src/graph/tuning.cc, hwLat[NVLINK, PCI, NET][algorithm][LL, LL128, Simple] in
// microseconds: the latency of one step over that hardware. Tree/Simple is "the latency of a
// 256 kB chunk".
constexpr std::array<std::array<std::array<double, 3>, 3>, 3> kHopLatencyUs = {{
    {{{0.6, 1.25, 28.0}, {0.6, 1.9, 3.4}, {0.0, 0.0, 23.0}}},  // NVLink
    {{{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}, {0.0, 0.0, 0.0}}},    // PCI
    {{{5.0, 8.5, 28.0}, {2.7, 4.0, 14.0}, {0.0, 0.0, 18.0}}},  // NET
}};

// NCCL 2.20.3 tuning.cc getNetOverhead(): 1 us per network post on Intel CPUs (2 us on AMD),
// three times that for Simple; an inter-node ring pays it on every step, intra-node ones included.
constexpr double kNetOverheadUs = 1.0;
constexpr double kNetOverheadSimpleFactor = 3.0;
// NCCL 2.20.3 tuning.cc: "if (comm->nNodes > 1 && p == NCCL_PROTO_LL) intraLat *= 1.8".
constexpr double kMultiNodeLLIntraFactor = 1.8;

}  // namespace

double protocol_efficiency(Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL:
      return 0.5;  // 4 bytes of data and a 4-byte flag in every 8-byte store
    case Protocol::kLL128:
      return 120.0 / 128.0;  // 8 bytes of flag in every 128-byte line
    case Protocol::kSimple:
      return 1.0;
    case Protocol::kAuto:
      break;
  }
  throw InternalError("protocol must be resolved before asking its efficiency");
}

bool protocol_supported(CollectiveAlgorithm algorithm, Protocol protocol, const GroupLayout& layout) {
  if (protocol == Protocol::kAuto || algorithm == CollectiveAlgorithm::kAuto) return false;
  if (algorithm == CollectiveAlgorithm::kNvls) return protocol == Protocol::kSimple;
  if (protocol == Protocol::kLL128) return layout.intra_fabric != IntraNodeFabric::kPcie;
  return true;
}

StepCosts step_costs(CollectiveAlgorithm algorithm, Protocol protocol, const GroupLayout& layout) {
  const size_t p = protocol_index(protocol);
  const Row row = row_of(algorithm);
  const bool multi_node = layout.node_count() > 1;
  const Hardware intra_hw = layout.intra_fabric == IntraNodeFabric::kPcie ? kPciHw : kNvLinkHw;

  double intra_us = kHopLatencyUs[intra_hw][row][p];
  if (multi_node && protocol == Protocol::kLL) intra_us *= kMultiNodeLLIntraFactor;
  if (multi_node && row == kRingRow) {
    const double overhead = kNetOverheadUs * (protocol == Protocol::kSimple ? kNetOverheadSimpleFactor : 1.0);
    intra_us = std::max(intra_us, overhead);
  }
  const double inter_us = kHopLatencyUs[kNetHw][row][p];

  StepCosts costs;
  costs.base = Duration::microseconds(kBaseLatencyUs[row][p]);
  costs.intra_step = std::max(Duration::microseconds(intra_us), layout.intra_latency);
  costs.inter_step = std::max(Duration::microseconds(inter_us), layout.inter_latency);
  costs.efficiency = protocol_efficiency(protocol);
  if (algorithm == CollectiveAlgorithm::kTree) {
    costs.efficiency *= kTreeEfficiency;
    costs.channel_ceiling = protocol == Protocol::kLL128 ? layout.tree_ceiling_ll128 : layout.tree_ceiling_simple;
  }
  return costs;
}

}  // namespace clustersim
