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
//
// Large populations (FlowNetworkOptions): each update costs time proportional to the flows of the
// component, and on a multi-tier fabric every flow of an all-to-all is in one component whose
// flows finish at thousands of distinct instants (ECMP spreads their rates), so a 256-GPU all-to-all
// (65,280 flows) took minutes. While more than `batch_above_flows` flows are in flight (the network
// is crowded), a finish does not recompute the rates at once: finishes are collected for up to
// `batch_fraction` of the time since the network became crowded and the rates recomputed once for
// all of them. In between, the other flows keep their rates (still feasible: a finished flow only
// frees capacity). Starts are never batched: a new flow gets its rate at the end of its instant.
// On a 64-GPU all-to-all over spines, batching every finish moved completions by at most 0.32 %
// and the last one by 0.22 % (network/flow_network_test.cc bounds them at 1 % and 0.5 %); the
// 256-GPU all-to-all of 1 GiB on 32 DGX H100 took 2.2 s instead of 181 s, with the same time to
// the 0.01 µs that `clustersim collective` prints.

#include <cstdint>
#include <functional>
#include <memory>

#include "core/units.h"
#include "engine/simulator.h"
#include "topology/cluster.h"

namespace clustersim {

using FlowId = int64_t;

struct FlowNetworkOptions {
  // Finishes are batched while more flows than this are in flight (see above); SIZE_MAX: never.
  size_t batch_above_flows = 8192;
  // The longest wait of a batched update, as a fraction of the time since the network became crowded.
  double batch_fraction = 0.002;
};

class FlowNetwork {
 public:
  using Completion = std::function<void()>;

  // Both references must outlive the network. Throws InputError for a negative or non-finite
  // batch_fraction.
  FlowNetwork(Simulator& sim, const Cluster& cluster, FlowNetworkOptions options = {});
  ~FlowNetwork();
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Starts a transfer of `size` bytes from `src` to `dst` now, on cluster.route(src, dst,
  // flow_hash). `on_complete` runs when the last byte has arrived. A zero-byte flow completes after
  // the route latency. src == dst completes at once (a local copy costs no network time), in a
  // zero-delay event. Throws InputError for GPU ids outside the cluster.
  FlowId start_flow(GpuId src, GpuId dst, Bytes size, Completion on_complete, uint64_t flow_hash = 0);
  // The same on `route`, a route of this network's cluster between two different GPUs that the
  // caller already looked up (cluster.route(...) returns references that stay valid): a
  // collective prices its transfer's latency by the route before it starts the flow, and so looks
  // the route up once.
  FlowId start_flow_on(const Route& route, Bytes size, Completion on_complete);
  // The same, but `on_sent` runs when the last byte has been sent, inside the event that frees the
  // flow's links (or, for zero bytes, in a zero-delay event): the caller adds route.latency for
  // the arrival itself, and so saves the network an event per flow (a collective schedules the
  // transfers that wait for this one at its arrival directly). `on_sent` may start flows.
  FlowId start_flow_sent(const Route& route, Bytes size, Completion on_sent);

  // Number of flows currently transferring.
  size_t active_flows() const;
  // Total bytes that have crossed `link` so far (for tests and link-utilisation reports).
  // Throws InputError for a link id outside 0 .. cluster.link_count()-1.
  Bytes bytes_carried(LinkId link) const;
  // Current rate of an active flow; zero bandwidth if the flow is finished or unknown.
  Bandwidth current_rate(FlowId flow) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustersim
