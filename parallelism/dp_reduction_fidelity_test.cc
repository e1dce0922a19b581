// The dense and the expert data-parallel gradient reductions of a mixture-of-experts stage at the
// two fidelities. Megatron-Core keeps dense and expert parameters in separate gradient buffers
// reduced over separate process groups (the dp·cp group and the expert data-parallel group), each
// group's collectives on its own NCCL communicator (docs/design.md, "Megatron-Core's
// communication"); the step simulation runs each group's collectives on its own stream, so the two
// reductions of one step run at the same time. Where they use different links the two fidelities
// agree; where they share the NICs, flow fidelity shares the NICs' bandwidth between them and the
// analytical fidelity, which prices each collective alone on an idle cluster, does not.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "parallelism/step_simulation.h"
#include "parallelism/test_clusters.h"
#include "topology/cluster.h"

namespace clustersim {
namespace dp_reduction_fidelity_test {

const Duration kForward = Duration::milliseconds(1);
const Duration kBackward = Duration::milliseconds(2);

// One stage, one chunk: the forward and backward compute, then `dense` and `expert` fp32 gradient
// elements ready for their groups' all-reduce, both reduced once the backward pass is over (no
// overlap with compute: the reductions are all that is left of the step).
std::vector<StageProgram> reductions(int64_t dense, int64_t expert) {
  StageProgram s;
  s.chunks.resize(1);
  ChunkProgram& c = s.chunks.front();
  c.forward.ops.push_back(ProgramOp::compute("fwd", WorkKind::kForward, kForward));
  c.backward.ops.push_back(ProgramOp::compute("bwd", WorkKind::kBackward, kBackward));
  if (dense > 0) c.backward.ops.push_back(ProgramOp::gradients_ready(GroupKind::kData, dense));
  if (expert > 0) c.backward.ops.push_back(ProgramOp::gradients_ready(GroupKind::kExpertData, expert));
  s.gradients.op = CollectiveOp::kAllReduce;
  s.gradients.bytes_per_element = 4;
  s.gradients.overlap = false;
  s.data_group = GroupKind::kData;
  return {s};
}

// The time the reductions add to the compute of the step.
Duration reduction_time(const Cluster& cluster, const Layout& layout, int64_t dense, int64_t expert, Fidelity f) {
  StepSimulationOptions o;
  o.fidelity = f;
  return simulate_step(cluster, layout, reductions(dense, expert), 1, o).step_time - kForward - kBackward;
}

double ratio(Duration a, Duration b) { return static_cast<double>(a.ps()) / static_cast<double>(b.ps()); }

// 64 M dense and 64 M expert parameters' fp32 gradients: 256 MB each, bandwidth-bound on 400 Gb/s NICs.
constexpr int64_t kDense = 64'000'000;
constexpr int64_t kExpert = 64'000'000;

TEST(DpReductionFidelity, DenseAndExpertReductionsOnDifferentLinksAgree) {
  // Two nodes of 8 GPUs, dp 16 and ep 16: every expert has one copy (expert data-parallel size 1),
  // so only the dense reduction runs, across the NICs.
  const Cluster cluster(testing::h100_cluster(2));
  const Layout dense_only{.dp = 16, .ep = 16, .order = "tp-cp-ep-dp-pp"};
  ASSERT_EQ(dense_only.expert_dp(), 1);
  const Duration analytical = reduction_time(cluster, dense_only, kDense, kExpert, Fidelity::kAnalytical);
  const Duration flow = reduction_time(cluster, dense_only, kDense, kExpert, Fidelity::kFlow);
  // The collective runner's agreement on an idle cluster (collectives/collective_runner.h).
  EXPECT_NEAR(ratio(flow, analytical), 1.0, 0.01) << flow.to_seconds() << " s against " << analytical.to_seconds();

  // Expert data-parallel peers inside a node ("dp-ep": expert dp innermost), the dense ring across
  // both: the expert reduction is on NVLink, the dense one on the NICs; no link carries both.
  const Layout apart{.dp = 16, .ep = 2, .order = "tp-cp-dp-ep-pp"};
  ASSERT_EQ(apart.expert_dp(), 8);
  const Duration analytical_apart = reduction_time(cluster, apart, kDense, kExpert, Fidelity::kAnalytical);
  const Duration flow_apart = reduction_time(cluster, apart, kDense, kExpert, Fidelity::kFlow);
  EXPECT_NEAR(ratio(flow_apart, analytical_apart), 1.0, 0.01)
      << flow_apart.to_seconds() << " s against " << analytical_apart.to_seconds();
  std::printf("dense and expert reductions on different links: analytical %.3f ms, flow %.3f ms (%+.2f %%)\n",
              analytical_apart.to_seconds() * 1e3, flow_apart.to_seconds() * 1e3,
              100 * (ratio(flow_apart, analytical_apart) - 1));
}

TEST(DpReductionFidelity, ReductionsSharingTheNicsDifferByTheirSharing) {
  // dp 16 over two nodes, ep 8 ("ep-dp": ep innermost): the expert data-parallel groups are
  // {r, r + 8}, one GPU on each node, through the same NICs as the dense ring of all 16.
  const Cluster cluster(testing::h100_cluster(2));
  const Layout shared{.dp = 16, .ep = 8, .order = "tp-cp-ep-dp-pp"};
  ASSERT_EQ(shared.expert_dp(), 2);
  const Duration dense_a = reduction_time(cluster, shared, kDense, 0, Fidelity::kAnalytical);
  const Duration expert_a = reduction_time(cluster, shared, 0, kExpert, Fidelity::kAnalytical);
  const Duration both_a = reduction_time(cluster, shared, kDense, kExpert, Fidelity::kAnalytical);
  const Duration dense_f = reduction_time(cluster, shared, kDense, 0, Fidelity::kFlow);
  const Duration expert_f = reduction_time(cluster, shared, 0, kExpert, Fidelity::kFlow);
  const Duration both_f = reduction_time(cluster, shared, kDense, kExpert, Fidelity::kFlow);
  // Each alone: the fidelities agree.
  EXPECT_NEAR(ratio(dense_f, dense_a), 1.0, 0.01);
  EXPECT_NEAR(ratio(expert_f, expert_a), 1.0, 0.01);
  // Together, analytically: each priced alone, the longer decides.
  EXPECT_EQ(both_a, std::max(dense_a, expert_a));
  // Together at flow fidelity: the NICs' bandwidth is shared, so longer than the longer alone, and
  // no longer than one after the other (max-min fair sharing wastes no bandwidth of a link both
  // saturate).
  EXPECT_GT(both_f, std::max(dense_f, expert_f) + std::min(dense_f, expert_f).scaled(0.25));
  EXPECT_LE(both_f, (dense_f + expert_f).scaled(1.01));
  std::printf("dense %.3f ms and expert %.3f ms alone (flow); together: analytical %.3f ms, flow %.3f ms "
              "(%+.1f %%)\n",
              dense_f.to_seconds() * 1e3, expert_f.to_seconds() * 1e3, both_a.to_seconds() * 1e3,
              both_f.to_seconds() * 1e3, 100 * (ratio(both_f, both_a) - 1));
}

}  // namespace dp_reduction_fidelity_test
}  // namespace clustersim
