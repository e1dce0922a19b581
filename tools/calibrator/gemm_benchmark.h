#pragma once

// GEMM timings through cuBLASLt with its heuristic choice of algorithm.
//
// What is measured: D [M×N] = op(A)·B in the "TN" layout, the one cuBLASLt requires for fp8 on
// Hopper ("A must be transposed and B non-transposed", cuBLASLt documentation of
// cublasLtMatmul, FP8 requirements) and the one every other type is run in too so that the types
// are comparable: column-major A stored K×M (ld = K) and used transposed, B stored K×N (ld = K),
// D stored M×N (ld = M). alpha = 1, beta = 0. Types (A/B → D, compute):
//   bf16 → bf16, fp32 accumulate      fp16 → fp16, fp32 accumulate
//   fp8 e4m3 → bf16, fp32 accumulate, A/B scale pointers = 1.0 (device floats)
//   tf32: fp32 → fp32 with CUBLAS_COMPUTE_32F_FAST_TF32      fp32 → fp32, CUBLAS_COMPUTE_32F
// The algorithm is the first result of cublasLtMatmulAlgoGetHeuristic with a 64 MiB workspace,
// what PyTorch and Megatron-LM get from cuBLASLt without autotuning.
//
// How: inputs uniform in [-1, 1) (never zeros), several input sets rotated so that the inputs of
// one call are not in L2 from the previous one (sets cover at least 3× the L2 size), a warm-up,
// then batches of back-to-back calls replayed from a CUDA graph (so host launch cost does not
// inflate short GEMMs; falls back to eager launches if capture fails), timed with events; the
// median over batches is reported.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/calibrator/event_timer.h"
#include "tools/calibrator/gemm_shapes.h"
#include "tools/calibrator/raw_table.h"

namespace clustersim::calibrate {

// The result of a CPU-reference check of one small GEMM (METHOD.md, "Correct first").
struct GemmCheck {
  GemmShape shape;
  double relative_error = 0;  // ‖D − ref‖₂ / ‖ref‖₂, ref in double from the same inputs
  double tolerance = 0;
  int64_t non_finite = 0;     // elements of D left NaN/inf (D is poisoned with NaN first)
  bool passed = false;
  std::string message;        // why it failed, or empty
};

// One timed GEMM.
struct GemmMeasurement {
  GemmShape shape;
  std::string status;   // "ok", "unsupported" (no heuristic result), "out_of_memory", "failed"
  std::string message;  // cuBLASLt's reason when not ok
  int32_t algo_id = -1;
  uint32_t tile_id = 0;
  int32_t split_k = 0;
  int64_t workspace_bytes = 0;
  double waves = 0;     // cuBLASLt's wavesCount: thread blocks / (SMs × blocks per SM)
  int64_t input_sets = 0;
  std::string timing;   // "graph" or "eager"
  int64_t calls_per_batch = 0;
  std::vector<double> seconds;  // time per call of each batch
};

// Tolerance of the check: fp32 1e-5; tf32 5e-3 (10-bit mantissa inputs, METHOD.md: ~3e-4
// typical); bf16, fp16 1e-2 (METHOD.md: 1e-3..1e-2 for 16-bit operands); fp8 2e-2 (e4m3 inputs
// are exact, the bf16 output rounding and Hopper's fp8 accumulation dominate).
double gemm_check_tolerance(DataType type);

// Runs cuBLASLt GEMMs on one GPU.
class GemmBenchmark {
 public:
  // Uses `device` (cudaSetDevice), creates the cuBLASLt handle, a stream and the workspace.
  explicit GemmBenchmark(int device, TimingPolicy policy);
  ~GemmBenchmark();
  GemmBenchmark(const GemmBenchmark&) = delete;
  GemmBenchmark& operator=(const GemmBenchmark&) = delete;

  // Checks small GEMMs of `type` against a double-precision CPU reference: an aligned one and, for
  // all but fp8 (which needs multiples of 16), one with odd sizes.
  std::vector<GemmCheck> check(DataType type);

  // Times one GEMM. Never throws for a shape cuBLASLt cannot run or that does not fit in memory:
  // that is reported in `status`. Throws DeviceError for failures of the machine itself.
  GemmMeasurement measure(const GemmShape& shape);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Column names of gemm.csv (README.md describes each).
std::vector<std::string> gemm_columns();

// The row of `m` in gemm.csv (median, min, max of m.seconds in microseconds; TFLOP/s from the
// median and 2·M·N·K).
std::vector<std::string> gemm_row(const GemmMeasurement& m);

// Metadata lines for the checks: `check_<dtype>_<m>x<n>x<k>: rel_err=... tol=... pass|FAIL`.
Metadata gemm_check_metadata(const std::vector<GemmCheck>& checks);

}  // namespace clustersim::calibrate
