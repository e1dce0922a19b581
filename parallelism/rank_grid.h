#pragma once

// Placement of ranks on GPUs and the process groups of a layout.
//
// Global rank r runs on GPU r (GPUs are numbered node-major, so consecutive ranks share a node).
// The order string says which dimension varies fastest: with "tp-cp-dp-pp" (Megatron-Core's
// default order without ep) the tp ranks of a group are consecutive and so stay inside a node.
// Expert groups (MoE layers) re-partition each stage's tp·cp·dp ranks as etp × ep × expert-dp,
// expert-tensor innermost, as Megatron-Core's expert rank generator does with order "tp-ep-dp-pp";
// with "dp-ep" in the order (expert-parallel outside expert-data-parallel) as etp × expert-dp × ep.
// The data-context group (kDataContext) is the dp·cp ranks of the same tensor and pipeline rank:
// Megatron's data-parallel group with context parallelism, over which gradients are reduced and the
// distributed optimizer shards (with cp = 1 it equals the data group).

#include <array>
#include <vector>

#include "parallelism/layout.h"

namespace clustersim {

// kEmbedding: the first and the last pipeline stage's ranks of one (tp, cp, dp) position, which hold
// the tied word embedding and LM head (Megatron's embedding group; one rank when pp = 1).
enum class GroupKind {
  kTensor,
  kContext,
  kData,
  kPipeline,
  kExpert,
  kExpertTensor,
  kExpertData,
  kDataContext,
  kEmbedding,
  // Hybrid sharding (Layout::dp_shard): the shard group holds dp_shard consecutive data-parallel
  // indices with every cp index (Megatron-Core's intra-distributed-optimizer-instance group, FSDP's
  // shard mesh dimension); the replica group the data-parallel indices at the same place in each
  // shard group, with the same cp index (the inter-instance group, FSDP's replicate dimension).
  kDataShard,
  kDataReplicate
};
inline constexpr int kGroupKindCount = 11;

struct RankCoord {
  int tp = 0;
  int cp = 0;
  int dp = 0;
  int pp = 0;
  bool operator==(const RankCoord&) const = default;
};

class RankGrid {
 public:
  // `layout` must have passed validate_layout().
  explicit RankGrid(const Layout& layout);

  int world_size() const { return world_; }
  int rank_of(const RankCoord& coord) const;
  RankCoord coord_of(int rank) const;

  // The ranks of `kind`'s group that contains `rank`, in group-rank order (the order in which a
  // ring or tree visits them). Tensor/context/data/pipeline groups vary one coordinate; expert
  // groups vary the expert coordinates within the stage.
  std::vector<int> group_of(GroupKind kind, int rank) const;

 private:
  // Stage-local index of (tp, cp, dp) in the dense order, for the expert decomposition.
  int stage_local_index(const RankCoord& c) const;
  RankCoord from_stage_local_index(int index, int pp) const;

  Layout layout_;
  int world_ = 0;
  // Dense dimensions innermost first: indices into {tp, cp, dp, pp} and their sizes and strides.
  std::array<int, 4> dim_of_position_{};
  std::array<int, 4> stride_{};  // stride_[d] for d in {0: tp, 1: cp, 2: dp, 3: pp}
  bool expert_outside_data_ = false;  // "dp-ep" in the order
};

}  // namespace clustersim
