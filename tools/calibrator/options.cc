#include "tools/calibrator/options.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "tools/calibrator/gemm_shapes.h"

namespace clustersim::calibrate {

namespace {

struct ModeName {
  Mode mode;
  std::string_view name;
};
constexpr std::array kModeNames{ModeName{Mode::kInfo, "info"},     ModeName{Mode::kGemm, "gemm"},
                                ModeName{Mode::kMemory, "memory"}, ModeName{Mode::kLaunch, "launch"},
                                ModeName{Mode::kNccl, "nccl"},     ModeName{Mode::kAll, "all"}};

Mode parse_mode(std::string_view text) {
  std::string valid;
  for (const auto& entry : kModeNames) {
    if (entry.name == text) return entry.mode;
    valid += (valid.empty() ? "" : ", ") + std::string(entry.name);
  }
  throw InputError("unknown mode '" + std::string(text) + "'; valid: " + valid);
}

std::vector<std::string_view> split_list(std::string_view text) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string_view::npos ? text.size() : comma;
    if (end > start) items.push_back(text.substr(start, end - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

int64_t parse_positive_integer(std::string_view text, std::string_view option) {
  int64_t value = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value <= 0) {
    throw InputError(std::string(option) + " '" + std::string(text) + "' must be a positive integer");
  }
  return value;
}

double parse_positive_seconds(std::string_view text, std::string_view option) {
  double value = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !(value > 0) || !std::isfinite(value) || value > 3600) {
    throw InputError(std::string(option) + " '" + std::string(text) +
                     "' must be a number of seconds in (0, 3600]");
  }
  return value;
}

void apply_quick(CalibrateOptions& options) {
  options.max_square = 8192;
  options.grid_shapes = false;
  options.memory_max_bytes = int64_t{256} << 20;
  options.nccl_max_bytes = int64_t{64} << 20;
  options.nccl_forced_max_bytes = int64_t{1} << 20;
  options.seconds_per_point = 0.02;
  options.min_samples = 3;
}

}  // namespace

std::string_view mode_name(Mode mode) {
  for (const auto& entry : kModeNames) {
    if (entry.mode == mode) return entry.name;
  }
  throw InternalError("mode_name: mode outside the table");
}

int64_t parse_size(std::string_view text, std::string_view option) {
  int64_t multiplier = 1;
  std::string_view digits = text;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K': multiplier = int64_t{1} << 10; break;
      case 'M': multiplier = int64_t{1} << 20; break;
      case 'G': multiplier = int64_t{1} << 30; break;
      default: break;
    }
    if (multiplier != 1) digits.remove_suffix(1);
  }
  int64_t value = 0;
  const auto* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || ec != std::errc() || ptr != end || value <= 0 ||
      value > std::numeric_limits<int64_t>::max() / multiplier) {
    throw InputError(std::string(option) + " '" + std::string(text) +
                     "' is not a size; expected a positive integer of bytes with an optional "
                     "suffix K, M or G (binary, as nccl-tests: 1K = 1024 B)");
  }
  return value * multiplier;
}

CalibrateOptions parse_options(int argc, const char* const* argv) {
  CalibrateOptions options;
  options.dtypes = gemm_data_types();
  options.collectives = all_collectives();
  bool mode_seen = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) throw InputError("option " + std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--quick") {
      apply_quick(options);
    } else if (arg == "--out") {
      options.out = value();
    } else if (arg == "--shapes") {
      options.shapes_file = value();
    } else if (arg == "--no-builtin-shapes") {
      options.builtin_shapes = false;
      options.grid_shapes = false;
    } else if (arg == "--no-grid") {
      options.grid_shapes = false;
    } else if (arg == "--dtypes") {
      options.dtypes.clear();
      for (auto item : split_list(value())) options.dtypes.push_back(parse_gemm_data_type(item, "--dtypes"));
      if (options.dtypes.empty()) throw InputError("--dtypes needs at least one of bf16, fp16, fp8, tf32, fp32");
    } else if (arg == "--max-square") {
      const auto text = value();
      options.max_square = parse_positive_integer(text, "--max-square");
      if ((options.max_square & (options.max_square - 1)) != 0 || options.max_square < 256 ||
          options.max_square > kMaxGemmDimension) {
        throw InputError("--max-square '" + std::string(text) + "' must be a power of two in [256, " +
                         std::to_string(kMaxGemmDimension) + "]");
      }
    } else if (arg == "--memory-max") {
      options.memory_max_bytes = parse_size(value(), "--memory-max");
    } else if (arg == "--nccl-min") {
      options.nccl_min_bytes = parse_size(value(), "--nccl-min");
    } else if (arg == "--nccl-max") {
      options.nccl_max_bytes = parse_size(value(), "--nccl-max");
    } else if (arg == "--nccl-forced-max") {
      options.nccl_forced_max_bytes = parse_size(value(), "--nccl-forced-max");
    } else if (arg == "--no-forced") {
      options.nccl_forced = false;
    } else if (arg == "--collectives") {
      options.collectives.clear();
      for (auto item : split_list(value())) options.collectives.push_back(parse_collective(item));
      if (options.collectives.empty()) throw InputError("--collectives needs at least one collective");
    } else if (arg == "--seconds-per-point") {
      options.seconds_per_point = parse_positive_seconds(value(), "--seconds-per-point");
    } else if (arg == "--min-samples") {
      options.min_samples = parse_positive_integer(value(), "--min-samples");
    } else if (arg == "--device") {
      const auto text = value();
      int64_t device = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), device);
      if (ec != std::errc() || ptr != text.data() + text.size() || device < 0 || device > 1023) {
        throw InputError("--device '" + std::string(text) + "' must be a GPU index in [0, 1023]");
      }
      options.device = static_cast<int>(device);
    } else if (!arg.empty() && arg[0] == '-') {
      throw InputError("unknown option '" + std::string(arg) + "'; see --help");
    } else if (!mode_seen) {
      options.mode = parse_mode(arg);
      mode_seen = true;
    } else {
      throw InputError("unexpected argument '" + std::string(arg) + "' after mode '" +
                       std::string(mode_name(options.mode)) + "'; see --help");
    }
  }
  if (!mode_seen && !options.help) {
    throw InputError("no mode given; expected one of info, gemm, memory, launch, nccl, all");
  }
  if (options.min_samples > options.max_samples) {
    throw InputError("--min-samples " + std::to_string(options.min_samples) + " must be <= " +
                     std::to_string(options.max_samples));
  }
  if (options.memory_max_bytes < (int64_t{1} << 20)) {
    throw InputError("--memory-max " + std::to_string(options.memory_max_bytes) +
                     " B must be at least 1M (the sweep starts at 1 MiB)");
  }
  if (options.nccl_min_bytes > options.nccl_max_bytes) {
    throw InputError("--nccl-min " + std::to_string(options.nccl_min_bytes) + " B exceeds --nccl-max " +
                     std::to_string(options.nccl_max_bytes) + " B");
  }
  return options;
}

std::string usage() {
  return R"(clustersim-calibrate MODE [options]
Measures GEMM (cuBLASLt), memory bandwidth, kernel-launch overhead and NCCL collectives on this
machine's GPUs and writes raw samples for `clustersim calibrate fit`.

Modes:
  info     print the machine description
  gemm     cuBLASLt GEMMs: bf16, fp16, fp8 (e4m3), tf32, fp32; squares, misaligned sizes, a bf16
           grid, and the shapes of --shapes FILE
  memory   device copy and an elementwise kernel 1 MiB .. --memory-max; host<->device pinned and
           pageable
  launch   empty-kernel launch overhead, eager and replayed from a CUDA graph
  nccl     all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, send_recv over every local
           GPU (or one GPU per MPI process in clustersim-calibrate-mpi); automatic and forced
           NCCL_ALGO/NCCL_PROTO
  all      everything above, one file per kind in the --out directory, and a summary table

Options:
  --out PATH               output file (one kind; default KIND.csv) or directory (all; default .)
  --shapes FILE            also time the GEMMs listed in FILE (lines `M N K dtype [label]`)
  --no-builtin-shapes      time only the --shapes GEMMs
  --no-grid                skip the 27-shape bf16 grid
  --dtypes LIST            comma list of bf16,fp16,fp8,tf32,fp32 (default all)
  --max-square N           largest square GEMM, a power of two (default 16384)
  --memory-max SIZE        largest memory-sweep size (default 4G)
  --nccl-min SIZE          smallest NCCL size (default 8)
  --nccl-max SIZE          largest NCCL size (default 8G; capped by free GPU memory)
  --nccl-forced-max SIZE   largest size for forced algorithm/protocol settings (default 1G)
  --no-forced              automatic NCCL selection only
  --collectives LIST       comma list (default all_reduce,all_gather,reduce_scatter,broadcast,
                           all_to_all,send_recv)
  --seconds-per-point S    time budget of one measured point (default 0.25)
  --min-samples N          fewest timed samples per point (default 5)
  --device N               GPU for gemm, memory and launch (default 0)
  --quick                  smoke-test settings (small sweeps, few samples)
  --help                   this text
Sizes take nccl-tests' suffixes K, M, G (binary). Exit codes: 0 ok, 2 bad input, 1 failure.
)";
}

}  // namespace clustersim::calibrate
