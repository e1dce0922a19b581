#include "parallelism/pod_placement.h"

#include <gtest/gtest.h>

#include "parallelism/test_clusters.h"

namespace clustersim {
namespace pod_placement_test {

ClusterSpec pods_of_two_nodes() {
  ClusterSpec spec = testing::h100_cluster(8);
  spec.fabric.type = FabricType::kThreeTier;
  spec.fabric.pod_type = FabricType::kRailOptimized;
  spec.fabric.pod_nodes = 2;
  spec.fabric.core_oversubscription = 7.0;
  return spec;
}

// 8 nodes of 8 GPUs in pods of 2 nodes; tp 8, dp 4, pp 2 in Megatron's order tp-cp-dp-pp: a tp
// group is one node (1 pod), a dp group nodes k, k+1, k+2, k+3 (ranks 8 apart: 2 pods), a pp group
// nodes k and k+4 (ranks 32 apart: 2 pods). With dp outermost (tp-cp-pp-dp, Llama 3's order) a dp
// group is ranks 16 apart, nodes 0, 2, 4, 6: one in each of the 4 pods, and pp stays in one pod.
TEST(PodPlacement, CountsThePodsEachGroupSpans) {
  const Cluster cluster(pods_of_two_nodes());
  const std::vector<PodSpan> megatron = pod_spans(cluster, Layout{.tp = 8, .pp = 2, .dp = 4});
  ASSERT_EQ(megatron.size(), 3u);
  EXPECT_EQ(megatron[0].name, "tp");
  EXPECT_EQ(megatron[0].max_pods, 1);
  EXPECT_EQ(megatron[1].name, "dp");
  EXPECT_EQ(megatron[1].min_pods, 2);
  EXPECT_EQ(megatron[1].max_pods, 2);
  EXPECT_EQ(megatron[2].name, "pp");
  EXPECT_EQ(megatron[2].max_pods, 2);
  const std::vector<PodSpan> dp_outer = pod_spans(cluster, Layout{.tp = 8, .pp = 2, .dp = 4, .order = "tp-cp-pp-dp"});
  ASSERT_EQ(dp_outer.size(), 3u);
  EXPECT_EQ(dp_outer[1].name, "dp");
  EXPECT_EQ(dp_outer[1].min_pods, 4);
  EXPECT_EQ(dp_outer[2].name, "pp");
  EXPECT_EQ(dp_outer[2].max_pods, 1);
}

// On a two-tier fabric every GPU is in pod 0.
TEST(PodPlacement, TwoTierFabricsAreOnePod) {
  const Cluster cluster(testing::h100_cluster(8));
  for (const PodSpan& span : pod_spans(cluster, Layout{.tp = 8, .pp = 2, .dp = 4})) EXPECT_EQ(span.max_pods, 1);
}

}  // namespace pod_placement_test
}  // namespace clustersim
