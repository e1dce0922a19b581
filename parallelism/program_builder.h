#pragma once

// Turns a model, a training spec and a layout into the stage programs the step simulator runs, and
// each stage's memory.
//
// Stage s holds layers_per_stage(layout)[s] layers cut into v chunks; chunk c is virtual stage
// c·pp + s and holds the model layers chunk_layers(layout, layers, s, c) (dense or mixture-of-experts
// by the model). The first virtual stage adds the embedding, the last the final norm, LM head and
// loss. A chunk's forward is its layers' forward ops in Megatron order; its backward is, per layer in
// reverse, the recompute ops (full or selective recompute) then the backward ops, followed by
// gradients-ready markers with the layer's dense parameters (for the data-parallel buckets) and its
// expert parameters (for the expert-data-parallel buckets). Compute ops are priced by the
// ComputeCostModel; communication points become collectives: tensor-parallel ones blocking on the
// tensor group, the MoE dispatch and combine blocking all-to-alls on the expert group (with the
// routing's n × n matrix), the expert-tensor gathers on the expert-tensor group, Ulysses all-to-alls
// on the context group, and the context-parallel ring as cp steps of attention each overlapped with an
// asynchronous K/V exchange on the context group (the block in hand is computed while the next one
// arrives). The dense parameters' gradients are reduced, and with ZeRO >= 1 sharded, over the dp·cp
// ranks (Megatron's data-parallel group with context parallelism), the experts' over the expert data-
// parallel ranks. With ZeRO-3 every layer's parameters are all-gathered on those groups before its
// forward and its backward (prefetched one layer ahead, as FSDP does) and its gradients
// reduce-scattered; with layout.zero3_bucket_elements > 0 the gathers are DeepSpeed's instead: buckets
// of at most that many parameters, fetched at most one bucket ahead of the compute that uses them.
// With layout.tp_comm_overlap the layers' sequence-parallel all-gathers and reduce-scatters next to
// the QKV, projection and MLP GEMMs run overlapped with them (parallelism/tp_comm_overlap.h).
//
// Every rank of a stage runs the same program: with uneven routing (training.moe_routing) each rank
// is given the expert work of the busiest expert-parallel rank, since the group synchronises at
// every all-to-all and so waits for it (the others' idle time is counted as their compute).
//
// Simplified (stated in reports): no tied-embedding gradient all-reduce between the first and last
// stage; the gradient-norm all-reduce of the optimizer and the tensor-parallel all-reduce of
// replicated (MLA down-projection, router) weights' gradients are not simulated; without
// tp_comm_overlap (Megatron's default) tensor-parallel communication blocks the compute stream; the
// MoE dispatch is not overlapped with the shared experts (--moe-shared-expert-overlap).

#include <string>
#include <vector>

#include "cost_models/compute_cost_model.h"
#include "cost_models/memory_model.h"
#include "parallelism/eager_program.h"
#include "parallelism/layout.h"
#include "parallelism/stage_memory.h"
#include "parallelism/step_program.h"
#include "workloads/host_costs.h"
#include "workloads/transformer.h"

namespace clustersim {

struct ProgramOptions {
  // Merge consecutive compute ops into one (fewer events; same total time, HostWork's closed form
  // keeps the host side exact). Off for traces, which then show every kernel.
  bool merge_compute = true;
  // The host cost of each op (workloads/host_costs.h); all zero: no host side, the GPU never waits.
  HostCosts host;
};

struct TrainingPrograms {
  std::vector<StageProgram> stages;
  std::vector<StageMemory> memory;
  int microbatches = 0;
};

// Builds the programs of every stage. `transformer` is the model sharded for one rank
// (shard_spec(layout)). `layout` must have passed validate_layout(). Durations come from `cost`.
TrainingPrograms build_training_programs(const Transformer& transformer, const ComputeCostModel& cost,
                                         const Layout& layout, const ProgramOptions& options = {});

// Parameters per data-parallel gradient bucket: `layout.grad_bucket_elements` when it is set (> 0),
// else the framework's default:
//  - megatron: max(40M, 1M · dp) parameters, DistributedDataParallel's default for
//    ddp_config.bucket_size = None with dp the data-parallel group without context parallelism
//    (Megatron-LM d98e8a6, megatron/core/distributed/distributed_data_parallel.py:131-134,
//    'dp_group' of core/process_groups_config.py:581);
//  - pytorch-eager: DDP's bucket_cap_mb = 25 MiB of gradients, 25 · 2^20 / gradient bytes per
//    element (torch/nn/parallel/distributed.py, bucket_cap_mb default 25).
// Without overlap every reduction is one bucket per gradient buffer (Megatron sets bucket_size to
// None, distributed_data_parallel.py:135-137); the step simulation then ignores the size.
int64_t gradient_bucket_elements(const Layout& layout, const TrainingSpec& training);

// Throws InputError about parallelism.grad_bucket_elements (or parallelism.zero3_bucket_elements)
// when a stage's parameters would make more buckets than a step can simulate: more than
// kMaxMicrobatchesPerPipeline (65,536) gradient buckets per stage, or more than 2^18 ZeRO-3
// gathers per step (buckets x micro-batches). The message gives the least valid size for this
// model and layout. build_training_programs and validate_run both call it.
void check_bucket_counts(const Transformer& transformer, const Layout& layout);

// Throws InputError about training.cuda_graphs (its message opens with the key; InputError::keys())
// when its value cannot apply: layers needs framework megatron; step needs framework pytorch-eager
// with tp 1, pp 1, cp 1 and zero 0 (one GPU or DDP).
void check_cuda_graphs(const TrainingSpec& training, const Layout& layout);

}  // namespace clustersim
