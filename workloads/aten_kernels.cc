#include "workloads/aten_kernels.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"

namespace clustersim {

namespace {

void require_non_negative(int64_t value, std::string_view what) {
  if (value < 0) throw InputError(fmt::format("{} must not be negative (got {})", what, value));
}

}  // namespace

std::vector<AtenKernel> rope_forward_kernels(int64_t elements) {
  require_non_negative(elements, "RoPE elements");
  const int64_t b = 2 * elements;
  return {{"multiply", MemoryAccess::kStrided, 2 * b, 2 * b},
          {"combine", MemoryAccess::kElementwise, 2 * b, b},
          {"concatenate", MemoryAccess::kConcatenation, b, b}};
}

std::vector<AtenKernel> rope_backward_kernels(int64_t elements) {
  require_non_negative(elements, "RoPE elements");
  const int64_t b = 2 * elements;
  return {{"strided", MemoryAccess::kStrided, 7 * b / 2, 7 * b / 2},
          {"contiguous", MemoryAccess::kElementwise, 4 * b, 4 * b}};
}

std::vector<AtenKernel> apply_rotary_forward_kernels(int64_t elements, int64_t table_elements) {
  require_non_negative(elements, "RoPE elements");
  require_non_negative(table_elements, "RoPE table elements");
  const int64_t b = 2 * elements;
  const int64_t half = b / 2;
  const int64_t table = 2 * table_elements;  // one bf16 table
  return {{"cos_cast", MemoryAccess::kElementwise, 2 * table, table},
          {"sin_cast", MemoryAccess::kElementwise, 2 * table, table},
          {"x1_cos", MemoryAccess::kStrided, half + table, half},
          {"x2_sin", MemoryAccess::kStrided, half + table, half},
          {"subtract", MemoryAccess::kElementwise, b, half},
          {"x2_cos", MemoryAccess::kStrided, half + table, half},
          {"x1_sin", MemoryAccess::kStrided, half + table, half},
          {"add", MemoryAccess::kElementwise, b, half},
          {"concatenate", MemoryAccess::kConcatenation, b, b}};
}

std::vector<AtenKernel> apply_rotary_backward_kernels(int64_t elements, int64_t table_elements) {
  require_non_negative(elements, "RoPE elements");
  require_non_negative(table_elements, "RoPE table elements");
  const int64_t b = 2 * elements;
  const int64_t half = b / 2;
  const int64_t table = 2 * table_elements;
  return {{"x1_sin.backward", MemoryAccess::kStrided, half + table, half},
          {"x2_cos.backward", MemoryAccess::kStrided, half + table, half},
          {"subtract.backward", MemoryAccess::kStrided, half, half},
          {"x2_sin.backward", MemoryAccess::kElementwise, half + table, half},
          {"x2.accumulate", MemoryAccess::kElementwise, b, half},
          {"x1_cos.backward", MemoryAccess::kStrided, half + table, half},
          {"x1.accumulate", MemoryAccess::kElementwise, b, half},
          {"x2.slice_backward.zero_fill", MemoryAccess::kElementwise, 0, b},
          {"x2.slice_backward.copy", MemoryAccess::kStrided, half, half},
          {"x1.slice_backward.zero_fill", MemoryAccess::kElementwise, 0, b},
          {"x1.slice_backward.copy", MemoryAccess::kStrided, half, half},
          {"accumulate", MemoryAccess::kElementwise, 2 * b, b}};
}

std::vector<AtenKernel> swiglu_forward_kernels(int64_t elements) {
  require_non_negative(elements, "SwiGLU elements");
  const int64_t n = 2 * elements;  // one bf16 half of fc1's output
  return {{"silu", MemoryAccess::kStrided, n, n}, {"multiply", MemoryAccess::kStrided, 2 * n, n}};
}

std::vector<AtenKernel> swiglu_backward_kernels(int64_t elements) {
  require_non_negative(elements, "SwiGLU elements");
  const int64_t n = 2 * elements;
  return {{"multiply.backward.up", MemoryAccess::kStrided, 2 * n, n},
          {"multiply.backward.silu", MemoryAccess::kElementwise, 2 * n, n},
          {"silu.backward", MemoryAccess::kStrided, 2 * n, n},
          {"chunk.backward", MemoryAccess::kConcatenation, 2 * n, 2 * n}};
}

namespace {

// A [rows, width] tensor in the input dtype: all its bytes, one value per row, and whether
// .float() / .type_as() copy it (16-bit input; no-ops for fp32).
struct TensorBytes {
  int64_t all;
  int64_t rows;
  bool casts;
};

TensorBytes tensor_bytes(int64_t rows, int64_t width, int64_t element_bytes, std::string_view what) {
  require_non_negative(rows, what);
  require_non_negative(width, what);
  if (element_bytes != 2 && element_bytes != 4) {
    throw InputError(fmt::format("{}: element bytes must be 2 or 4 (got {})", what, element_bytes));
  }
  return {checked_mul(checked_mul(rows, width, "ATen kernel bytes"), element_bytes, "ATen kernel bytes"),
          rows * element_bytes, element_bytes == 2};
}

}  // namespace

std::vector<AtenKernel> rms_norm_forward_kernels(int64_t tokens, int64_t hidden, int64_t element_bytes) {
  const auto [b, t, casts] = tensor_bytes(tokens, hidden, element_bytes, "RMSNorm size");
  std::vector<AtenKernel> k = {{"pow", MemoryAccess::kElementwise, b, b},
                               {"mean", MemoryAccess::kReduction, b, t},
                               {"add_eps", MemoryAccess::kElementwise, t, t},
                               {"rsqrt", MemoryAccess::kElementwise, t, t},
                               {"normalize", MemoryAccess::kBroadcast, b + t, b}};
  if (casts) {
    k.push_back({"to_fp32", MemoryAccess::kWideningCast, b, 2 * b});
    k.push_back({"to_input_dtype", MemoryAccess::kElementwise, 2 * b, b});
  }
  k.push_back({"weight", MemoryAccess::kBroadcast, b, b});
  return k;
}

std::vector<AtenKernel> rms_norm_backward_kernels(int64_t tokens, int64_t hidden, int64_t element_bytes) {
  const auto [b, t, casts] = tensor_bytes(tokens, hidden, element_bytes, "RMSNorm size");
  std::vector<AtenKernel> k = {{"weight.backward", MemoryAccess::kBroadcast, b, b},
                               {"weight_grad.multiply", MemoryAccess::kElementwise, 2 * b, b},
                               {"weight_grad.sum", MemoryAccess::kReduction, b, 0}};
  if (casts) {
    k.push_back({"to_input_dtype.backward", MemoryAccess::kWideningCast, b, 2 * b});
    k.push_back({"to_fp32.backward", MemoryAccess::kElementwise, 2 * b, b});
  }
  const std::vector<AtenKernel> rest = {{"normalize.backward", MemoryAccess::kBroadcast, b + t, b},
                                        {"rstd_grad.multiply", MemoryAccess::kElementwise, 2 * b, b},
                                        {"rstd_grad.sum", MemoryAccess::kReduction, b, t},
                                        {"rsqrt.backward", MemoryAccess::kElementwise, 2 * t, t},
                                        {"mean.backward", MemoryAccess::kBroadcast, t, b},
                                        {"pow.backward.scale", MemoryAccess::kElementwise, b, b},
                                        {"pow.backward.multiply", MemoryAccess::kElementwise, 2 * b, b},
                                        {"accumulate", MemoryAccess::kElementwise, 2 * b, b}};
  k.insert(k.end(), rest.begin(), rest.end());
  return k;
}

std::vector<AtenKernel> masked_softmax_forward_kernels(int64_t elements, int64_t element_bytes) {
  const int64_t b = tensor_bytes(elements, 1, element_bytes, "softmax scores").all;
  // The boolean mask is broadcast over the batch and heads: one byte read per score.
  return {{"clone", MemoryAccess::kElementwise, b, b},
          {"masked_fill", MemoryAccess::kBroadcast, b + elements, b},
          {"softmax", MemoryAccess::kSoftmax, b, b}};
}

std::vector<AtenKernel> masked_softmax_backward_kernels(int64_t elements, int64_t element_bytes) {
  const int64_t b = tensor_bytes(elements, 1, element_bytes, "softmax scores").all;
  return {{"softmax.backward", MemoryAccess::kSoftmax, 2 * b, b},
          {"masked_fill.backward", MemoryAccess::kBroadcast, b + elements, b}};
}

}  // namespace clustersim
