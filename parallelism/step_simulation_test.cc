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

}  // namespace step_simulation_test
}  // namespace clustersim
