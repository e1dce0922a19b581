#include "tools/validation/collective_validation.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>

#include "collectives/collective.h"
#include "collectives/collective_runner.h"
#include "core/error.h"
#include "core/excerpt.h"
#include "network/flow_network.h"
#include "scenarios/hardware_presets.h"
#include "tools/validation/csv_table.h"
#include "topology/cluster.h"

namespace clustersim {
namespace {

bool mentions(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// A field of `record` in column `column` of `table`, for messages that name file, line and column.
struct FieldReader {
  const CsvTable& table;
  std::map<std::string, size_t> index;

  const std::string& text(const CsvRecord& record, const std::string& column) const {
    return record.fields[index.at(column)];
  }
  [[noreturn]] void bad(const CsvRecord& record, const std::string& column, std::string_view why) const {
    throw InputError(fmt::format("{}:{}: column {} = \"{}\": {}", table.path(), record.line, column,
                                 excerpt(text(record, column)), why));
  }
  // The number in the field; 0 when it is empty (the source does not state it).
  double number_or_zero(const CsvRecord& record, const std::string& column) const {
    const std::string& t = text(record, column);
    if (t.empty()) return 0;
    double value = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(value)) bad(record, column, "not a number");
    return value;
  }
  // A count of GPUs or nodes: empty (0) when the source does not state it, else a whole number >= 1.
  int count_or_zero(const CsvRecord& record, const std::string& column) const {
    const double value = number_or_zero(record, column);
    if (text(record, column).empty()) return 0;
    if (value != std::floor(value) || value < 1 || value > 1e9) {
      bad(record, column, "expected a whole number >= 1 (empty when the source does not give it)");
    }
    return static_cast<int>(value);
  }
};

struct Setup {
  std::string node;  // preset
  std::string nic;   // preset replacing the node's, or empty
  int nodes = 1;
  int gpus_per_node = 0;
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  int64_t size = 0;
  std::string note;
};

// The nccl-tests size used for rows that give only a large-message plateau.
constexpr int64_t kPlateauSize = int64_t{8} << 30;

// The collectives the CSV may name: simulated ones (nccl-tests' names; "all_to_all" as the CLI
// spells it) and the descriptive names of published rows that are listed without simulation
// (DeepEP's MoE kernels, SC21's per-stage figures).
struct KnownCollective {
  std::string_view name;
  std::optional<CollectiveOp> op;  // empty: listed, not simulated
};
constexpr KnownCollective kKnownCollectives[] = {
    {"all_reduce", CollectiveOp::kAllReduce},
    {"all_gather", CollectiveOp::kAllGather},
    {"reduce_scatter", CollectiveOp::kReduceScatter},
    {"alltoall", CollectiveOp::kAllToAll},
    {"all_to_all", CollectiveOp::kAllToAll},
    {"MoE dispatch (FP8) all-to-all", std::nullopt},
    {"MoE combine (BF16) all-to-all", std::nullopt},
    {"pipeline p2p (send/recv between stages)", std::nullopt},
    {"all_reduce (data-parallel)", std::nullopt},
};

std::string known_collective_names() {
  std::string simulated, listed;
  for (const KnownCollective& known : kKnownCollectives) {
    std::string& list = known.op ? simulated : listed;
    list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", known.name);
  }
  return fmt::format("{} (simulated), or {} (listed, not simulated)", simulated, listed);
}

std::optional<CollectiveOp> op_of(const std::string& collective) {
  for (const KnownCollective& known : kKnownCollectives) {
    if (known.name == collective) return known.op;
  }
  return std::nullopt;
}

bool is_known_collective(const std::string& collective) {
  for (const KnownCollective& known : kKnownCollectives) {
    if (known.name == collective) return true;
  }
  return false;
}

// The setup a row describes (SOURCES.md), or the reason it is not simulated.
std::optional<Setup> setup_for(const CollectiveValidationRow& row, const std::string& bw_definition,
                               std::string* reason) {
  if (!mentions(bw_definition, "nccl-tests")) {
    *reason = fmt::format("not comparable: \"{}\" is not nccl-tests' algbw/busbw", bw_definition);
    return std::nullopt;
  }
  const auto op = op_of(row.collective);
  if (!op) {
    *reason = fmt::format("collective \"{}\" is not simulated", row.collective);
    return std::nullopt;
  }
  Setup setup;
  setup.op = *op;
  setup.size = row.size_bytes > 0 ? row.size_bytes : kPlateauSize;
  const std::string& system = row.system;
  const std::string& algorithm = row.algorithm;
  if (algorithm.starts_with("Ring")) {
    setup.algorithm = CollectiveAlgorithm::kRing;  // also "Ring (NCCL_NVLS_ENABLE=0)"
  } else if (algorithm.starts_with("NVLS") || algorithm.starts_with("SHARP") || mentions(system, "SHARP")) {
    setup.algorithm = CollectiveAlgorithm::kNvls;
  }

  if (mentions(row.source, "a3mega")) {
    // GCP A3 Mega: 8 × H100 and 8 × 200 Gb/s GPUDirect-TCPXO NICs per VM (fabric not stated in the
    // file); modelled as DGX H100 nodes with 200 Gb/s NICs.
    setup.node = "dgx-h100";
    setup.nic = "cx6-200g";
    setup.nodes = 2;
    setup.note = "2 × dgx-h100 with 8 × 200 Gb/s NICs (A3 Mega, assumed; TCPXO modelled as RDMA)";
    return setup;
  }
  if (mentions(row.source, "stas00") && !mentions(row.source, "GTC")) {
    setup.node = mentions(system, "B200") ? "hgx-b200" : "hgx-h200";
    setup.gpus_per_node = row.gpus;
    setup.note = fmt::format("{} GPUs of one {}", row.gpus, setup.node);
    return setup;
  }
  // NVIDIA GTC slides: typical large-message plateaus.
  if (mentions(system, "GB200 NVL72")) {
    // The slide's 32 GPUs span eight compute trays of one NVL72 rack: one NVLink domain.
    setup.node = "gb200-nvl72";
    setup.gpus_per_node = row.gpus;
    setup.note = fmt::format("{} GPUs of one gb200-nvl72 rack (one NVLink domain)", row.gpus);
    if (setup.algorithm == CollectiveAlgorithm::kAuto && setup.op == CollectiveOp::kAllReduce) {
      setup.algorithm = CollectiveAlgorithm::kRing;  // the non-SHARP bar
    }
    return setup;
  }
  const bool multi_node = row.gpus == 32 || mentions(system, "RDMA");
  if (mentions(system, "V100") || mentions(system, "Gen5") || mentions(system, "Gen6") || mentions(system, "TCP")) {
    *reason = "no preset for this hardware (V100, PCIe Gen5/Gen6 hosts, TCP sockets)";
    return std::nullopt;
  }
  if (multi_node && setup.algorithm == CollectiveAlgorithm::kNvls) {
    *reason = "needs NVLink SHARP with InfiniBand SHARP across nodes (not modelled)";
    return std::nullopt;
  }
  if (mentions(system, "2x200Gb") || mentions(system, "2x 200Gb") || mentions(system, "2x 400Gb")) {
    *reason = "servers with two NICs of unstated type and intra-node fabric";
    return std::nullopt;
  }
  if (mentions(system, "DGX A100") || mentions(system, "A100")) setup.node = "dgx-a100";
  if (mentions(system, "DGX H100") || mentions(system, "H100") || mentions(system, "NVLink4")) setup.node = "dgx-h100";
  if (mentions(system, "B200") || mentions(system, "NVLink5")) setup.node = "hgx-b200";
  if (mentions(system, "NVLink3")) setup.node = "dgx-a100";
  if (mentions(system, "PCIe Gen4")) setup.node = "pcie-8gpu";
  if (system == "200Gb RDMA (IB/RoCE)" || system == "400Gb RDMA (IB/RoCE)") {
    // One NIC per node: a ring across nodes with one GPU each.
    setup.node = mentions(system, "400Gb") ? "dgx-h100" : "dgx-a100";
    setup.nodes = 4;
    setup.gpus_per_node = 1;
    setup.note = fmt::format("4 nodes × 1 GPU of {} (one NIC per node)", setup.node);
    return setup;
  }
  if (setup.node.empty()) {
    *reason = "system not described by a preset";
    return std::nullopt;
  }
  if (multi_node) {
    setup.nodes = 4;  // the GTC25 slide's 32 GPUs; the GTC24 slide does not state the count
    setup.note = fmt::format("4 × {} (32 GPUs)", setup.node);
  } else {
    setup.note = fmt::format("1 × {}", setup.node);
  }
  if (setup.algorithm == CollectiveAlgorithm::kAuto && setup.op == CollectiveOp::kAllReduce) {
    setup.algorithm = CollectiveAlgorithm::kRing;  // the non-SHARP bars
  }
  return setup;
}

struct SimulatedCollective {
  Duration time;
  CollectiveChoice choice;
};

SimulatedCollective simulate(const Setup& setup, const HardwareCatalog& catalog) {
  NodeSpec node = catalog.node(setup.node);
  if (!setup.nic.empty()) node.nic = catalog.nic(setup.nic);
  ClusterSpec spec;
  spec.nodes.assign(static_cast<size_t>(setup.nodes), node);
  spec.fabric.type = FabricType::kRailOptimized;
  spec.fabric.switch_latency = Duration::nanoseconds(300);
  spec.fabric.leaf_ports = 64;
  spec.gpus_per_node = setup.gpus_per_node;
  const Cluster cluster(spec);
  Simulator sim;
  FlowNetwork network(sim, cluster);
  CollectiveRunner runner(sim, cluster, &network, Fidelity::kFlow);
  CollectiveRequest request;
  request.op = setup.op;
  for (GpuId gpu = 0; gpu < cluster.gpu_count(); ++gpu) request.group.push_back(gpu);
  request.size = Bytes::of(setup.size);
  request.dtype = DataType::kFp32;
  request.algorithm = setup.algorithm;
  Time finished;
  runner.start(request, [&] { finished = sim.now(); });
  sim.run();
  return {finished - Time::zero(), runner.choose(request)};
}

double median_or_zero(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

std::string short_source(const std::string& source) {
  if (mentions(source, "a3mega")) return "A3 Mega nccl-tests (SOURCES B1)";
  if (mentions(source, "GTC24")) return "NVIDIA GTC24 S62129 (B3)";
  if (mentions(source, "GTC25")) return "NVIDIA GTC25 S72583 (B3)";
  if (mentions(source, "all_reduce_bench")) return "stas00 all_reduce_bench (B2)";
  if (mentions(source, "stas00")) return "stas00 nccl-tests (B2)";
  if (mentions(source, "DeepEP")) return "DeepEP (B4)";
  if (mentions(source, "Narayanan")) return "Narayanan et al. SC21";
  return source.substr(0, 40);
}

std::string size_text(int64_t bytes) {
  if (bytes == 0) return "—";
  if (bytes >= (int64_t{1} << 30) && bytes % (int64_t{1} << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (int64_t{1} << 20) && bytes % (int64_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

}  // namespace

CollectiveValidation validate_collectives(const std::string& csv_path, const std::string& data_dir) {
  const CsvTable table = CsvTable::read(csv_path, "collectives measurements");
  FieldReader reader{table, {}};
  for (const char* key : {"source", "system", "gpus", "nodes", "collective", "algorithm", "size_bytes", "time_us",
                          "busbw_GBps", "bw_definition"}) {
    reader.index[key] = table.column(key);
  }
  if (table.records().empty()) {
    throw InputError(fmt::format("{}: no data rows, only the header; give at least one measurement", csv_path));
  }
  const HardwareCatalog catalog(data_dir);
  CollectiveValidation validation;
  validation.csv_path = csv_path;
  std::vector<double> large_errors, all_errors;
  for (const CsvRecord& record : table.records()) {
    const auto field = [&](const char* key) { return reader.text(record, key); };
    CollectiveValidationRow row;
    row.source = field("source");
    row.system = field("system");
    row.collective = field("collective");
    if (!is_known_collective(row.collective)) {
      reader.bad(record, "collective", "unknown collective; valid: " + known_collective_names());
    }
    row.algorithm = field("algorithm");
    row.gpus = reader.count_or_zero(record, "gpus");
    reader.count_or_zero(record, "nodes");  // checked; the setup comes from the system (SOURCES.md)
    const double size_bytes = reader.number_or_zero(record, "size_bytes");
    if (size_bytes < 0 || size_bytes != std::floor(size_bytes)) {
      reader.bad(record, "size_bytes", "expected a whole number of bytes >= 0 (empty when the source does not give it)");
    }
    if (size_bytes > static_cast<double>(kMaxCollectiveBytes)) {
      reader.bad(record, "size_bytes",
                 fmt::format("out of range; valid: at most {} bytes (1 TiB, as collective -e)", kMaxCollectiveBytes));
    }
    row.size_bytes = static_cast<int64_t>(size_bytes);
    const double time_us = reader.number_or_zero(record, "time_us");
    if (time_us < 0 || (time_us == 0 && !reader.text(record, "time_us").empty())) {
      reader.bad(record, "time_us", "a measured time is > 0 us; leave the field empty when the source gives only busbw");
    }
    const double busbw = reader.number_or_zero(record, "busbw_GBps");
    if (busbw < 0) {
      reader.bad(record, "busbw_GBps", "a bus bandwidth is >= 0 GB/s; leave the field empty when the source gives none");
    }
    row.measured_is_time = time_us > 0;
    row.measured = row.measured_is_time ? time_us : busbw;
    std::string reason;
    const auto setup = setup_for(row, field("bw_definition"), &reason);
    if (!setup || row.measured <= 0) {
      row.not_compared = setup ? "no measured value" : reason;
      validation.rows.push_back(std::move(row));
      continue;
    }
    const SimulatedCollective simulated = simulate(*setup, catalog);
    const int ranks = setup->nodes * (setup->gpus_per_node > 0 ? setup->gpus_per_node : catalog.node(setup->node).gpus);
    const double algbw = static_cast<double>(setup->size) / simulated.time.to_seconds() * 1e-9;
    row.simulated = row.measured_is_time ? simulated.time.to_microseconds()
                                         : algbw * bus_bandwidth_factor(setup->op, ranks);
    row.error = row.simulated / row.measured - 1.0;
    row.compared = true;
    row.setup = setup->note + (setup->algorithm == CollectiveAlgorithm::kAuto
                                   ? ", algorithm auto"
                                   : fmt::format(", {} forced", name_of(setup->algorithm)));
    if (row.size_bytes == 0) row.setup += fmt::format(", simulated at {}", size_text(setup->size));
    row.simulated_choice = fmt::format("{}/{}", name_of(simulated.choice.algorithm), name_of(simulated.choice.protocol));
    all_errors.push_back(std::abs(row.error));
    if (row.size_bytes >= (int64_t{64} << 20)) large_errors.push_back(std::abs(row.error));
    validation.rows.push_back(std::move(row));
  }
  validation.median_error_large = median_or_zero(large_errors);
  validation.large_rows = static_cast<int>(large_errors.size());
  validation.median_error_all = median_or_zero(all_errors);
  validation.compared_rows = static_cast<int>(all_errors.size());
  return validation;
}

std::string collective_validation_command(const std::string& csv_path, const std::string& out_path) {
  std::string command = "clustersim validate --collectives " + csv_path;
  if (!out_path.empty()) command += " --out " + out_path;
  return command;
}

void write_collective_validation(const CollectiveValidation& validation, const std::string& command,
                                 std::ostream& out) {
  out << "# Collectives: simulated against published measurements\n\n";
  out << fmt::format("Generated by `{}` (tools/validation/collective_validation.cc) from `{}`; setups per "
                     "`docs/validation/published/SOURCES.md`. Do not edit by hand.\n\n",
                     command, validation.csv_path);
  out << "Each comparable row is simulated alone on an idle cluster built from the hardware presets\n"
         "(`scenarios/hardware/`), flow fidelity, before any calibration: datasheet bandwidths with the\n"
         "documented transport efficiencies of `collectives/link_efficiency.h` and NCCL's latency model\n"
         "(`collectives/protocol.h`). Where a row names the algorithm NCCL ran (`NCCL_NVLS_ENABLE=0`,\n"
         "`NVLS`), that algorithm is forced; otherwise the selector chooses. Rows that give only a\n"
         "large-message plateau (GTC slides) are simulated at 8 GiB. Error = simulated / measured − 1 on\n"
         "the row's measured quantity: time when the row has one, else nccl-tests busbw.\n\n";
  out << fmt::format("**Median |error|, rows with a stated size ≥ 64 MiB: {:.1f} % over {} rows** "
                     "(requirement: ≤ 15 %).  \n",
                     100 * validation.median_error_large, validation.large_rows);
  out << fmt::format("Median |error| over all {} compared rows (plateaus included): {:.1f} %.\n\n",
                     validation.compared_rows, 100 * validation.median_error_all);
  out << "| source | system | GPUs | collective | measured algorithm | size | measured | simulated | error | "
         "simulated algorithm | setup or reason not compared |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& row : validation.rows) {
    const std::string unit = row.measured_is_time ? " us" : " GB/s busbw";
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", short_source(row.source),
                       row.system, row.gpus > 0 ? std::to_string(row.gpus) : "—", row.collective,
                       row.algorithm.empty() ? "—" : row.algorithm, size_text(row.size_bytes),
                       row.measured > 0 ? fmt::format("{:.4g}{}", row.measured, unit) : "—",
                       row.compared ? fmt::format("{:.4g}{}", row.simulated, unit) : "—",
                       row.compared ? fmt::format("{:+.1f} %", 100 * row.error) : "—",
                       row.compared ? row.simulated_choice : "—", row.compared ? row.setup : row.not_compared);
  }
}

}  // namespace clustersim
