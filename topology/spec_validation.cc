#include "topology/spec_validation.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

namespace {

std::string where(int index, const NodeSpec& node) {
  return node.name.empty() ? fmt::format("nodes[{}]", index) : fmt::format("nodes[{}] (\"{}\")", index, node.name);
}

void require_positive(const std::string& at, const char* field, Bandwidth value) {
  if (!(value.bytes_per_second() > 0) || !std::isfinite(value.bytes_per_second())) {
    throw InputError(fmt::format("{}: {} = {} B/s is invalid; it must be a positive, finite bandwidth such as "
                                 "\"450 GB/s\"",
                                 at, field, value.bytes_per_second()));
  }
}

void require_non_negative(const std::string& at, const char* field, Duration value) {
  if (value < Duration::zero()) {
    throw InputError(fmt::format("{}: {} = {} ps is negative; latencies must be >= 0", at, field, value.ps()));
  }
}

void validate_nic(const std::string& at, const char* field, const NicSpec& nic) {
  require_positive(at, fmt::format("{}.bandwidth", field).c_str(), nic.bandwidth);
  require_non_negative(at, fmt::format("{}.latency", field).c_str(), nic.latency);
}

void validate_mesh(const std::string& at, const NodeSpec& node) {
  require_positive(at, "nvlink_link_bandwidth", node.nvlink_link_bandwidth);
  std::set<std::pair<int, int>> seen;
  std::vector<int> links_of_gpu(node.gpus, 0);
  for (size_t i = 0; i < node.mesh.size(); ++i) {
    const NvLinkMeshEdge& edge = node.mesh[i];
    for (int gpu : {edge.gpu_a, edge.gpu_b}) {
      if (gpu < 0 || gpu >= node.gpus) {
        throw InputError(fmt::format("{}: mesh[{}] names GPU {}, which the node does not have; valid GPUs are "
                                     "0..{}",
                                     at, i, gpu, node.gpus - 1));
      }
    }
    if (edge.gpu_a == edge.gpu_b) {
      throw InputError(fmt::format("{}: mesh[{}] joins GPU {} to itself; an edge joins two different GPUs", at, i,
                                   edge.gpu_a));
    }
    if (edge.links < 1) {
      throw InputError(fmt::format("{}: mesh[{}].links = {} is invalid; an edge has at least 1 NVLink link", at, i,
                                   edge.links));
    }
    if (!seen.insert(std::minmax(edge.gpu_a, edge.gpu_b)).second) {
      throw InputError(fmt::format("{}: mesh[{}] repeats the pair of GPUs {} and {}; give one edge with its "
                                   "link count instead",
                                   at, i, edge.gpu_a, edge.gpu_b));
    }
    links_of_gpu[edge.gpu_a] += edge.links;
    links_of_gpu[edge.gpu_b] += edge.links;
  }
  if (node.gpu.nvlink_links > 0) {
    for (int g = 0; g < node.gpus; ++g) {
      if (links_of_gpu[g] > node.gpu.nvlink_links) {
        throw InputError(fmt::format("{}: mesh gives GPU {} {} NVLink links, but a {} has {}; valid totals are "
                                     "0..{}",
                                     at, g, links_of_gpu[g], node.gpu.name, node.gpu.nvlink_links,
                                     node.gpu.nvlink_links));
      }
    }
  }
}

void validate_node(int index, const NodeSpec& node, int gpus_per_node, bool several_nodes, bool nic_from_fabric) {
  const std::string at = where(index, node);
  if (node.gpus < 1) {
    throw InputError(fmt::format("{}: gpus = {} is invalid; a node has at least 1 GPU", at, node.gpus));
  }
  if (gpus_per_node > node.gpus) {
    throw InputError(fmt::format("cluster.gpus_per_node = {} exceeds the {} GPUs of {}; valid values are 0 (all) "
                                 "or 1..{}",
                                 gpus_per_node, node.gpus, at, node.gpus));
  }
  require_non_negative(at, "nvlink_latency", node.nvlink_latency);
  switch (node.intra) {
    case IntraNodeFabric::kNvSwitch:
      if (node.gpu.nvlink_bandwidth.bytes_per_second() <= 0) {
        throw InputError(fmt::format("{}: intra: nvswitch needs the GPU's nvlink_bandwidth, which GPU \"{}\" does not "
                                     "give (gpu.nvlink_bandwidth is positive, e.g. \"450 GB/s\"); set it in the GPU "
                                     "preset, or use intra: pcie for a node without NVLink",
                                     at, node.gpu.name));
      }
      break;
    case IntraNodeFabric::kNvLinkMesh:
      validate_mesh(at, node);
      break;
    case IntraNodeFabric::kPcie:
      break;
  }
  if (node.intra != IntraNodeFabric::kNvLinkMesh && !node.mesh.empty()) {
    throw InputError(fmt::format("{}: mesh edges are given but intra is not nvlink-mesh; remove mesh or set intra "
                                 "to nvlink-mesh",
                                 at));
  }
  const PcieSpec& pcie = node.pcie;
  require_positive(at, "pcie.switch_link", pcie.switch_link);
  require_positive(at, "pcie.host_bridge", pcie.host_bridge);
  require_positive(at, "pcie.inter_socket", pcie.inter_socket);
  if (!pcie.peer_to_peer) require_positive(at, "pcie.host_memory", pcie.host_memory);
  require_non_negative(at, "pcie.latency", pcie.latency);
  if (pcie.switches < 1) {
    throw InputError(fmt::format("{}: pcie.switches = {} is invalid; a node has at least 1 PCIe switch", at,
                                 pcie.switches));
  }
  if (pcie.sockets < 1) {
    throw InputError(fmt::format("{}: pcie.sockets = {} is invalid; a node has at least 1 CPU socket", at,
                                 pcie.sockets));
  }
  if (node.nics < 0) {
    throw InputError(fmt::format("{}: nics = {} is invalid; valid values are 0 or more", at, node.nics));
  }
  if (node.nics == 0 && several_nodes) {
    throw InputError(fmt::format("{}: nics = 0, but a cluster of several nodes needs at least 1 NIC per node", at));
  }
  if (node.nics > 0 && !nic_from_fabric) validate_nic(at, "nic", node.nic);
  if (!node.nic_of_gpu.empty()) {
    if (static_cast<int>(node.nic_of_gpu.size()) != node.gpus) {
      throw InputError(fmt::format("{}: nic_of_gpu has {} entries; it needs one per GPU ({}) or none for the default",
                                   at, node.nic_of_gpu.size(), node.gpus));
    }
    for (size_t g = 0; g < node.nic_of_gpu.size(); ++g) {
      const int nic = node.nic_of_gpu[g];
      if (nic < 0 || nic >= node.nics) {
        throw InputError(fmt::format("{}: nic_of_gpu[{}] = {} is out of range; valid NIC indices are 0..{}", at, g,
                                     nic, node.nics - 1));
      }
    }
  }
}

void validate_fabric(const FabricSpec& fabric, int nodes) {
  if (fabric.leaf_ports < 1) {
    throw InputError(fmt::format("fabric.leaf_ports = {} is invalid; a leaf switch has at least 1 port",
                                 fabric.leaf_ports));
  }
  if (!std::isfinite(fabric.oversubscription) || fabric.oversubscription < 1.0) {
    throw InputError(fmt::format("fabric.oversubscription = {} is invalid; it is downlink / uplink bandwidth of a "
                                 "leaf and must be >= 1 (1 = non-blocking)",
                                 fabric.oversubscription));
  }
  require_non_negative("fabric", "switch_latency", fabric.switch_latency);
  if (fabric.nic) validate_nic("fabric", "nic", *fabric.nic);
  if (fabric.type != FabricType::kThreeTier) return;
  if (fabric.pod_type != FabricType::kFatTree && fabric.pod_type != FabricType::kRailOptimized) {
    throw InputError("fabric.pod_type is invalid; the leaves of a pod are wired as fat-tree or rail-optimized");
  }
  if (fabric.pod_nodes < 1 || fabric.pod_nodes > nodes) {
    throw InputError(fmt::format("fabric.pod_nodes = {} is invalid; a pod holds 1 to {} nodes (the cluster's nodes)",
                                 fabric.pod_nodes, nodes));
  }
  if (!std::isfinite(fabric.core_oversubscription) || fabric.core_oversubscription < 1.0) {
    throw InputError(fmt::format("fabric.core_oversubscription = {} is invalid; it is a pod's spine downlink / core "
                                 "uplink bandwidth and must be >= 1 (1 = non-blocking)",
                                 fabric.core_oversubscription));
  }
}

}  // namespace

void validate_cluster_spec(const ClusterSpec& spec) {
  if (spec.nodes.empty()) throw InputError("cluster.nodes is empty; a cluster has at least 1 node");
  if (spec.gpus_per_node < 0) {
    throw InputError(fmt::format("cluster.gpus_per_node = {} is invalid; valid values are 0 (all GPUs) or more",
                                 spec.gpus_per_node));
  }
  const bool several_nodes = spec.nodes.size() > 1;
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    validate_node(static_cast<int>(i), spec.nodes[i], spec.gpus_per_node, several_nodes, spec.fabric.nic.has_value());
  }
  validate_fabric(spec.fabric, static_cast<int>(spec.nodes.size()));
}

}  // namespace clustersim
