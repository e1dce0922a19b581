#pragma once

// Whether a run can be simulated: every check that refuses a model, training spec and layout on a
// cluster, behind one entry point. simulate_training (parallelism/training_simulation.h) and the
// layout search (parallelism/layout_search.h) call validate_run before anything else; the checks
// themselves stay beside what they protect (validate_layout in layout.h, TrainingSpec::validate,
// validate_sharding in workloads/shard_spec.h, the framework checks in program_builder.h and
// eager_program.h).
//
// The scenario loader (scenarios/scenario.cc) runs the same checks on a loaded file, on its cluster
// as the file describes it (ClusterSpec; the topology is built later), and places a refusal at the
// key it is about (InputError::keys()).

#include <cstdint>

#include "parallelism/layout.h"
#include "topology/cluster.h"
#include "topology/specs.h"
#include "workloads/model_spec.h"
#include "workloads/training_spec.h"

namespace clustersim {

// The cluster a run is checked against.
struct ClusterContext {
  const Cluster& cluster;
  bool allow_idle_gpus = false;  // simulation.allow_idle_gpus: tp·cp·pp·dp may be below the GPU count
  // Whether to check the cluster's nodes (steps 4 and 5 of validate_run): a search checks their GPU
  // model once for the whole space, and DeepEP's expert groups when it simulates a candidate.
  bool check_nodes = true;
};

// Throws InputError, with the message of the check that refuses it, for a run that cannot be
// simulated. The checks, in this order (the first that fails decides the message):
//  1. the model on its own (ModelSpec::validate);
//  2. the training spec against the model (TrainingSpec::validate);
//  3. the layout against the model, batch and GPU count (validate_layout, docs/cases/layouts.md),
//     with layout_context(model, training, cluster, allow_idle_gpus);
//  4. DeepEP's expert groups laid out node by node (check_deepep_node_layout);
//  5. one GPU model throughout the cluster (uniform_gpu);
//  6. the model's dimensions under the layout's sharding (validate_sharding);
//  7. training.cuda_graphs against the framework and layout (check_cuda_graphs);
//  8. the layouts training.framework pytorch-eager covers (check_pytorch_eager_layout);
//  9. DeepEP's dispatch with balanced routing only (require_even_shares_for_deepep, on the
//     expert-parallel ranks' shares of the routed tokens; moe_dispatcher deepep, ep > 1, MoE);
// 10. the gradient and ZeRO-3 bucket counts of every pipeline stage (check_bucket_counts).
// Steps 4 and 5 only with context.check_nodes. A run that passes can still be refused while it is
// built or simulated for sizes beyond int64 (OverflowError) or a request the collectives reject.
// The errors of steps 7 and 8 carry the keys they are about (InputError::keys():
// training.cuda_graphs; training.framework, or training.params_dtype for FSDP's mixed precision).
void validate_run(const ModelSpec& model, const TrainingSpec& training, const Layout& layout,
                  const ClusterContext& context);

// The same checks, all ten, on a cluster not built yet: the nodes of `spec` as the scenario
// loader resolves them (ClusterSpec::nodes; spec.gpus_per_node, when above 0, GPUs used in each),
// GPUs numbered node by node as Cluster numbers them. `allow_idle_gpus` as in ClusterContext.
void validate_run(const ModelSpec& model, const TrainingSpec& training, const Layout& layout, const ClusterSpec& spec,
                  bool allow_idle_gpus);

// The LayoutContext validate_layout() needs, from the model (layers, heads, ffn, experts), the
// training spec (batch, micro batch, sequence in tokens) and the cluster (GPUs; GPUs per node, 0
// when nodes differ).
LayoutContext layout_context(const ModelSpec& model, const TrainingSpec& training, const Cluster& cluster,
                             bool allow_idle_gpus);

// The GPU every rank runs on: that of node 0. Throws InputError naming the first node with another
// GPU model: the step simulator prices one stage program for all ranks of a stage.
const GpuSpec& uniform_gpu(const Cluster& cluster);

// Throws InputError naming parallelism.moe_dispatcher when the layout asks for DeepEP's dispatch
// (moe_dispatcher deepep, ep > 1) and the expert-parallel group of rank 0 is not laid out node by
// node (expert_ranks_per_node is 0). No-op for other dispatchers and ep = 1.
void check_deepep_node_layout(const Layout& layout, const Cluster& cluster);

// The ranks of an expert-parallel group on each node it spans (ShardSpec::ep_ranks_per_node): the
// group of rank 0, which must lie node by node (consecutive group ranks on one node, the same
// number on each, each node once); 0 when it does not or ep = 1. Ranks are GPUs of `cluster` in
// order.
int64_t expert_ranks_per_node(const Layout& layout, const Cluster& cluster);

}  // namespace clustersim
