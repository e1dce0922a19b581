#include "workloads/host_costs.h"

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

HostCosts host_costs(const TrainingSpec& training, const CalibrationProfile* profile) {
  using D = HostCostDefaults;
  const bool megatron = training.framework == Framework::kMegatron;
  HostCosts c;
  std::string origin;
  if (profile != nullptr && profile->host_costs) {
    const ProfileHostCosts& p = *profile->host_costs;
    c.elementwise = p.elementwise;
    c.gemm = megatron ? p.megatron_gemm : p.gemm;
    c.library = p.library;
    c.backward_elementwise = p.backward_elementwise;
    c.backward_gemm = p.backward_gemm;
    c.optimizer_per_tensor = p.optimizer_per_tensor;
    c.collective = p.collective;
    c.sync = p.sync;
    c.graph_node = p.graph_node;
    origin = fmt::format("measured, calibration profile \"{}\"{}", profile->name,
                         p.source.empty() ? "" : " (" + p.source + ")");
  } else {
    c.elementwise = Duration::microseconds(D::kElementwiseUs);
    c.gemm = Duration::microseconds(megatron ? D::kMegatronGemmUs : D::kLinearUs);
    c.library = Duration::microseconds(D::kLibraryUs);
    c.backward_elementwise = Duration::microseconds(D::kBackwardElementwiseUs);
    c.backward_gemm = Duration::microseconds(D::kBackwardGemmUs);
    c.optimizer_per_tensor = Duration::microseconds(D::kOptimizerPerTensorUs);
    c.collective = Duration::microseconds(D::kCollectiveUs);
    c.sync = Duration::microseconds(D::kSyncUs);
    c.graph_node = Duration::microseconds(D::kGraphNodeUs);
    origin = fmt::format("defaults measured on an H200 machine's CPU (workloads/host_costs.h){}",
                         profile != nullptr ? "; the calibration profile has no host_costs" : "");
  }
  // Not in profiles: the Python-level overheads of train_step.py's modules, measured once.
  // Not in profiles either: the normalisation backward kernel, measured once (host_costs.py).
  c.backward_norm = Duration::microseconds(D::kBackwardNormUs);
  c.module_call = Duration::microseconds(D::kModuleCallUs);
  c.view = Duration::microseconds(D::kViewUs);
  c.split_call = Duration::microseconds(D::kSplitCallUs);
  c.split_piece = Duration::microseconds(D::kSplitPieceUs);
  c.grad_view_node = Duration::microseconds(D::kGradViewNodeUs);
  c.large_elementwise = Duration::microseconds(D::kLargeElementwiseUs);
  c.large_backward_elementwise = Duration::microseconds(D::kLargeBackwardElementwiseUs);
  // Not in profiles: Megatron-Core's local MoE layer, measured once (megatron_moe_layer.py).
  c.local_expert_forward = Duration::microseconds(D::kLocalExpertForwardUs);
  c.local_expert_backward = Duration::microseconds(D::kLocalExpertBackwardUs);
  c.local_dispatcher_forward = Duration::microseconds(D::kLocalDispatcherForwardUs);
  c.local_dispatcher_backward = Duration::microseconds(D::kLocalDispatcherBackwardUs);
  c.source = fmt::format(
      "host thread, {}, {}: forward {} per elementwise op, {} per GEMM, {} per attention or norm call; backward "
      "{} / {} / {} per elementwise / GEMM / norm kernel (+{} / +{} for an elementwise output of 1 MiB or more); "
      "{} per optimizer tensor, {} per NCCL call, {} per sync{}{}{}",
      name_of(training.framework), origin, to_string(c.elementwise), to_string(c.gemm), to_string(c.library),
      to_string(c.backward_elementwise), to_string(c.backward_gemm), to_string(c.backward_norm),
      to_string(c.large_elementwise),
      to_string(c.large_backward_elementwise), to_string(c.optimizer_per_tensor),
      to_string(c.collective), to_string(c.sync),
      training.framework != Framework::kPytorchEager
          ? std::string()
          : fmt::format("; {} per module call, {} per view, {} + {} per piece per split, {} per view's "
                        "backward node",
                        to_string(c.module_call), to_string(c.view), to_string(c.split_call),
                        to_string(c.split_piece), to_string(c.grad_view_node)),
      training.moe_experts != MoeExperts::kSequential
          ? std::string()
          : fmt::format("; SequentialMLP experts {} forward, {} backward per expert, their router and dispatcher "
                        "{} forward, {} backward per layer",
                        to_string(c.local_expert_forward), to_string(c.local_expert_backward),
                        to_string(c.local_dispatcher_forward), to_string(c.local_dispatcher_backward)),
      training.cuda_graphs == CudaGraphs::kNone
          ? std::string()
          : fmt::format("; CUDA graphs ({}): {} per captured kernel", name_of(training.cuda_graphs),
                        to_string(c.graph_node)));
  return c;
}

Duration host_cost(const Op& op, const HostCosts& costs) {
  const bool backward = op.pass == Pass::kBackward;
  const Duration before = costs.module_call * op.host_module_calls + costs.view * op.host_view_calls +
                          costs.split_call * op.host_split_calls + costs.split_piece * op.host_split_pieces +
                          costs.grad_view_node * op.host_grad_view_nodes;
  if (op.host_path != HostPath::kKernel && op.cost != OpCost::kCommunication) {
    const bool expert = op.host_path == HostPath::kLocalExpert;
    const Duration call = expert ? (backward ? costs.local_expert_backward : costs.local_expert_forward)
                                 : (backward ? costs.local_dispatcher_backward : costs.local_dispatcher_forward);
    return before + call.scaled(op.host_share);
  }
  switch (op.cost) {
    case OpCost::kCommunication: return before + costs.collective;
    case OpCost::kGemm: return before + (backward ? costs.backward_gemm : costs.gemm);
    case OpCost::kFlashAttention: return before + (backward ? costs.backward_gemm : costs.library);
    case OpCost::kMemoryBound: {
      if (op.access == MemoryAccess::kNormalization && !backward) return before + costs.library;
      if (op.access == MemoryAccess::kNormalizationBackward && backward) return before + costs.backward_norm;
      const bool large = static_cast<double>(op.bytes_written.count()) >= HostCostDefaults::kLargeOutputBytes;
      const Duration base = backward ? costs.backward_elementwise : costs.elementwise;
      const Duration extra = backward ? costs.large_backward_elementwise : costs.large_elementwise;
      return before + base + (large ? extra : Duration::zero());
    }
  }
  throw InternalError("host_cost: unknown op cost kind");
}

}  // namespace clustersim
