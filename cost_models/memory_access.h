#pragma once

#include <array>
#include <string_view>

namespace clustersim {

// How a memory-bound kernel touches memory, which decides the rate it reaches on a GPU.
//
// kStream is the model's default for every memory-bound op (Megatron-LM's fused kernels are priced
// at the device-to-device copy rate). The others are the launch paths and kernel families of
// PyTorch eager mode, used by the pytorch-eager op model (workloads/pytorch_eager_ops.h). PyTorch's
// TensorIterator (aten/src/ATen/native/cuda/CUDALoops.cuh) runs an elementwise op with vectorized
// loads only when every operand is contiguous and of the output's dtype; a dtype conversion takes
// the unrolled path, and broadcast or strided (non-contiguous) operands the generic offset-
// calculator path. float→bfloat16 copies have a vectorized kernel of their own (Copy.cu).
//   kElementwise            vectorized: same-dtype adds, GeLU, fill, float→bf16 casts
//   kWideningCast           unrolled: bf16→fp32 casts, bf16 + fp32 adds
//   kBroadcast              offset calculator with a broadcast, type-promoting operand (a bias add)
//   kStrided                offset calculator over strided views (SiLU of a chunk, RoPE halves)
//   kConcatenation          torch.cat (CatArrayBatchedCopy)
//   kNormalization          layer_norm / rms_norm forward (fp32)
//   kNormalizationBackward  their input gradient
//   kReduction              column sums (bias and norm-weight gradients)
//   kSoftmax                log_softmax forward and backward over the vocabulary
//   kFusedOptimizer         torch.optim.AdamW(fused=True), one multi-tensor pass
//   kCompiledGlu            Megatron-Core's torch.compile'd weighted SwiGLU (weighted_bias_swiglu_impl,
//                           Triton): its forward kernel, in the SequentialMLP experts
//   kCompiledGluBackward    its compiled backward's two kernels (input gradient; the routing
//                           probabilities' gradient, a reduction)
// Bytes are each operand read and each result written once; the rate of each path is measured by
// tools/calibrator/framework_benchmark.py (a calibration profile's memory.kernels) or defaults to a
// measured fraction of the copy rate (default_fraction_of_copy()).
enum class MemoryAccess {
  kStream,
  kElementwise,
  kWideningCast,
  kBroadcast,
  kStrided,
  kConcatenation,
  kNormalization,
  kNormalizationBackward,
  kReduction,
  kSoftmax,
  kFusedOptimizer,
  kCompiledGlu,
  kCompiledGluBackward,
};

inline constexpr std::array kMemoryAccesses{
    MemoryAccess::kStream,        MemoryAccess::kElementwise,   MemoryAccess::kWideningCast,
    MemoryAccess::kBroadcast,     MemoryAccess::kStrided,       MemoryAccess::kConcatenation,
    MemoryAccess::kNormalization, MemoryAccess::kNormalizationBackward, MemoryAccess::kReduction,
    MemoryAccess::kSoftmax,       MemoryAccess::kFusedOptimizer, MemoryAccess::kCompiledGlu,
    MemoryAccess::kCompiledGluBackward};

// "stream", "elementwise", "widening_cast", "broadcast", "strided", "concatenation",
// "normalization", "normalization_backward", "reduction", "softmax", "fused_optimizer", "compiled_glu",
// "compiled_glu_backward".
std::string_view name_of(MemoryAccess access);
// Throws InputError naming the text and the valid names.
MemoryAccess parse_memory_access(std::string_view text);

// The rate of `access` as a fraction of the device-to-device copy rate, used when no calibration
// profile measured it. Measured on one H200 with PyTorch 2.11 / CUDA 13.0 on 2026-11-29
// (tools/data/h200-2026-11-29/framework.csv, tools/calibrator/framework_benchmark.py):
// each path's median rate over its tests divided by the same run's bf16 copy rate (4073 GB/s):
// elementwise 4197 GB/s (1.030), widening cast 2360 (0.579), broadcast 1377 (0.338), strided 1886
// (0.463), concatenation 1769 (0.434), normalization 2983 (0.732), its backward 2303 (0.565),
// reduction 3530 (0.867), softmax 2089 (0.513), fused AdamW 3247 (0.797). kStream is 1.
double default_fraction_of_copy(MemoryAccess access);

}  // namespace clustersim
