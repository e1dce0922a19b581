#pragma once

// Command line of clustersim-calibrate. Plain argument parsing (no CLI11), because the program
// must build on GPU machines that have only the CUDA toolkit.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/data_type.h"
#include "tools/calibrator/collective_sizes.h"

namespace clustersim::calibrate {

enum class Mode { kInfo, kGemm, kMemory, kLaunch, kNccl, kAll };

// "info", "gemm", "memory", "launch", "nccl", "all".
std::string_view mode_name(Mode mode);

struct CalibrateOptions {
  Mode mode = Mode::kAll;
  // A file for one kind (default "<kind>.csv"), a directory for `all` (default ".").
  std::string out;
  // GEMMs: built-in sets and an optional shapes file.
  std::string shapes_file;
  bool builtin_shapes = true;            // squares and misaligned sizes for every type
  bool grid_shapes = true;               // the 27-shape bf16 grid
  std::vector<DataType> dtypes;          // default: every type of gemm_data_types()
  int64_t max_square = 16384;            // largest built-in square size (power of two)
  // Memory sweep 1 MiB .. memory_max_bytes (×2 steps).
  int64_t memory_max_bytes = int64_t{4} << 30;
  // NCCL sweep nccl_min_bytes .. nccl_max_bytes (×2 steps); forced algorithm/protocol settings
  // only up to nccl_forced_max_bytes.
  int64_t nccl_min_bytes = 8;
  int64_t nccl_max_bytes = int64_t{8} << 30;
  int64_t nccl_forced_max_bytes = int64_t{1} << 30;
  bool nccl_forced = true;
  std::vector<Collective> collectives;   // default: all_collectives()
  // Timing effort: seconds spent per measured point, and the sample-count bounds.
  double seconds_per_point = 0.25;
  int64_t min_samples = 5;
  int64_t max_samples = 50;
  int device = 0;  // GPU for gemm, memory and launch
  bool help = false;
};

// Parses argv[1..]. Sizes take nccl-tests' suffixes K, M, G (binary: 1K = 1024 B). `--quick`
// sets smoke-test values (squares to 8192, no grid, memory to 256 MiB, NCCL to 64 MiB, forced
// settings to 1 MiB, 0.02 s per point, 3 samples minimum); options after it override them.
// Throws InputError naming the option, the value and what is valid.
CalibrateOptions parse_options(int argc, const char* const* argv);

// Parses "8", "64K", "1M", "8G" (binary multiples). Throws InputError naming `option`.
int64_t parse_size(std::string_view text, std::string_view option);

// The --help text.
std::string usage();

}  // namespace clustersim::calibrate
