// LayerSizes (workloads/layer_sizes.h): one rank's sizes of a Megatron layer, the MoE dispatch
// matrices among them.

#include "workloads/layer_sizes.h"

#include <algorithm>

#include "workloads/deepep_traffic.h"
#include "workloads/moe_routing.h"

namespace clustersim::megatron {

std::vector<int64_t> transposed_matrix(const std::vector<int64_t>& matrix) {
  if (matrix.empty()) return {};
  const size_t n = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(matrix.size()))));
  std::vector<int64_t> out(matrix.size());
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) out[j * n + i] = matrix[i * n + j];
  }
  return out;
}

LayerSizes layer_sizes(const ModelSpec& model, const TrainingSpec& training, const ShardedDims& dims,
                       const std::vector<double>& rank_shares) {
  LayerSizes z{};
  z.b = training.micro_batch;
  z.s = training.seq_len;
  z.cp_size = dims.cp;
  z.tp_size = dims.tp;
  z.s_q = training.seq_len / dims.cp;
  z.tokens = z.b * z.s_q;
  z.sp = dims.sequence_parallel;
  z.seq_tokens = z.sp ? z.tokens / dims.tp : z.tokens;
  z.h = model.hidden;
  z.heads = dims.heads_per_rank;
  z.dqk = dims.qk_head_dim;
  z.dv = dims.head_dim;
  z.mla = model.mla.enabled();
  const int64_t kv_heads = z.mla ? dims.heads_per_rank : dims.kv_heads_per_rank;
  z.q = z.heads * z.dqk;
  z.k = kv_heads * z.dqk;
  z.v = kv_heads * z.dv;
  z.o = z.heads * z.dv;
  z.q_lora = model.mla.q_lora_rank;
  z.kv_lora = model.mla.kv_lora_rank;
  z.rope_dim = model.mla.rope_head_dim;
  z.ffn = dims.ffn_per_rank;
  z.swiglu = model.mlp == MlpKind::kSwiglu;
  z.fused_norm = training.fused_norm;
  z.fused_rope = training.fused_rope;
  z.fused_swiglu = training.fused_swiglu;
  z.fused_softmax = training.fused_softmax;
  z.sequential_experts = training.moe_experts == MoeExperts::kSequential;
  const int64_t gates = z.swiglu ? 2 : 1;
  z.fc1_out = z.ffn * gates;
  z.vocab = dims.vocab_per_rank;
  z.act = training.activation_dtype();
  z.gemm = training.compute_dtype;
  z.e = bytes_per_element(z.act);
  z.tp = dims.tp > 1;
  z.cp = dims.cp > 1;
  z.ulysses = z.cp && dims.cp_comm == ContextParallelComm::kAllToAll;
  z.flash = training.attention == AttentionKernel::kFlash;
  z.flash_kernel = training.flash_kernel;
  z.rope = model.position_embedding == PositionEmbedding::kRope;
  z.learned = model.position_embedding == PositionEmbedding::kLearned;
  z.hidden_mask = training.hidden_dropout > 0;
  z.attention_mask = training.attention_dropout > 0;
  if (model.moe.enabled()) {
    z.experts = model.moe.num_experts;
    z.top_k = model.moe.top_k;
    z.ep = dims.ep;
    z.etp = dims.etp;
    z.local_experts = dims.experts_per_rank;
    z.routed = z.seq_tokens;
    z.fe = dims.expert_ffn_per_rank;
    z.fe_out = z.fe * gates;
    z.fs = dims.shared_ffn_per_rank;
    z.fs_out = z.fs * gates;
    z.allgather = dims.dispatcher == MoeDispatcher::kAllGather;
    z.deepep = dims.dispatcher == MoeDispatcher::kDeepEp;
    z.balancing = model.moe.balancing;
    double kept = 0;
    for (double share : rank_shares) kept += share;
    z.kept = kept;
    const double busiest = *std::max_element(rank_shares.begin(), rank_shares.end());
    // Every rank of the group routes routed · top_k slots; the busiest rank takes `busiest` of them.
    const double slots = static_cast<double>(z.routed * z.top_k * z.ep);
    z.dispatched = static_cast<int64_t>(std::ceil(slots * busiest - 1e-9));
    z.expert_tokens = z.dispatched * z.etp;
    const bool even = even_rank_shares(rank_shares);
    if (dims.dispatcher == MoeDispatcher::kDeepEp && z.ep > 1) {
      require_even_shares_for_deepep(rank_shares);
      // Known when the expert-parallel group's layout over the nodes is (simulate_training); memory
      // estimates do not need it.
      if (dims.ep_ranks_per_node > 0) {
        const double dispatch_element = z.gemm == DataType::kFp8 ? 1.0 + 4.0 / 128.0 : static_cast<double>(z.e);
        z.dispatch_matrix = deepep_dispatch_matrix(model.moe, z.ep, dims.ep_ranks_per_node, z.routed,
                                                   static_cast<double>(z.h) * dispatch_element);
        z.combine_matrix = transposed_matrix(
            deepep_dispatch_matrix(model.moe, z.ep, dims.ep_ranks_per_node, z.routed, static_cast<double>(z.h * z.e)));
      }
    } else if (!even && z.ep > 1 && !z.allgather) {
      // Every sender routes its tokens in the group's proportions (all expert-parallel groups alike).
      const size_t n = rank_shares.size();
      const double sent = static_cast<double>(z.routed * z.top_k * z.h * z.e);
      z.dispatch_matrix.assign(n * n, 0);
      for (size_t src = 0; src < n; ++src) {
        for (size_t dst = 0; dst < n; ++dst) {
          z.dispatch_matrix[src * n + dst] = static_cast<int64_t>(std::llround(sent * rank_shares[dst]));
        }
      }
    }
  }
  return z;
}

}  // namespace clustersim::megatron
