#include "parallelism/step_simulation.h"

#include <gtest/gtest.h>

#include "parallelism/test_clusters.h"
#include "topology/cluster.h"

namespace clustersim {
namespace step_simulation_test {

ClusterSpec single_node(int gpus) { return testing::h100_cluster(1, gpus, FabricType::kSingleSwitch); }

// A stage whose chunks take f/v forward and b/v backward, with nothing to communicate.
std::vector<StageProgram> compute_only(int stages, int chunks, Duration f, Duration b) {
  std::vector<StageProgram> out(static_cast<size_t>(stages));
  for (auto& s : out) {
    s.chunks.resize(static_cast<size_t>(chunks));
    for (auto& c : s.chunks) {
      c.forward.ops.push_back(ProgramOp::compute("fwd", WorkKind::kForward, Duration::picoseconds(f.ps() / chunks)));
      c.backward.ops.push_back(ProgramOp::compute("bwd", WorkKind::kBackward, Duration::picoseconds(b.ps() / chunks)));
    }
  }
  return out;
}

TEST(StepSimulation, OneFOneBBubbleIsPMinusOneOverM) {
  const Cluster cluster(single_node(8));
  const Duration f = Duration::microseconds(100), b = Duration::microseconds(200);
  for (int p : {2, 4, 8}) {
    for (int m : {1, 4, 8, 16}) {
      Layout layout{.pp = p};
      const StepResult r = simulate_step(cluster, layout, compute_only(p, 1, f, b), m, {});
      const Duration ideal = (f + b) * m;
      // Narayanan et al. SC21 eq. (1): bubble time fraction (p − 1)/m of the ideal time.
      EXPECT_EQ(r.step_time, ideal + (f + b) * (p - 1)) << "p=" << p << " m=" << m;
      const RankBreakdown& crit = r.ranks[r.critical];
      EXPECT_EQ(crit.compute, ideal);
      EXPECT_EQ(crit.compute + crit.bubble + crit.exposed_comm + crit.optimizer + crit.idle, r.step_time);
    }
  }
}

TEST(StepSimulation, InterleavedBubbleIsPMinusOneOverVM) {
  const Cluster cluster(single_node(8));
  const Duration f = Duration::microseconds(120), b = Duration::microseconds(240);
  for (int p : {2, 4}) {
    for (int v : {2, 3}) {
      for (int m : {p, 2 * p, 4 * p}) {
        Layout layout{.pp = p, .vpp = v, .schedule = PipelineSchedule::kInterleaved1F1B};
        const StepResult r = simulate_step(cluster, layout, compute_only(p, v, f, b), m, {});
        const Duration ideal = (f + b) * m;
        // SC21 §2.2.2: the interleaved schedule's bubble is (p − 1)/(v·m) of the ideal time.
        const Duration bubble = Duration::picoseconds((f + b).ps() * (p - 1) / v);
        EXPECT_EQ(r.step_time, ideal + bubble) << "p=" << p << " v=" << v << " m=" << m;
      }
    }
  }
}

TEST(StepSimulation, GpipeAndFewerMicrobatchesThanStages) {
  const Cluster cluster(single_node(8));
  const Duration f = Duration::microseconds(100), b = Duration::microseconds(200);
  // GPipe has the same bubble as 1F1B: (p − 1)(f + b).
  Layout gpipe{.pp = 4, .schedule = PipelineSchedule::kGpipe};
  EXPECT_EQ(simulate_step(cluster, gpipe, compute_only(4, 1, f, b), 8, {}).step_time, (f + b) * (8 + 3));
  // m = 2 < p = 4 with 1F1B: (m + p − 1)(f + b), the extra bubble simulated, not hidden.
  Layout few{.pp = 4};
  EXPECT_EQ(simulate_step(cluster, few, compute_only(4, 1, f, b), 2, {}).step_time, (f + b) * (2 + 3));
}

// representative_lines: one line where every part of a stage moves at one pace, one per tied
// component where parts can drift apart.
TEST(RepresentativeLines, OnePerTiedComponentOnlyWhereRoutesCanDiffer) {
  // 32 nodes of 8 GPUs, tp 2 (inside a node), pp 2, dp 64: a stage's tied components are its 64
  // tensor-parallel pairs.
  const Layout dense{.tp = 2, .pp = 2, .dp = 64};
  // Rail-optimised, one group of 64-port leaves: a line's NIC-to-NIC transfers have one route.
  const Cluster rail(testing::h100_cluster(32));
  EXPECT_EQ(representative_lines(rail, dense, Fidelity::kFlow, {}).size(), 1u);
  // Fat tree of 16-port leaves: pipeline sends and data-parallel rings cross spines (ECMP).
  ClusterSpec fat = testing::h100_cluster(32, 8, FabricType::kFatTree);
  fat.fabric.leaf_ports = 16;
  const Cluster tree(fat);
  const std::vector<RankCoord> lines = representative_lines(tree, dense, Fidelity::kFlow, {});
  ASSERT_EQ(lines.size(), 64u);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].tp, 0);  // the lowest rank of each pair
    EXPECT_EQ(lines[i].dp, static_cast<int>(i));
  }
  // A straggler's line stands first for its own component.
  EXPECT_EQ(representative_lines(tree, dense, Fidelity::kFlow, RankCoord{1, 0, 5, 0}).front(), (RankCoord{1, 0, 5, 0}));
  // Closed forms have no routes to differ.
  EXPECT_EQ(representative_lines(tree, dense, Fidelity::kAnalytical, {}).size(), 1u);
  // More than kMaxSplitRepresentativeRanks simulated ranks: one line again (64 nodes, tp 1:
  // 256 lines · pp 2).
  ClusterSpec fat64 = fat;
  fat64.nodes.resize(64, fat.nodes.front());
  const Cluster tree64(fat64);
  const Layout wide{.tp = 1, .pp = 2, .dp = 256};
  EXPECT_EQ(representative_lines(tree64, wide, Fidelity::kFlow, {}).size(), 1u);
  EXPECT_EQ(representative_lines(tree64, Layout{.tp = 4, .pp = 2, .dp = 64}, Fidelity::kFlow, {}).size(), 64u);
  // ZeRO-3 ties the data-parallel groups: each stage is one component.
  Layout zero3 = dense;
  zero3.zero_stage = 3;
  EXPECT_EQ(representative_lines(tree, zero3, Fidelity::kFlow, {}).size(), 1u);
  // Expert groups across nodes split even the rail fabric: ep 8 with one GPU of each group per
  // node ("dp-ep"), so a stage (8 nodes, 32 tensor-parallel pairs) has 4 components, each an
  // expert group with its ranks' tensor-parallel partners.
  const Layout moe{.tp = 2, .pp = 4, .dp = 32, .ep = 8, .order = "tp-cp-dp-ep-pp"};
  EXPECT_EQ(representative_lines(rail, moe, Fidelity::kFlow, {}).size(), 4u);
}

}  // namespace step_simulation_test
}  // namespace clustersim
