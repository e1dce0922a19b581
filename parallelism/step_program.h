#pragma once

// The work of one pipeline stage in one training step, as the simulator executes it.
//
// A stage holds v model chunks. Each chunk has a forward and a backward pass program: a sequence
// of compute ops (already priced by the cost model), collectives on the rank's process groups
// (blocking, or started asynchronously and waited for later), and markers where parameter
// gradients become ready for the data-parallel reduction. All ranks of a stage run the same
// program (programs are templates, DESIGN.md "Speed at scale"); the simulator gives each rank a
// cursor into it.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/collective.h"
#include "core/units.h"
#include "cost_models/power_model.h"
#include "parallelism/rank_grid.h"
#include "workloads/op.h"

namespace clustersim {

// What a compute op counts as in the time breakdown and in HFU.
enum class WorkKind { kForward, kBackward, kRecompute, kOptimizer };

// The work kind of an op of the given pass (the optimizer step has no pass of its own).
constexpr WorkKind work_of(Pass pass) {
  switch (pass) {
    case Pass::kForward: return WorkKind::kForward;
    case Pass::kBackward: return WorkKind::kBackward;
    case Pass::kRecompute: return WorkKind::kRecompute;
  }
  return WorkKind::kForward;
}

// The host side of a compute op: the CPU thread that issues its kernels (framework dispatch plus
// the launch API call) runs ahead of the GPU, and a kernel starts at the latest of its issue time
// and the end of the kernel before it (parallelism/step_simulation.h). For a run of kernels
// k = 1..n with host costs c_k and GPU times w_k, issued from host time h on a GPU free from t:
//   end = max(t + Σ w_k, h + span),   span = max over k of (c_1 + … + c_k) + (w_k + … + w_n),
// and the host is done at h + issue, issue = Σ c_k (the recursion s_k = max(e_(k−1), h + c_1 + … +
// c_k), e_k = s_k + w_k unrolled). Durations; all zero = no host side (the GPU never waits).
struct HostWork {
  Duration issue;       // Σ c_k: host time to issue every kernel of the op
  Duration span;        // as above: host issue plus GPU work of the critical suffix
  int64_t kernels = 0;  // kernels launched (for the launch-queue depth)

  // One kernel of host cost `host` and GPU time `gpu`.
  static HostWork kernel(Duration host, Duration gpu) { return HostWork{host, host + gpu, 1}; }
  // This run followed by `next`, whose GPU time is `next_gpu` (associative: merged ops keep the
  // exact closed form).
  void then(const HostWork& next, Duration next_gpu) {
    span = std::max(span + next_gpu, issue + next.span);
    issue += next.issue;
    kernels += next.kernels;
  }
  // A share of the run (a compute op split at a ZeRO-3 bucket boundary): issue and span scaled.
  HostWork scaled(double share) const {
    return HostWork{issue.scaled(share), span.scaled(share), kernels};
  }
};

struct ProgramOp {
  enum class Kind {
    kCompute,         // occupy the compute stream for `duration`
    kCollective,      // a collective on `group`; blocking unless `handle` >= 0
    kWait,            // wait for the asynchronous collective `handle` of this pass
    kGradientsReady,  // `elements` parameter gradients of `group`'s reduction are final (last microbatch)
    kSync,            // a device-to-host synchronisation: the host waits for the compute stream
                      // to reach this point, then spends `host.issue` (a D2H read, .item())
  };
  Kind kind = Kind::kCompute;
  WorkKind work = WorkKind::kForward;
  Duration duration;
  double flops = 0;  // FLOPs of a compute op (for the trace and HFU)
  PowerWork power;   // a compute op's full-clock power work (empty: counted as idle, never slowed)
  // kCompute: the host side of its kernels; kCollective: the NCCL call's host cost (`issue`);
  // kSync: the synchronisation's own host cost (`issue`).
  HostWork host;
  GroupKind group = GroupKind::kTensor;
  CollectiveOp op = CollectiveOp::kAllReduce;
  Bytes size;           // collective size in the nccl-tests convention (collectives/collective.h)
  int handle = -1;      // kCollective: >= 0 starts it asynchronously under this id; kWait: the id
  int64_t elements = 0; // kGradientsReady
  std::string label;    // shown in traces: "qkv", "tp_all_reduce", ...
  // all_to_all with uneven blocks: the n × n bytes in group-rank order (row = sender), shared by the
  // copies of a priced layer; null = `size` split evenly.
  std::shared_ptr<const std::vector<int64_t>> all_to_all_bytes;

  static ProgramOp compute(std::string label, WorkKind work, Duration duration, double flops = 0,
                           PowerWork power = {}, HostWork host = {}) {
    ProgramOp op;
    op.kind = Kind::kCompute;
    op.label = std::move(label);
    op.work = work;
    op.duration = duration;
    op.flops = flops;
    op.power = power;
    op.host = host;
    return op;
  }
  static ProgramOp sync(std::string label, Duration host_cost) {
    ProgramOp op;
    op.kind = Kind::kSync;
    op.label = std::move(label);
    op.host.issue = host_cost;
    return op;
  }
  static ProgramOp collective(std::string label, GroupKind group, CollectiveOp collective_op, Bytes size,
                              int async_handle = -1) {
    ProgramOp op;
    op.kind = Kind::kCollective;
    op.label = std::move(label);
    op.group = group;
    op.op = collective_op;
    op.size = size;
    op.handle = async_handle;
    return op;
  }
  static ProgramOp wait(int async_handle) {
    ProgramOp op;
    op.kind = Kind::kWait;
    op.handle = async_handle;
    op.label = "wait";
    return op;
  }
  static ProgramOp gradients_ready(GroupKind group, int64_t elements) {
    ProgramOp op;
    op.kind = Kind::kGradientsReady;
    op.group = group;
    op.elements = elements;
    op.label = "grads_ready";
    return op;
  }
};

struct PassProgram {
  std::vector<ProgramOp> ops;
};

struct ChunkProgram {
  PassProgram forward;
  PassProgram backward;  // includes the recompute forward ops first when recomputing
  // Point-to-point payloads to the next virtual stage (forward activations) and to the previous
  // one (backward gradients), per microbatch, per rank: [micro_batch, seq/cp, hidden] (/tp with
  // sequence parallel or the scatter-gather optimization) in the activation dtype.
  Bytes activation_bytes;
  Bytes gradient_bytes;
};

// The data-parallel gradient reduction and parameter handling of a stage.
struct GradientReduction {
  CollectiveOp op = CollectiveOp::kAllReduce;  // all_reduce, or reduce_scatter with ZeRO >= 1
  int64_t bytes_per_element = 4;               // gradient dtype size as reduced
  int64_t bucket_elements = 40'000'000;        // Megatron DDP bucket size
  bool overlap = true;                         // launch buckets during the last backward
  // Hybrid sharding (Layout::dp_shard): each bucket's reduce-scatter in the shard group is followed
  // by an all-reduce of its shard, ceil(bucket / replicate_shards) elements, across the replica
  // group (GroupKind::kDataReplicate); 0 = no replica all-reduce.
  int64_t replicate_shards = 0;
  // Layout::reduce_every_microbatch: every backward pass reduces its gradients (m reductions per
  // step); false: only the chunk's last backward does.
  bool every_microbatch = false;
  // Megatron-LM's --align-grad-reduce (its default) with overlap under pipeline parallelism: the
  // schedule, not the backward hooks, issues the buckets (grad_sync_func, megatron/training/
  // training.py:4356-4359). 1F1B: the first stage overlaps its last backward pass bucket by bucket,
  // every other stage issues all its buckets once its last backward pass is over, in the pipeline's
  // drain (core/pipeline_parallel/schedules.py:2430-2434, :2452-2461, :2476-2480). Interleaved: a
  // chunk's buckets are all issued pp_rank backward passes after its last one, on every stage
  // (schedules.py:1438-1456), and what is left at the end (:2063-2069).
  bool pipeline_aligned = false;
};

// One kernel launch of the optimizer step.
struct OptimizerLaunch {
  std::string label;
  Duration duration;  // full-clock GPU time
  PowerWork power;
  HostWork host;
};

struct StageProgram {
  std::vector<ChunkProgram> chunks;  // v chunks; chunk c is virtual stage c·pp + stage
  GradientReduction gradients;
  Duration optimizer;                // optimizer step compute time on this rank
  PowerWork optimizer_power;         // its full-clock power work
  HostWork optimizer_host;           // the host side of its kernels
  // The optimizer step launch by launch, where the simulation runs (and a trace shows) each of its
  // kernels: pytorch-eager's multi_tensor_apply launches. Their durations, power and host issue
  // add up to the three above. Empty: the step runs as one compute op.
  std::vector<OptimizerLaunch> optimizer_launches;
  // Host cost of the device-to-host synchronisation before the optimizer step (Megatron's gradient
  // norm for clipping, read with .item()); zero = none.
  Duration optimizer_sync;
  // Compute that waits for every gradient reduction and runs before the optimizer step: PyTorch
  // DDP copying the reduced buckets back into the parameters' .grad (framework pytorch-eager).
  Duration after_reductions;
  PowerWork after_reductions_power;
  HostWork after_reductions_host;
  // ZeRO >= 1 / distributed optimizer: all-gather of the updated parameters on the data-parallel
  // group after the optimizer (bytes = gathered output per rank); zero = none.
  Bytes data_param_gather;
  Bytes expert_param_gather;  // the same on the expert-data-parallel group
  // Tied word embedding with pp > 1, first and last stage: the all-reduce of the embedding's
  // gradient between them (GroupKind::kEmbedding) after the data-parallel reductions, before the
  // optimizer (Megatron's _allreduce_word_embedding_grads in finalize_model_grads; DeepSpeed's
  // ReduceTiedGrads); bytes per rank, zero = none.
  Bytes embedding_grad_reduce;
  // The group of the dense parameters' gradient reduction and parameter gather: kData, or
  // kDataContext (dp·cp ranks) with context parallelism, kDataShard under hybrid sharding. Expert
  // parameters use kExpertData.
  GroupKind data_group = GroupKind::kData;
  bool overlap_param_gather = false;  // hidden behind the next step's forward when true
};

}  // namespace clustersim
