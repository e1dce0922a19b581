#include "parallelism/validate_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.h"
#include "parallelism/eager_program.h"
#include "parallelism/program_builder.h"
#include "parallelism/rank_grid.h"
#include "workloads/moe_routing.h"
#include "workloads/shard_spec.h"

namespace clustersim {

namespace {

// A built cluster's nodes, as the checks read them.
struct BuiltNodes {
  const Cluster& cluster;
  int gpu_count() const { return cluster.gpu_count(); }
  int node_count() const { return cluster.node_count(); }
  int gpus_in_node(int node) const { return cluster.gpus_in_node(node); }
  int node_of(int rank) const { return cluster.node_of(rank); }
  const GpuSpec& gpu(int node) const { return cluster.node_spec(node).gpu; }
};

// The nodes of a ClusterSpec before the cluster is built: GPUs numbered node by node, spec.gpus_per_node
// (when above 0) used in each, as Cluster builds them (topology/cluster.cc).
class SpecNodes {
 public:
  explicit SpecNodes(const ClusterSpec& spec) : spec_(spec) {
    int first = 0;
    for (const NodeSpec& n : spec.nodes) {
      first_gpu_.push_back(first);
      first += spec.gpus_per_node > 0 ? spec.gpus_per_node : n.gpus;
    }
    gpus_ = first;
  }
  int gpu_count() const { return gpus_; }
  int node_count() const { return static_cast<int>(spec_.nodes.size()); }
  int gpus_in_node(int node) const {
    const size_t n = static_cast<size_t>(node);
    return (n + 1 < first_gpu_.size() ? first_gpu_[n + 1] : gpus_) - first_gpu_[n];
  }
  int node_of(int rank) const {
    return static_cast<int>(std::upper_bound(first_gpu_.begin(), first_gpu_.end(), rank) - first_gpu_.begin()) - 1;
  }
  const GpuSpec& gpu(int node) const { return spec_.nodes.at(static_cast<size_t>(node)).gpu; }

 private:
  const ClusterSpec& spec_;
  std::vector<int> first_gpu_;
  int gpus_ = 0;
};

template <typename Nodes>
LayoutContext layout_context_of(const ModelSpec& model, const TrainingSpec& training, const Nodes& nodes,
                                bool allow_idle_gpus) {
  LayoutContext c;
  c.layers = static_cast<int>(model.layers);
  c.heads = static_cast<int>(model.heads);
  c.kv_heads = static_cast<int>(model.kv_head_count());
  c.experts = static_cast<int>(model.moe.num_experts);
  c.moe_ffn_hidden = static_cast<int>(model.moe.moe_ffn_hidden);
  c.ffn_hidden = static_cast<int>(model.ffn_hidden);
  c.gpus = nodes.gpu_count();
  const int first = nodes.gpus_in_node(0);
  bool uniform = true;
  for (int n = 1; n < nodes.node_count(); ++n) uniform = uniform && nodes.gpus_in_node(n) == first;
  c.gpus_per_node = uniform ? first : 0;
  c.global_batch = training.global_batch;
  c.micro_batch = training.micro_batch;
  c.seq_len = training.seq_len;
  c.allow_idle_gpus = allow_idle_gpus;
  return c;
}

template <typename Nodes>
const GpuSpec& uniform_gpu_of(const Nodes& nodes) {
  const GpuSpec& gpu = nodes.gpu(0);
  for (int n = 1; n < nodes.node_count(); ++n) {
    if (nodes.gpu(n).name != gpu.name) {
      throw InputError(fmt::format("cluster: node {} has {} GPUs but node 0 has {}; training simulation needs one GPU "
                                   "model throughout",
                                   n, nodes.gpu(n).name, gpu.name))
          .about({"cluster"});
    }
  }
  return gpu;
}

// The expert-parallel group of rank 0 as runs of consecutive group ranks on one node:
// (node, ranks) in group order.
template <typename Nodes>
std::vector<std::pair<int, int64_t>> expert_group_node_runs(const Layout& layout, const Nodes& nodes) {
  std::vector<std::pair<int, int64_t>> runs;
  for (int m : RankGrid(layout).group_of(GroupKind::kExpert, 0)) {
    const int node = nodes.node_of(m);
    if (runs.empty() || runs.back().first != node) runs.emplace_back(node, 0);
    ++runs.back().second;
  }
  return runs;
}

template <typename Nodes>
int64_t expert_ranks_per_node_of(const Layout& layout, const Nodes& nodes) {
  if (layout.ep <= 1) return 0;
  const auto runs = expert_group_node_runs(layout, nodes);
  std::vector<int> node_ids;
  for (const auto& [node, ranks] : runs) {
    if (ranks != runs.front().second) return 0;
    node_ids.push_back(node);
  }
  std::sort(node_ids.begin(), node_ids.end());
  if (std::adjacent_find(node_ids.begin(), node_ids.end()) != node_ids.end()) return 0;  // a node visited twice
  return runs.front().second;
}

template <typename Nodes>
void check_deepep_node_layout_of(const Layout& layout, const Nodes& nodes) {
  if (layout.moe_dispatcher != MoeDispatcher::kDeepEp || layout.ep <= 1) return;
  if (expert_ranks_per_node_of(layout, nodes) != 0) return;
  std::vector<int64_t> per_node;
  for (const auto& run : expert_group_node_runs(layout, nodes)) per_node.push_back(run.second);
  throw InputError(fmt::format("parallelism.moe_dispatcher deepep needs each expert-parallel group laid out node by "
                               "node, the same number of its ranks on every node it spans; with ep {}, etp {} and "
                               "order {} the group of rank 0 has {} ranks on its successive nodes; use an ep·etp "
                               "that divides the GPUs per node or is a multiple of them, or moe_dispatcher alltoall",
                               layout.ep, layout.etp, layout.order, fmt::join(per_node, " + ")))
      .about({"parallelism.moe_dispatcher", "parallelism.ep"});
}

template <typename Nodes>
void validate_run_on(const ModelSpec& model, const TrainingSpec& training, const Layout& layout, const Nodes& nodes,
                     bool allow_idle_gpus, bool check_nodes) {
  model.validate();
  training.validate(model);
  validate_layout(layout, layout_context_of(model, training, nodes, allow_idle_gpus));
  if (check_nodes) {
    check_deepep_node_layout_of(layout, nodes);
    uniform_gpu_of(nodes);
  }
  validate_sharding(model, training, shard_spec(layout));
  check_cuda_graphs(training, layout);
  check_pytorch_eager_layout(training, layout);
  if (layout.moe_dispatcher == MoeDispatcher::kDeepEp && layout.ep > 1 && model.moe.enabled()) {
    require_even_shares_for_deepep(expert_rank_shares(expert_token_shares(model, training.moe_routing), layout.ep));
  }
  check_bucket_counts(Transformer(model, training, shard_spec(layout)), layout);
}

}  // namespace

LayoutContext layout_context(const ModelSpec& model, const TrainingSpec& training, const Cluster& cluster,
                             bool allow_idle_gpus) {
  return layout_context_of(model, training, BuiltNodes{cluster}, allow_idle_gpus);
}

const GpuSpec& uniform_gpu(const Cluster& cluster) { return uniform_gpu_of(BuiltNodes{cluster}); }

int64_t expert_ranks_per_node(const Layout& layout, const Cluster& cluster) {
  return expert_ranks_per_node_of(layout, BuiltNodes{cluster});
}

void check_deepep_node_layout(const Layout& layout, const Cluster& cluster) {
  check_deepep_node_layout_of(layout, BuiltNodes{cluster});
}

void validate_run(const ModelSpec& model, const TrainingSpec& training, const Layout& layout,
                  const ClusterContext& context) {
  validate_run_on(model, training, layout, BuiltNodes{context.cluster}, context.allow_idle_gpus, context.check_nodes);
}

void validate_run(const ModelSpec& model, const TrainingSpec& training, const Layout& layout, const ClusterSpec& spec,
                  bool allow_idle_gpus) {
  validate_run_on(model, training, layout, SpecNodes(spec), allow_idle_gpus, /*check_nodes=*/true);
}

}  // namespace clustersim
