#include "tools/calibrator/run_calibration.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <cuda_runtime_api.h>

#include "core/error.h"
#include "tools/calibrator/device_error.h"
#include "tools/calibrator/gemm_benchmark.h"
#include "tools/calibrator/launch_benchmark.h"
#include "tools/calibrator/machine_info.h"
#include "tools/calibrator/memory_benchmark.h"
#include "tools/calibrator/nccl_benchmark.h"
#include "tools/calibrator/sample_stats.h"

namespace clustersim::calibrate {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// An output file opened for writing; InputError naming the path when it cannot be.
std::ofstream open_output(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError("output file '" + path + "' cannot be written");
  return out;
}

std::string output_path(const CalibrateOptions& options, const char* kind) {
  if (options.mode == Mode::kAll) {
    const std::filesystem::path dir = options.out.empty() ? "." : options.out;
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) throw InputError("output directory '" + dir.string() + "' cannot be created: " + error.message());
    return (dir / (std::string(kind) + ".csv")).string();
  }
  return options.out.empty() ? std::string(kind) + ".csv" : options.out;
}

Metadata run_metadata(const CalibrateOptions& options, const std::string& command_line) {
  return {{"command", command_line},
          {"seconds_per_point", format_number(options.seconds_per_point)},
          {"min_samples", std::to_string(options.min_samples)},
          {"max_samples", std::to_string(options.max_samples)}};
}

Metadata concat(Metadata a, const Metadata& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string bytes_text(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30) && bytes % (int64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (int64_t{1} << 20) && bytes % (int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (int64_t{1} << 10) && bytes % (int64_t{1} << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

double median_us(const std::vector<double>& seconds) {
  std::vector<double> us;
  for (double s : seconds) us.push_back(s * 1e6);
  return summarize(us).median;
}

std::string row_text(const std::string& name, const std::string& value) {
  std::ostringstream line;
  line << "  " << std::left << std::setw(44) << name << value;
  return line.str();
}

// ---- GEMM ----
bool run_gemm(const CalibrateOptions& options, const Metadata& header, std::vector<std::string>& summary) {
  std::vector<GemmShape> shapes;
  if (options.builtin_shapes) {
    auto squares = square_shapes(options.dtypes, 256, options.max_square);
    auto misaligned = misaligned_shapes(options.dtypes);
    shapes.insert(shapes.end(), squares.begin(), squares.end());
    shapes.insert(shapes.end(), misaligned.begin(), misaligned.end());
  }
  if (options.grid_shapes) {
    auto grid = grid_shapes(DataType::kBf16);
    shapes.insert(shapes.end(), grid.begin(), grid.end());
  }
  if (!options.shapes_file.empty()) {
    auto listed = read_gemm_shapes_file(options.shapes_file);
    shapes.insert(shapes.end(), listed.begin(), listed.end());
  }
  if (shapes.empty()) throw InputError("no GEMM shapes to time: --no-builtin-shapes needs --shapes FILE");

  GemmBenchmark bench(options.device, timing_policy(options));
  std::vector<GemmCheck> checks;
  std::vector<DataType> checked;
  for (const GemmShape& s : shapes) {
    if (std::find(checked.begin(), checked.end(), s.dtype) != checked.end()) continue;
    checked.push_back(s.dtype);
    for (GemmCheck& c : bench.check(s.dtype)) {
      std::cout << "gemm check " << gemm_data_type_name(c.shape.dtype) << " " << c.shape.m << "x" << c.shape.n << "x"
                << c.shape.k << ": rel_err " << format_number(c.relative_error, 3) << " (tol "
                << format_number(c.tolerance, 3) << ") " << (c.passed ? "pass" : "FAIL " + c.message) << "\n";
      checks.push_back(std::move(c));
    }
  }
  const bool all_passed = std::all_of(checks.begin(), checks.end(), [](const GemmCheck& c) { return c.passed; });

  const std::string path = output_path(options, "gemm");
  std::ofstream out = open_output(path);
  RawTableWriter writer(out, "gemm", concat(header, gemm_check_metadata(checks)), gemm_columns());
  const auto start = Clock::now();
  std::vector<GemmMeasurement> results;
  for (const GemmShape& shape : shapes) {
    GemmMeasurement m = bench.measure(shape);
    writer.add_row(gemm_row(m));
    std::cout << "gemm " << std::setw(4) << gemm_data_type_name(shape.dtype) << " " << shape.m << "x" << shape.n << "x"
              << shape.k << " " << m.status;
    if (!m.seconds.empty()) {
      std::cout << " " << format_number(median_us(m.seconds), 4) << " us "
                << format_number(shape.flops() / median_us(m.seconds) * 1e-6, 4) << " TFLOP/s";
    }
    std::cout << "\n";
    results.push_back(std::move(m));
  }
  writer.finish({{"elapsed_s", format_number(seconds_since(start), 4)}});

  summary.push_back("GEMM (cuBLASLt heuristic, TN, median)      TFLOP/s   [" + path + "]");
  for (DataType type : options.dtypes) {
    const GemmMeasurement* best = nullptr;
    const GemmMeasurement* misaligned = nullptr;
    for (const GemmMeasurement& m : results) {
      if (m.shape.dtype != type || m.seconds.empty()) continue;
      const double tflops = m.shape.flops() / median_us(m.seconds) * 1e-6;
      if (m.shape.set == "square" && (best == nullptr || tflops > best->shape.flops() / median_us(best->seconds) * 1e-6))
        best = &m;
      if (m.shape.set == "misaligned" && m.shape.m == 4091) misaligned = &m;
    }
    const std::string name(gemm_data_type_name(type));
    if (best != nullptr) {
      summary.push_back(row_text(name + " best square " + std::to_string(best->shape.m) + "^3",
                                 format_number(best->shape.flops() / median_us(best->seconds) * 1e-6, 4)));
    }
    if (misaligned != nullptr) {
      summary.push_back(row_text(name + " 4091^3 (misaligned)",
                                 format_number(misaligned->shape.flops() / median_us(misaligned->seconds) * 1e-6, 4)));
    }
  }
  std::map<std::string, int> by_status;
  for (const GemmMeasurement& m : results) ++by_status[m.status];
  std::string statuses;
  for (const auto& [status, n] : by_status) statuses += (statuses.empty() ? "" : ", ") + status + " " + std::to_string(n);
  summary.push_back(row_text("shapes", statuses));
  for (const GemmMeasurement& m : results) {
    if (m.status == "ok") continue;
    summary.push_back(row_text("  not run: " + std::string(gemm_data_type_name(m.shape.dtype)) + " " +
                                   std::to_string(m.shape.m) + "x" + std::to_string(m.shape.n) + "x" +
                                   std::to_string(m.shape.k),
                               m.status));
  }
  const auto passed = std::count_if(checks.begin(), checks.end(), [](const GemmCheck& c) { return c.passed; });
  summary.push_back(row_text("correctness checks passed", std::to_string(passed) + "/" + std::to_string(checks.size())));
  return all_passed;
}

// ---- memory ----
void run_memory(const CalibrateOptions& options, const Metadata& header, std::vector<std::string>& summary) {
  const std::vector<int64_t> sizes = geometric_sizes(int64_t{1} << 20, options.memory_max_bytes);
  MemoryBenchmark bench(options.device, timing_policy(options), sizes.back());
  const std::string path = output_path(options, "memory");
  std::ofstream out = open_output(path);
  RawTableWriter writer(out, "memory", header, memory_columns());
  const auto start = Clock::now();
  summary.push_back("Memory (median; bytes read + written)      GB/s      [" + path + "]");
  for (MemoryTest test : all_memory_tests()) {
    double best = 0;
    int64_t best_size = 0;
    for (int64_t size : sizes) {
      MemoryMeasurement m = bench.measure(test, size);
      writer.add_row(memory_row(m));
      if (m.seconds.empty()) continue;
      const double gbps = static_cast<double>(memory_bytes_moved(test, size)) / median_us(m.seconds) * 1e-3;
      std::cout << "memory " << memory_test_name(test) << " " << bytes_text(size) << " " << format_number(gbps, 4)
                << " GB/s\n";
      if (gbps > best) {
        best = gbps;
        best_size = size;
      }
    }
    summary.push_back(row_text(std::string(memory_test_name(test)) + " best (at " + bytes_text(best_size) + ")",
                               format_number(best, 4)));
  }
  writer.finish({{"elapsed_s", format_number(seconds_since(start), 4)}});
}

// ---- launch ----
void run_launch(const CalibrateOptions& options, const Metadata& header, std::vector<std::string>& summary) {
  const std::string path = output_path(options, "launch");
  std::ofstream out = open_output(path);
  RawTableWriter writer(out, "launch", header, launch_columns());
  const int64_t samples = std::max<int64_t>(options.min_samples, 10);
  const auto results = measure_launch_overhead(options.device, samples, 1000);
  summary.push_back("Kernel launch (empty kernel, median)       us        [" + path + "]");
  for (const LaunchMeasurement& m : results) {
    writer.add_row(launch_row(m));
    summary.push_back(row_text(m.test, format_number(median_us(m.seconds), 3)));
  }
  writer.finish();
}

// ---- NCCL ----
bool run_nccl(const CalibrateOptions& options, ProcessGroup& group, const Metadata& header,
              std::vector<std::string>& summary) {
  const bool root = group.rank() == 0;
  const std::string path = root ? output_path(options, "nccl") : "";
  std::ofstream out;
  std::unique_ptr<RawTableWriter> writer;
  if (root) {
    out = open_output(path);
    writer = std::make_unique<RawTableWriter>(out, "nccl", concat(header, nccl_metadata(group)), nccl_columns());
  }
  const auto start = Clock::now();
  const NcclRunResult result = run_nccl_benchmarks(options, group, writer.get());
  if (!root) return result.check_passed;
  if (result.skipped) {
    std::cout << "nccl: skipped: " << result.skip_reason << "\n";
    writer->finish({{"skipped", result.skip_reason}});
    summary.push_back("NCCL: skipped: " + result.skip_reason);
    return true;
  }
  writer->finish({{"check", result.check_passed ? "pass" : "FAIL"},
                  {"elapsed_s", format_number(seconds_since(start), 4)}});
  summary.push_back("NCCL (auto setting, median)                 busbw GB/s at the largest size; time at the smallest  [" +
                    path + "]");
  for (Collective c : options.collectives) {
    const NcclMeasurement* smallest = nullptr;
    const NcclMeasurement* largest = nullptr;
    for (const NcclMeasurement& m : result.measurements) {
      if (m.collective != c || m.setting.algo != "auto" || m.seconds.empty()) continue;
      if (smallest == nullptr) smallest = &m;
      largest = &m;
    }
    if (largest == nullptr) continue;
    const double busbw = static_cast<double>(largest->size_bytes) / median_us(largest->seconds) * 1e-3 *
                         bus_bandwidth_factor(c, largest->nranks);
    summary.push_back(row_text(std::string(collective_name(c)) + " " + std::to_string(largest->nranks) + " ranks",
                               format_number(busbw, 4) + " GB/s at " + bytes_text(largest->size_bytes) + "; " +
                                   format_number(median_us(smallest->seconds), 3) + " us at " +
                                   bytes_text(smallest->size_bytes)));
  }
  summary.push_back(row_text("check", result.check_passed ? "pass" : "FAIL"));
  return result.check_passed;
}

}  // namespace

int run_calibration(const CalibrateOptions& options, ProcessGroup& group, const std::string& command_line) {
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (options.device >= devices) {
    throw InputError("--device " + std::to_string(options.device) + " does not exist; this machine has " +
                     std::to_string(devices) + " GPU(s): 0.." + std::to_string(devices - 1));
  }
  const bool root = group.rank() == 0;
  const int device = group.size() == 1 ? options.device : group.local_rank() % devices;
  const Metadata machine = describe_machine(device);
  if (options.mode == Mode::kInfo) {
    if (root) {
      for (const auto& [key, value] : machine) std::cout << key << ": " << value << "\n";
      std::cout << "process_group: " << group.description() << "\n";
    }
    return 0;
  }
  const Metadata header = concat(machine, run_metadata(options, command_line));
  const auto start = Clock::now();
  std::vector<std::string> summary;
  bool passed = true;
  const bool all = options.mode == Mode::kAll;
  if (root) {
    if (all || options.mode == Mode::kGemm) passed = run_gemm(options, header, summary) && passed;
    if (all || options.mode == Mode::kMemory) run_memory(options, header, summary);
    if (all || options.mode == Mode::kLaunch) run_launch(options, header, summary);
  }
  group.barrier();
  if (all || options.mode == Mode::kNccl) passed = run_nccl(options, group, header, summary) && passed;
  if (root) {
    std::cout << "\n== clustersim-calibrate summary: " << machine.front().second << ", "
              << format_number(seconds_since(start), 4) << " s ==\n";
    for (const std::string& line : summary) std::cout << line << "\n";
    if (!passed) std::cout << "A CORRECTNESS CHECK FAILED: see the check_* lines of the files\n";
  }
  return passed ? 0 : 1;
}

}  // namespace clustersim::calibrate
