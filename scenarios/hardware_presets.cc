#include "scenarios/hardware_presets.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <fmt/format.h>

#include "core/error.h"
#include "core/excerpt.h"
#include "scenarios/config_document.h"
#include "topology/pcie_generation.h"

namespace clustersim {

namespace {

// Counts are held in int; every bound is far above real hardware (kMaxNodeGpus).
KeyDef count(std::string path, std::string description, std::string default_text, double min, double max) {
  KeyDef k = key_def(std::move(path), ValueType::kInt, std::move(description), std::move(default_text));
  k.min = min;
  k.max = max;
  return k;
}

// Streaming multiprocessors of one GPU (H100 SXM5: 132; B200: 148).
constexpr int kMaxSmCount = 1 << 16;

bool is_path(const std::string& name) { return name.find('/') != std::string::npos || name.ends_with(".yaml"); }

}  // namespace

std::string default_data_dir() {
  if (const char* env = std::getenv("CLUSTERSIM_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return CLUSTERSIM_DATA_DIR;
}

const Schema& HardwareCatalog::gpu_schema() {
  static const Schema schema = [] {
    Schema s("GPU preset");
    s.key(key_def("name", ValueType::kString, "GPU model name, e.g. H100-SXM5-80GB", "", true));
    s.section("dense_peak", "dense (non-sparse) math peak per data type, from the datasheet");
    for (const char* t : {"bf16", "fp16", "fp8", "tf32", "fp32"}) {
      s.key(key_def(fmt::format("dense_peak.{}", t), ValueType::kFlopRate, fmt::format("dense {} peak", t)));
    }
    s.key(key_def("hbm_capacity", ValueType::kBytes, "device memory capacity as the datasheet states it", "", true));
    s.key(key_def("hbm_bandwidth", ValueType::kBandwidth, "datasheet device-memory bandwidth", "", true));
    s.key(key_def("nvlink_bandwidth", ValueType::kBandwidth, "NVLink bandwidth per direction, all links (absent: no NVLink)"));
    s.key(count("nvlink_links", "number of NVLink links", "0", 0, kMaxNodeGpus));
    s.key(count("sm_count", "streaming multiprocessors", "", 1, kMaxSmCount));
    s.key(key_def("supports_nvls", ValueType::kBool, "NVLink SHARP in-switch reduction (Hopper and later)", "false"));
    KeyDef limit = key_def("power_limit", ValueType::kPower,
                       "board power limit (TDP) from the datasheet, e.g. \"700 W\" (absent: no power model)");
    limit.min = 1.0;
    s.key(limit);
    s.key(key_def("idle_power", ValueType::kPower,
              "board power with a CUDA context open and no kernel running (needs power_limit; absent: "
              "0.176 x power_limit, the H200's measured 123 W of 700 W)"));
    return s;
  }();
  return schema;
}

const Schema& HardwareCatalog::nic_schema() {
  static const Schema schema = [] {
    Schema s("NIC preset");
    s.key(key_def("name", ValueType::kString, "adapter name", "", true));
    // Transfer times are int64 picoseconds: a NIC moves at least a gigabit per second (the bound
    // help-config prints, and the loader's message).
    KeyDef bandwidth = key_def("bandwidth", ValueType::kBandwidth, "line rate per direction, e.g. \"400 Gb/s\"", "", true);
    bandwidth.min = 1e9 / 8;
    s.key(bandwidth);
    s.key(hop_latency(key_def("latency", ValueType::kDuration, "adapter latency per traversal", "", true)));
    return s;
  }();
  return schema;
}

const Schema& HardwareCatalog::node_schema() {
  static const Schema schema = [] {
    Schema s("node preset");
    s.key(key_def("name", ValueType::kString, "node name, e.g. dgx-h100", "", true));
    s.key(key_def("gpu", ValueType::kString, "GPU preset name (hardware/gpus/) or a path", "", true));
    s.key(count("gpus", "GPUs in the node", "8", 1, kMaxNodeGpus));
    KeyDef intra = key_def("intra", ValueType::kEnum, "how the GPUs are joined", "nvswitch");
    intra.choices = {"nvswitch", "nvlink-mesh", "pcie"};
    s.key(intra);
    s.key(hop_latency(key_def("nvlink_latency", ValueType::kDuration, "GPU to GPU over NVLink (one switch or mesh hop)", "1 us")));
    s.key(key_def("nvlink_link_bandwidth", ValueType::kBandwidth, "one NVLink link per direction (mesh nodes)",
              "25 GB/s"));
    s.section_list("mesh", "point-to-point NVLink edges of an nvlink-mesh node");
    s.key(count("mesh[].gpu_a", "first GPU of the edge", "", 0, kMaxNodeGpus - 1));
    s.key(count("mesh[].gpu_b", "second GPU of the edge", "", 0, kMaxNodeGpus - 1));
    s.key(count("mesh[].links", "parallel NVLink links on the edge", "1", 1, kMaxNodeGpus));
    s.section("pcie", "PCIe tree: GPUs and NICs on PCIe switches under CPU sockets");
    s.key(count("pcie.generation", "PCIe generation of the x16 links (3, 4, 5 or 6); sets the default of "
                "switch_link and host_bridge (absent: 5 where the NIC is faster than Gen4 x16 carries, else 4)",
                "", 3, 6));
    s.key(key_def("pcie.switch_link", ValueType::kBandwidth,
              "GPU/NIC to PCIe switch, per direction (absent: x16 of pcie.generation, e.g. Gen5 63 GB/s)"));
    s.key(key_def("pcie.host_bridge", ValueType::kBandwidth,
              "PCIe switch to CPU root complex, per direction (absent: x16 of pcie.generation)"));
    s.key(key_def("pcie.inter_socket", ValueType::kBandwidth, "CPU to CPU link, per direction", "40 GB/s"));
    s.key(hop_latency(key_def("pcie.latency", ValueType::kDuration, "per PCIe hop", "500 ns")));
    s.key(count("pcie.switches", "PCIe switches", "2", 1, kMaxNodeGpus));
    s.key(count("pcie.sockets", "CPU sockets", "2", 1, kMaxNodeGpus));
    s.key(key_def("pcie.peer_to_peer", ValueType::kBool, "GPU peer-to-peer over PCIe (false: through host memory)",
              "true"));
    s.key(key_def("pcie.host_memory", ValueType::kBandwidth,
              "per socket, per direction: what root complex and DRAM give GPU bounce buffers (required "
              "with peer_to_peer: false; DDR5: half of channels x MT/s x 8 B, a byte is written and read)"));
    s.key(key_def("nic", ValueType::kString, "NIC preset name (hardware/nics/) or a path", "", true));
    s.key(count("nics", "compute-fabric NICs in the node", "8", 1, kMaxNodeGpus));
    KeyDef affinity = key_def("nic_of_gpu", ValueType::kIntList, "NIC used by each GPU (default: GPU g -> NIC g*nics/gpus)");
    affinity.min = 0;
    affinity.max = kMaxNodeGpus - 1;
    s.key(affinity);
    s.key(key_def("overhead_power", ValueType::kPower,
              "power of the node besides its GPUs (CPUs, memory, NICs, fans, conversion), for energy reports; "
              "\"0 W\": not given",
              "0 W"));
    return s;
  }();
  return schema;
}

HardwareCatalog::HardwareCatalog(std::string data_dir) : data_dir_(std::move(data_dir)) {}

std::vector<std::string> HardwareCatalog::names(const std::string& kind) const {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(data_dir_) / "hardware" / kind;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml") out.push_back(entry.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string HardwareCatalog::path_of(const std::string& kind, const std::string& name) const {
  // The error_code overloads: a name too long for a path (ENAMETOOLONG) is an unknown preset.
  std::error_code error;
  if (is_path(name)) {
    if (std::filesystem::is_directory(name, error)) {
      throw InputError(fmt::format("{} preset path \"{}\" is a directory; give a .yaml file or a preset name",
                                   kind.substr(0, kind.size() - 1), excerpt(name)));
    }
    return name;
  }
  const std::filesystem::path p = std::filesystem::path(data_dir_) / "hardware" / kind / (name + ".yaml");
  if (!std::filesystem::exists(p, error)) {
    std::string available;
    for (const auto& n : names(kind)) available += (available.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("unknown {} preset \"{}\"; available: {} (or give a path to a .yaml file)",
                                 kind.substr(0, kind.size() - 1), excerpt(name), available.empty() ? "none found" : available));
  }
  return p.string();
}

GpuSpec HardwareCatalog::gpu(const std::string& name) const {
  const auto doc = ConfigDocument::load_file(path_of("gpus", name), gpu_schema());
  GpuSpec g;
  g.name = doc.get_string("name");
  for (const char* t : {"bf16", "fp16", "fp8", "tf32", "fp32"}) {
    const std::string path = fmt::format("dense_peak.{}", t);
    if (doc.has(path)) g.dense_peak[parse_data_type(t)] = doc.get_flop_rate(path);
  }
  if (g.dense_peak.empty()) throw doc.error_at("dense_peak", "give at least one dense peak (bf16, fp16, ...)");
  g.hbm_capacity = doc.get_bytes("hbm_capacity");
  if (g.hbm_capacity <= Bytes::zero()) throw doc.error_at("hbm_capacity", "must be positive, e.g. \"80 GB\"");
  g.hbm_bandwidth = doc.get_bandwidth("hbm_bandwidth");
  // Kernel times are int64 picoseconds: a GPU's memory moves at least gigabytes per second.
  if (g.hbm_bandwidth.bytes_per_second() < 1e9) {
    throw doc.error_at("hbm_bandwidth", "must be at least 1 GB/s, e.g. \"3.35 TB/s\"");
  }
  if (doc.has("nvlink_bandwidth")) {
    g.nvlink_bandwidth = doc.get_bandwidth("nvlink_bandwidth");
    if (g.nvlink_bandwidth.bytes_per_second() < 1e9) {
      throw doc.error_at("nvlink_bandwidth", "must be at least 1 GB/s, e.g. \"450 GB/s\" (leave it out for no NVLink)");
    }
  }
  g.nvlink_links = static_cast<int>(doc.get_int("nvlink_links"));
  g.sm_count = static_cast<int>(doc.get_int("sm_count"));
  g.supports_nvls = doc.get_bool("supports_nvls");
  if (doc.has("power_limit")) {
    g.power_limit = doc.get_power("power_limit");
    g.idle_power = doc.has("idle_power") ? doc.get_power("idle_power") : g.power_limit * kDefaultIdleFractionOfLimit;
    if (!(g.idle_power < g.power_limit)) {
      throw doc.error_at(doc.has("idle_power") ? "idle_power" : "power_limit",
                         fmt::format("idle power {} is not below the power limit {}; the limit must exceed the "
                                     "idle power (H200: idle 123 W, limit 700 W)",
                                     to_string(g.idle_power), to_string(g.power_limit)));
    }
  } else if (doc.has("idle_power")) {
    throw doc.error_at("idle_power", "idle_power needs power_limit (the datasheet's board power, e.g. \"700 W\")");
  }
  return g;
}

NicSpec HardwareCatalog::nic(const std::string& name) const {
  const auto doc = ConfigDocument::load_file(path_of("nics", name), nic_schema());
  return NicSpec{doc.get_string("name"), doc.get_bandwidth("bandwidth"), doc.get_duration("latency")};
}

NodeSpec HardwareCatalog::node(const std::string& name) const {
  const auto doc = ConfigDocument::load_file(path_of("nodes", name), node_schema());
  NodeSpec n;
  n.name = doc.get_string("name");
  n.gpu = gpu(doc.get_string("gpu"));
  n.gpus = static_cast<int>(doc.get_int("gpus"));
  const std::string intra = doc.get_string("intra");
  n.intra = intra == "nvswitch"      ? IntraNodeFabric::kNvSwitch
            : intra == "nvlink-mesh" ? IntraNodeFabric::kNvLinkMesh
                                     : IntraNodeFabric::kPcie;
  n.nvlink_latency = doc.get_duration("nvlink_latency");
  n.nvlink_link_bandwidth = doc.get_bandwidth("nvlink_link_bandwidth");
  for (const auto& e : doc.get_sections("mesh")) {
    n.mesh.push_back(NvLinkMeshEdge{static_cast<int>(e.get_int("gpu_a")), static_cast<int>(e.get_int("gpu_b")),
                                    static_cast<int>(e.get_int("links"))});
    for (const char* end : {"gpu_a", "gpu_b"}) {
      if (e.get_int(end) >= n.gpus) {
        throw e.error_at(end, fmt::format("GPU {} is not in this node of {} GPUs (gpus:); valid: 0..{}",
                                          e.get_int(end), n.gpus, n.gpus - 1));
      }
    }
  }
  if (n.intra == IntraNodeFabric::kNvLinkMesh && n.mesh.empty() && n.gpus > 1) {
    throw doc.error_at("intra", "nvlink-mesh needs the mesh: edges between the GPUs (mesh: [{gpu_a, gpu_b, links}, "
                                "...]); use intra: nvswitch or pcie for other nodes");
  }
  for (size_t i = 0; i < n.mesh.size(); ++i) {
    if (n.mesh[i].gpu_a == n.mesh[i].gpu_b) {
      throw doc.error_at("mesh", fmt::format("edge {} joins GPU {} to itself; an edge joins two different GPUs", i,
                                             n.mesh[i].gpu_a));
    }
  }
  n.nic = nic(doc.get_string("nic"));
  const bool generation_given = doc.has("pcie.generation");
  const int generation = generation_given ? static_cast<int>(doc.get_int("pcie.generation"))
                                          : default_pcie_generation(n.nic.bandwidth);
  const Bandwidth x16 = pcie_x16_bandwidth(generation);
  n.pcie.switch_link = doc.has("pcie.switch_link") ? doc.get_bandwidth("pcie.switch_link") : x16;
  n.pcie.host_bridge = doc.has("pcie.host_bridge") ? doc.get_bandwidth("pcie.host_bridge") : x16;
  if (!doc.has("pcie.switch_link") || !doc.has("pcie.host_bridge")) {
    n.pcie_assumption = fmt::format(
        "{} x16 ({:.1f} GB/s per direction) for {}{}", pcie_generation_name(generation), x16.gigabytes_per_second(),
        !doc.has("pcie.switch_link") && !doc.has("pcie.host_bridge") ? "pcie.switch_link and pcie.host_bridge"
        : !doc.has("pcie.switch_link")                               ? "pcie.switch_link"
                                                                     : "pcie.host_bridge",
        generation_given ? " (pcie.generation)"
                         : fmt::format(" (no pcie.generation; NIC {:.1f} GB/s)", n.nic.bandwidth.gigabytes_per_second()));
  }
  n.pcie.inter_socket = doc.get_bandwidth("pcie.inter_socket");
  n.pcie.latency = doc.get_duration("pcie.latency");
  n.pcie.switches = static_cast<int>(doc.get_int("pcie.switches"));
  n.pcie.sockets = static_cast<int>(doc.get_int("pcie.sockets"));
  n.pcie.peer_to_peer = doc.get_bool("pcie.peer_to_peer");
  if (doc.has("pcie.host_memory")) n.pcie.host_memory = doc.get_bandwidth("pcie.host_memory");
  if (!n.pcie.peer_to_peer && !doc.has("pcie.host_memory")) {
    throw doc.error_at("pcie.peer_to_peer",
                       "false routes GPU traffic through host memory; give pcie.host_memory, the bandwidth per "
                       "socket and direction, e.g. \"153.6 GB/s\" (8 channels of DDR5-4800: 307.2 GB/s, half "
                       "each way)");
  }
  n.nics = static_cast<int>(doc.get_int("nics"));
  for (int64_t g : doc.get_int_list("nic_of_gpu")) n.nic_of_gpu.push_back(static_cast<int>(g));
  n.overhead_power = doc.get_power("overhead_power");
  if (!n.nic_of_gpu.empty() && static_cast<int>(n.nic_of_gpu.size()) != n.gpus) {
    throw doc.error_at("nic_of_gpu", fmt::format("has {} entries but the node has {} GPUs; give one NIC per GPU",
                                                 n.nic_of_gpu.size(), n.gpus));
  }
  for (int nic_index : n.nic_of_gpu) {
    if (nic_index >= n.nics) {
      throw doc.error_at("nic_of_gpu", fmt::format("NIC {} does not exist; valid: 0 .. {}", nic_index, n.nics - 1));
    }
  }
  return n;
}

}  // namespace clustersim
