#pragma once

// NCCL collectives timed as nccl-tests times them, over every GPU of the run.
//
// Ranks: with one process, every local GPU (ncclCommInitAll); under MPI, one GPU per process
// (ncclCommInitRank, the unique id broadcast from process 0). Fewer than two ranks: nothing to
// measure, the caller reports the skip.
// Data: fp32 ("float"), sum, out-of-place; sizes geometric ×2 in nccl-tests' S convention
// (collective_sizes.h). Timing (nccl-tests src/common.cu): host clock around `iters` back-to-back
// operations and the wait for every stream, divided by iters, averaged over processes; repeated
// `samples` times, the median reported.
// Settings: "auto" (NCCL's own choice, under the environment the program started with) and,
// where asked, forced NCCL_ALGO × NCCL_PROTO (NCCL environment variables documentation). NCCL
// reads them when a communicator is created, so each setting gets fresh communicators. Forced
// algorithms are the ones NCCL offers for each collective: Ring and Tree for all_reduce, Ring for
// all_gather, reduce_scatter and broadcast; all_to_all and send_recv are point-to-point, where
// NCCL_ALGO does not apply, and run under "auto" only. NVLS is never forced (it needs NVLink
// SHARP and, on shared machines, NCCL_NVLS_ENABLE=0 is required).

#include <cstdint>
#include <string>
#include <vector>

#include "tools/calibrator/collective_sizes.h"
#include "tools/calibrator/options.h"
#include "tools/calibrator/process_group.h"
#include "tools/calibrator/raw_table.h"

namespace clustersim::calibrate {

// One NCCL algorithm/protocol setting; "auto" leaves the variable as the environment had it.
struct NcclSetting {
  std::string algo = "auto";   // auto, Ring, Tree
  std::string proto = "auto";  // auto, LL, LL128, Simple
};

// The settings measured for `collective`: auto first, then (if `forced`) each forced pair.
std::vector<NcclSetting> nccl_settings(Collective collective, bool forced);

struct NcclMeasurement {
  Collective collective = Collective::kAllReduce;
  NcclSetting setting;
  int nranks = 0;
  int64_t size_bytes = 0;  // S of nccl-tests
  int64_t count = 0;       // S / sizeof(float)
  std::string status;      // "ok" or "failed"
  std::string message;
  int64_t iters = 0;
  std::vector<double> seconds;  // time per operation, one value per sample
};

// What one NCCL run produced, for the summary.
struct NcclRunResult {
  bool skipped = false;
  std::string skip_reason;
  bool check_passed = true;
  std::vector<NcclMeasurement> measurements;
};

// Runs the sweep of `options` on every rank. Process 0 writes rows to `writer` (may be null on
// other processes) as they are measured. Throws DeviceError for failures of the machine.
NcclRunResult run_nccl_benchmarks(const CalibrateOptions& options, ProcessGroup& group, RawTableWriter* writer);

// The run description for nccl.csv's metadata (ranks, processes, nodes, devices, environment).
Metadata nccl_metadata(ProcessGroup& group);

std::vector<std::string> nccl_columns();
// algbw_gbps = S / time in GB/s (1e9 B/s); busbw_gbps = algbw · bus_bandwidth_factor.
std::vector<std::string> nccl_row(const NcclMeasurement& m, int nprocs, int nodes);

}  // namespace clustersim::calibrate
