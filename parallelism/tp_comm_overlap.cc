#include "parallelism/tp_comm_overlap.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"
#include "workloads/op_cost.h"

namespace clustersim {

namespace {

// The layer name of a GEMM op ("qkv" of "qkv.dgrad") and its suffix ("dgrad", or empty).
std::string_view layer_of(std::string_view name) { return name.substr(0, name.find('.')); }
std::string_view suffix_of(std::string_view name) {
  const size_t dot = name.find('.');
  return dot == std::string_view::npos ? std::string_view{} : name.substr(dot + 1);
}

bool is_comm(const Op& op, CommKind kind) { return op.cost == OpCost::kCommunication && op.comm == kind; }

// One of `parts` equal row blocks of a GEMM: M / parts rows (rounded up), its share of the FLOPs
// and bytes.
Op row_block(const Op& gemm, int parts) {
  Op block = gemm;
  const double share = 1.0 / static_cast<double>(parts);
  block.gemm.m = (gemm.gemm.m + parts - 1) / parts;
  block.flops = gemm.flops * share;
  block.kernel_flops = gemm.kernel_flops * share;
  block.bytes_read = gemm.bytes_read.scaled(share);
  block.bytes_written = gemm.bytes_written.scaled(share);
  return block;
}

ProgramOp compute(const Op& op, Duration duration, const ComputeCostModel& cost) {
  return ProgramOp::compute(std::string(op.name), work_of(op.pass), duration, op.kernel_flops,
                            op_power(op, duration, cost));
}

ProgramOp tensor_collective(const Op& op, CollectiveOp collective_op, Bytes size, int handle) {
  return ProgramOp::collective(std::string(op.name), GroupKind::kTensor, collective_op, size, handle);
}

}  // namespace

bool userbuffers_gemm(const Op& op) {
  if (op.cost != OpCost::kGemm) return false;
  const std::string_view layer = layer_of(op.name);
  const std::string_view suffix = suffix_of(op.name);
  const bool named = layer == "qkv" || layer == "proj" || layer == "fc1" || layer == "fc2";
  return named && (suffix.empty() || suffix == "dgrad" || suffix == "wgrad");
}

TpOverlapMatch match_tp_overlap(const std::vector<Op>& ops, size_t i) {
  const size_t n = ops.size();
  const Op& op = ops[i];
  // Bulk: qkv/fc1 backward as the Transformer lists it (dgrad, input all-gather, wgrad, reduce-scatter).
  if (i + 3 < n && op.pass == Pass::kBackward && userbuffers_gemm(op) && suffix_of(op.name) == "dgrad" &&
      is_comm(ops[i + 1], CommKind::kTpAllGather) && userbuffers_gemm(ops[i + 2]) &&
      suffix_of(ops[i + 2].name) == "wgrad" && layer_of(ops[i + 2].name) == layer_of(op.name) &&
      is_comm(ops[i + 3], CommKind::kTpReduceScatter)) {
    return {TpOverlapMethod::kBulk, 4};
  }
  if (i + 1 < n && is_comm(op, CommKind::kTpAllGather) && userbuffers_gemm(ops[i + 1]) &&
      suffix_of(ops[i + 1].name) != "wgrad") {
    return {TpOverlapMethod::kRingExchange, 2};
  }
  if (i + 1 < n && op.pass != Pass::kBackward && userbuffers_gemm(op) &&
      is_comm(ops[i + 1], CommKind::kTpReduceScatter)) {
    return {TpOverlapMethod::kPipeline, 2};
  }
  return {};
}

double overlapped_gemm_slowdown(int sm_count) {
  if (sm_count <= TpOverlapDefaults::kCommSms) {
    throw InputError(fmt::format("tensor-parallel communication overlap reserves {} SMs for its kernels, but the GPU "
                                 "has {} SMs (gpu.sm_count must exceed {})",
                                 TpOverlapDefaults::kCommSms, sm_count, TpOverlapDefaults::kCommSms));
  }
  return static_cast<double>(sm_count) / static_cast<double>(sm_count - TpOverlapDefaults::kCommSms);
}

void append_ring_exchange(std::vector<ProgramOp>& out, const Op& gather, const Op& gemm, const ComputeCostModel& cost,
                          int tp) {
  check_invariant(tp >= 2, "ring-exchange overlap needs at least two tensor-parallel ranks");
  const Bytes shard = gather.comm_bytes.divided_ceil(tp);
  auto ring = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(tp) * static_cast<size_t>(tp), 0);
  for (int r = 0; r < tp; ++r) (*ring)[static_cast<size_t>(r * tp + (r + 1) % tp)] = shard.count();
  const Op block = row_block(gemm, tp);
  const Duration block_time = op_duration(block, cost);
  for (int i = 0; i < tp; ++i) {
    const bool exchange = i + 1 < tp;
    if (exchange) {
      ProgramOp step = tensor_collective(gather, CollectiveOp::kAllToAll, shard, kFirstTpOverlapHandle);
      step.all_to_all_bytes = ring;
      out.push_back(std::move(step));
    }
    out.push_back(compute(block, block_time, cost));
    if (exchange) out.push_back(ProgramOp::wait(kFirstTpOverlapHandle));
  }
}

void append_pipelined_reduce_scatter(std::vector<ProgramOp>& out, const Op& gemm, const Op& scatter,
                                     const ComputeCostModel& cost) {
  constexpr int kSplits = TpOverlapDefaults::kPipelineSplits;
  const Op block = row_block(gemm, kSplits);
  const Duration block_time = op_duration(block, cost).scaled(overlapped_gemm_slowdown(cost.gpu().sm_count));
  const Bytes chunk = scatter.comm_bytes.divided_ceil(kSplits);
  for (int i = 0; i < kSplits; ++i) {
    out.push_back(compute(block, block_time, cost));
    out.push_back(tensor_collective(scatter, CollectiveOp::kReduceScatter, chunk, kFirstTpOverlapHandle + i));
  }
  for (int i = 0; i < kSplits; ++i) out.push_back(ProgramOp::wait(kFirstTpOverlapHandle + i));
}

void append_bulk_overlap(std::vector<ProgramOp>& out, const Op& dgrad, const Op& gather, const Op& wgrad,
                         const Op& scatter, const ComputeCostModel& cost) {
  const double slowdown = overlapped_gemm_slowdown(cost.gpu().sm_count);
  out.push_back(tensor_collective(gather, CollectiveOp::kAllGather, gather.comm_bytes, kFirstTpOverlapHandle));
  out.push_back(compute(dgrad, op_duration(dgrad, cost).scaled(slowdown), cost));
  out.push_back(ProgramOp::wait(kFirstTpOverlapHandle));
  out.push_back(tensor_collective(scatter, CollectiveOp::kReduceScatter, scatter.comm_bytes, kFirstTpOverlapHandle));
  out.push_back(compute(wgrad, op_duration(wgrad, cost).scaled(slowdown), cost));
  out.push_back(ProgramOp::wait(kFirstTpOverlapHandle));
}

}  // namespace clustersim
