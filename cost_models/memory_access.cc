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
  }
  throw InternalError("unknown MemoryAccess value");
}

}  // namespace clustersim
