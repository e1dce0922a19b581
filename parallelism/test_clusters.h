#pragma once

// Test-only clusters: H100-like NVSwitch nodes (datasheet figures of the DGX H100: 989 TFLOP/s
// bf16, 80 GB at 3.35 TB/s, NVLink 450 GB/s per direction, one 400 Gb/s NIC per GPU).

#include "topology/specs.h"

namespace clustersim::testing {

inline NodeSpec h100_node(int gpus = 8) {
  NodeSpec node;
  node.name = "test-h100-node";
  node.gpu.name = "test-h100";
  node.gpu.dense_peak[DataType::kBf16] = FlopRate::teraflop_per_s(989);
  node.gpu.dense_peak[DataType::kFp16] = FlopRate::teraflop_per_s(989);
  node.gpu.hbm_capacity = Bytes::gigabytes(80);
  node.gpu.hbm_bandwidth = Bandwidth::gigabytes_per_s(3350);
  node.gpu.nvlink_bandwidth = Bandwidth::gigabytes_per_s(450);
  node.gpu.nvlink_links = 18;
  node.gpu.sm_count = 132;
  node.gpu.supports_nvls = true;
  node.gpus = gpus;
  node.intra = IntraNodeFabric::kNvSwitch;
  node.nvlink_latency = Duration::nanoseconds(500);
  node.nvlink_link_bandwidth = Bandwidth::gigabytes_per_s(25);
  node.pcie = PcieSpec{.switch_link = Bandwidth::gigabytes_per_s(64), .host_bridge = Bandwidth::gigabytes_per_s(64),
                       .inter_socket = Bandwidth::gigabytes_per_s(100), .latency = Duration::nanoseconds(200)};
  node.nic = NicSpec{"test-400g", Bandwidth::gigabits_per_s(400), Duration::microseconds(1)};
  node.nics = gpus;
  return node;
}

inline ClusterSpec h100_cluster(int nodes, int gpus_per_node = 8, FabricType fabric = FabricType::kRailOptimized) {
  ClusterSpec spec;
  spec.nodes.assign(static_cast<size_t>(nodes), h100_node(gpus_per_node));
  spec.fabric.type = fabric;
  spec.fabric.switch_latency = Duration::nanoseconds(300);
  return spec;
}

}  // namespace clustersim::testing
