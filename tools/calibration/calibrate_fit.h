#pragma once

// `clustersim calibrate fit RAW_DIR_OR_FILES... --out PROFILE.json [--name NAME]
//      [--nccl-tests-log FILE --ranks N --nodes M [--nccl-op OP] [--nccl-algo A] [--nccl-proto P]]...`
//
// Turns raw samples of clustersim-calibrate (tools/calibrator/README.md) and of
// tools/calibrator/framework_benchmark.py, and nccl-tests text logs, into a calibration profile
// (cost_models/calibration_profile.md):
//   gemm.csv       every `ok` row a GEMM sample; a cuBLAS "TN" GEMM (M, N, K) is clustersim's
//                  GemmShape{m = N, n = M, k = K}: the row-major y[N, M] = x[N, K] · W[M, K]ᵀ that a
//                  framework issues as that call (so the leading dimensions, K and M, keep their
//                  alignment class); repeated shapes are merged into their median time;
//   memory.csv     copy bandwidth = the median of the device-to-device copy rates on their plateau
//                  (rows within 5 % of the fastest: large copies driven by the SMs; cudaMemcpy of
//                  512 MiB and more moved to the copy engines at 2.8 TB/s on the H200, excluded);
//   launch.csv     eager = `eager_device` (device time per back-to-back eager launch), graph =
//                  `graph_device` (per kernel replayed from a CUDA graph);
//   framework.csv  the rate of each memory-access kind (cost_models/memory_access.h): the median
//                  bandwidth of its tests (kind_of_framework_test());
//   attention.csv  SDPA flash attention samples (forward and backward of each shape);
//   nccl.csv and nccl-tests logs: per (op, algorithm, protocol, ranks, nodes) a piecewise α–β
//                  least-squares fit (cost_models/alpha_beta_fit.h: at most 3 size regimes, chosen
//                  by the documented rule), written as the profile's collectives section
//                  (collectives/collective_profile.h; "auto" algorithm/protocol for sweeps where NCCL
//                  chose). Out-of-place times of nccl-tests are used (in-place runs the same
//                  algorithm on aliased buffers).
// The machine description comes from the raw files' metadata. A directory contributes each
// *.csv whose `kind` is one of the above.

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "collectives/collective.h"
#include "collectives/collective_profile.h"
#include "cost_models/alpha_beta_fit.h"
#include "cost_models/calibration_profile.h"
#include "tools/calibrator/raw_table.h"

namespace clustersim {

struct NcclTestsLogInput {
  std::string path;
  int ranks = 0;                 // GPUs in the test (required)
  int nodes = 0;                 // nodes they span (required)
  std::string op;                // collective, when the log does not name its binary ("" = from the log)
  std::string algorithm = "auto";  // NCCL_ALGO the log was run with (ring, tree, ...) or auto
  std::string protocol = "auto";   // NCCL_PROTO (LL, LL128, Simple) or auto
};

struct CalibrateFitOptions {
  std::vector<std::string> inputs;  // raw-sample directories or files
  std::vector<NcclTestsLogInput> nccl_logs;
  std::string out;                  // profile path
  std::string name;                 // profile name ("" = the first input's base name)
  // --power: a JSON file holding the profile's `power` section (cost_models/calibration_profile.h,
  // ProfilePower), derived from a power and clock run ("" = none)
  std::string power;
  // --power-summary: the summary.json of a power and clock run (tools/reference/
  // power_clock_analyze.py), from which the power section is derived (power_summary.h; "" = none).
  // At most one of power and power_summary.
  std::string power_summary;
};

// One measured collective time.
struct CollectiveMeasurement {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  Protocol protocol = Protocol::kAuto;
  int ranks = 0;
  int nodes = 0;
  Bytes size;
  Duration time;
};

// A fitted (op, algorithm, protocol, ranks, nodes) group with its points.
struct CollectiveGroupFit {
  CollectiveFit fit;
  AlphaBetaFit alpha_beta;
  std::vector<AlphaBetaPoint> points;  // sorted by size
};

// Zips the repeatable command-line options of nccl-tests logs: --ranks and --nodes (and --nccl-op,
// --nccl-algo, --nccl-proto when given) once per log, or once for all. Throws InputError naming the
// option whose count does not match, or --ranks or --nodes out of the ranges collective_measurements()
// accepts.
std::vector<NcclTestsLogInput> nccl_log_inputs(const std::vector<std::string>& paths, const std::vector<int>& ranks,
                                               const std::vector<int>& nodes, const std::vector<std::string>& ops,
                                               const std::vector<std::string>& algorithms,
                                               const std::vector<std::string>& protocols);

// Each throws InputError naming the file and the row or column for malformed input.
// GEMM samples: one per (dtype, M, N, K), the median of every row of that shape's median_us
// (µs), across all the tables given (several sweeps of the same machine, for instance).
std::vector<GemmSample> fit_gemm_samples(const calibrate::RawTable& gemm);
std::vector<GemmSample> fit_gemm_samples(const std::vector<const calibrate::RawTable*>& gemm);
Bandwidth fit_copy_bandwidth(const calibrate::RawTable& memory);
struct LaunchOverhead {
  Duration eager;
  Duration graph;
};
LaunchOverhead fit_launch_overhead(const calibrate::RawTable& launch);
// The memory-access kind a framework.csv test measures, or nullopt for a test this build does not
// know (the fit then ignores it and says so).
std::optional<MemoryAccess> kind_of_framework_test(std::string_view test);
std::map<MemoryAccess, Bandwidth> fit_kernel_bandwidths(const calibrate::RawTable& framework);
std::vector<AttentionSample> fit_attention_samples(const calibrate::RawTable& attention);
MachineDescription machine_of(const calibrate::RawTable& table);

// The `ok` rows of a raw nccl.csv (none when the file says `skipped`).
std::vector<CollectiveMeasurement> collective_measurements(const calibrate::RawTable& nccl);
// The rows of an nccl-tests log. Throws InputError when the op is neither named by the log nor
// given, when nodes is outside 1..kMaxClusterNodes or ranks outside nodes..nodes × kMaxNodeGpus
// (scenarios/scenario.h), or when the log's device list disagrees with them.
std::vector<CollectiveMeasurement> collective_measurements(const NcclTestsLogInput& log);
// Groups measurements by (op, algorithm, protocol, ranks, nodes) and fits each group.
std::vector<CollectiveGroupFit> fit_collectives(const std::vector<CollectiveMeasurement>& measurements);

// The whole fit. `notes` receives one line per thing worth telling (what was used, skipped or
// ignored). Throws InputError for no usable input.
CalibrationProfile fit_calibration_profile(const CalibrateFitOptions& options, std::vector<std::string>* notes);

// Fits, writes options.out and prints a summary to `out`. Returns 0.
int calibrate_fit_command(const CalibrateFitOptions& options, std::ostream& out);

}  // namespace clustersim
