#include "workloads/host_costs.h"

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

HostCosts host_costs(const TrainingSpec& training) {
  using D = HostCostDefaults;
  const bool megatron = training.framework == Framework::kMegatron;
  HostCosts c;
  c.elementwise = Duration::microseconds(D::kElementwiseUs);
  c.gemm = Duration::microseconds(megatron ? D::kMegatronGemmUs : D::kLinearUs);
  c.library = Duration::microseconds(D::kLibraryUs);
  c.backward_elementwise = Duration::microseconds(D::kBackwardElementwiseUs);
  c.backward_gemm = Duration::microseconds(D::kBackwardGemmUs);
  c.optimizer_per_tensor = Duration::microseconds(D::kOptimizerPerTensorUs);
  c.collective = Duration::microseconds(D::kCollectiveUs);
  c.sync = Duration::microseconds(D::kSyncUs);
  c.graph_node = Duration::microseconds(D::kGraphNodeUs);
  c.source = fmt::format(
      "host thread, {} defaults measured on the H200 machine (workloads/host_costs.h): forward {} per elementwise "
      "op, {} per GEMM, {} per attention or norm call; backward {} / {} per elementwise / GEMM kernel; {} per "
      "optimizer tensor, {} per NCCL call, {} per sync{}",
      name_of(training.framework), to_string(c.elementwise), to_string(c.gemm), to_string(c.library),
      to_string(c.backward_elementwise), to_string(c.backward_gemm), to_string(c.optimizer_per_tensor),
      to_string(c.collective), to_string(c.sync),
      training.cuda_graphs == CudaGraphs::kNone
          ? std::string()
          : fmt::format("; CUDA graphs ({}): {} per captured kernel", name_of(training.cuda_graphs),
                        to_string(c.graph_node)));
  return c;
}

Duration host_cost(const Op& op, const HostCosts& costs) {
  const bool backward = op.pass == Pass::kBackward;
  switch (op.cost) {
    case OpCost::kCommunication: return costs.collective;
    case OpCost::kGemm: return backward ? costs.backward_gemm : costs.gemm;
    case OpCost::kFlashAttention: return backward ? costs.backward_gemm : costs.library;
    case OpCost::kMemoryBound: return backward ? costs.backward_elementwise : costs.elementwise;
  }
  throw InternalError("host_cost: unknown op cost kind");
}

}  // namespace clustersim
