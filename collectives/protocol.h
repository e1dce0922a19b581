#pragma once

// NCCL's three protocols and the fixed costs of a collective step, after NCCL's tuning model
// (src/graph/tuning.cc of NCCL 2.20.3, commit b6475625). A protocol trades latency for bandwidth:
//   LL     8-byte stores carrying 4 bytes of data and a 4-byte flag: half the wire bandwidth carries
//          payload, no memory fence, lowest latency;
//   LL128  128-byte lines carrying 120 bytes of data and 8 bytes of flag: 120/128 of the bandwidth,
//          needs NVLink (NCCL enables it by default only when GPUs talk over NVLink);
//   Simple bulk copies with memory fences: full bandwidth, highest per-step latency.
// NVLS runs only with Simple.
//
// Latency model, per NCCL tuning.cc: a collective pays baseLat[algorithm][protocol] once, plus
// hwLat[hardware][algorithm][protocol] for every hop a chunk crosses on its way through the
// algorithm (intra-node hops at the NVLink or PCI value, inter-node hops at the NET value). Here a
// step also costs at least the route latency of its hop, so a slow fabric is never faster than
// its wires.

#include "collectives/collective.h"
#include "collectives/group_layout.h"
#include "core/units.h"

namespace clustersim {

// Fraction of the bytes on the wire that are payload: Simple 1, LL128 120/128, LL 1/2.
double protocol_efficiency(Protocol protocol);

// Whether `protocol` can run `algorithm` on `layout`: NVLS only with Simple; LL128 only where the
// GPUs of a node talk over NVLink (NCCL tuning.cc: "Enable LL128 by default only on
// Volta/Ampere/Hopper+NVLink"). kAuto is never supported here (resolve it first).
bool protocol_supported(CollectiveAlgorithm algorithm, Protocol protocol, const GroupLayout& layout);

// Fixed costs of (algorithm, protocol) on a layout.
struct StepCosts {
  Duration base;        // once per collective (NCCL baseLat)
  Duration intra_step;  // one hop between GPUs of a node (NCCL hwLat NVLINK or PCI; >= route latency)
  Duration inter_step;  // one hop between nodes (NCCL hwLat NET plus network overhead; >= route latency)
  double efficiency = 1.0;  // protocol_efficiency(protocol); tree: times kTreeEfficiency (0.92)
  // Tree all_reduce: NCCL's per-channel-pair ceiling for this protocol (GroupLayout tree ceilings:
  // LL128's for LL128, Simple's otherwise), tree busBw convention; zero: none (other algorithms).
  Bandwidth channel_ceiling;
};

// Throws InternalError for kAuto algorithm or protocol.
StepCosts step_costs(CollectiveAlgorithm algorithm, Protocol protocol, const GroupLayout& layout);

}  // namespace clustersim
