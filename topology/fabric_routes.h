#pragma once

// Routes between fabric switches, on the fabric's own Boost.Graph (switch vertices, trunk edges
// carrying global LinkIds). For each destination switch a breadth-first search gives every switch
// its hop distance and its number of shortest paths to the destination; the k-th of them is then
// read off without enumerating the others, so a choice among thousands of equal-cost paths (ECMP)
// is cheap. Tables are built lazily per destination (one per leaf in use; memory O(leaves ×
// switches)). Not thread-safe (the Cluster serialises calls).

#include <cstdint>
#include <memory>
#include <vector>

#include "topology/cluster.h"

namespace clustersim {

// One direction of a trunk between switch indices (0 .. switch_count-1).
struct FabricEdge {
  int from = 0;
  int to = 0;
  LinkId link = 0;
};

class FabricRoutes {
 public:
  FabricRoutes(int switch_count, const std::vector<FabricEdge>& edges);
  ~FabricRoutes();
  FabricRoutes(FabricRoutes&&) noexcept;
  FabricRoutes& operator=(FabricRoutes&&) noexcept;

  // Number of shortest paths from switch `src` to switch `dst` (1 when src == dst, 0 when
  // unreachable; saturates at UINT64_MAX).
  uint64_t path_count(int src, int dst);
  // The links of the `index`-th shortest path (0 ≤ index < path_count), in a fixed order of the
  // switches' edges. Empty when src == dst.
  std::vector<LinkId> path(int src, int dst, uint64_t index);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustersim
