#pragma once

#include "topology/node_layout.h"
#include "topology/specs.h"

namespace clustersim {

// Joins the GPUs already in `layout` through one NVSwitch vertex (IntraNodeFabric::kNvSwitch).
//
// Modelled: each GPU has all its NVLinks to the NVSwitch chips, so any GPU reaches any other at
// the GPU's full NVLink bandwidth per direction (GpuSpec::nvlink_bandwidth: 300 GB/s for A100
// NVLink3, 450 GB/s for H100 NVLink4, 900 GB/s for B200 NVLink5 — NVIDIA datasheets). The several
// NVSwitch chips of a real baseboard (6 on DGX A100, 4 on DGX H100) act as one non-blocking
// crossbar and are merged into one vertex. GPU → NVSwitch → GPU costs NodeSpec::nvlink_latency:
// half of it (rounded down to the picosecond) on the way up, the rest on the way down.
void add_nvswitch_fabric(const NodeSpec& node, NodeLayout& layout);

}  // namespace clustersim
