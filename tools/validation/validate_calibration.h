#pragma once

// `clustersim validate --calibration PROFILE --reference REFERENCE.jsonl [--out REPORT.md]
//      [--nccl-raw NCCL.csv]... [--nccl-tests-log FILE --ranks N --nodes M]... [--gpu PRESET]`
//
// Predicted against measured at two levels, written as Markdown
// (docs/validation/calibration.md):
//   (a) GEMM: every sample of the profile predicted from the others (leave-one-out; a shape's
//       repeated measurements are one sample of the profile), per dtype and alignment class, with
//       the target of docs/validation/calibration.md's Summary: median |error| ≤ 5 %, max ≤ 15 %;
//   (b) attention: each SDPA flash sample left out likewise (forward and backward);
//   (c) collectives: every nccl-tests-style sweep given, fitted (the piecewise α–β fit of all its
//       points) and left out (each point predicted by the fit of the others);
//   (d) training steps: every configuration of the reference files (tools/reference/train_step.py
//       output) simulated from its scenario with the profile — scenarios/reference/h200-<name>.yaml
//       for one GPU, h200x<ranks>-<name>-<variant>.yaml for a torchrun variant (ddp, tp, pp) on
//       <ranks> GPUs, with -m<micro-batches> before .yaml when a step runs several — against the measured step time (the slowest rank's; and the one-GPU rows'
//       forward / backward / optimizer split) and peak allocated memory (the largest rank's);
//       target (docs/validation/calibration.md, Summary): within 10 % on both for at least six configurations. A torchrun row
//       without a scenario is listed as not simulated, with the reason;
//   (e) with --gemm-holdout: GEMMs measured apart from the profile (clustersim-calibrate raw files;
//       a shape's repeated measurements merged to their median, as the fit merges them) predicted
//       by the whole profile. A shape the profile has is left out of this check (the prediction
//       would be the sample itself). No target: the Summary's is the leave-one-out one (a).

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cost_models/calibration_profile.h"
#include "cost_models/gemm_predictor.h"
#include "tools/calibration/calibrate_fit.h"

namespace clustersim {

struct CalibrationValidationOptions {
  std::string profile;                  // profile name or path (resolve_profile_path)
  std::vector<std::string> references;  // reference.jsonl files (none = no training-step section)
  std::string scenario_dir;             // "" = <data dir>/reference
  std::vector<std::string> nccl_raw;    // raw nccl.csv files
  std::vector<NcclTestsLogInput> nccl_logs;
  std::vector<std::string> gemm_holdout;  // raw gemm.csv files of shapes outside the profile
  std::string gpu = "h200-sxm-141gb";   // GPU preset for GEMM and attention peaks
  std::string out;                      // report path ("" = standard output)
};

// The targets of docs/validation/calibration.md's Summary.
struct CalibrationTargets {
  static constexpr double kGemmMedian = 0.05;
  static constexpr double kGemmMax = 0.15;
  static constexpr double kTraining = 0.10;
  static constexpr int kTrainingRows = 6;
};

struct GemmClassSummary {
  std::string name;  // e.g. "bf16 aligned", "bf16 misaligned"
  int samples = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
};

struct AttentionLooRow {
  AttentionShape shape;
  Duration forward_measured, forward_predicted;
  Duration backward_measured, backward_predicted;
};

struct CollectiveFitCheckRow {
  Bytes size;
  Duration measured;
  Duration fitted;
  Duration left_out;
};

struct CollectiveFitCheck {
  std::string source;
  CollectiveFit fit;
  double fit_rms = 0;
  std::vector<CollectiveFitCheckRow> rows;
  double median_fitted_error = 0, max_fitted_error = 0;
  double median_left_out_error = 0, max_left_out_error = 0;
};

struct TrainingValidationRow {
  std::string name;        // configuration, with the variant and rank count of a torchrun row ("gpt-1.3b ddp×2")
  int ranks = 1;           // GPUs of the run
  std::string scenario;
  int64_t parameters = 0;
  // Measured (reference.jsonl), milliseconds and bytes.
  double step_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  int64_t peak_bytes = 0;
  // Predicted.
  double predicted_step_ms = 0, predicted_forward_ms = 0, predicted_backward_ms = 0, predicted_optimizer_ms = 0;
  double predicted_host_bound_ms = 0;  // the GPU waiting for the host thread (step_simulation.h)
  int64_t predicted_peak_bytes = 0;  // allocated: without the runtime overhead
  std::string peak_moment;
  double step_error = 0;    // predicted / measured − 1
  double memory_error = 0;
  bool within() const;      // both within CalibrationTargets::kTraining
};

struct CalibrationValidation {
  std::string profile_path;
  CalibrationProfile profile;
  LeaveOneOutResult gemm;
  std::vector<GemmClassSummary> gemm_classes;
  // The samples whose (M, N, K, dtype) a validated training step runs (its forward, data- and
  // weight-gradient GEMMs), left out like the others: the shapes the step predictions rely on.
  std::vector<LeaveOneOutResult::Row> step_gemms;
  double step_gemms_median = 0, step_gemms_max = 0;
  // (e) GEMMs outside the profile, predicted by all of it (LeaveOneOutResult's rows and summary).
  LeaveOneOutResult holdout;
  std::vector<GemmClassSummary> holdout_classes;
  int holdout_in_profile = 0;  // holdout shapes the profile already has (not checked)
  std::vector<AttentionLooRow> attention;
  double attention_median = 0, attention_max = 0;
  std::vector<CollectiveFitCheck> collectives;
  std::vector<TrainingValidationRow> training;
  int training_within = 0;
  // torchrun reference rows that clustersim cannot express: (configuration, reason).
  std::vector<std::pair<std::string, std::string>> training_not_simulated;

  // The Summary's GEMM target over every sample, and over the training steps' GEMMs (every sample
  // when there are no training steps).
  bool gemm_meets_target() const;
  bool step_gemms_meet_target() const;
  bool training_meets_target() const;
};

// Runs every check. Throws InputError for unreadable input, a one-GPU reference line without a
// matching scenario, or a reference line that is not the train_step.py JSON.
CalibrationValidation validate_calibration(const CalibrationValidationOptions& options);

// The Markdown report.
void write_calibration_report(const CalibrationValidation& v, const CalibrationValidationOptions& options,
                              std::ostream& out);

// Validates, writes the report (options.out or `out`), prints a summary to `err`. Returns 0 when
// the GEMM target over the training steps' GEMMs and the training-step target are met, 3 when one
// is missed (the report is written either way; it states the target over every sample too).
int validate_calibration_command(const CalibrationValidationOptions& options, std::ostream& out, std::ostream& err);

}  // namespace clustersim
