#include "tools/cli/collective_command.h"

#include <charconv>
#include <filesystem>
#include <iostream>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "collectives/algorithm.h"
#include "core/error.h"
#include "network/flow_network.h"
#include "parallelism/work_estimate.h"
#include "scenarios/hardware_presets.h"
#include "tools/calibrator/collective_sizes.h"
#include "tools/cli/html_report.h"
#include "tools/common/output_file.h"
#include "topology/cluster.h"

namespace clustersim {
namespace {

// nccl-tests' type names (common.cu test_typenames).
std::string_view nccl_type_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFp32:
    case DataType::kTf32:
      return "float";
    case DataType::kBf16:
      return "bfloat16";
    case DataType::kFp16:
      return "half";
    case DataType::kFp8:
      return "f8e4m3";
  }
  return "float";
}

bool reduces(CollectiveOp op) {
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter || op == CollectiveOp::kReduce;
}

bool rooted(CollectiveOp op) { return op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce; }

// nccl-tests' element counts for a requested size (tools/calibrator/collective_sizes.h, after the
// *GetCollByteCount functions of nccl-tests src/*.cu). reduce counts like all_reduce: the whole
// buffer on every rank.
calibrate::CollectiveCounts counts_of(int64_t requested, CollectiveOp op, int ranks, int64_t element) {
  calibrate::Collective collective = calibrate::Collective::kAllReduce;
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kReduce:
      collective = calibrate::Collective::kAllReduce;
      break;
    case CollectiveOp::kAllGather:
      collective = calibrate::Collective::kAllGather;
      break;
    case CollectiveOp::kReduceScatter:
      collective = calibrate::Collective::kReduceScatter;
      break;
    case CollectiveOp::kBroadcast:
      collective = calibrate::Collective::kBroadcast;
      break;
    case CollectiveOp::kAllToAll:
      collective = calibrate::Collective::kAllToAll;
      break;
    case CollectiveOp::kSendRecv:
      collective = calibrate::Collective::kSendRecv;
      break;
  }
  return calibrate::collective_counts(collective, requested, element, ranks);
}

namespace {

const char* fabric_name(FabricType fabric) {
  switch (fabric) {
    case FabricType::kRailOptimized: return "rail-optimized";
    case FabricType::kFatTree: return "fat-tree";
    case FabricType::kSingleSwitch: return "single-switch";
    case FabricType::kThreeTier: return "three-tier";
  }
  return "?";
}

}  // namespace

Cluster build_cluster(const CollectiveCommandOptions& options) {
  if (options.nodes < 1 || options.nodes > kMaxClusterNodes) {
    throw InputError(fmt::format("--nodes {} is out of range; valid: 1..{} (as cluster.nodes of a scenario)",
                                 options.nodes, kMaxClusterNodes));
  }
  if (options.leaf_ports < 1 || options.leaf_ports > kMaxLeafPorts) {
    throw InputError(fmt::format("--leaf-ports {} is out of range; valid: 1..{} downlink ports per leaf switch (as "
                                 "cluster.fabric.leaf_ports)",
                                 options.leaf_ports, kMaxLeafPorts));
  }
  if (!(options.oversubscription >= 1.0 && options.oversubscription <= kMaxOversubscription)) {
    throw InputError(fmt::format("--oversubscription {} is out of range; valid: 1..{} (leaf downlink / uplink "
                                 "bandwidth, as cluster.fabric.oversubscription)",
                                 options.oversubscription, kMaxOversubscription));
  }
  if (options.fabric == FabricType::kThreeTier) {
    if (options.pod_nodes == 0) {
      throw InputError(fmt::format("--fabric three-tier needs --pod-nodes, the nodes of one pod; valid: 1..{} (as "
                                   "cluster.fabric.pod_nodes)",
                                   options.nodes));
    }
    if (options.pod_nodes < 1 || options.pod_nodes > options.nodes) {
      throw InputError(fmt::format("--pod-nodes {} is not valid with --fabric three-tier and --nodes {}; valid: 1..{} "
                                   "nodes per pod (as cluster.fabric.pod_nodes; the last pod may hold fewer)",
                                   options.pod_nodes, options.nodes, options.nodes));
    }
    if (!(options.core_oversubscription >= 1.0 && options.core_oversubscription <= kMaxOversubscription)) {
      throw InputError(fmt::format("--core-oversubscription {} is out of range; valid: 1..{} (a pod's spine downlink "
                                   "/ core uplink bandwidth, as cluster.fabric.core_oversubscription)",
                                   options.core_oversubscription, kMaxOversubscription));
    }
  } else if (options.pod_nodes != 0 || options.core_oversubscription != kDefaultOversubscription) {
    throw InputError(fmt::format("{} applies to --fabric three-tier only, not {}",
                                 options.pod_nodes != 0 ? "--pod-nodes" : "--core-oversubscription",
                                 fabric_name(options.fabric)));
  }
  const HardwareCatalog catalog(options.data_dir.empty() ? default_data_dir() : options.data_dir);
  NodeSpec node = catalog.node(options.node);
  if (!options.nic.empty()) node.nic = catalog.nic(options.nic);
  if (options.gpus_per_node < 0 || options.gpus_per_node > node.gpus) {
    throw InputError(fmt::format("--gpus-per-node {} is not valid for node \"{}\"; valid: 1..{} (or 0 for all)",
                                 options.gpus_per_node, options.node, node.gpus));
  }
  const int64_t per_node = options.gpus_per_node > 0 ? options.gpus_per_node : node.gpus;
  if (static_cast<int64_t>(options.nodes) * per_node > kMaxSimulatedGpus) {
    throw InputError(fmt::format("--nodes {} of {} GPUs make {} GPUs, above the {} clustersim simulates (building a "
                                 "larger topology takes minutes and tens of GB); use fewer nodes or --gpus-per-node",
                                 options.nodes, per_node, static_cast<int64_t>(options.nodes) * per_node,
                                 kMaxSimulatedGpus));
  }
  // Refused before the topology is built (seconds at 10^5 GPUs) when flow fidelity cannot finish.
  resolve_fidelity(options, static_cast<int>(static_cast<int64_t>(options.nodes) * per_node));
  ClusterSpec spec;
  spec.nodes.assign(static_cast<size_t>(options.nodes), node);
  spec.fabric.type = options.fabric;
  spec.fabric.switch_latency = options.switch_latency;
  spec.fabric.leaf_ports = options.leaf_ports;
  spec.fabric.oversubscription = options.oversubscription;
  spec.fabric.pod_nodes = options.pod_nodes;
  spec.fabric.core_oversubscription = options.core_oversubscription;
  spec.gpus_per_node = options.gpus_per_node;
  return Cluster(spec);
}

std::vector<int64_t> sweep_sizes(const CollectiveCommandOptions& options) {
  const int64_t first = options.min_bytes.count();
  const int64_t last = options.max_bytes.count();
  if (first == 0) {
    // nccl-tests accepts -b 0 but with -f it never leaves size 0, and with -i it times a call
    // with no data; clustersim simulates no empty collectives.
    throw InputError("-b/--minbytes 0: the smallest size must be at least 1 B (e.g. -b 8, as nccl-tests' examples)");
  }
  if (first > last) {
    throw InputError(fmt::format("-b/--minbytes {} B is larger than -e/--maxbytes {} B; give -b <= -e", first, last));
  }
  if (last > kMaxCollectiveBytes) {
    throw InputError(fmt::format("-e/--maxbytes {} B is out of range; valid: at most {} B (-e {}G: 1 TiB, more than "
                                 "any GPU's memory)",
                                 last, kMaxCollectiveBytes, kMaxCollectiveBytes >> 30));
  }
  if (options.step_factor == 1 || options.step_factor < 0 ||
      (options.step_factor == 0 && options.step_bytes == Bytes::zero() && first < last)) {
    throw InputError(fmt::format("-f/--stepfactor {} and -i/--stepbytes {} B: the size does not grow; give -f >= 2 or "
                                 "an increment > 0",
                                 options.step_factor, options.step_bytes.count()));
  }
  std::vector<int64_t> sizes;
  for (int64_t size = first; size <= last;) {
    if (sizes.size() == kMaxCollectiveSizes) {
      throw InputError(fmt::format("-b {} -e {} with -i {} makes more than {} sizes; use a larger -i or -f 2", first,
                                   last, options.step_bytes.count(), kMaxCollectiveSizes));
    }
    sizes.push_back(size);
    if (options.step_factor >= 2) {
      if (size == 0 || size > last / options.step_factor) break;
      size *= options.step_factor;
    } else {
      if (first == last || size > last - options.step_bytes.count()) break;
      size += options.step_bytes.count();
    }
  }
  return sizes;
}

// One size, alone on an idle cluster.
// The request of one size of the sweep over `group`, with the options' op, dtype, algorithm, protocol.
CollectiveRequest sweep_request(const CollectiveCommandOptions& options, const std::vector<GpuId>& group,
                                int64_t size) {
  CollectiveRequest request;
  request.op = options.op;
  request.group = group;
  request.size = Bytes::of(size);
  request.dtype = options.dtype;
  request.algorithm = options.algorithm;
  request.protocol = options.protocol;
  return request;
}

CollectiveRow simulate(const Cluster& cluster, const CollectiveCommandOptions& options, Fidelity fidelity,
                       const std::vector<GpuId>& group, int64_t size) {
  Simulator sim;
  std::optional<FlowNetwork> network;  // per-link state: 59 MB at 131,072 GPUs, needed by flow fidelity only
  if (fidelity == Fidelity::kFlow) network.emplace(sim, cluster);
  CollectiveRunner runner(sim, cluster, network ? &*network : nullptr, fidelity);
  const CollectiveRequest request = sweep_request(options, group, size);
  Time finished;
  const auto done = [&] { finished = std::max(finished, sim.now()); };
  CollectiveRow row;
  row.size = size;
  if (options.op == CollectiveOp::kSendRecv) {
    // sendrecv_perf: every rank sends to the next one at once.
    const auto n = group.size();
    for (size_t rank = 0; rank < n && n > 1; ++rank) {
      CollectiveRequest pair = request;
      pair.group = {group[rank], group[(rank + 1) % n]};
      runner.start(pair, done);
      row.choice = runner.choose(pair);
    }
  } else {
    runner.start(request, done);
    row.choice = runner.choose(request);
  }
  sim.run();
  row.time = finished - Time::zero();
  return row;
}

// Throws InputError when --algo or --proto cannot run --op on this group, before any size: were
// every size skipped (below one element per rank), the choice would otherwise go unchecked.
void check_choice(const Cluster& cluster, const CollectiveCommandOptions& options, const std::vector<GpuId>& group,
                  int64_t element) {
  Simulator sim;
  CollectiveRunner runner(sim, cluster, nullptr, Fidelity::kAnalytical);
  CollectiveRequest probe;
  probe.op = options.op;
  probe.group = options.op == CollectiveOp::kSendRecv ? std::vector<GpuId>{group[0], group[1 % group.size()]} : group;
  probe.size = Bytes::of(static_cast<int64_t>(group.size()) * element);
  probe.dtype = options.dtype;
  probe.algorithm = options.algorithm;
  probe.protocol = options.protocol;
  try {
    runner.choose(probe);
  } catch (const InputError& e) {
    const bool algorithm = options.algorithm != CollectiveAlgorithm::kAuto;
    throw InputError(fmt::format("{}: {}", algorithm ? "--algo" : "--proto", e.what()));
  }
}

}  // namespace

Bytes parse_nccl_tests_size(std::string_view text) {
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  int64_t scale = 1;
  if (ec == std::errc() && ptr + 1 == end) {
    switch (*ptr) {
      case 'K':
      case 'k':
        scale = int64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        scale = int64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        scale = int64_t{1} << 30;
        break;
      default:
        scale = 0;
    }
  } else if (ptr != end) {
    scale = 0;
  }
  if (ec != std::errc() || ptr == begin || scale == 0 || value < 0) {
    throw InputError(fmt::format("invalid size \"{}\"; write a whole number of bytes with an optional K, M or G "
                                 "suffix (powers of 1024, as nccl-tests), e.g. \"8\", \"64K\", \"8G\"",
                                 text));
  }
  return Bytes::of(checked_mul(value, scale, "size"));
}

FabricType parse_fabric_type(std::string_view text) {
  if (text == "rail-optimized" || text == "rail") return FabricType::kRailOptimized;
  if (text == "fat-tree") return FabricType::kFatTree;
  if (text == "single-switch" || text == "switch") return FabricType::kSingleSwitch;
  if (text == "three-tier") return FabricType::kThreeTier;
  throw InputError(
      fmt::format("--fabric \"{}\" is unknown; valid: rail-optimized, fat-tree, single-switch, three-tier", text));
}

Fidelity resolve_fidelity(const CollectiveCommandOptions& options, int ranks) {
  const bool all_to_all = options.op == CollectiveOp::kAllToAll;
  if (options.fidelity == Fidelity::kFlow) {
    if (all_to_all && ranks > kMaxFlowAllToAllRanks) {
      throw InputError(fmt::format("--fidelity flow: an all_to_all over {} GPUs is {} transfers per size, beyond the "
                                   "{} GPUs (about 1e6 transfers, minutes per size) that flow fidelity simulates; use "
                                   "--fidelity analytical (or auto) or fewer --nodes",
                                   ranks, static_cast<int64_t>(ranks) * (ranks - 1), kMaxFlowAllToAllRanks));
    }
    if (ranks > kMaxFlowCollectiveRanks) {
      throw InputError(fmt::format("--fidelity flow: {} GPUs is beyond the {} that flow fidelity simulates (the routes "
                                   "of its transfers take minutes); use --fidelity analytical (or auto) or fewer --nodes",
                                   ranks, kMaxFlowCollectiveRanks));
    }
  }
  if (options.fidelity) return *options.fidelity;
  return (all_to_all && ranks > kAutoFlowAllToAllRanks) || ranks > kMaxFlowCollectiveRanks ? Fidelity::kAnalytical
                                                                                             : Fidelity::kFlow;
}

void apply_collective_flags(const CollectiveFlags& flags, CollectiveCommandOptions& options) {
  // Each value is parsed under its flag, so that every message names the flag it is about.
  const auto under_flag = [](const char* flag, auto parse) {
    try {
      return parse();
    } catch (const InputError& e) {
      const std::string message = e.what();
      if (message.rfind("--", 0) == 0 || message.rfind("-b", 0) == 0) throw;  // names its flag already
      throw InputError(std::string(flag) + ": " + message);
    }
  };
  options.op = under_flag("--op", [&] { return parse_collective_op(flags.op); });
  options.algorithm = under_flag("--algo", [&] { return parse_collective_algorithm(flags.algo); });
  options.protocol = under_flag("--proto", [&] { return parse_protocol(flags.proto); });
  options.dtype = under_flag("-d/--datatype", [&] { return parse_data_type(flags.datatype); });
  options.fabric = under_flag("--fabric", [&] { return parse_fabric_type(flags.fabric); });
  options.min_bytes = under_flag("-b/--minbytes", [&] { return parse_nccl_tests_size(flags.min_bytes); });
  options.max_bytes = under_flag("-e/--maxbytes", [&] { return parse_nccl_tests_size(flags.max_bytes); });
  options.step_bytes = under_flag("-i/--stepbytes", [&] { return parse_nccl_tests_size(flags.step_bytes); });
  // nccl-tests steps by -i when it is given and -f is not: so does this, and a factor of 2 or
  // more given with an increment is refused rather than one of the two ignored.
  if (flags.step_bytes_given && options.step_bytes.count() > 0) {
    if (flags.step_factor_given && options.step_factor != 0) {
      throw InputError(fmt::format("-f {} and -i {}: give one (-f 0 -i {} steps by the increment)",
                                   options.step_factor, flags.step_bytes, flags.step_bytes));
    }
    options.step_factor = 0;
  }
  if (flags.fidelity != "auto" && flags.fidelity != "flow" && flags.fidelity != "analytical") {
    throw InputError("--fidelity " + flags.fidelity + ": valid values are auto, flow, analytical");
  }
  if (flags.fidelity != "auto") options.fidelity = flags.fidelity == "flow" ? Fidelity::kFlow : Fidelity::kAnalytical;
}

double CollectiveRow::algbw_gbps() const {
  return time > Duration::zero() ? static_cast<double>(size) / time.to_seconds() * 1e-9 : 0.0;
}

CollectiveSweep simulate_collective_sweep(const CollectiveCommandOptions& options) {
  const Cluster cluster = build_cluster(options);
  std::vector<GpuId> group(static_cast<size_t>(cluster.gpu_count()));
  for (GpuId gpu = 0; gpu < cluster.gpu_count(); ++gpu) group[static_cast<size_t>(gpu)] = gpu;
  const int ranks = cluster.gpu_count();
  if (options.op == CollectiveOp::kSendRecv && ranks < 2) {
    throw InputError("send_recv needs at least 2 GPUs; use more nodes or GPUs per node");
  }
  const int64_t element = bytes_per_element(options.dtype);
  CollectiveSweep sweep;
  sweep.op = options.op;
  sweep.ranks = ranks;
  sweep.fidelity = resolve_fidelity(options, ranks);
  sweep.bus_factor = bus_bandwidth_factor(options.op, ranks);
  sweep.type = std::string(nccl_type_name(options.dtype));
  sweep.redop = reduces(options.op) ? "sum" : "none";
  sweep.root = rooted(options.op) ? 0 : -1;
  check_choice(cluster, options, group, element);
  const std::vector<int64_t> sizes = sweep_sizes(options);
  if (sweep.fidelity == Fidelity::kFlow) {
    // The work before it is done (parallelism/work_estimate.h's constants): the transfers of every
    // size's plan, built once each, and stated when the sweep is estimated at 2 s or more.
    Simulator scratch;
    const CollectiveRunner counter(scratch, cluster, nullptr, Fidelity::kAnalytical);
    for (int64_t requested : sizes) {
      const calibrate::CollectiveCounts counts = counts_of(requested, options.op, ranks, element);
      if (counts.total_bytes == 0) continue;
      CollectiveRequest request = sweep_request(options, group, counts.total_bytes);
      if (options.op == CollectiveOp::kSendRecv) request.group = {group[0], group[1 % group.size()]};
      const uint64_t per_call = counter.transfer_count(request);
      sweep.flow_transfers += options.op == CollectiveOp::kSendRecv ? per_call * group.size() : per_call;
    }
    const double seconds = static_cast<double>(sweep.flow_transfers) * kEventsPerTransfer / kFlowEventsPerSecond;
    if (options.announce != nullptr && seconds >= 2) {
      *options.announce << fmt::format("collective: estimated {} flow transfers ({} sizes over {} GPUs): about {} on "
                                       "one core\n",
                                       sweep.flow_transfers, sizes.size(), ranks, describe_estimated_seconds(seconds));
      options.announce->flush();
    }
  }
  for (int64_t requested : sizes) {
    const calibrate::CollectiveCounts counts = counts_of(requested, options.op, ranks, element);
    if (counts.total_bytes == 0) {
      sweep.skipped.push_back(requested);
      continue;
    }
    CollectiveRow row = simulate(cluster, options, sweep.fidelity, group, counts.total_bytes);
    row.count = counts.param_count;
    sweep.rows.push_back(row);
  }
  // Why sizes were skipped: all_gather, reduce_scatter and all_to_all need a whole element per rank
  // (per peer), the other ops a whole element.
  const bool splits_buffer = options.op == CollectiveOp::kAllGather || options.op == CollectiveOp::kReduceScatter ||
                             options.op == CollectiveOp::kAllToAll;
  sweep.skip_reason =
      splits_buffer ? fmt::format("below {} ranks x {} B ({} B): less than one {} element per rank", ranks, element,
                                  ranks * element, nccl_type_name(options.dtype))
                    : fmt::format("below one {} element ({} B)", nccl_type_name(options.dtype), element);
  return sweep;
}

nlohmann::json collective_row_json(const CollectiveSweep& sweep, const CollectiveRow& row) {
  return {{"size_bytes", row.size},
          {"count", row.count},
          {"time_us", row.time.to_microseconds()},
          {"algbw_GBps", row.algbw_gbps()},
          {"busbw_GBps", row.algbw_gbps() * sweep.bus_factor},
          {"algorithm", name_of(row.choice.algorithm)},
          {"protocol", name_of(row.choice.protocol)}};
}

nlohmann::json collective_json(const CollectiveSweep& sweep) {
  nlohmann::json results = nlohmann::json::array();
  for (const CollectiveRow& row : sweep.rows) results.push_back(collective_row_json(sweep, row));
  nlohmann::json skipped_json = nlohmann::json::array();
  for (int64_t size : sweep.skipped) skipped_json.push_back({{"size_bytes", size}, {"reason", sweep.skip_reason}});
  return nlohmann::json{{"results", results},
                        {"skipped", skipped_json},
                        {"op", name_of(sweep.op)},
                        {"gpus", sweep.ranks},
                        {"fidelity", name_of(sweep.fidelity)}};
}

std::vector<AlgorithmSweep> sweep_every_algorithm(const CollectiveCommandOptions& options) {
  std::vector<AlgorithmSweep> sweeps;
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    CollectiveCommandOptions forced = options;
    forced.algorithm = entry.algorithm;
    AlgorithmSweep one;
    one.algorithm = entry.algorithm;
    try {
      one.sweep = simulate_collective_sweep(forced);
    } catch (const InputError& e) {
      one.why_not = e.what();
    }
    sweeps.push_back(std::move(one));
  }
  return sweeps;
}

namespace {

void write_collective_page(const CollectiveCommandOptions& options, const CollectiveSweep& chosen) {
  const std::vector<AlgorithmSweep> sweeps = sweep_every_algorithm(options);
  const std::string title =
      fmt::format("{} on {} x {} ({} GPUs), {} fabric, {} fidelity", name_of(options.op), options.nodes, options.node,
                  chosen.ranks, fabric_name(options.fabric), name_of(chosen.fidelity));
  const std::string chosen_label = options.algorithm == CollectiveAlgorithm::kAuto
                                       ? "the selector's choice"
                                       : fmt::format("--algo {}", name_of(options.algorithm));
  write_output_atomically(options.html, "--html", [&](std::ostream& page) {
    write_collective_html(title, chosen, chosen_label, sweeps, options.command_line, page);
  });
  std::error_code size_error;
  const auto bytes = std::filesystem::file_size(options.html, size_error);
  std::cerr << fmt::format("wrote {} ({} bytes)\n", options.html, size_error ? 0 : bytes);
}

}  // namespace

int run_collective_command(const CollectiveCommandOptions& options, std::ostream& out) {
  if (!options.html.empty()) check_atomic_output(options.html, "--html", "collective.html");
  const CollectiveSweep sweep = simulate_collective_sweep(options);
  if (!options.html.empty()) write_collective_page(options, sweep);
  if (options.json) {
    out << collective_json(sweep).dump(2) << "\n";
    return 0;
  }
  const int ranks = sweep.ranks;
  const Fidelity fidelity = sweep.fidelity;
  out << fmt::format("# clustersim collective: {} on {} x {} ({} GPUs), {} fabric, {} fidelity\n", name_of(options.op),
                     options.nodes, options.node, ranks, fabric_name(options.fabric), name_of(fidelity));
  if (!options.fidelity && fidelity == Fidelity::kAnalytical && ranks > kMaxFlowCollectiveRanks) {
    out << fmt::format("# --fidelity auto: a collective over more than {} GPUs runs analytically (closed forms on the "
                       "links' bandwidth); flow fidelity simulates up to {} GPUs\n",
                       kMaxFlowCollectiveRanks, kMaxFlowCollectiveRanks);
  } else if (!options.fidelity && fidelity == Fidelity::kAnalytical) {
    out << fmt::format("# --fidelity auto: an all_to_all over more than {} GPUs runs analytically: bound by the "
                       "busiest port, without the fabric's ECMP collisions (on 64 DGX H100 the flow model is 17-39 % "
                       "slower at 1-64 MiB); --fidelity flow simulates its {} flows, about a minute per size\n",
                       kAutoFlowAllToAllRanks, static_cast<int64_t>(ranks) * (ranks - 1));
  }
  if (!sweep.skipped.empty()) {
    out << fmt::format("# skipped {} B: {}\n", fmt::join(sweep.skipped, ", "), sweep.skip_reason);
  }
  out << fmt::format("#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}  {:>12}  {:>8}\n", "size", "count",
                     "type", "redop", "root", "time", "algbw", "busbw", "algorithm", "protocol");
  out << fmt::format("#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}\n", "(B)", "(elements)", "", "", "",
                     "(us)", "(GB/s)", "(GB/s)");
  for (const CollectiveRow& row : sweep.rows) {
    out << fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9.2f}  {:>7.2f}  {:>7.2f}  {:>12}  {:>8}\n", row.size,
                       row.count, sweep.type, sweep.redop, sweep.root, row.time.to_microseconds(), row.algbw_gbps(),
                       row.algbw_gbps() * sweep.bus_factor, name_of(row.choice.algorithm),
                       name_of(row.choice.protocol));
  }
  return 0;
}

}  // namespace clustersim
