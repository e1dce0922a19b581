#pragma once

// Runs collectives inside a simulation, at one of two fidelity levels (DESIGN.md):
//   flow:       the chosen algorithm's transfers are started on a FlowNetwork, step by step as
//               their dependencies complete, so concurrent collectives contend for links;
//   analytical: the collective completes after its algorithm's closed-form time (α–β with the
//               protocol's latency and bandwidth efficiency, on the bottleneck bandwidth of the
//               links it uses), or the calibrated fit when a profile covers it.
// Both levels use the same selector, so they pick the same algorithm and protocol. On an idle
// cluster the two agree to a few picoseconds on NVSwitch and PCIe (peer-to-peer) nodes and on one
// NVLink-mesh node, within 2 % on PCIe nodes without peer-to-peer; across NVLink-mesh nodes the
// analytical time is up to 25 % shorter (collectives/collective_runner_test.cc,
// tools/cli/collective_command_test.cc).
//
// A calibration profile, when given and covering the request, prices the candidates for the
// selector and is the analytical time; flow fidelity always runs the algorithm's transfers.
// estimate() and choose() cache per (group shape, op, algorithm, protocol, size, root): a cached
// call costs about 0.05 us. The caches make the runner unsafe to share between threads (give each
// thread its own). The runner must outlive the simulation of the collectives it started.

#include <functional>
#include <memory>

#include "collectives/collective.h"
#include "collectives/fidelity.h"
#include "core/units.h"
#include "engine/simulator.h"
#include "network/flow_network.h"
#include "topology/cluster.h"

namespace clustersim {

struct CollectiveProfile;  // calibrated fits (collectives/collective_profile.h)

class CollectiveRunner {
 public:
  using Completion = std::function<void()>;

  // `network` is used in flow fidelity and may be null in analytical fidelity. `profile` may be
  // null (datasheet defaults). All pointers and references must outlive the runner.
  CollectiveRunner(Simulator& sim, const Cluster& cluster, FlowNetwork* network, Fidelity fidelity,
                   const CollectiveProfile* profile = nullptr);
  ~CollectiveRunner();
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  // Starts `request` now; `on_complete` runs when every rank has finished. Throws InputError for
  // an invalid request (empty group, a GPU not in the cluster, a duplicate rank, a zero size, an
  // algorithm that cannot do this op on this group — the message names the valid algorithms).
  void start(const CollectiveRequest& request, Completion on_complete);

  // The algorithm, protocol and channels the selector (or the request's override) uses.
  CollectiveChoice choose(const CollectiveRequest& request) const;

  // Closed-form (or calibrated) time of `request` alone on an idle cluster. Used by the analytical
  // fidelity and by the selector; cheap enough to call thousands of times per layout search.
  Duration estimate(const CollectiveRequest& request) const;

  // The number of point-to-point transfers `request` starts at flow fidelity (the size of the
  // chosen algorithm's TransferPlan; at analytical fidelity it starts none): what a flow-fidelity
  // run of it costs the simulator (parallelism/work_estimate.h). Built once per (group shape, op,
  // algorithm, protocol, size, root) and cached. Throws InputError as start() does.
  size_t transfer_count(const CollectiveRequest& request) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustersim
