#include "cost_models/memory_access.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {

std::string_view name_of(MemoryAccess access) {
  switch (access) {
    case MemoryAccess::kStream: return "stream";
    case MemoryAccess::kElementwise: return "elementwise";
    case MemoryAccess::kWideningCast: return "widening_cast";
    case MemoryAccess::kBroadcast: return "broadcast";
    case MemoryAccess::kStrided: return "strided";
    case MemoryAccess::kConcatenation: return "concatenation";
    case MemoryAccess::kNormalization: return "normalization";
    case MemoryAccess::kNormalizationBackward: return "normalization_backward";
    case MemoryAccess::kReduction: return "reduction";
    case MemoryAccess::kSoftmax: return "softmax";
    case MemoryAccess::kFusedOptimizer: return "fused_optimizer";
    case MemoryAccess::kCompiledGlu: return "compiled_glu";
    case MemoryAccess::kCompiledGluBackward: return "compiled_glu_backward";
  }
  throw InternalError("unknown MemoryAccess value");
}

MemoryAccess parse_memory_access(std::string_view text) {
  std::string valid;
  for (MemoryAccess access : kMemoryAccesses) {
    if (name_of(access) == text) return access;
    valid += (valid.empty() ? "" : ", ") + std::string(name_of(access));
  }
  throw InputError(fmt::format("unknown memory access kind \"{}\" (valid: {})", excerpt(text), valid));
}

double default_fraction_of_copy(MemoryAccess access) {
  // Rates of tools/data/h200-2026-11-29/framework.csv over its copy_bf16 rate, 4073.36 GB/s.
  constexpr double kCopy = 4073.36;
  switch (access) {
    case MemoryAccess::kStream: return 1.0;
    case MemoryAccess::kElementwise: return 4196.67 / kCopy;
    case MemoryAccess::kWideningCast: return 2359.86 / kCopy;
    case MemoryAccess::kBroadcast: return 1376.96 / kCopy;
    case MemoryAccess::kStrided: return 1885.82 / kCopy;
    case MemoryAccess::kConcatenation: return 1769.03 / kCopy;
    case MemoryAccess::kNormalization: return 2982.98 / kCopy;
    case MemoryAccess::kNormalizationBackward: return 2302.53 / kCopy;
    case MemoryAccess::kReduction: return 3529.93 / kCopy;
    case MemoryAccess::kSoftmax: return 2089.05 / kCopy;
    case MemoryAccess::kFusedOptimizer: return 3247.29 / kCopy;
    // The compiled weighted SwiGLU's Triton kernels in the profiled steps of Megatron-Core's MoE
    // layer with 8 experts of Qwen3-30B-A3B's shape (h 2048, expert ffn 768), bytes as the op lists
    // count them (workloads/moe_layer_ops.cc): tools/data/h200-2026-12-01-moe/run*/results.jsonl,
    // profile.top_kernels of qwen3-30b-a3b:alltoall:4096:E8 (4,096 tokens per expert), backward:
    // triton_poi_fused_..._silu_split_0 38.3 / 38.7 µs for 31.46 MB, triton_red_fused_..._sum_1
    // 32.1 / 32.2 µs for 18.89 MB: 712 GB/s over both runs; forward (run2's 1,024-token case, the
    // only profile listing it): triton_poi_fused__to_copy_mul_silu_split_0 35.8 µs for 8 calls of
    // 4.72 MB: 1,055 GB/s. (1 MB per µs is 1,000 GB/s.)
    case MemoryAccess::kCompiledGlu: return 1000 * 4.72 / (35.8 / 8) / kCopy;
    case MemoryAccess::kCompiledGluBackward: return 1000 * 2 * (31.46 + 18.89) / (38.3 + 38.7 + 32.1 + 32.2) / kCopy;
  }
  throw InternalError("unknown MemoryAccess value");
}

}  // namespace clustersim
