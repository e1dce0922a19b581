#pragma once

// `clustersim validate --runs CSV`: every row of a published training-measurement table
// (docs/validation/published/training_runs.csv, or any CSV with its columns) predicted by
// clustersim in the source's own metric definition, with its error, and the mean absolute
// percentage error (MAPE) per source and overall.
//
// Per configuration (tools/validation/published_run.h builds its scenario): one training step is simulated at
// analytical fidelity with one representative rank per pipeline stage and datasheet defaults (no
// calibration profile); each metric row is then computed from the predicted step time with the
// source's FLOP formula (tools/validation/published_flops.h): SC21 achieved TFLOP/s = eq. 3 / (time × GPUs),
// Korthikanti MFU/HFU with their App. A formulas, the Megatron-LM README with Megatron's model
// FLOPs, Megatron-Bridge with its Llama formula, llm-foundry MFU/HFU with its README formula,
// Hagemann et al. MFU with PaLM's; throughput rows as tokens or samples per second; Korthikanti's
// Table 4 layer times as the sum of one layer's kernel and tensor-parallel collective times; memory
// rows from the memory model. Error = predicted / published − 1. Rows that cannot be expressed are
// listed with the missing feature and count against the expressible fraction.

#include <ostream>
#include <string>
#include <vector>

#include "tools/validation/published_run.h"

namespace clustersim {

struct RunValidationRow {
  std::string config_id;
  std::string publication;  // publication_of(source): the MAPE group
  std::string source;       // full source text
  SourceConvention convention = SourceConvention::kGeneric;
  std::string model;
  std::string metric_name;
  std::string unit;
  int line = 0;             // CSV line of the row
  double published = 0;
  bool expressible = false;
  std::string missing;      // why not expressible
  double predicted = 0;     // in the row's unit
  double error = 0;         // predicted / published − 1
  std::string setup;        // the simulated layout and cluster, one line
  int ep = 1;               // expert-parallel size of the simulated layout (mixture-of-experts rows: > 1)
  int cp = 1;               // context-parallel size
  std::string assumed;      // fields the source leaves empty and the defaults used
  std::string note;         // e.g. that the memory model finds the layout does not fit
  // Where the simulated step's time went (critical rank), seconds.
  double step_time_s = 0;
  double compute_s = 0;
  double exposed_comm_s = 0;
  double bubble_s = 0;
  double optimizer_s = 0;
};

struct SourceSummary {
  std::string publication;
  int rows = 0;
  int expressible = 0;
  double mape = 0;       // over its expressible rows (0 when none)
  bool core = false;     // one of the ≤ 10 % sources of published.md's target (SC21, Korthikanti, Megatron-LM README, Megatron-Bridge)
};

// The memory model against Korthikanti et al. 2022's closed forms for one of their configurations
// (cases/memory.md M3 is the GPT-3 175B one): weights, gradients and optimizer state of the
// transformer layers (18 B × 12h² × L / (t·p), embeddings and biases excluded), and the first
// stage's activations, per layer × L × (1 + (p−1)/(p·v)) for the interleaved schedule (× L with
// 1F1B), for three variants: no recompute without sequence parallelism sbh(10 + 24/t + 5as/(ht)),
// sequence parallelism with selective recompute 34·sbh/t, full recompute 2·sbh.
struct MemoryCheck {
  std::string config_id;
  std::string quantity;   // "weights + gradients + optimizer", "activations, no recompute", ...
  double model_gib = 0;   // from the memory model (Transformer activations, MemoryModel)
  double formula_gib = 0; // from the paper's formula
};

struct RunValidation {
  std::string csv_path;
  std::vector<RunValidationRow> rows;  // every CSV row, in file order
  std::vector<SourceSummary> by_source;
  int expressible_rows = 0;
  double expressible_fraction = 0;
  double mape = 0;         // over all expressible rows
  int core_rows = 0;
  double core_mape = 0;    // over the expressible rows of the core sources
  std::vector<MemoryCheck> memory_checks;  // every expressible Korthikanti et al. configuration
};

// Reads `csv_path` and predicts every row with the presets under `data_dir`. Throws InputError for
// an unreadable or malformed CSV (file:line: column = value: why).
// `power_model`: simulate every GPU under its power limit (true) or at full clock (false); nullopt
// is simulation.power_model's `auto`, which is full clock here: the rows are simulated without a
// calibration profile, so no GPU has measured power parameters (power_model_applies).
RunValidation validate_runs(const std::string& csv_path, const std::string& data_dir,
                            std::optional<bool> power_model = std::nullopt);

// docs/validation/published.md: summary, error budget table of the largest errors, every row.
// `command` is the command line that generated it (printed in the header).
void write_runs_report(const RunValidation& validation, const std::string& command, std::ostream& out);
// docs/validation/training.md: every row predicted with its error and the MAPE, grouped by
// configuration, without the published.md sections on sources and the error budget.
void write_training_report(const RunValidation& validation, const std::string& command, std::ostream& out);
struct ValidateRunsOptions {
  std::string csv;           // --runs: the measurements CSV
  std::string out;           // --out: published.md ("" = standard output, unless json)
  std::string training_out;  // --training-out: training.md ("" = not written)
  bool json = false;         // --json: JSON on standard output
  std::string data_dir;      // hardware and model presets (default_data_dir())
  std::optional<bool> power_model;  // --power-model on|off (nullopt: auto)
};

// `clustersim validate --runs CSV [--out FILE] [--training-out FILE] [--json]`: runs the validation,
// writes the reports, prints JSON or Markdown to `out` and a one-line summary to `log`. Returns the
// exit code (0). Throws InputError for bad input and unwritable files.
int validate_runs_command(const ValidateRunsOptions& options, std::ostream& out, std::ostream& log);

// {"mape", "expressible_fraction", "rows": [{"config_id", "metric_name", "published", "predicted",
//  "error", ...}], "by_source": {publication: {"rows", "expressible", "mape"}}, ...}
void write_runs_json(const RunValidation& validation, std::ostream& out);

}  // namespace clustersim
