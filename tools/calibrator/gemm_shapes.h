#pragma once

// The GEMM problems the calibrator times, and the shapes file that lists a scenario's own GEMMs.
//
// Convention (the calibrator's, matching how Megatron-LM calls its linear layers): D = op(A)·B with
// D [M×N], op(A) [M×K], B [K×N]; M is the token dimension of a forward GEMM, N its output features
// and K the reduction dimension. FLOPs = 2·M·N·K (a multiply-add counts 2, as in Megatron-LM and
// PaLM's MFU accounting).
//
// Shapes file (written by `clustersim calibrate shapes scenario.yaml` or by hand), one GEMM a line:
//     M N K dtype [label]
// M, N, K positive integers, dtype one of bf16, fp16, fp8, tf32, fp32 (the names of
// core/data_type.h; fp8 means e4m3), label an optional token of letters, digits and `_ . : / + -`.
// `#` starts a comment; blank lines are skipped.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "core/data_type.h"

namespace clustersim::calibrate {

// One GEMM problem.
struct GemmShape {
  int64_t m = 0;  // rows of D and of op(A)
  int64_t n = 0;  // columns of D and of B
  int64_t k = 0;  // reduction dimension
  DataType dtype = DataType::kBf16;
  std::string set;    // where it came from: "square", "misaligned", "grid", "file"
  std::string label;  // free token, may be empty

  // 2·M·N·K floating-point operations.
  double flops() const;
};

// Largest M, N or K accepted (2^20): larger single GEMMs do not occur in the models we simulate
// and would not fit in one GPU's memory in fp32.
inline constexpr int64_t kMaxGemmDimension = int64_t{1} << 20;

// The data types the calibrator times, in output order: bf16, fp16, fp8, tf32, fp32.
std::vector<DataType> gemm_data_types();

// The name used in files: identical to core/data_type.h's name_of() (a test checks it); the
// calibrator links no clustersim library so that it builds on GPU machines without fmt.
std::string_view gemm_data_type_name(DataType type);

// Parses a data type name. Throws InputError naming `where`, the text and the valid names.
DataType parse_gemm_data_type(std::string_view text, std::string_view where);

// Squares M = N = K = 2^i from `min_size` to `max_size` (both powers of two), for each type.
// Throws InputError when the bounds are not powers of two in [16, kMaxGemmDimension] or min > max.
std::vector<GemmShape> square_shapes(const std::vector<DataType>& types, int64_t min_size = 256,
                                     int64_t max_size = 16384);

// Sizes that are not multiples of the tensor-core tiles, for each type: 1000³, 4091³, 4097³,
// 8191³, 12289³, 4095×4096×4096 (odd M), 4096×4096×4095 (odd K), GPT-2's logit GEMM
// 4096×50257×4096 and 2048×5461×2048 (Llama's 8/3·h feed-forward width, rounded down, at h = 2048).
std::vector<GemmShape> misaligned_shapes(const std::vector<DataType>& types);

// A grid M, N, K ∈ {1024, 4096, 16384} (27 shapes) for one type: the rectangular shapes an
// efficiency fit over (M, N, K) needs between the squares.
std::vector<GemmShape> grid_shapes(DataType type);

// Reads a shapes file (format above); `source` names it in error messages. Every shape gets set
// "file". Throws InputError "source:line: ..." naming the bad field and what is valid.
std::vector<GemmShape> parse_gemm_shapes(std::istream& in, std::string_view source);
std::vector<GemmShape> read_gemm_shapes_file(const std::string& path);

// One line of the shapes file for `shape` ("4096 12288 4096 bf16 qkv_fwd", no newline); the
// inverse of parse_gemm_shapes. Throws InputError if the label holds characters the format forbids.
std::string format_gemm_shape_line(const GemmShape& shape);

}  // namespace clustersim::calibrate
