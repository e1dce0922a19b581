#pragma once

// Compares clustersim's collectives with published measurements: every row of
// docs/validation/published/collectives.csv, beside the value simulated for the setup that row
// describes (docs/validation/published/SOURCES.md), with its error. The report is
// docs/validation/collectives.md, written by `clustersim validate --collectives`.
//
// Rows are compared only where the bandwidth definitions match (nccl-tests algbw/busbw or time);
// DeepEP's per-link bandwidths and whole-run bisection figures are listed as not comparable, and
// setups the presets cannot describe (V100, PCIe Gen5/6 hosts, GB200 NVL72, TCP sockets, IB SHARP,
// servers whose intra-node fabric is not stated) as not simulated, each with the reason.
// Simulation: flow fidelity, one collective alone on an idle cluster, before any calibration.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace clustersim {

struct CollectiveValidationRow {
  // From the CSV.
  std::string source;
  std::string system;
  std::string collective;
  std::string algorithm;      // as measured ("Ring (NCCL_NVLS_ENABLE=0)", "NCCL default", ...)
  int gpus = 0;
  int64_t size_bytes = 0;     // 0 when the source does not state it
  double measured = 0;        // time in us when the row has one, else busbw in GB/s
  bool measured_is_time = false;
  // Simulated.
  bool compared = false;
  std::string setup;          // presets, nodes, algorithm forced, assumptions
  std::string not_compared;   // why, when !compared
  double simulated = 0;       // same quantity as `measured`
  double error = 0;           // simulated / measured − 1
  std::string simulated_choice;  // "ring/Simple"
};

struct CollectiveValidation {
  std::string csv_path;  // the measurements read
  std::vector<CollectiveValidationRow> rows;
  // Median |error| over compared rows whose size is stated and ≥ 64 MiB (the headline figure of
  // docs/validation/collectives.md, with its requirement), and over all compared rows (plateau rows
  // without a stated size simulated at 8 GiB).
  double median_error_large = 0;
  int large_rows = 0;
  double median_error_all = 0;
  int compared_rows = 0;
};

// Reads `csv_path` and simulates every comparable row with the presets under `data_dir`.
// Throws InputError naming file, line, column and what is valid for an unreadable CSV, a CSV
// without data rows, a missing column, a number that does not parse, gpus or nodes that are not
// whole numbers >= 1 (empty is allowed: not stated), a negative size, and a collective that is
// not one of the known names (all_reduce, all_gather, reduce_scatter, alltoall/all_to_all, and the
// descriptive names of the shipped rows that are listed without simulation).
CollectiveValidation validate_collectives(const std::string& csv_path, const std::string& data_dir);

// The command line that writes the report: "clustersim validate --collectives CSV [--out OUT]".
std::string collective_validation_command(const std::string& csv_path, const std::string& out_path);

// The report as Markdown; its first lines name `command` as the one that generated it.
void write_collective_validation(const CollectiveValidation& validation, const std::string& command,
                                 std::ostream& out);

}  // namespace clustersim
