#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "workloads/model_spec.h"
#include "workloads/training_spec.h"

namespace clustersim {

// How mixture-of-experts tokens reach their experts (Megatron --moe-token-dispatcher-type):
//   alltoall   the router's permuted tokens go to their experts' ranks by an all-to-all on the
//              expert-parallel group and come back by a second one (MoEAlltoAllTokenDispatcher);
//   allgather  every rank all-gathers the tokens of its expert-parallel group, runs its experts on
//              those routed to them and reduce-scatters the outputs (MoEAllGatherTokenDispatcher);
//   deepep     DeepEP's normal kernels (Megatron's flex dispatcher; DeepSeek-V3, arXiv:2412.19437
//              §3.2.2): a token crosses the network once per destination node, to the GPU of its own
//              rail there, which forwards it over NVLink to the GPUs holding its experts; the combine
//              runs the reverse way. Tokens and the gradients of the expert outputs are dispatched
//              in fp8 (1 byte per element and a 4-byte scale per 128) when the GEMMs run in fp8, the
//              combine and the dispatch's backward in the activation dtype (DeepSeek-V3 §3.3.2).
enum class MoeDispatcher { kAllToAll, kAllGather, kDeepEp };
// How context parallelism runs attention (Megatron --cp-comm-type):
//   p2p  ring attention: cp − 1 steps each passing a K/V block to the next rank, overlapped with the
//        attention of the block in hand (TransformerEngine's context-parallel attention);
//   a2a  "Ulysses" (DeepSpeed-Ulysses, arXiv:2309.14509): an all-to-all turns the sequence shards
//        into head shards before attention and back after it.
enum class ContextParallelComm { kRing, kAllToAll };

std::string_view name_of(MoeDispatcher dispatcher);      // "alltoall", "allgather", "deepep"
std::string_view name_of(ContextParallelComm comm);      // "p2p", "a2a"
MoeDispatcher parse_moe_dispatcher(std::string_view text);
ContextParallelComm parse_context_parallel_comm(std::string_view text);

// How one rank's share of a layer is cut (Megatron-LM names): tensor parallel size tp (column- and
// row-parallel linear layers, Shoeybi et al. 2019), sequence parallel (norms, dropout and residuals
// split along the sequence across the tp ranks, Korthikanti et al. 2022), context parallel size cp
// (the sequence split across cp ranks), expert parallel size ep (each rank holds num_experts / ep
// routed experts) and expert tensor parallel size etp (each expert's MLP split etp ways).
struct ShardSpec {
  int64_t tp = 1;
  bool sequence_parallel = false;
  int64_t cp = 1;
  int64_t ep = 1;
  int64_t etp = 1;
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  ContextParallelComm cp_comm = ContextParallelComm::kRing;
  // The expert-parallel group's ranks per node, the group laid out node by node (group ranks
  // g·G .. g·G + G − 1 on one node); 0 = unknown. The deepep dispatcher's traffic needs it.
  int64_t ep_ranks_per_node = 0;
  // The GPU's streaming multiprocessors; 0 = unknown. pytorch-eager's flash forward picks its KV
  // splits by it (workloads/flash_attention_splits.h).
  int64_t gpu_sm_count = 0;
};

// Per-rank dimensions of a model under a ShardSpec.
struct ShardedDims {
  int64_t tp = 1;
  int64_t cp = 1;
  int64_t ep = 1;
  int64_t etp = 1;
  bool sequence_parallel = false;
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  ContextParallelComm cp_comm = ContextParallelComm::kRing;
  int64_t ep_ranks_per_node = 0;  // ShardSpec::ep_ranks_per_node
  int64_t gpu_sm_count = 0;       // ShardSpec::gpu_sm_count
  int64_t head_dim = 0;           // value/output size per head (MLA: v_head_dim)
  int64_t qk_head_dim = 0;        // query/key size per head (MLA: head_dim + rope_head_dim)
  int64_t heads_per_rank = 0;     // a / tp
  int64_t kv_heads_per_rank = 0;  // kv / tp, or 1 when kv < tp (replicated)
  int64_t kv_replication = 1;     // ranks holding a copy of each KV head: tp / kv when kv < tp
  int64_t ffn_per_rank = 0;       // ffn / tp
  int64_t padded_vocab = 0;       // vocabulary padded as Megatron does (see padded_vocab_size)
  int64_t vocab_per_rank = 0;     // padded_vocab / tp
  int64_t experts_per_rank = 0;   // routed experts held: num_experts / ep (0 for a dense model)
  int64_t expert_ffn_per_rank = 0;  // moe_ffn_hidden / etp
  int64_t shared_ffn_per_rank = 0;  // shared experts' intermediate size / tp
};

// Megatron's vocabulary padding: the smallest multiple of divisible_by × tp that is ≥ vocab
// (megatron/training/tokenizer _vocab_size_with_padding). 50,257 → 50,304 (tp 1), 50,688 (tp 4),
// 51,200 (tp 8). Throws InputError for non-positive arguments.
int64_t padded_vocab_size(int64_t vocab, int64_t divisible_by, int64_t tp);

// Positive divisors of n in increasing order (for "valid values" in error messages).
std::vector<int64_t> divisors(int64_t n);

// Validates the model against the shard spec and returns the per-rank dimensions. Throws InputError
// naming the fields and suggesting valid values when: tp, cp, ep or etp is not positive; heads % tp ≠ 0
// (docs/cases/layouts.md L3); kv_heads and tp do not nest (tp must divide kv_heads, or kv_heads
// must divide tp so that each KV head is replicated tp/kv times: L2); ffn_hidden % tp ≠ 0 (with dense
// layers); num_experts % ep ≠ 0 (L3), moe_ffn_hidden % etp ≠ 0, the shared experts' size % tp ≠ 0,
// ep or etp above 1 for a dense model; experts with tp > 1 but no sequence parallelism (Megatron-Core
// moe_layer.py refuses it); Ulysses (a2a) with query or KV heads per rank not divisible by cp.
ShardedDims shard_model(const ModelSpec& model, const ShardSpec& shard);

// Checks that need the training spec too; throws InputError naming the fields: with cp > 1 the
// sequence must split into 2·cp equal chunks (causal load balancing by zig-zag sharding,
// docs/cases/moe_cp.md E2); with sequence parallel each tp rank must get a whole share of the
// (context-parallel) sequence; cp > 1 needs the fused attention kernel priced by FLOPs (attention
// flash, flash_kernel not sdpa-flash) and no sliding window.
void validate_sharding(const ModelSpec& model, const TrainingSpec& training, const ShardSpec& shard);

}  // namespace clustersim
