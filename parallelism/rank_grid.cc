#include "parallelism/rank_grid.h"

#include <algorithm>
#include <sstream>
#include <string>

#include "core/error.h"

namespace clustersim {

namespace {
constexpr int kTp = 0;
constexpr int kCp = 1;
constexpr int kDp = 2;
constexpr int kPp = 3;

int get(const RankCoord& c, int d) {
  switch (d) {
    case kTp: return c.tp;
    case kCp: return c.cp;
    case kDp: return c.dp;
    default: return c.pp;
  }
}

void set(RankCoord& c, int d, int v) {
  switch (d) {
    case kTp: c.tp = v; break;
    case kCp: c.cp = v; break;
    case kDp: c.dp = v; break;
    default: c.pp = v; break;
  }
}
}  // namespace

RankGrid::RankGrid(const Layout& layout) : layout_(layout), world_(layout.world_size()) {
  const std::array<int, 4> size{layout.tp, layout.cp, layout.dp, layout.pp};
  std::stringstream ss(layout.order);
  int position = 0;
  int stride = 1;
  for (std::string part; std::getline(ss, part, '-');) {
    int d = -1;
    if (part == "tp") d = kTp;
    if (part == "cp") d = kCp;
    if (part == "dp") d = kDp;
    if (part == "pp") d = kPp;
    if (d < 0) continue;  // "ep" re-partitions dp for expert layers; it does not place dense ranks
    check_invariant(position < 4, "RankGrid: order has too many dimensions");
    dim_of_position_[static_cast<size_t>(position++)] = d;
    stride_[static_cast<size_t>(d)] = stride;
    stride *= size[static_cast<size_t>(d)];
  }
  check_invariant(position == 4, "RankGrid: order must name tp, cp, dp and pp (validate_layout checks it)");
  expert_outside_data_ = layout.order.find("dp-ep") != std::string::npos;
}

int RankGrid::rank_of(const RankCoord& c) const {
  return c.tp * stride_[kTp] + c.cp * stride_[kCp] + c.dp * stride_[kDp] + c.pp * stride_[kPp];
}

RankCoord RankGrid::coord_of(int rank) const {
  if (rank < 0 || rank >= world_) throw InternalError("RankGrid::coord_of: rank out of range");
  const std::array<int, 4> size{layout_.tp, layout_.cp, layout_.dp, layout_.pp};
  RankCoord c;
  for (int d = 0; d < 4; ++d) set(c, d, rank / stride_[static_cast<size_t>(d)] % size[static_cast<size_t>(d)]);
  return c;
}

int RankGrid::stage_local_index(const RankCoord& c) const {
  // Position in the dense order with pp removed: innermost dimension first.
  int index = 0;
  int stride = 1;
  const std::array<int, 4> size{layout_.tp, layout_.cp, layout_.dp, layout_.pp};
  for (int d : dim_of_position_) {
    if (d == kPp) continue;
    index += get(c, d) * stride;
    stride *= size[static_cast<size_t>(d)];
  }
  return index;
}

RankCoord RankGrid::from_stage_local_index(int index, int pp) const {
  const std::array<int, 4> size{layout_.tp, layout_.cp, layout_.dp, layout_.pp};
  RankCoord c;
  c.pp = pp;
  for (int d : dim_of_position_) {
    if (d == kPp) continue;
    set(c, d, index % size[static_cast<size_t>(d)]);
    index /= size[static_cast<size_t>(d)];
  }
  return c;
}

std::vector<int> RankGrid::group_of(GroupKind kind, int rank) const {
  const RankCoord me = coord_of(rank);
  std::vector<int> out;
  auto vary = [&](int d, int n) {
    for (int i = 0; i < n; ++i) {
      RankCoord c = me;
      set(c, d, i);
      out.push_back(rank_of(c));
    }
  };
  switch (kind) {
    case GroupKind::kTensor: vary(kTp, layout_.tp); return out;
    case GroupKind::kContext: vary(kCp, layout_.cp); return out;
    case GroupKind::kData: vary(kDp, layout_.dp); return out;
    case GroupKind::kPipeline: vary(kPp, layout_.pp); return out;
    case GroupKind::kEmbedding: {
      RankCoord first = me;
      first.pp = 0;
      out.push_back(rank_of(first));
      if (layout_.pp > 1) {
        RankCoord last = me;
        last.pp = layout_.pp - 1;
        out.push_back(rank_of(last));
      }
      return out;
    }
    case GroupKind::kDataContext:
    case GroupKind::kDataShard: {
      // The data-parallel indices [first, first + n) with every cp index, in rank order (a ring over
      // them visits neighbours first): all dp·cp ranks, or the shard group under hybrid sharding.
      const int n = kind == GroupKind::kDataContext ? layout_.dp : layout_.shard_dp();
      const int first = me.dp / n * n;
      for (int d = first; d < first + n; ++d) {
        for (int c = 0; c < layout_.cp; ++c) {
          RankCoord x = me;
          x.cp = c;
          x.dp = d;
          out.push_back(rank_of(x));
        }
      }
      std::sort(out.begin(), out.end());
      return out;
    }
    case GroupKind::kDataReplicate: {
      const int shard = layout_.shard_dp();
      for (int d = me.dp % shard; d < layout_.dp; d += shard) {
        RankCoord x = me;
        x.dp = d;
        out.push_back(rank_of(x));
      }
      return out;
    }
    case GroupKind::kExpert:
    case GroupKind::kExpertTensor:
    case GroupKind::kExpertData: break;
  }
  // Expert decomposition of the stage-local index i: etp innermost, then ep and expert-dp in the
  // order's sequence ("ep-dp": ep inside; "dp-ep": expert-dp inside).
  const int etp = layout_.etp;
  const int ep = layout_.ep;
  const int edp = layout_.expert_dp();
  const int i = stage_local_index(me);
  const int e_tp = i % etp;
  const int e_ep = expert_outside_data_ ? i / (etp * edp) : i / etp % ep;
  const int e_dp = expert_outside_data_ ? i / etp % edp : i / (etp * ep);
  auto index = [&](int t, int e, int d) {
    const int local = expert_outside_data_ ? t + etp * (d + edp * e) : t + etp * (e + ep * d);
    return rank_of(from_stage_local_index(local, me.pp));
  };
  if (kind == GroupKind::kExpertTensor) {
    for (int t = 0; t < etp; ++t) out.push_back(index(t, e_ep, e_dp));
  } else if (kind == GroupKind::kExpert) {
    for (int e = 0; e < ep; ++e) out.push_back(index(e_tp, e, e_dp));
  } else {
    for (int d = 0; d < edp; ++d) out.push_back(index(e_tp, e_ep, d));
  }
  return out;
}

}  // namespace clustersim
