// The host thread of the step simulation (parallelism/step_simulation.h) against closed forms: a
// kernel starts at the latest of its issue time and the end of the kernel before it, the thread
// runs ahead up to the launch-queue depth, and a synchronisation drains the queue.

#include <gtest/gtest.h>

#include <vector>

#include "parallelism/step_simulation.h"
#include "parallelism/test_clusters.h"
#include "topology/cluster.h"

namespace clustersim {
namespace host_thread_test {

const Duration kUs = Duration::microseconds(1);

// One GPU, one micro-batch: the forward pass is `ops`, the backward pass empty.
std::vector<StageProgram> one_pass(std::vector<ProgramOp> ops) {
  std::vector<StageProgram> out(1);
  out[0].chunks.resize(1);
  out[0].chunks[0].forward.ops = std::move(ops);
  return out;
}

ProgramOp kernel(Duration gpu, Duration host) {
  return ProgramOp::compute("k", WorkKind::kForward, gpu, 0, {}, HostWork::kernel(host, gpu));
}

StepResult simulate(const std::vector<StageProgram>& stages, bool per_op_events, int64_t queue_depth = 1022) {
  static const Cluster cluster(testing::h100_cluster(1, 1, FabricType::kSingleSwitch));
  static const Layout layout{};
  StepSimulationOptions o;
  o.record_trace = per_op_events;  // one event per op (and host spans in the trace) or fused segments
  o.launch_queue_depth = queue_depth;
  return simulate_step(cluster, layout, stages, 1, o);
}

class HostThread : public ::testing::TestWithParam<bool> {};

// n short kernels behind one long one: the host issued them while the long kernel ran, so the
// step is the long kernel, plus the first kernel's host cost, plus n kernels' work.
TEST_P(HostThread, ShortKernelsQueuedBehindALongOneCostOnlyTheirWork) {
  const Duration c = kUs * 20, w = kUs * 2, big = kUs * 10'000;
  const int n = 100;  // n·c = 2 ms < big: the host is ahead when the long kernel ends
  std::vector<ProgramOp> ops{kernel(big, c)};
  for (int i = 0; i < n; ++i) ops.push_back(kernel(w, c));
  const StepResult r = simulate(one_pass(ops), GetParam());
  EXPECT_EQ(r.step_time, c + big + w * n);
  EXPECT_EQ(r.ranks[0].host_bound, c);  // only the first kernel waited for its launch
  EXPECT_EQ(r.ranks[0].compute, big + w * n);
}

// The same short kernels alone: the host is behind, each kernel waits for its own launch, and the
// step is n host costs plus the last kernel's work.
TEST_P(HostThread, ShortKernelsOnTheirOwnCostOneHostCostEach) {
  const Duration c = kUs * 20, w = kUs * 2;
  const int n = 100;
  const StepResult r = simulate(one_pass(std::vector<ProgramOp>(n, kernel(w, c))), GetParam());
  EXPECT_EQ(r.step_time, c * n + w);
  EXPECT_EQ(r.ranks[0].host_bound, c * n + w - w * n);
}

// A synchronisation after a long kernel holds the host until the GPU gets there; the k kernels
// after it are issued one host cost c apart while the GPU waits: the GPU idles s + c before the
// first (the sync's own cost, then the launch) and c − w between the others, s + k·c − (k − 1)·w
// in all, where without the sync they ran back to back.
TEST_P(HostThread, ASyncFollowedByKKernelsAddsKHostCostsOfIdleGpu) {
  const Duration c = kUs * 20, w = kUs * 2, s = kUs * 13, big = kUs * 10'000;
  const int k = 50;
  std::vector<ProgramOp> ahead{kernel(big, c)};
  for (int i = 0; i < k; ++i) ahead.push_back(kernel(w, c));
  std::vector<ProgramOp> synced = ahead;
  synced.insert(synced.begin() + 1, ProgramOp::sync("sync", s));
  const StepResult without = simulate(one_pass(ahead), GetParam());
  const StepResult with = simulate(one_pass(synced), GetParam());
  EXPECT_EQ(with.step_time - without.step_time, s + c * k - w * (k - 1));
  EXPECT_EQ(with.ranks[0].host_bound - without.ranks[0].host_bound, s + c * k - w * (k - 1));
}

// The launch queue holds `depth` kernels: behind a long kernel the host issues depth − 1 short ones
// and waits for the long one to end; the remaining n − depth + 1 are issued one host cost apart
// from then on, and the GPU, whose queued work (n·w in all) is shorter than that, ends c + w after
// the last launch. With one event per op (a merged run of kernels meets the bound at its first).
TEST(HostThreadQueue, TheLaunchQueueBoundsHowFarTheHostRunsAhead) {
  const Duration c = kUs * 20, w = kUs * 2, big = kUs * 10'000;
  const int n = 400, depth = 100;
  std::vector<ProgramOp> ops{kernel(big, c)};
  for (int i = 0; i < n; ++i) ops.push_back(kernel(w, c));
  EXPECT_EQ(simulate(one_pass(ops), true, 0).step_time, c + big + w * n);
  const int late = n - (depth - 1);
  EXPECT_EQ(simulate(one_pass(ops), true, depth).step_time, c + big + c * late + w);
}

// Runs of kernels merged into one op keep the closed form: a merged op gives the same step.
TEST_P(HostThread, AMergedRunOfKernelsIsExact) {
  std::vector<ProgramOp> ops;
  const std::vector<std::pair<int, int>> pattern{{500, 20}, {3, 30}, {2, 14}, {80, 90}, {1, 34}, {1, 34}, {300, 10}};
  HostWork merged;
  Duration merged_gpu;
  for (auto [gpu_us, host_us] : pattern) {
    ops.push_back(kernel(kUs * gpu_us, kUs * host_us));
    merged.then(HostWork::kernel(kUs * host_us, kUs * gpu_us), kUs * gpu_us);
    merged_gpu += kUs * gpu_us;
  }
  const StepResult apart = simulate(one_pass(ops), GetParam());
  const StepResult together =
      simulate(one_pass({ProgramOp::compute("k", WorkKind::kForward, merged_gpu, 0, {}, merged)}), GetParam());
  EXPECT_EQ(apart.step_time, together.step_time);
  EXPECT_EQ(apart.ranks[0].host_bound, together.ranks[0].host_bound);
}

// Without host costs the GPU never waits: the step is the kernels' work.
TEST_P(HostThread, NoHostCostsNoWaiting) {
  const StepResult r = simulate(one_pass(std::vector<ProgramOp>(10, kernel(kUs * 5, Duration::zero()))), GetParam());
  EXPECT_EQ(r.step_time, kUs * 50);
  EXPECT_EQ(r.ranks[0].host_bound, Duration::zero());
}

INSTANTIATE_TEST_SUITE_P(FusedAndPerOp, HostThread, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "PerOp" : "Fused"; });

}  // namespace host_thread_test
}  // namespace clustersim
