#include "parallelism/validate_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.h"
#include "parallelism/program_builder.h"
#include "parallelism/rank_grid.h"
#include "workloads/shard_spec.h"

namespace clustersim {

LayoutContext layout_context(const ModelSpec& model, const TrainingSpec& training, const Cluster& cluster,
                             bool allow_idle_gpus) {
  LayoutContext c;
  c.layers = static_cast<int>(model.layers);
  c.heads = static_cast<int>(model.heads);
  c.kv_heads = static_cast<int>(model.kv_head_count());
  c.experts = static_cast<int>(model.moe.num_experts);
  c.moe_ffn_hidden = static_cast<int>(model.moe.moe_ffn_hidden);
  c.ffn_hidden = static_cast<int>(model.ffn_hidden);
  c.gpus = cluster.gpu_count();
  const int first = cluster.gpus_in_node(0);
  bool uniform = true;
  for (int n = 1; n < cluster.node_count(); ++n) uniform = uniform && cluster.gpus_in_node(n) == first;
  c.gpus_per_node = uniform ? first : 0;
  c.global_batch = training.global_batch;
  c.micro_batch = training.micro_batch;
  c.seq_len = training.seq_len;
  c.allow_idle_gpus = allow_idle_gpus;
  return c;
}

const GpuSpec& uniform_gpu(const Cluster& cluster) {
  const GpuSpec& gpu = cluster.node_spec(0).gpu;
  for (int n = 1; n < cluster.node_count(); ++n) {
    if (cluster.node_spec(n).gpu.name != gpu.name) {
      throw InputError(fmt::format("cluster: node {} has {} GPUs but node 0 has {}; training simulation needs one GPU "
                                   "model throughout",
                                   n, cluster.node_spec(n).gpu.name, gpu.name));
    }
  }
  return gpu;
}

namespace {

// The expert-parallel group of rank 0 as runs of consecutive group ranks on one node:
// (node, ranks) in group order.
std::vector<std::pair<int, int64_t>> expert_group_node_runs(const Layout& layout, const Cluster& cluster) {
  std::vector<std::pair<int, int64_t>> runs;
  for (int m : RankGrid(layout).group_of(GroupKind::kExpert, 0)) {
    const int node = cluster.node_of(m);
    if (runs.empty() || runs.back().first != node) runs.emplace_back(node, 0);
    ++runs.back().second;
  }
  return runs;
}

}  // namespace

int64_t expert_ranks_per_node(const Layout& layout, const Cluster& cluster) {
  if (layout.ep <= 1) return 0;
  const auto runs = expert_group_node_runs(layout, cluster);
  std::vector<int> nodes;
  for (const auto& [node, ranks] : runs) {
    if (ranks != runs.front().second) return 0;
    nodes.push_back(node);
  }
  std::sort(nodes.begin(), nodes.end());
  if (std::adjacent_find(nodes.begin(), nodes.end()) != nodes.end()) return 0;  // a node visited twice
  return runs.front().second;
}

void check_deepep_node_layout(const Layout& layout, const Cluster& cluster) {
  if (layout.moe_dispatcher != MoeDispatcher::kDeepEp || layout.ep <= 1) return;
  if (expert_ranks_per_node(layout, cluster) != 0) return;
  std::vector<int64_t> per_node;
  for (const auto& run : expert_group_node_runs(layout, cluster)) per_node.push_back(run.second);
  throw InputError(fmt::format("parallelism.moe_dispatcher deepep needs each expert-parallel group laid out node by "
                               "node, the same number of its ranks on every node it spans; with ep {}, etp {} and "
                               "order {} the group of rank 0 has {} ranks on its successive nodes; use an ep·etp "
                               "that divides the GPUs per node or is a multiple of them, or moe_dispatcher alltoall",
                               layout.ep, layout.etp, layout.order, fmt::join(per_node, " + ")));
}

void validate_run(const ModelSpec& model, const TrainingSpec& training, const Layout& layout,
                  const ClusterContext& context) {
  model.validate();
  training.validate(model);
  validate_layout(layout, layout_context(model, training, context.cluster, context.allow_idle_gpus));
  if (context.check_nodes) {
    check_deepep_node_layout(layout, context.cluster);
    uniform_gpu(context.cluster);
  }
  validate_sharding(model, training, shard_spec(layout));
  check_cuda_graphs(training, layout);
  check_pytorch_eager_layout(training, layout);
}

}  // namespace clustersim
