#pragma once

// `clustersim collective`: a simulated nccl-tests. Builds a cluster of identical preset nodes,
// runs one collective over all its GPUs for every size of an nccl-tests sweep (-b, -e, -f / -i),
// and prints nccl-tests' columns — size (B, the total array), count (elements passed to NCCL: per
// rank for all_gather and reduce_scatter, per peer for all_to_all, the whole buffer otherwise, as
// nccl-tests src/common.cu prints getCollByteCount's paramcount), type, redop, root, time (us),
// algbw and busbw (GB/s, nccl-tests' bus-bandwidth factors) — plus the algorithm and protocol the
// selector chose, so users can diff against their nccl-tests logs. Each size runs alone on an
// idle cluster (nccl-tests times one collective at a time). With `json` the output is
// {"results": [{"size_bytes", "count", "time_us", "algbw_GBps", "busbw_GBps", "algorithm",
// "protocol"}, ...], "skipped": [{"size_bytes", "reason"}, ...]}.
//
// nccl-tests conventions kept: sizes are rounded down to whole elements (and, for all_gather,
// reduce_scatter and all_to_all, to a multiple of ranks × element size, as nccl-tests'
// getCollByteCount does; tools/calibrator/collective_sizes.h); send_recv makes every rank send
// `size` bytes to the next rank at once (sendrecv_perf), busbw = algbw. Unlike nccl-tests, sizes
// that round to zero are not run (nccl-tests times an empty call): they are listed in a "# skipped"
// comment line of the text output and in "skipped" of the JSON.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective.h"
#include "collectives/collective_runner.h"
#include "core/data_type.h"
#include "core/units.h"
#include "scenarios/scenario.h"
#include "topology/specs.h"

namespace clustersim {

struct CollectiveCommandOptions {
  std::string node = "dgx-h100";  // node preset (scenarios/hardware/nodes) or a YAML path
  std::string nic;                // NIC preset replacing the node's; empty: the node's own
  int nodes = 1;                  // nodes in the cluster (all identical), 1..kMaxClusterNodes
  int gpus_per_node = 0;          // GPUs used per node; 0: all of the node's GPUs
  FabricType fabric = FabricType::kRailOptimized;  // cluster.fabric.type's default
  // Fabric switch latency per traversal. Default: an estimate for InfiniBand NDR switches, whose
  // published port-to-port figures range from about 150 to 330 ns; calibrate.
  Duration switch_latency = Duration::nanoseconds(300);
  // Downlink ports of one leaf switch (NICs it holds), 1..kMaxLeafPorts; the default of
  // cluster.fabric.leaf_ports.
  int leaf_ports = kDefaultLeafPorts;
  // Fat-tree leaf downlink / uplink bandwidth, 1..kMaxOversubscription; cluster.fabric.oversubscription.
  double oversubscription = kDefaultOversubscription;
  // --fabric three-tier only: nodes per pod (required; cluster.fabric.pod_nodes) and a pod's spine
  // downlink / core uplink bandwidth, 1..kMaxOversubscription (cluster.fabric.core_oversubscription).
  int pod_nodes = 0;
  double core_oversubscription = kDefaultOversubscription;
  CollectiveOp op = CollectiveOp::kAllReduce;
  Bytes min_bytes = Bytes::of(8);  // nccl-tests -b
  Bytes max_bytes = Bytes::of(8);  // nccl-tests -e
  int64_t step_factor = 2;         // nccl-tests -f: multiply the size by this each step (0: use step_bytes)
  Bytes step_bytes;                // nccl-tests -i: add this each step when step_factor is 0
  DataType dtype = DataType::kFp32;  // nccl-tests default: float
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  Protocol protocol = Protocol::kAuto;
  // kFlow or kAnalytical; std::nullopt (--fidelity auto): flow, except an all_to_all over more than
  // kAutoFlowAllToAllRanks GPUs, which runs analytical (resolve_fidelity()).
  std::optional<Fidelity> fidelity;
  bool json = false;
  std::string data_dir;  // holds hardware/; empty: default_data_dir()
  // --html FILE: also write a self-contained page of busbw against size, one line per algorithm
  // that can run the op on this cluster (write_collective_html, tools/cli/html_report.h).
  std::string html;
  std::string command_line;  // the command as a shell line, shown on the page
  // Where a flow-fidelity sweep estimated at 2 s or more states its transfers before it starts
  // (the CLI: standard error); null: nowhere.
  std::ostream* announce = nullptr;
};

// Above this many GPUs an all_to_all's n(n−1) flows exceed one phase of the flow model's budget
// (PlanOptions::flows_per_phase_budget, 65,536 flows: 256 GPUs); the flow simulation of one size then
// takes about a minute at 512 GPUs (64 DGX H100, 1 MiB, 2 cores), so --fidelity auto runs it
// analytically (all_to_all_estimate: the busiest port, no ECMP collisions; there the flow model gave
// 57.1 / 267.5 / 1690 us at 1 / 8 / 64 MiB against 40.9 / 194.4 / 1398.7 us).
inline constexpr int kAutoFlowAllToAllRanks = 256;

// The most GPUs a collective is simulated over at flow fidelity: 16,384 (2,048 DGX nodes). Above,
// the routes of every transfer dominate: an all_reduce of 1 GiB over 16,384 x 8 GPUs took 44 s at
// flow and 17 s analytically on 2 cores (Release build, 2026-12-01), against 3.2 s at 16,384 GPUs.
// --fidelity auto runs larger collectives analytically; --fidelity flow above it is refused.
inline constexpr int kMaxFlowCollectiveRanks = 16'384;
// The most GPUs an all_to_all is simulated over at flow fidelity: 1,024, whose n(n−1) = 1,047,552
// transfers per size take minutes (512 GPUs: about a minute per size, kAutoFlowAllToAllRanks).
// 2,048 x 8 GPUs would be 2.7e8 transfers, 10 GB of plan alone.
inline constexpr int kMaxFlowAllToAllRanks = 1'024;

// The fidelity a sweep of `options` over `ranks` GPUs runs at: options.fidelity when set, else flow,
// or analytical for an all_to_all over more than kAutoFlowAllToAllRanks GPUs or any collective over
// more than kMaxFlowCollectiveRanks. Throws InputError, naming --fidelity, the limit and the work,
// when --fidelity flow is asked beyond kMaxFlowCollectiveRanks or kMaxFlowAllToAllRanks.
Fidelity resolve_fidelity(const CollectiveCommandOptions& options, int ranks);

// The most sizes one sweep simulates: -i steps are linear, and -f 0 -i 8 -e 1G would be 134 M sizes.
inline constexpr size_t kMaxCollectiveSizes = 10'000;

// nccl-tests' size syntax: a whole number with an optional K, M or G suffix, in powers of 1024
// (nccl-tests parsesize: "-e 8G" is 8 GiB). Throws InputError naming the text.
Bytes parse_nccl_tests_size(std::string_view text);

// The names of cluster.fabric.type: "rail-optimized", "fat-tree" or "single-switch"; "rail" and
// "switch" are accepted as older aliases. Throws InputError naming the text and the valid names.
FabricType parse_fabric_type(std::string_view text);

// The flags of `clustersim collective` that are parsed from text, as given (CLI11 binds them; the
// Python module's collective() passes its arguments as the same text).
struct CollectiveFlags {
  std::string op = "all_reduce";      // --op
  std::string algo = "auto";          // --algo
  std::string proto = "auto";         // --proto
  std::string datatype = "fp32";      // -d/--datatype
  std::string fabric = "rail-optimized";  // --fabric
  std::string min_bytes = "8";        // -b/--minbytes, nccl-tests' size syntax
  std::string max_bytes = "8";        // -e/--maxbytes
  std::string step_bytes = "0";       // -i/--stepbytes
  std::string fidelity = "auto";      // --fidelity: auto, flow or analytical
  bool step_factor_given = false;     // -f was given (options.step_factor holds it)
  bool step_bytes_given = false;      // -i was given
};

// Parses `flags` into `options`: op, algorithm, protocol, dtype, fabric, min/max/step bytes and
// fidelity. nccl-tests steps by -i when it is given and -f is not, so does this (step_factor 0).
// Throws InputError naming the flag ("--op ...", "-b/--minbytes: invalid size ..."), and for -f of 2
// or more given with an -i increment.
void apply_collective_flags(const CollectiveFlags& flags, CollectiveCommandOptions& options);

// One size of a sweep: nccl-tests' columns that change from size to size.
struct CollectiveRow {
  int64_t size = 0;   // total bytes, nccl-tests' `size` column
  int64_t count = 0;  // nccl-tests' `count` column: per rank for all_gather and reduce_scatter,
                      // per peer for all_to_all, the whole buffer otherwise
  Duration time;      // nccl-tests' time: the collective alone on an idle cluster
  CollectiveChoice choice;  // the algorithm and protocol the selector chose
  // nccl-tests' algbw in GB/s (1e9 bytes/s): size / time; 0 for a zero time.
  double algbw_gbps() const;
};

// A simulated sweep: its rows and the columns shared by every row.
struct CollectiveSweep {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int ranks = 0;  // GPUs in the collective: every GPU of the cluster
  Fidelity fidelity = Fidelity::kFlow;
  double bus_factor = 1;  // busbw / algbw, nccl-tests' factor for op over ranks
  std::string type;       // nccl-tests' type column: float, bfloat16, half, f8e4m3
  std::string redop;      // nccl-tests' redop column: sum for reducing ops, none otherwise
  int root = -1;          // nccl-tests' root column: 0 for broadcast and reduce, -1 otherwise
  std::vector<CollectiveRow> rows;
  uint64_t flow_transfers = 0;   // at flow fidelity: the transfers of every size's plan, counted first
  std::vector<int64_t> skipped;  // requested sizes below one element per rank (bytes)
  std::string skip_reason;       // why they were skipped
};

// Builds the cluster and simulates every size of the sweep. Throws InputError naming the flag and
// the valid range for bad options (unknown preset, nodes outside 1..kMaxClusterNodes, gpus_per_node
// beyond the node, leaf_ports outside 1..kMaxLeafPorts, oversubscription outside
// 1..kMaxOversubscription, min_bytes 0, min > max, max above kMaxCollectiveBytes (collectives/collective.h),
// a step that does not grow, more than kMaxCollectiveSizes sizes) and for an algorithm or protocol the
// op cannot use.
CollectiveSweep simulate_collective_sweep(const CollectiveCommandOptions& options);

// A row of `clustersim collective --json`'s "results": {"size_bytes", "count", "time_us",
// "algbw_GBps", "busbw_GBps", "algorithm", "protocol"}.
nlohmann::json collective_row_json(const CollectiveSweep& sweep, const CollectiveRow& row);
// The document of `clustersim collective --json` (the header comment above).
nlohmann::json collective_json(const CollectiveSweep& sweep);

// One sweep per algorithm of the registry (collectives/algorithm.h) with options' other flags, for
// the page's chart: the algorithms that cannot run the op on the cluster come back with their
// reason (the InputError of simulate_collective_sweep) and no rows.
struct AlgorithmSweep {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  std::optional<CollectiveSweep> sweep;
  std::string why_not;
};
std::vector<AlgorithmSweep> sweep_every_algorithm(const CollectiveCommandOptions& options);

// Runs the sweep and prints it to `out` (collective_json() with options.json); with options.html,
// checks the path can be written before simulating, then writes the page through a temporary file
// renamed into place and says so on standard error. Returns the exit code (0). Throws as
// simulate_collective_sweep() and InputError naming --html for a path that cannot be written; the
// CLI maps InputError to exit code 2.
int run_collective_command(const CollectiveCommandOptions& options, std::ostream& out);

}  // namespace clustersim
