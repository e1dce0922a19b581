#pragma once

// Flow-level network model. A flow is a transfer of a number of bytes from one GPU to another
// along a routed path. All flows active at the same time share every directed link max-min fairly
// (progressive filling); the two directions of a link are independent. Rates are recomputed when a
// flow starts or ends, once per simulated instant and only for the flows that share a link,
// directly or transitively, with the flows that changed (the connected component). A flow's
// completion is reported after its last byte is sent plus the route's latency (sum of link and
// switch latencies).
//
// Simplified: no packets, no congestion control dynamics, no head-of-line blocking; a flow
// always gets its max-min share at once (as in SimGrid's and htsim's flow-level modes).
//
// Timing: starts and finishes of one instant are collected and the rates recomputed once, in a
// zero-delay event at priority INT32_MAX (after every other event of that instant), by progressive
// filling (max_min_fair_share.h) over the affected component. A flow whose rate changes gets its
// completion event cancelled and rescheduled. A flow's links are freed when its last byte is sent;
// `on_complete` runs the route latency later, in an event of priority 0. Remaining bytes are
// doubles internally; the time to send them goes through transfer_time() after rounding up to
// whole bytes, so a flow alone on its path completes at exactly latency + transfer_time(size, b).

#include <cstdint>
#include <functional>
#include <memory>

#include "core/units.h"
#include "engine/simulator.h"
#include "topology/cluster.h"

namespace clustersim {

using FlowId = int64_t;

class FlowNetwork {
 public:
  using Completion = std::function<void()>;

  // Both references must outlive the network.
  FlowNetwork(Simulator& sim, const Cluster& cluster);
  ~FlowNetwork();
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Starts a transfer of `size` bytes from `src` to `dst` now, on cluster.route(src, dst,
  // flow_hash). `on_complete` runs when the last byte has arrived. A zero-byte flow completes after
  // the route latency. src == dst completes at once (a local copy costs no network time), in a
  // zero-delay event. Throws InputError for GPU ids outside the cluster.
  FlowId start_flow(GpuId src, GpuId dst, Bytes size, Completion on_complete, uint64_t flow_hash = 0);

  // Number of flows currently transferring.
  size_t active_flows() const;
  // Total bytes that have crossed `link` so far (for tests and link-utilisation reports).
  // Throws InputError for a link id outside 0 .. cluster.links().size()-1.
  Bytes bytes_carried(LinkId link) const;
  // Current rate of an active flow; zero bandwidth if the flow is finished or unknown.
  Bandwidth current_rate(FlowId flow) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustersim
