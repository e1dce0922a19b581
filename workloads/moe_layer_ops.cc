// The mixture-of-experts ops of a Megatron MoE layer (workloads/moe_layer_ops.h).

#include "workloads/moe_layer_ops.h"

#include "workloads/dense_layer_ops.h"
#include "workloads/layer_kernels.h"

namespace clustersim::megatron {

namespace {

// The bytes one rank sends in a dispatch-direction (or combine-direction) all-to-all: its row of
// the matrix when there is one, else `balanced`.
int64_t row_bytes(const std::vector<int64_t>& matrix, int64_t balanced) {
  if (matrix.empty()) return balanced;
  const size_t n = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(matrix.size()))));
  int64_t sum = 0;
  for (size_t j = 0; j < n; ++j) sum += matrix[j];
  return sum;
}

// The combine's matrix: its own (deepep) or the dispatch's transpose.
std::vector<int64_t> combine_matrix_of(const LayerSizes& z) {
  return z.combine_matrix.empty() ? transposed_matrix(z.dispatch_matrix) : z.combine_matrix;
}

// Tokens per local expert in the grouped GEMMs of the busiest rank.
int64_t tokens_per_expert(const LayerSizes& z) { return (z.expert_tokens + z.local_experts - 1) / z.local_experts; }

}  // namespace

void moe_forward(OpListBuilder& add, const LayerSizes& z, bool all) {
  const int64_t logits = z.routed * z.experts * 4;  // fp32 router scores [T_r, E]
  add.gemm("router", z.routed, z.experts, z.h, z.act, all ? z.routed * z.h * z.e : 0);
  if (z.balancing == MoeBalancing::kAuxLossFree) {
    add.memory("router.expert_bias", logits, logits);  // scores + per-expert bias, for the top-k choice only
  }
  // Softmax (or sigmoid) over the E scores and the top-k choice; probabilities kept for backward.
  add.memory("router.topk", logits, z.routed * z.top_k * 12, all ? logits : 0);
  if (z.balancing == MoeBalancing::kAuxLoss) add.memory("router.aux_loss", logits, z.experts * 4);
  const int64_t tm = tokens_per_expert(z);
  const int64_t received = z.dispatched * z.h * z.e;
  const int64_t experts_in = z.expert_tokens * z.h * z.e;
  if (z.allgather) {
    add.comm("moe.dispatch_all_gather", CommKind::kEpAllGather, z.ep * z.routed * z.h * z.e);
    add.memory("moe.permute", z.ep * z.routed * z.h * z.e, received);
  } else {
    add.memory("moe.permute", z.routed * z.h * z.e, z.permuted());
    if (z.ep > 1) {
      add.comm("moe.dispatch", CommKind::kEpAllToAll, row_bytes(z.dispatch_matrix, z.routed * z.top_k * z.h * z.e))
          .comm_matrix = z.dispatch_matrix;
      if (z.local_experts > 1 && !z.deepep) add.memory("moe.sort_chunks", received, received);
    }
  }
  if (z.etp > 1) add.comm("moe.etp_all_gather", CommKind::kEtpAllGather, experts_in);
  add.gemm("experts.fc1", tm, z.fe_out, z.h, z.gemm, all ? experts_in : 0, z.local_experts);
  activation_forward(add, z, "experts.activation", z.expert_tokens, z.fe, z.fe_out, all);
  add.gemm("experts.fc2", tm, z.h, z.fe, z.gemm, all ? z.expert_tokens * z.fe * z.e : 0, z.local_experts);
  if (z.etp > 1) add.comm("moe.etp_reduce_scatter", CommKind::kEtpReduceScatter, experts_in);
  if (z.allgather) {
    add.memory("moe.unpermute", received, z.ep * z.routed * z.h * z.e, all ? received : 0);
    add.comm("moe.combine_reduce_scatter", CommKind::kEpReduceScatter, z.ep * z.routed * z.h * z.e);
  } else {
    if (z.ep > 1) {
      if (z.local_experts > 1 && !z.deepep) add.memory("moe.unsort_chunks", received, received);
      const std::vector<int64_t> combine = combine_matrix_of(z);
      add.comm("moe.combine", CommKind::kEpAllToAll, row_bytes(combine, z.routed * z.top_k * z.h * z.e)).comm_matrix =
          combine;
    }
    // The weighted sum of each token's k expert outputs; the outputs are kept for the gradient of
    // the routing probabilities.
    add.memory("moe.unpermute", z.permuted() + z.routed * z.top_k * 4, z.routed * z.h * z.e, all ? z.permuted() : 0);
  }
  if (z.fs > 0) mlp_forward(add, z, all, kSharedMlp, z.fs, z.fs_out);
}

void moe_backward(OpListBuilder& add, const LayerSizes& z) {
  if (z.fs > 0) mlp_backward(add, z, kSharedMlpBackward, z.fs, z.fs_out);
  const int64_t tm = tokens_per_expert(z);
  const int64_t received = z.dispatched * z.h * z.e;
  const int64_t experts_in = z.expert_tokens * z.h * z.e;
  const int64_t logits = z.routed * z.experts * 4;
  if (z.allgather) {
    add.comm("moe.combine_reduce_scatter.backward", CommKind::kEpAllGather, z.ep * z.routed * z.h * z.e);
    add.memory("moe.unpermute.backward", z.ep * z.routed * z.h * z.e + received, received);
  } else {
    add.memory("moe.unpermute.backward", z.routed * z.h * z.e + z.permuted(), z.permuted() + z.routed * z.top_k * 4);
    if (z.ep > 1) {
      add.comm("moe.combine.backward", CommKind::kEpAllToAll,
               row_bytes(z.dispatch_matrix, z.routed * z.top_k * z.h * z.e))
          .comm_matrix = z.dispatch_matrix;
      if (z.local_experts > 1 && !z.deepep) add.memory("moe.unsort_chunks.backward", received, received);
    }
  }
  if (z.etp > 1) add.comm("moe.etp_reduce_scatter.backward", CommKind::kEtpAllGather, experts_in);
  add.gemm("experts.fc2.dgrad", tm, z.fe, z.h, z.gemm, 0, z.local_experts);
  add.gemm("experts.fc2.wgrad", z.h, z.fe, tm, z.gemm, 0, z.local_experts, true);
  activation_backward(add, z, "experts.activation.backward", z.expert_tokens, z.fe, z.fe_out);
  add.gemm("experts.fc1.dgrad", tm, z.h, z.fe_out, z.gemm, 0, z.local_experts);
  add.gemm("experts.fc1.wgrad", z.fe_out, z.h, tm, z.gemm, 0, z.local_experts, true);
  if (z.etp > 1) add.comm("moe.etp_all_gather.backward", CommKind::kEtpReduceScatter, experts_in);
  if (z.allgather) {
    add.memory("moe.permute.backward", received, z.ep * z.routed * z.h * z.e);
    add.comm("moe.dispatch_all_gather.backward", CommKind::kEpReduceScatter, z.ep * z.routed * z.h * z.e);
  } else {
    if (z.ep > 1) {
      if (z.local_experts > 1 && !z.deepep) add.memory("moe.sort_chunks.backward", received, received);
      const std::vector<int64_t> combine = combine_matrix_of(z);
      add.comm("moe.dispatch.backward", CommKind::kEpAllToAll, row_bytes(combine, z.routed * z.top_k * z.h * z.e))
          .comm_matrix = combine;
    }
    add.memory("moe.permute.backward", z.permuted(), z.routed * z.h * z.e);
  }
  if (z.balancing == MoeBalancing::kAuxLoss) add.memory("router.aux_loss.backward", logits, logits);
  add.memory("router.topk.backward", 2 * logits, logits);
  add.gemm("router.dgrad", z.routed, z.h, z.experts, z.act);
  add.gemm("router.wgrad", z.experts, z.h, z.routed, z.act, 0, 1, true);
}

}  // namespace clustersim::megatron
