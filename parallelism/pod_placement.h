#pragma once

// Where a layout's process groups sit relative to the pods of a three-tier fabric
// (topology/three_tier_fabric.h): a group inside one pod never crosses the core tier; one that
// spans pods pays the core's oversubscription on every pod crossing (group_layout_builder.h).

#include <string>
#include <vector>

#include "parallelism/layout.h"
#include "parallelism/rank_grid.h"
#include "topology/cluster.h"

namespace clustersim {

struct PodSpan {
  GroupKind kind = GroupKind::kTensor;
  std::string name;   // "tp", "cp", "dp", "pp", "ep"
  int size = 1;       // ranks per group
  int min_pods = 1;   // fewest pods any group of this kind spans
  int max_pods = 1;   // most pods any group of this kind spans
};

// For each of the tensor, context, data(-parallel), pipeline and expert groups whose size is above 1,
// in that order: the fewest and most pods (Cluster::pod_of of each rank's GPU; rank r runs on GPU
// r, rank_grid.h) one group spans, over every group of the kind. Work O(world size) per kind.
// `layout` must have passed validate_layout() and fit the cluster (world size ≤ GPUs), else
// InputError as RankGrid and Cluster raise it.
std::vector<PodSpan> pod_spans(const Cluster& cluster, const Layout& layout);

}  // namespace clustersim
