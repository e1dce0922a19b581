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

// Whether the alltoall dispatcher sorts the received tokens by local expert: with several local
// experts after an expert-parallel all-to-all, and with SequentialMLP experts also at ep 1
// (Megatron-Core's sort_chunks_by_idxs runs whenever num_local_experts > 1; measured at ep 1 on one
// H200, tools/data/h200-2026-12-01-moe/README.md, "Host microbenchmarks", its last row). The
// grouped path keeps the ep > 1 condition: Transformer Engine's fused sort is not measured at ep 1.
bool sorts_chunks(const LayerSizes& z) {
  return z.local_experts > 1 && !z.deepep && (z.ep > 1 || z.sequential_experts);
}

// Marks the kernels of ops [begin, end) of `add` not yet on a measured path as kernels of one
// measured call on `path`, each an even share of its host time; collectives keep their own
// NCCL-call price.
void share_host(OpListBuilder& add, size_t begin, size_t end, HostPath path) {
  auto joins = [&](const Op& op) { return op.cost != OpCost::kCommunication && op.host_path == HostPath::kKernel; };
  size_t kernels = 0;
  for (size_t i = begin; i < end; ++i) kernels += joins(add.op(i)) ? 1 : 0;
  for (size_t i = begin; i < end; ++i) {
    Op& op = add.op(i);
    if (!joins(op)) continue;
    op.host_path = path;
    op.host_share = 1.0 / static_cast<double>(kernels);
  }
}

// SequentialMLP's sort (and unsort) of the received tokens: sort_chunks_by_idxs splits them into the
// local experts' chunks and cats them in the new order, one split call returning local_experts
// pieces (workloads/host_costs.h prices them). The grouped path's fused sort (Transformer Engine's
// moe_permute_fusion) has no Python split.
void count_chunk_split(Op& op, const LayerSizes& z) {
  if (!z.sequential_experts) return;
  op.host_split_calls = 1;
  op.host_split_pieces = static_cast<int>(z.local_experts);
}

// Whether SequentialMLP's activation is Megatron's compiled weighted SwiGLU (--bias-swiglu-fusion,
// torch.compile'd Triton kernels priced at their measured rates, cost_models/memory_access.h).
bool compiled_glu(const LayerSizes& z) { return z.swiglu && z.fused_swiglu; }

// SequentialMLP's forward: for each local expert in turn fc1, the activation (SwiGLU weighted by the
// routing probabilities, Megatron's compiled weighted_bias_swiglu_impl) and fc2 over its tokens;
// each expert one measured call (HostPath::kLocalExpert).
void sequential_experts_forward(OpListBuilder& add, const LayerSizes& z, bool all) {
  const int64_t tm = tokens_per_expert(z);
  for (int64_t x = 0; x < z.local_experts; ++x) {
    const size_t begin = add.size();
    add.gemm("experts.fc1", tm, z.fe_out, z.h, z.gemm, all ? tm * z.h * z.e : 0);
    activation_forward(add, z, "experts.activation", tm, z.fe, z.fe_out, all);
    if (compiled_glu(z)) add.op(add.size() - 1).access = MemoryAccess::kCompiledGlu;
    add.gemm("experts.fc2", tm, z.h, z.fe, z.gemm, all ? tm * z.fe * z.e : 0);
    share_host(add, begin, add.size(), HostPath::kLocalExpert);
  }
}

// Its backward, experts in reverse: fc2's data and weight gradients, the activation's backward (the
// compiled backward runs two kernels: the input gradient and the routing probabilities' gradient, a
// reduction over the expert's [tokens, ffn] into [tokens] fp32), fc1's data and weight gradients.
void sequential_experts_backward(OpListBuilder& add, const LayerSizes& z) {
  const int64_t tm = tokens_per_expert(z);
  for (int64_t x = 0; x < z.local_experts; ++x) {
    const size_t begin = add.size();
    add.gemm("experts.fc2.dgrad", tm, z.fe, z.h, z.gemm);
    add.gemm("experts.fc2.wgrad", z.h, z.fe, tm, z.gemm, 0, 1, true);
    activation_backward(add, z, "experts.activation.backward", tm, z.fe, z.fe_out);
    if (compiled_glu(z)) {
      add.op(add.size() - 1).access = MemoryAccess::kCompiledGluBackward;
      add.memory("experts.activation.probs_grad", MemoryAccess::kCompiledGluBackward, tm * (z.fe_out + z.fe) * z.e,
                 tm * 4);
    }
    add.gemm("experts.fc1.dgrad", tm, z.h, z.fe_out, z.gemm);
    add.gemm("experts.fc1.wgrad", z.fe_out, z.h, tm, z.gemm, 0, 1, true);
    share_host(add, begin, add.size(), HostPath::kLocalExpert);
  }
}

}  // namespace

void moe_forward(OpListBuilder& add, const LayerSizes& z, bool all) {
  const size_t first = add.size();
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
    }
    if (sorts_chunks(z)) count_chunk_split(add.memory("moe.sort_chunks", received, received), z);
  }
  if (z.etp > 1) add.comm("moe.etp_all_gather", CommKind::kEtpAllGather, experts_in);
  if (z.sequential_experts) {
    sequential_experts_forward(add, z, all);
  } else {
    add.gemm("experts.fc1", tm, z.fe_out, z.h, z.gemm, all ? experts_in : 0, z.local_experts);
    activation_forward(add, z, "experts.activation", z.expert_tokens, z.fe, z.fe_out, all);
    add.gemm("experts.fc2", tm, z.h, z.fe, z.gemm, all ? z.expert_tokens * z.fe * z.e : 0, z.local_experts);
  }
  if (z.etp > 1) add.comm("moe.etp_reduce_scatter", CommKind::kEtpReduceScatter, experts_in);
  if (z.allgather) {
    add.memory("moe.unpermute", received, z.ep * z.routed * z.h * z.e, all ? received : 0);
    add.comm("moe.combine_reduce_scatter", CommKind::kEpReduceScatter, z.ep * z.routed * z.h * z.e);
  } else {
    if (sorts_chunks(z)) count_chunk_split(add.memory("moe.unsort_chunks", received, received), z);
    if (z.ep > 1) {
      const std::vector<int64_t> combine = combine_matrix_of(z);
      add.comm("moe.combine", CommKind::kEpAllToAll, row_bytes(combine, z.routed * z.top_k * z.h * z.e)).comm_matrix =
          combine;
    }
    // The weighted sum of each token's k expert outputs; the outputs are kept for the gradient of
    // the routing probabilities.
    add.memory("moe.unpermute", z.permuted() + z.routed * z.top_k * 4, z.routed * z.h * z.e, all ? z.permuted() : 0);
  }
  // The router and dispatcher around the experts: one measured part of the layer.
  if (z.sequential_experts) share_host(add, first, add.size(), HostPath::kLocalDispatcher);
  if (z.fs > 0) mlp_forward(add, z, all, kSharedMlp, z.fs, z.fs_out);
}

void moe_backward(OpListBuilder& add, const LayerSizes& z) {
  if (z.fs > 0) mlp_backward(add, z, kSharedMlpBackward, z.fs, z.fs_out);
  const size_t first = add.size();
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
    }
    if (sorts_chunks(z)) add.memory("moe.unsort_chunks.backward", received, received);
  }
  if (z.etp > 1) add.comm("moe.etp_reduce_scatter.backward", CommKind::kEtpAllGather, experts_in);
  if (z.sequential_experts) {
    sequential_experts_backward(add, z);
  } else {
    add.gemm("experts.fc2.dgrad", tm, z.fe, z.h, z.gemm, 0, z.local_experts);
    add.gemm("experts.fc2.wgrad", z.h, z.fe, tm, z.gemm, 0, z.local_experts, true);
    activation_backward(add, z, "experts.activation.backward", z.expert_tokens, z.fe, z.fe_out);
    add.gemm("experts.fc1.dgrad", tm, z.h, z.fe_out, z.gemm, 0, z.local_experts);
    add.gemm("experts.fc1.wgrad", z.fe_out, z.h, tm, z.gemm, 0, z.local_experts, true);
  }
  if (z.etp > 1) add.comm("moe.etp_all_gather.backward", CommKind::kEtpReduceScatter, experts_in);
  if (z.allgather) {
    add.memory("moe.permute.backward", received, z.ep * z.routed * z.h * z.e);
    add.comm("moe.dispatch_all_gather.backward", CommKind::kEpReduceScatter, z.ep * z.routed * z.h * z.e);
  } else {
    if (sorts_chunks(z)) add.memory("moe.sort_chunks.backward", received, received);
    if (z.ep > 1) {
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
  if (z.sequential_experts) share_host(add, first, add.size(), HostPath::kLocalDispatcher);
}

}  // namespace clustersim::megatron
