#include "tools/calibration/calibrate_fit.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <regex>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/input_file.h"
#include "scenarios/scenario.h"
#include "tools/calibration/median.h"
#include "tools/calibration/nccl_tests_log.h"
#include "tools/calibration/power_summary.h"

namespace clustersim {

namespace {

using calibrate::RawTable;

// Cell access with messages naming the file, the row and the column.
class Rows {
 public:
  explicit Rows(const RawTable& table) : table_(table) {}

  const std::string& text(size_t row, std::string_view column) const {
    return table_.rows[row][table_.column_index(column)];
  }
  double number(size_t row, std::string_view column) const {
    const std::string& cell = text(row, column);
    double value = 0;
    const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (ec != std::errc() || end != cell.data() + cell.size() || !std::isfinite(value)) {
      throw InputError(fmt::format("{}: column \"{}\": \"{}\" is not a number", table_.row_location(row),
                                   column, cell));
    }
    return value;
  }
  int64_t integer(size_t row, std::string_view column) const {
    const std::string& cell = text(row, column);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (ec != std::errc() || end != cell.data() + cell.size()) {
      throw InputError(fmt::format("{}: column \"{}\": \"{}\" is not an integer", table_.row_location(row),
                                   column, cell));
    }
    return value;
  }
  int64_t positive(size_t row, std::string_view column) const {
    const int64_t v = integer(row, column);
    if (v <= 0) {
      throw InputError(fmt::format("{}: column \"{}\": {} must be positive", table_.row_location(row), column,
                                   v));
    }
    return v;
  }
  Duration microseconds(size_t row, std::string_view column) const {
    const double us = number(row, column);
    if (us <= 0) {
      throw InputError(fmt::format("{}: column \"{}\": time {} us must be positive", table_.row_location(row), column, us));
    }
    return Duration::microseconds(us);
  }
  size_t size() const { return table_.rows.size(); }

 private:
  const RawTable& table_;
};


std::string kind_of(const RawTable& t) {
  const std::string* kind = t.find_metadata("kind");
  return kind == nullptr ? "" : *kind;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

CollectiveAlgorithm algorithm_of(const std::string& text, const std::string& where) {
  try {
    return parse_collective_algorithm(lower(text));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: algorithm: {}", where, e.what()));
  }
}

Protocol protocol_of(const std::string& text, const std::string& where) {
  if (lower(text) == "auto") return Protocol::kAuto;
  for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
    if (lower(std::string(name_of(p))) == lower(text)) return p;
  }
  throw InputError(fmt::format("{}: protocol \"{}\" (valid: auto, LL, LL128, Simple)", where, text));
}

std::string base_name(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();
  return p.has_extension() && !std::filesystem::is_directory(p) ? p.stem().string() : p.filename().string();
}

// --ranks and --nodes of a log in the ranges of a scenario's cluster: 1 to kMaxClusterNodes nodes
// of 1 to kMaxNodeGpus GPUs (ranks) each.
void check_rank_and_node_counts(const NcclTestsLogInput& log) {
  if (log.nodes < 1 || log.nodes > kMaxClusterNodes) {
    throw InputError(fmt::format("--nodes {} (for --nccl-tests-log {}) is out of range; valid: 1..{} (as "
                                 "cluster.nodes of a scenario)",
                                 log.nodes, log.path, kMaxClusterNodes));
  }
  const int64_t most_ranks = static_cast<int64_t>(log.nodes) * kMaxNodeGpus;
  if (log.ranks < log.nodes || log.ranks > most_ranks) {
    throw InputError(fmt::format("--ranks {} (for --nccl-tests-log {}) is out of range for --nodes {}; valid: "
                                 "{}..{} (each node runs 1 to {} ranks)",
                                 log.ranks, log.path, log.nodes, log.nodes, most_ranks, kMaxNodeGpus));
  }
}

}  // namespace

std::vector<NcclTestsLogInput> nccl_log_inputs(const std::vector<std::string>& paths, const std::vector<int>& ranks,
                                               const std::vector<int>& nodes, const std::vector<std::string>& ops,
                                               const std::vector<std::string>& algorithms,
                                               const std::vector<std::string>& protocols) {
  auto pick = [&paths](const auto& values, size_t i, const char* option, bool required) {
    using T = typename std::decay_t<decltype(values)>::value_type;
    if (values.empty()) {
      if (required && !paths.empty()) {
        throw InputError(fmt::format("{} is required with --nccl-tests-log (once per log, or once for all)", option));
      }
      return std::optional<T>();
    }
    if (values.size() != 1 && values.size() != paths.size()) {
      throw InputError(fmt::format("{} given {} times for {} --nccl-tests-log files (give it once per log, or once "
                                   "for all)",
                                   option, values.size(), paths.size()));
    }
    return std::optional<T>(values[values.size() == 1 ? 0 : i]);
  };
  std::vector<NcclTestsLogInput> out;
  for (size_t i = 0; i < paths.size(); ++i) {
    NcclTestsLogInput in;
    in.path = paths[i];
    in.ranks = *pick(ranks, i, "--ranks", true);
    in.nodes = *pick(nodes, i, "--nodes", true);
    check_rank_and_node_counts(in);
    if (auto op = pick(ops, i, "--nccl-op", false)) in.op = *op;
    if (auto a = pick(algorithms, i, "--nccl-algo", false)) in.algorithm = *a;
    if (auto p = pick(protocols, i, "--nccl-proto", false)) in.protocol = *p;
    out.push_back(in);
  }
  if (paths.empty() && (!ranks.empty() || !nodes.empty())) {
    throw InputError("--ranks and --nodes describe --nccl-tests-log files; none was given");
  }
  return out;
}

std::vector<GemmSample> fit_gemm_samples(const RawTable& gemm) { return fit_gemm_samples(std::vector{&gemm}); }

std::vector<GemmSample> fit_gemm_samples(const std::vector<const RawTable*>& tables) {
  // (dtype, m, n, k) → times of every measurement of that shape.
  std::map<std::tuple<int, int64_t, int64_t, int64_t>, std::vector<double>> times;
  for (const RawTable* table : tables) {
  const RawTable& gemm = *table;
  const Rows rows(gemm);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows.text(i, "status") != "ok") continue;
    if (rows.text(i, "layout") != "TN") {
      throw InputError(fmt::format("{}: layout \"{}\" (this fit reads cuBLAS \"TN\" samples)", gemm.row_location(i), rows.text(i, "layout")));
    }
    DataType dtype;
    try {
      dtype = parse_data_type(rows.text(i, "dtype"));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: dtype: {}", gemm.row_location(i), e.what()));
    }
    // cuBLAS TN (M, N, K), column-major D[M, N] = Aᵀ B with A stored K × M and B K × N, is the
    // row-major D'[N, M] = B'[N, K] · A'[M, K]ᵀ: a linear layer over N tokens with M outputs.
    const int64_t m_c = rows.positive(i, "m");
    const int64_t n_c = rows.positive(i, "n");
    const int64_t k_c = rows.positive(i, "k");
    times[{static_cast<int>(dtype), n_c, m_c, k_c}].push_back(rows.microseconds(i, "median_us").to_microseconds());
  }
  }
  std::vector<GemmSample> samples;
  for (const auto& [key, t] : times) {
    const auto& [dtype, m, n, k] = key;
    samples.push_back({GemmShape{m, n, k, 1, static_cast<DataType>(dtype), false}, Duration::microseconds(median(t))});
  }
  return samples;
}

Bandwidth fit_copy_bandwidth(const RawTable& memory) {
  const Rows rows(memory);
  std::vector<double> rates;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows.text(i, "test") == "d2d_copy" && rows.text(i, "status") == "ok") {
      rates.push_back(rows.number(i, "bandwidth_gbps"));
    }
  }
  if (rates.empty()) throw InputError(fmt::format("{}: no d2d_copy rows with status ok", memory.source));
  const double fastest = *std::max_element(rates.begin(), rates.end());
  std::vector<double> plateau;
  for (double r : rates) {
    if (r >= 0.95 * fastest) plateau.push_back(r);
  }
  return Bandwidth::gigabytes_per_s(median(plateau));
}

LaunchOverhead fit_launch_overhead(const RawTable& launch) {
  const Rows rows(launch);
  std::optional<Duration> eager, graph;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows.text(i, "test") == "eager_device") eager = rows.microseconds(i, "median_us");
    if (rows.text(i, "test") == "graph_device") graph = rows.microseconds(i, "median_us");
  }
  if (!eager || !graph) {
    throw InputError(fmt::format("{}: needs the eager_device and graph_device rows", launch.source));
  }
  return {*eager, *graph};
}

std::optional<MemoryAccess> kind_of_framework_test(std::string_view test) {
  static const std::map<std::string_view, MemoryAccess> kTests{
      {"copy_bf16", MemoryAccess::kElementwise},
      {"add_bf16", MemoryAccess::kElementwise},
      {"add_fp32", MemoryAccess::kElementwise},
      {"gelu_tanh_bf16", MemoryAccess::kElementwise},
      {"cast_fp32_to_bf16", MemoryAccess::kElementwise},
      {"cast_bf16_to_fp32", MemoryAccess::kWideningCast},
      {"add_bf16_fp32", MemoryAccess::kWideningCast},
      {"add_bias_bf16_fp32", MemoryAccess::kBroadcast},
      {"silu_chunk_bf16", MemoryAccess::kStrided},
      {"mul_chunk_bf16", MemoryAccess::kStrided},
      {"cat_halves_bf16", MemoryAccess::kConcatenation},
      {"layer_norm_fp32", MemoryAccess::kNormalization},
      {"rms_norm_fp32", MemoryAccess::kNormalization},
      {"layer_norm_backward_fp32", MemoryAccess::kNormalizationBackward},
      {"sum_rows_fp32", MemoryAccess::kReduction},
      {"log_softmax_fp32", MemoryAccess::kSoftmax},
      {"adamw_fused_fp32", MemoryAccess::kFusedOptimizer},
  };
  auto it = kTests.find(test);
  if (it == kTests.end()) return std::nullopt;
  return it->second;
}

std::map<MemoryAccess, Bandwidth> fit_kernel_bandwidths(const RawTable& framework) {
  const Rows rows(framework);
  std::map<MemoryAccess, std::vector<double>> rates;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (auto kind = kind_of_framework_test(rows.text(i, "test"))) {
      const double gbps = rows.number(i, "bandwidth_gbps");
      if (gbps <= 0) {
        throw InputError(fmt::format("{}: bandwidth_gbps {} must be positive", framework.row_location(i),
                                     gbps));
      }
      rates[*kind].push_back(gbps);
    }
  }
  std::map<MemoryAccess, Bandwidth> out;
  for (const auto& [kind, r] : rates) out[kind] = Bandwidth::gigabytes_per_s(median(r));
  return out;
}

std::vector<AttentionSample> fit_attention_samples(const RawTable& attention) {
  const Rows rows(attention);
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t, int64_t>, AttentionSample> by_shape;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows.text(i, "causal") != "true") {
      throw InputError(fmt::format("{}: causal \"{}\" (the attention model is causal)", attention.row_location(i), rows.text(i, "causal")));
    }
    const std::string kernel = rows.text(i, "test") == "sdpa_flash" ? "sdpa-flash" : rows.text(i, "test");
    AttentionShape shape{rows.positive(i, "batch"), rows.positive(i, "heads"), rows.positive(i, "kv_heads"),
                         rows.positive(i, "seq"), rows.positive(i, "head_dim"), DataType::kBf16};
    validate_attention_shape(shape, attention.row_location(i));
    AttentionSample& s = by_shape[{kernel, shape.batch, shape.heads, shape.kv_heads, shape.seq, shape.head_dim}];
    s.kernel = kernel;
    s.shape = shape;
    const std::string& direction = rows.text(i, "direction");
    if (direction == "forward") {
      s.forward = rows.microseconds(i, "median_us");
    } else if (direction == "backward") {
      s.backward = rows.microseconds(i, "median_us");
    } else {
      throw InputError(fmt::format("{}: direction \"{}\" (valid: forward, backward)", attention.row_location(i), direction));
    }
  }
  std::vector<AttentionSample> out;
  for (const auto& [key, s] : by_shape) {
    if (s.forward.ps() <= 0 || s.backward.ps() <= 0) {
      throw InputError(fmt::format("{}: {} b{} h{}/{} s{} d{} has no {} row", attention.source, s.kernel, s.shape.batch,
                                   s.shape.heads, s.shape.kv_heads, s.shape.seq, s.shape.head_dim,
                                   s.forward.ps() <= 0 ? "forward" : "backward"));
    }
    out.push_back(s);
  }
  return out;
}

MachineDescription machine_of(const RawTable& table) {
  MachineDescription m;
  auto get = [&](std::string_view key) {
    const std::string* v = table.find_metadata(key);
    return v == nullptr ? std::string() : *v;
  };
  auto integer = [&](std::string_view key) {
    const std::string v = get(key);
    int value = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    return ec == std::errc() && end == v.data() + v.size() && value > 0 ? value : 0;
  };
  m.gpu = get("gpu_name");
  m.sm_count = integer("sm_count");
  m.sm_clock_mhz = integer("sm_clock_max_mhz");
  m.memory_clock_mhz = integer("memory_clock_max_mhz");
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
  const std::string driver = get("driver");
  std::smatch version;
  if (std::regex_search(driver, version, std::regex(R"((\d+\.\d+(\.\d+)?))"))) m.driver = version.str(1);
  m.cuda = get("cuda_runtime");
  m.cublas = get("cublaslt_version");
  m.nccl = get("nccl_version");
  const std::string date = get("date_utc");
  m.date = date.substr(0, std::min<size_t>(10, date.size()));
  return m;
}

std::vector<CollectiveMeasurement> collective_measurements(const RawTable& nccl) {
  std::vector<CollectiveMeasurement> out;
  if (nccl.find_metadata("skipped") != nullptr) return out;
  const Rows rows(nccl);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows.text(i, "status") != "ok") continue;
    const std::string where = nccl.row_location(i);
    CollectiveMeasurement m;
    try {
      m.op = parse_collective_op(rows.text(i, "collective"));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: collective: {}", where, e.what()));
    }
    m.algorithm = algorithm_of(rows.text(i, "algo"), where);
    m.protocol = protocol_of(rows.text(i, "proto"), where);
    m.ranks = static_cast<int>(rows.positive(i, "nranks"));
    m.nodes = static_cast<int>(rows.positive(i, "nodes"));
    const int64_t size = rows.integer(i, "size_bytes");
    if (size <= 0) throw InputError(fmt::format("{}: size_bytes {} must be positive", where, size));
    m.size = Bytes::of(size);
    m.time = rows.microseconds(i, "time_us");
    out.push_back(m);
  }
  return out;
}

std::vector<CollectiveMeasurement> collective_measurements(const NcclTestsLogInput& input) {
  check_rank_and_node_counts(input);
  const NcclTestsLog log = read_nccl_tests_log(input.path);
  std::optional<CollectiveOp> op = log.op;
  if (!input.op.empty()) {
    try {
      op = parse_collective_op(input.op);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--nccl-op: {}", e.what()));
    }
  }
  if (!op) {
    throw InputError(fmt::format("{}: the log does not name its test (e.g. all_reduce_perf); give --nccl-op "
                                 "(all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv)",
                                 input.path));
  }
  if (log.listed_ranks > 0 && log.listed_ranks != input.ranks) {
    throw InputError(fmt::format("{}: the log lists {} ranks but --ranks is {}", input.path, log.listed_ranks,
                                 input.ranks));
  }
  if (!log.hosts.empty() && static_cast<int>(log.hosts.size()) != input.nodes) {
    throw InputError(fmt::format("{}: the log's ranks run on {} hosts but --nodes is {}", input.path, log.hosts.size(),
                                 input.nodes));
  }
  const CollectiveAlgorithm algorithm = algorithm_of(input.algorithm, "--nccl-algo");
  const Protocol protocol = protocol_of(input.protocol, "--nccl-proto");
  std::vector<CollectiveMeasurement> out;
  for (const NcclTestsRow& row : log.rows) {
    if (row.size.count() == 0) continue;  // nccl-tests' zero-size calls time only the launch
    out.push_back({*op, algorithm, protocol, input.ranks, input.nodes, row.size, row.out_of_place_time});
  }
  return out;
}

std::vector<CollectiveGroupFit> fit_collectives(const std::vector<CollectiveMeasurement>& measurements) {
  std::map<std::tuple<int, int, int, int, int>, std::vector<AlphaBetaPoint>> groups;
  for (const CollectiveMeasurement& m : measurements) {
    groups[{static_cast<int>(m.op), static_cast<int>(m.algorithm), static_cast<int>(m.protocol), m.ranks, m.nodes}]
        .push_back({m.size, m.time});
  }
  std::vector<CollectiveGroupFit> out;
  for (auto& [key, points] : groups) {
    const auto& [op, algorithm, protocol, ranks, nodes] = key;
    CollectiveGroupFit g;
    std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.size < b.size; });
    g.points = points;
    g.alpha_beta = fit_piecewise_alpha_beta(points);
    g.fit.op = static_cast<CollectiveOp>(op);
    g.fit.algorithm = static_cast<CollectiveAlgorithm>(algorithm);
    g.fit.protocol = static_cast<Protocol>(protocol);
    g.fit.ranks = ranks;
    g.fit.nodes = nodes;
    for (const AlphaBetaSegment& s : g.alpha_beta.segments) {
      g.fit.segments.push_back({s.min_size, s.max_size, s.latency, s.bandwidth});
    }
    out.push_back(std::move(g));
  }
  return out;
}

namespace {
// One raw-sample file of clustersim-calibrate, read with the input-size limit (a device, a pipe
// or a directory entry that is not a file is refused before reading).
RawTable read_raw_samples(const std::string& path) {
  std::istringstream in(read_input_file(path, "raw sample file"));
  return calibrate::read_raw_table(in, path);
}
}  // namespace

CalibrationProfile fit_calibration_profile(const CalibrateFitOptions& options, std::vector<std::string>* notes) {
  auto note = [notes](std::string line) {
    if (notes != nullptr) notes->push_back(std::move(line));
  };
  std::vector<RawTable> tables;
  for (const std::string& input : options.inputs) {
    if (std::filesystem::is_directory(input)) {
      std::vector<std::string> files;
      for (const auto& e : std::filesystem::directory_iterator(input)) {
        if (e.path().extension() == ".csv") files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());
      for (const std::string& f : files) tables.push_back(read_raw_samples(f));
    } else {
      tables.push_back(read_raw_samples(input));
    }
  }
  CalibrationProfile profile;
  profile.name = options.name.empty() && !options.inputs.empty() ? base_name(options.inputs.front()) : options.name;
  std::vector<CollectiveMeasurement> collectives;
  std::vector<std::string> methods;
  std::vector<const RawTable*> gemm_tables;
  for (const RawTable& t : tables) {
    const std::string kind = kind_of(t);
    if (!t.complete()) note(fmt::format("{}: written without `# complete: true` (cut short); its rows are used", t.source));
    // The machine description of the clustersim-calibrate files (they record driver and library
    // versions); another file's only when none has them.
    const bool described = t.find_metadata("driver") != nullptr;
    if (t.find_metadata("gpu_name") != nullptr && (profile.machine.gpu.empty() || (described && profile.machine.driver.empty()))) {
      profile.machine = machine_of(t);
    }
    if (kind == "gemm") {
      gemm_tables.push_back(&t);  // merged below: a shape swept several times is one sample
      note(fmt::format("{}: {} GEMM rows", t.source, Rows(t).size()));
    } else if (kind == "memory") {
      profile.copy_bandwidth = fit_copy_bandwidth(t);
      note(fmt::format("{}: copy bandwidth {}", t.source, to_string(*profile.copy_bandwidth)));
    } else if (kind == "launch") {
      const LaunchOverhead l = fit_launch_overhead(t);
      profile.launch_eager = l.eager;
      profile.launch_graph = l.graph;
      note(fmt::format("{}: launch eager {}, graph {}", t.source, to_string(l.eager), to_string(l.graph)));
    } else if (kind == "framework") {
      const Rows rows(t);
      for (size_t i = 0; i < rows.size(); ++i) {
        if (!kind_of_framework_test(rows.text(i, "test"))) {
          note(fmt::format("{}: test \"{}\" is not a known memory-access kind; ignored", t.source, rows.text(i, "test")));
        }
      }
      for (const auto& [access, bw] : fit_kernel_bandwidths(t)) profile.kernel_bandwidths[access] = bw;
      note(fmt::format("{}: {} framework kernel rates", t.source, profile.kernel_bandwidths.size()));
      methods.emplace_back("PyTorch kernel rates and SDPA flash attention (tools/calibrator/framework_benchmark.py)");
    } else if (kind == "attention") {
      const std::vector<AttentionSample> a = fit_attention_samples(t);
      profile.attention_samples.insert(profile.attention_samples.end(), a.begin(), a.end());
      note(fmt::format("{}: {} attention samples", t.source, a.size()));
    } else if (kind == "nccl") {
      const std::vector<CollectiveMeasurement> m = collective_measurements(t);
      if (const std::string* skipped = t.find_metadata("skipped")) {
        note(fmt::format("{}: skipped by the calibrator ({})", t.source, *skipped));
      }
      collectives.insert(collectives.end(), m.begin(), m.end());
    } else {
      note(fmt::format("{}: kind \"{}\" is not fitted; ignored", t.source, kind));
    }
  }
  if (!gemm_tables.empty()) {
    profile.gemm_samples = fit_gemm_samples(gemm_tables);
    note(fmt::format("{} GEMM samples from {} file(s): one per shape, the median of its sweeps",
                     profile.gemm_samples.size(), gemm_tables.size()));
    methods.emplace_back("cuBLASLt TN GEMMs replayed in CUDA graphs on inputs rotated over 3x the L2 cache, "
                         "median of batches (clustersim-calibrate)");
  }
  for (const NcclTestsLogInput& log : options.nccl_logs) {
    const std::vector<CollectiveMeasurement> m = collective_measurements(log);
    note(fmt::format("{}: {} nccl-tests rows", log.path, m.size()));
    collectives.insert(collectives.end(), m.begin(), m.end());
  }
  if (!collectives.empty()) {
    CollectiveProfile cp;
    cp.name = profile.name;
    for (const CollectiveGroupFit& g : fit_collectives(collectives)) {
      note(fmt::format("collectives: {} {} {} on {} ranks / {} nodes: {} points, {} size regimes, RMS error {:.1f} %",
                       name_of(g.fit.op), name_of(g.fit.algorithm), name_of(g.fit.protocol), g.fit.ranks, g.fit.nodes,
                       g.points.size(), g.fit.segments.size(), 100 * g.alpha_beta.rms_relative_error));
      cp.fits.push_back(g.fit);
    }
    profile.collectives_json = to_json(cp);
    methods.emplace_back("collectives: piecewise alpha-beta least squares of nccl-tests-style sweeps");
  }
  if (tables.empty() && options.nccl_logs.empty()) throw InputError("calibrate fit: no input files");
  if (profile.machine.gpu.empty()) {
    throw InputError("calibrate fit: no input names the GPU (metadata gpu_name); give clustersim-calibrate raw files");
  }
  if (profile.machine.sm_count <= 0) {
    throw InputError(fmt::format("calibrate fit: the raw files of {} give no sm_count", profile.machine.gpu));
  }
  for (const std::string& m : methods) {
    if (profile.machine.method.find(m) == std::string::npos) {
      profile.machine.method += (profile.machine.method.empty() ? "" : "; ") + m;
    }
  }
  if (!options.power.empty() && !options.power_summary.empty()) {
    throw InputError("calibrate fit: give --power (a power section) or --power-summary (a run's summary.json to "
                     "derive it from), not both");
  }
  if (!options.power.empty()) {
    profile.power = parse_profile_power(read_input_file(options.power, "power measurements"), options.power);
    if (profile.power->source.empty()) profile.power->source = options.power;
  }
  if (!options.power_summary.empty()) {
    profile.power = derive_profile_power(read_input_file(options.power_summary, "power and clock summary"),
                                         options.power_summary);
  }
  if (profile.power && notes != nullptr) {
    const ProfilePower& p = *profile.power;
    notes->push_back(fmt::format("power: limit {} W, idle {} W, held {} W, window {}, memory clock share {:g}; bf16 "
                                 "GEMMs settle at {:g} of {:.4g} TFLOP/s (from {})",
                                 p.power_limit.in_watts(), p.idle_power.in_watts(), p.held_power.in_watts(),
                                 to_string(p.window), p.memory_clock_share, p.gemm_bf16.settled_ratio,
                                 p.gemm_bf16.full_rate / 1e12,
                                 options.power_summary.empty() ? options.power : options.power_summary));
  }
  if (profile.name.empty()) throw InputError("calibrate fit: give --name");
  return profile;
}

int calibrate_fit_command(const CalibrateFitOptions& options, std::ostream& out) {
  if (options.out.empty()) throw InputError("calibrate fit: give --out PROFILE.json");
  std::vector<std::string> notes;
  const CalibrationProfile profile = fit_calibration_profile(options, &notes);
  save_calibration_profile(profile, options.out);
  out << fmt::format("calibration profile \"{}\" ({}, {}) written to {}\n", profile.name, profile.machine.gpu,
                     profile.machine.date.empty() ? "undated" : profile.machine.date, options.out);
  for (const std::string& n : notes) out << "  " << n << "\n";
  return 0;
}

}  // namespace clustersim
