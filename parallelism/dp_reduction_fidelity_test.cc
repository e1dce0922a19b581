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
// elements ready for their groups' all-reduce at the end of the backward pass, so the reductions
// are all that is left of the step. `overlap` (--overlap-grad-reduce): each group's one bucket
// (larger than both) is issued as the backward pass ends, the two on their own streams at once;
// without: finish_grad_sync reduces them synchronously, dense then expert.
std::vector<StageProgram> reductions(int64_t dense, int64_t expert, bool overlap = true) {
  StageProgram s;
  s.chunks.resize(1);
  ChunkProgram& c = s.chunks.front();
  c.forward.ops.push_back(ProgramOp::compute("fwd", WorkKind::kForward, kForward));
  c.backward.ops.push_back(ProgramOp::compute("bwd", WorkKind::kBackward, kBackward));
  if (dense > 0) c.backward.ops.push_back(ProgramOp::gradients_ready(GroupKind::kData, dense));
  if (expert > 0) c.backward.ops.push_back(ProgramOp::gradients_ready(GroupKind::kExpertData, expert));
  s.gradients.op = CollectiveOp::kAllReduce;
  s.gradients.bytes_per_element = 4;
  s.gradients.overlap = overlap;
  s.gradients.bucket_elements = 2 * std::max(dense, expert) + 1;
  s.data_group = GroupKind::kData;
  return {s};
}

// The time the reductions add to the compute of the step.
Duration reduction_time(const Cluster& cluster, const Layout& layout, int64_t dense, int64_t expert, Fidelity f,
                        bool overlap = true) {
  StepSimulationOptions o;
  o.fidelity = f;
  return simulate_step(cluster, layout, reductions(dense, expert, overlap), 1, o).step_time - kForward - kBackward;
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

TEST(DpReductionFidelity, WithoutOverlapTheExpertReductionFollowsTheDenseOne) {
  // The layouts of the two tests above; without --overlap-grad-reduce the reductions take turns
  // (dense, then expert), at both fidelities and whatever links they use: the sum of each alone.
  const Cluster cluster(testing::h100_cluster(2));
  for (const Layout& layout :
       {Layout{.dp = 16, .ep = 8, .order = "tp-cp-ep-dp-pp"}, Layout{.dp = 16, .ep = 2, .order = "tp-cp-dp-ep-pp"}}) {
    for (Fidelity f : {Fidelity::kAnalytical, Fidelity::kFlow}) {
      const Duration dense = reduction_time(cluster, layout, kDense, 0, f, false);
      const Duration expert = reduction_time(cluster, layout, 0, kExpert, f, false);
      const Duration both = reduction_time(cluster, layout, kDense, kExpert, f, false);
      EXPECT_EQ(both, dense + expert) << layout.order << (f == Fidelity::kFlow ? " flow" : " analytical");
      // With overlap the same two run at once: shorter than in turn.
      EXPECT_LT(reduction_time(cluster, layout, kDense, kExpert, f, true), both) << layout.order;
    }
  }
}

// The distributed optimizer's parameter all-gather after the optimizer step, without
// --overlap-param-gather: synchronous, the dense bucket groups' before the expert ones
// (distrib_optimizer.py:3155-3197): the step ends the two gathers' sum after the compute.
TEST(DpReductionFidelity, WithoutOverlapTheExpertParameterGatherFollowsTheDenseOne) {
  const Cluster cluster(testing::h100_cluster(2));
  const Layout layout{.dp = 16, .ep = 8, .zero_stage = 1, .order = "tp-cp-ep-dp-pp"};
  auto gather_time = [&](Bytes dense, Bytes expert, Fidelity f) {
    std::vector<StageProgram> stages = reductions(0, 0);
    stages.front().data_param_gather = dense;
    stages.front().expert_param_gather = expert;
    StepSimulationOptions o;
    o.fidelity = f;
    return simulate_step(cluster, layout, stages, 1, o).step_time - kForward - kBackward;
  };
  const Bytes dense = Bytes::of(kDense) * 2;  // bf16 parameters
  const Bytes expert = Bytes::of(kExpert) * 2;
  for (Fidelity f : {Fidelity::kAnalytical, Fidelity::kFlow}) {
    const Duration d = gather_time(dense, Bytes::zero(), f);
    const Duration e = gather_time(Bytes::zero(), expert, f);
    EXPECT_GT(d, Duration::zero());
    EXPECT_GT(e, Duration::zero());
    EXPECT_EQ(gather_time(dense, expert, f), d + e);
  }
}

// Megatron-LM's --align-grad-reduce under pipeline parallelism (GradientReduction::pipeline_aligned).
// Every stage's backward pass is two 1 ms halves with its 512 M fp32 gradients ready between them,
// one bucket (2 GB: longer than 1 ms on NVLink): overlapped bucket by bucket its reduction starts
// 1 ms before the pass ends; aligned, where the schedule holds it back, it starts as the pass ends,
// so that rank finishes 1 ms later.
TEST(DpReductionFidelity, PipelineAlignedReductionsWaitForTheLastBackwardPass) {
  const Cluster cluster(testing::h100_cluster(1, 4, FabricType::kSingleSwitch));
  constexpr int64_t kGradients = 512'000'000;
  auto finishes = [&](const Layout& layout, bool aligned) {
    std::vector<StageProgram> stages(2);
    for (StageProgram& s : stages) {
      s.chunks.resize(static_cast<size_t>(layout.vpp));
      for (ChunkProgram& c : s.chunks) {
        c.forward.ops.push_back(ProgramOp::compute("fwd", WorkKind::kForward, kForward));
        c.backward.ops.push_back(ProgramOp::compute("bwd", WorkKind::kBackward, kBackward.scaled(0.5)));
        c.backward.ops.push_back(ProgramOp::gradients_ready(GroupKind::kData, kGradients));
        c.backward.ops.push_back(ProgramOp::compute("bwd", WorkKind::kBackward, kBackward.scaled(0.5)));
      }
      s.gradients.bytes_per_element = 4;
      s.gradients.bucket_elements = kGradients;
      s.gradients.pipeline_aligned = aligned;
      s.data_group = GroupKind::kData;
    }
    const StepResult r = simulate_step(cluster, layout, stages, 4, {});
    std::vector<Duration> by_stage(2);
    for (const RankBreakdown& rank : r.ranks) by_stage[static_cast<size_t>(rank.stage)] = rank.finish - Time::zero();
    return by_stage;
  };
  const Duration half = kBackward.scaled(0.5);
  // 1F1B: the first stage still overlaps its last backward pass; the second reduces in the drain.
  const Layout one_f_one_b{.pp = 2, .dp = 2};
  const std::vector<Duration> hooks = finishes(one_f_one_b, false);
  const std::vector<Duration> aligned = finishes(one_f_one_b, true);
  EXPECT_EQ(aligned[0], hooks[0]);
  EXPECT_EQ(aligned[1], hooks[1] + half);
  // Interleaved: no stage overlaps bucket by bucket. Each reduction (about 5.4 ms) outlasts the
  // two backward passes between a stage's two chunks' last ones, so on the data-parallel stream
  // the second chunk's waits for the first's and the rank finishes when the first starts plus two
  // reductions. Stage 0 issues a chunk's buckets as its last pass ends (half a pass late); stage 1
  // one backward pass after that (pp_rank = 1): half a pass and one pass late.
  const Layout interleaved{.pp = 2, .dp = 2, .vpp = 2, .schedule = PipelineSchedule::kInterleaved1F1B};
  const std::vector<Duration> hooks_i = finishes(interleaved, false);
  const std::vector<Duration> aligned_i = finishes(interleaved, true);
  EXPECT_EQ(aligned_i[0], hooks_i[0] + half);
  EXPECT_EQ(aligned_i[1], hooks_i[1] + half + kBackward);
}

}  // namespace dp_reduction_fidelity_test
}  // namespace clustersim
