#pragma once

// A parallel layout in Megatron-LM's terms, and its validation.
//
// World = tp · cp · pp · dp GPUs (expert parallelism re-partitions the tp·cp·dp ranks of a stage
// for the MoE layers: ep · etp · expert_dp = tp · cp · dp, Megatron-Core's decoupled expert
// parallelism; the dense layers' gradients and distributed optimizer span the dp·cp ranks,
// Megatron's data-parallel group with context parallelism). Each pipeline stage holds a contiguous
// range of layers; with virtual pipelining (vpp > 1, "interleaved 1F1B") each stage holds vpp
// chunks and chunk c of stage s holds the (c·pp + s)-th slice of the model (Narayanan et al. SC21,
// §2.2.2).

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/shard_spec.h"

namespace clustersim {

enum class PipelineSchedule { kGpipe, kOneFOneB, kInterleaved1F1B };

// "gpipe", "1f1b", "interleaved-1f1b".
std::string_view name_of(PipelineSchedule schedule);
PipelineSchedule parse_pipeline_schedule(std::string_view text);

// The data-parallel gradient collective. kAuto: all-reduce without ZeRO, reduce-scatter with ZeRO >= 1
// (Megatron's distributed optimizer, DeepSpeed ZeRO-2/3). kAllReduce with ZeRO 1: every rank
// all-reduces the whole gradient and then updates its optimizer shard, as DeepSpeed's pipeline engine
// does with its bf16 optimizer (PipelineEngine._exec_reduce_grads → _bf16_reduce_grads, a
// buffered all-reduce of the optimizer's fp32 gradients; BLOOM's Megatron-DeepSpeed runs).
enum class GradReduceOp { kAuto, kAllReduce, kReduceScatter };

// "auto", "all_reduce", "reduce_scatter"; parsing any other text throws InputError listing them.
std::string_view name_of(GradReduceOp op);
GradReduceOp parse_grad_reduce_op(std::string_view text);

// parallelism.grad_bucket_elements: "auto" gives 0 (the framework's default); else a whole number
// of parameters in [1, 2^62]. Throws InputError saying what is valid.
int64_t parse_grad_bucket_elements(std::string_view text);

struct Layout {
  int tp = 1;   // tensor-parallel size
  int pp = 1;   // pipeline-parallel size (stages)
  int dp = 1;   // data-parallel size
  int cp = 1;   // context-parallel size
  int ep = 1;   // expert-parallel size (MoE layers)
  int etp = 1;  // expert tensor-parallel size (MoE layers)
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;  // Megatron --moe-token-dispatcher-type
  ContextParallelComm cp_comm = ContextParallelComm::kRing;  // Megatron --cp-comm-type (p2p or a2a)
  int vpp = 1;  // model chunks per stage (virtual pipeline size); 1 = no interleaving
  // Megatron's --num-layers-per-virtual-pipeline-stage; 0 = derive from vpp. When set, vpp is
  // derived as layers_per_stage / layers_per_virtual_stage and must divide evenly.
  int layers_per_virtual_stage = 0;
  // Explicit per-stage layer counts (length pp, summing to the model's layers); empty = even split.
  std::vector<int> stage_layers;
  bool sequence_parallel = false;
  int zero_stage = 0;  // 0 none; 1 optimizer state sharded (= Megatron distributed optimizer); 2 + grads; 3 + params
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  // Rank order, innermost first, as Megatron-Core's --rank-order ("tp-cp-ep-dp-pp" by default):
  // consecutive ranks differ in the first dimension. "ep" places the expert-parallel dimension of
  // the MoE layers next to "dp" (Megatron requires them adjacent): before it ("ep-dp", the default)
  // expert-parallel ranks are consecutive, after it ("dp-ep") they are expert_dp apart.
  std::string order = "tp-cp-dp-pp";
  bool overlap_grad_reduce = true;    // gradient reduction overlapped with backward (bucketed)
  // Gradients reduced after every micro-batch's backward instead of once after the last: PyTorch
  // FSDP and DDP outside no_sync (FSDP2 / torchtitan's and MosaicML Composer's FSDP), DeepSpeed
  // ZeRO-2/3 (which partition the gradients every backward). false: accumulated locally and reduced
  // once per step, as Megatron-LM, and FSDP and DDP under no_sync (HF Trainer and accelerate's
  // accumulation). nullopt (`auto`): true for ZeRO 2 and 3, whose gradients are kept sharded.
  std::optional<bool> reduce_every_microbatch;
  bool overlap_param_gather = false;  // ZeRO/distributed-optimizer parameter all-gather overlapped with forward
  // Gradient bucket size in parameters; 0 (`auto`): the framework's default
  // (parallelism/program_builder.h, gradient_bucket_elements).
  int64_t grad_bucket_elements = 0;
  // The gradient collective (GradReduceOp); all_reduce needs zero <= 1, reduce_scatter zero >= 1.
  GradReduceOp grad_reduce_op = GradReduceOp::kAuto;
  // Megatron-Core --tp-comm-overlap: the sequence-parallel all-gathers and reduce-scatters next to the
  // QKV, projection and MLP GEMMs run overlapped with them as Transformer Engine's userbuffers do
  // (parallelism/tp_comm_overlap.h). Needs tp > 1 and sequence parallelism (Megatron's requirement).
  bool tp_comm_overlap = false;
  // ZeRO-3 parameter gathers: 0 = one all-gather per layer, prefetched one layer ahead (PyTorch FSDP's
  // per-module FULL_SHARD); > 0 = DeepSpeed ZeRO-3: all-gathers of at most this many parameters, with
  // prefetching bounded to one such bucket ahead of use (stage3_prefetch_bucket_size).
  int64_t zero3_bucket_elements = 0;
  // Hybrid sharding: the data-parallel ranks that shard the model state under ZeRO >= 1 (each group
  // with its cp ranks); 0 = all dp ranks (full sharding). With 0 < dp_shard < dp the state is sharded
  // inside groups of dp_shard consecutive data-parallel ranks and replicated across the dp / dp_shard
  // groups: gradients are reduce-scattered inside a group, then each shard is all-reduced across the
  // groups, and parameters are all-gathered inside a group. PyTorch FSDP's HYBRID_SHARD (FSDP2's
  // 2-D mesh, torchtitan's data_parallel_shard_degree × data_parallel_replicate_degree) and Megatron-
  // Core's --num-distributed-optimizer-instances = dp / dp_shard (distributed_data_parallel.py: the
  // reduce-scatter in the intra-instance group, then an all-reduce in the inter-instance group).
  int dp_shard = 0;

  int world_size() const { return tp * cp * pp * dp; }
  // Expert data-parallel size: (tp · cp · dp) / (ep · etp). Requires validate() to have passed.
  int expert_dp() const { return tp * cp * dp / (ep * etp); }
  // Data-parallel ranks one copy of the sharded state spans: dp_shard, or dp when it is 0.
  int shard_dp() const { return dp_shard > 0 ? dp_shard : dp; }
  // Whether each micro-batch's backward reduces its gradients (reduce_every_microbatch resolved).
  bool reduces_every_microbatch() const { return reduce_every_microbatch.value_or(zero_stage >= 2); }
  // Hybrid sharding applies: ZeRO >= 1 with 0 < dp_shard < dp.
  bool hybrid_shard() const { return zero_stage >= 1 && shard_dp() < dp; }
};

// The divisors of n >= 1 in increasing order (the valid tp, pp or vpp values an error suggests, and
// the sizes a layout search lists by default); empty for n < 1.
std::vector<int> divisors(int n);

// What a layout is checked against.
struct LayoutContext {
  int layers = 0;           // transformer layers of the model
  int heads = 0;            // attention (query) heads
  int kv_heads = 0;         // key/value heads (== heads for MHA)
  int experts = 0;          // routed experts (0 for a dense model)
  int moe_ffn_hidden = 0;   // intermediate size of one expert (must divide by etp)
  int ffn_hidden = 0;       // MLP hidden size (must divide by tp)
  int gpus = 0;             // GPUs of the cluster
  int gpus_per_node = 0;    // GPUs per node (0: unknown / heterogeneous)
  int64_t global_batch = 0; // sequences per step
  int64_t micro_batch = 0;  // sequences per micro-batch
  int64_t seq_len = 0;      // tokens per sequence
  bool allow_idle_gpus = false;  // world_size may be smaller than gpus
};

// Checks `layout` against `context`. Throws InputError whose message names the fields involved,
// the values and valid alternatives (../docs/cases/layouts.md):
//   world size tp·cp·pp·dp vs GPUs; heads % tp, tp % kv_heads or kv_heads % tp (GQA replication),
//   ffn % tp; layers vs pp and vpp / layers_per_virtual_stage and explicit stage lists (sum, length,
//   each stage divisible by vpp, no empty stage); global_batch % (micro_batch · dp) with the two
//   nearest valid batches suggested; interleaved schedule needs vpp > 1 and microbatches % pp == 0
//   (Megatron-LM's requirement); 1F1B / GPipe with fewer microbatches than stages are accepted (their
//   extra bubble is simulated, not hidden); experts % ep (L3), (tp·cp·dp) % (ep·etp), moe_ffn % etp,
//   MoE with tp > 1 needs sequence parallelism (Megatron-Core), ep/etp > 1 needs experts; seq_len %
//   (2·cp) (zig-zag context-parallel sharding), Ulysses (cp_comm a2a) needs the heads per tensor rank
//   divisible by cp; sequence parallel needs tp > 1; zero_stage in 0..3; the order string is a
//   permutation of tp, cp, ep, dp, pp (ep optional, and next to dp when given); tp_comm_overlap needs
//   tp > 1 and sequence parallelism; zero3_bucket_elements is not negative and needs zero_stage 3 and a
//   dense model; grad_reduce_op all_reduce needs zero_stage <= 1, reduce_scatter zero_stage >= 1;
//   overlap_param_gather needs zero_stage >= 1 (Megatron-LM arguments.py); dp_shard is 0 or divides dp,
//   below dp it needs zero_stage >= 1, a dense model and grad_reduce_op auto or reduce_scatter.
void validate_layout(const Layout& layout, const LayoutContext& context);

// Per-stage layer counts of a validated layout: stage_layers if given, else layers / pp each.
std::vector<int> layers_per_stage(const Layout& layout, int layers);

// The 0-based model layers held by chunk `chunk` of stage `stage` (virtual stage chunk·pp + stage),
// in order, of a validated layout: virtual stages hold consecutive layer ranges in virtual-stage
// order, each chunk of stage s stage_layers[s] / v layers.
std::vector<int> chunk_layers(const Layout& layout, int layers, int stage, int chunk);

// How one rank's share of a layer is cut under `layout` (tp, sp, cp, ep, etp, dispatcher, cp_comm).
ShardSpec shard_spec(const Layout& layout);

// The virtual pipeline size of a validated layout (derives it from layers_per_virtual_stage).
int virtual_stages(const Layout& layout, int layers);

// The most microbatches per pipeline per step a layout may have: the step simulation runs every
// microbatch, so its time grows with their number (9 s at 65,536 for a 13B model with pp 2 on one
// core of a 2-core development machine).
// validate_layout rejects more with InputError.
inline constexpr int64_t kMaxMicrobatchesPerPipeline = 65'536;

// The product of parallel sizes (each >= 1), such as tp·cp·pp·dp, or nullopt when it exceeds the int
// range: multiplied one by one, so sizes far beyond any cluster cannot overflow.
std::optional<int64_t> size_product(std::initializer_list<int> sizes);

// Microbatches per pipeline per step: global_batch / (micro_batch · dp).
int64_t microbatches(const Layout& layout, int64_t global_batch, int64_t micro_batch);

}  // namespace clustersim
