#include "parallelism/rank_grid.h"

#include <gtest/gtest.h>

#include <set>

namespace clustersim {
namespace rank_grid_test {

TEST(RankGrid, DefaultOrderKeepsTensorGroupsConsecutive) {
  Layout l{.tp = 4, .pp = 2, .dp = 2};
  RankGrid grid(l);
  EXPECT_EQ(grid.world_size(), 16);
  EXPECT_EQ(grid.group_of(GroupKind::kTensor, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(grid.group_of(GroupKind::kData, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(grid.group_of(GroupKind::kPipeline, 5), (std::vector<int>{5, 13}));
  for (int r = 0; r < 16; ++r) EXPECT_EQ(grid.rank_of(grid.coord_of(r)), r);
}

TEST(RankGrid, EmbeddingGroupJoinsTheFirstAndLastStage) {
  Layout l{.tp = 4, .pp = 3, .dp = 2};
  RankGrid grid(l);
  // Rank 5 is tp 1, dp 1, stage 0; its position on the last stage is 16 + 5.
  EXPECT_EQ(grid.group_of(GroupKind::kEmbedding, 5), (std::vector<int>{5, 21}));
  EXPECT_EQ(grid.group_of(GroupKind::kEmbedding, 21), (std::vector<int>{5, 21}));
  EXPECT_EQ(grid.group_of(GroupKind::kEmbedding, 13), (std::vector<int>{5, 21}));  // a middle stage's position
  EXPECT_EQ(RankGrid(Layout{.tp = 2, .dp = 2}).group_of(GroupKind::kEmbedding, 3), (std::vector<int>{3}));
}

TEST(RankGrid, OrderStringChangesPlacement) {
  Layout l{.tp = 2, .pp = 1, .dp = 4, .order = "dp-tp-cp-pp"};
  RankGrid grid(l);
  EXPECT_EQ(grid.group_of(GroupKind::kData, 0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(grid.group_of(GroupKind::kTensor, 0), (std::vector<int>{0, 4}));
}

TEST(RankGrid, ExpertGroupsPartitionEachStage) {
  // tp 2, dp 8, ep 8, etp 1 on one stage: expert-dp = 16 / 8 = 2.
  Layout l{.tp = 2, .pp = 1, .dp = 8, .ep = 8, .etp = 1};
  RankGrid grid(l);
  std::set<int> seen;
  for (int r = 0; r < 16; ++r) {
    const auto ep = grid.group_of(GroupKind::kExpert, r);
    const auto edp = grid.group_of(GroupKind::kExpertData, r);
    EXPECT_EQ(ep.size(), 8U);
    EXPECT_EQ(edp.size(), 2U);
    EXPECT_NE(std::find(ep.begin(), ep.end(), r), ep.end());
    EXPECT_NE(std::find(edp.begin(), edp.end(), r), edp.end());
  }
  EXPECT_EQ(grid.group_of(GroupKind::kExpert, 0), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(grid.group_of(GroupKind::kExpertData, 0), (std::vector<int>{0, 8}));
}

}  // namespace rank_grid_test
}  // namespace clustersim
