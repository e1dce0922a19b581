#include "parallelism/pod_placement.h"

#include <algorithm>
#include <utility>

namespace clustersim {

std::vector<PodSpan> pod_spans(const Cluster& cluster, const Layout& layout) {
  const RankGrid grid(layout);
  const std::pair<GroupKind, const char*> kinds[] = {{GroupKind::kTensor, "tp"},
                                                     {GroupKind::kContext, "cp"},
                                                     {GroupKind::kData, "dp"},
                                                     {GroupKind::kPipeline, "pp"},
                                                     {GroupKind::kExpert, "ep"}};
  std::vector<PodSpan> spans;
  const int world = grid.world_size();
  for (const auto& [kind, name] : kinds) {
    std::vector<bool> seen(static_cast<size_t>(world), false);
    PodSpan span;
    span.kind = kind;
    span.name = name;
    bool first = true;
    for (int rank = 0; rank < world; ++rank) {
      if (seen[static_cast<size_t>(rank)]) continue;
      const std::vector<int> group = grid.group_of(kind, rank);
      std::vector<int> pods;
      for (int member : group) {
        seen[static_cast<size_t>(member)] = true;
        pods.push_back(cluster.pod_of(member));
      }
      std::sort(pods.begin(), pods.end());
      const int count = static_cast<int>(std::unique(pods.begin(), pods.end()) - pods.begin());
      span.size = static_cast<int>(group.size());
      span.min_pods = first ? count : std::min(span.min_pods, count);
      span.max_pods = first ? count : std::max(span.max_pods, count);
      first = false;
    }
    if (span.size > 1) spans.push_back(span);
  }
  return spans;
}

}  // namespace clustersim
