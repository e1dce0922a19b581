#pragma once

// Layouts and costs for unit tests of the algorithms, built without a Cluster. Bandwidths are
// round H100/DGX-like values; tests derive every expectation from these fields.

#include "collectives/group_layout.h"
#include "collectives/protocol.h"
#include "core/units.h"

namespace clustersim::test_layouts {

// `nodes` nodes of `ranks_per_node` GPUs on one NVSwitch (450 GB/s, efficiency 0.8), each with
// `nics` 400 Gb/s NICs (efficiency 0.96).
inline GroupLayout nvswitch(int nodes, int ranks_per_node, int nics) {
  UniformLayoutSpec spec;
  spec.nodes = nodes;
  spec.ranks_per_node = ranks_per_node;
  spec.nics_per_node = nics;
  spec.nvls_capable = nodes == 1 && ranks_per_node > 1;
  spec.intra_bandwidth = Bandwidth::gigabytes_per_s(450);
  spec.nic_bandwidth = Bandwidth::gigabits_per_s(400);
  spec.intra_efficiency = 0.8;
  spec.nic_efficiency = 0.96;
  spec.nvls_efficiency = spec.nvls_capable ? 0.85 : 0.0;
  spec.intra_latency = Duration::nanoseconds(700);
  spec.inter_latency = Duration::microseconds(3);
  return make_uniform_layout(spec);
}

// Step costs with round numbers, for checking the closed forms by hand.
inline StepCosts costs(double efficiency = 1.0) {
  StepCosts step;
  step.base = Duration::microseconds(8);
  step.intra_step = Duration::microseconds(2);
  step.inter_step = Duration::microseconds(10);
  step.efficiency = efficiency;
  return step;
}

}  // namespace clustersim::test_layouts
