// ZeRO-3 parameter gathers as DeepSpeed runs them (parallelism.zero3_bucket_elements > 0): all-gathers
// of at most one bucket of parameters, at most one bucket fetched ahead of the compute that uses it,
// against FSDP's one gather per layer.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "parallelism/program_builder.h"
#include "parallelism/step_simulation.h"
#include "parallelism/test_clusters.h"
#include "parallelism/training_simulation.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace zero3_gather_test {

// A GPT of 4 layers, h 2048 (50,358,272 parameters per layer).
ModelSpec small_gpt() { return testing::small_gpt(4); }

TrainingSpec training(int64_t seq_len, int64_t global_batch) { return testing::sequences(seq_len, global_batch); }

constexpr int64_t kBucket = 20'000'000;

Layout zero3(int dp, int64_t bucket) {
  Layout l{.dp = dp, .zero_stage = 3};
  l.zero3_bucket_elements = bucket;
  return l;
}

TEST(Zero3Gathers, BucketsOfAtMostTheBucketSizeCoverEveryLayer) {
  const Layout layout = zero3(16, kBucket);
  const Transformer t(small_gpt(), training(2048, 16), shard_spec(layout));
  const ComputeCostModel cost(testing::h100_node().gpu);
  const TrainingPrograms programs = build_training_programs(t, cost, layout);
  const int64_t per_layer = t.parameters().layer.dense();
  const int64_t buckets_per_layer = (per_layer + kBucket - 1) / kBucket;  // 3 for 50.4M parameters
  ASSERT_EQ(buckets_per_layer, 3);
  for (const PassProgram* pass : {&programs.stages[0].chunks[0].forward, &programs.stages[0].chunks[0].backward}) {
    int gathers = 0, waits = 0;
    Bytes gathered;
    int in_flight = 0, most_in_flight = 0;
    for (const ProgramOp& op : pass->ops) {
      if (op.kind == ProgramOp::Kind::kCollective && op.label == "zero3_param_all_gather") {
        ++gathers;
        EXPECT_EQ(op.group, GroupKind::kData);
        EXPECT_EQ(op.op, CollectiveOp::kAllGather);
        EXPECT_LE(op.size, Bytes::of(kBucket * 2));  // bf16 parameters
        gathered += op.size;
        most_in_flight = std::max(most_in_flight, ++in_flight);
      }
      if (op.kind == ProgramOp::Kind::kWait) {
        ++waits;
        --in_flight;
      }
    }
    EXPECT_EQ(gathers, 4 * buckets_per_layer);
    EXPECT_EQ(waits, gathers);
    EXPECT_EQ(gathered, Bytes::of(4 * per_layer * 2));  // every layer's parameters, once per pass
    EXPECT_EQ(most_in_flight, 2);                        // the bucket in use and the next one
  }
}

// The time of a pass whose gathers queue on one stream with at most one bucket fetched ahead:
// bucket k + 1 is issued when bucket k is taken into use; a bucket starts when it is issued and the
// stream has finished the previous one; compute between two takes runs after the take's wait.
Duration expected_pass(const std::vector<ProgramOp>& ops, const std::vector<Duration>& gather_times) {
  Duration now, stream_free;
  std::vector<Duration> done;  // completion of each issued bucket
  size_t issued = 0;
  auto issue = [&] {
    const Duration start = std::max(now, stream_free);
    stream_free = start + gather_times[issued++];
    done.push_back(stream_free);
  };
  size_t taken = 0;
  for (const ProgramOp& op : ops) {
    if (op.kind == ProgramOp::Kind::kCompute) now += op.duration;
    if (op.kind == ProgramOp::Kind::kCollective) issue();
    if (op.kind == ProgramOp::Kind::kWait) now = std::max(now, done[taken++]);
  }
  return now;
}

TEST(Zero3Gathers, PassTimeFollowsTheBoundedPrefetch) {
  // 16 ranks over two nodes: each gather pays a ring across the nodes.
  const Cluster cluster(testing::h100_cluster(2));
  const Layout layout = zero3(16, kBucket);
  for (int64_t seq : {256, 2048}) {  // communication-bound, then compute-bound
    const Transformer t(small_gpt(), training(seq, 16), shard_spec(layout));
    const ComputeCostModel cost(testing::h100_node().gpu);
    const TrainingPrograms programs = build_training_programs(t, cost, layout);
    std::vector<StageProgram> forward_only = programs.stages;
    forward_only[0].chunks[0].backward.ops.clear();
    forward_only[0].optimizer = Duration::zero();
    Simulator sim;
    const CollectiveRunner runner(sim, cluster, nullptr, Fidelity::kAnalytical);
    std::vector<Duration> gather_times;
    for (const ProgramOp& op : forward_only[0].chunks[0].forward.ops) {
      if (op.kind != ProgramOp::Kind::kCollective) continue;
      CollectiveRequest request;
      request.op = op.op;
      for (int r = 0; r < 16; ++r) request.group.push_back(r);
      request.size = op.size;
      gather_times.push_back(runner.estimate(request));
    }
    const StepResult r = simulate_step(cluster, layout, forward_only, 1, {});
    EXPECT_EQ(r.step_time, expected_pass(forward_only[0].chunks[0].forward.ops, gather_times)) << "s = " << seq;
  }
}

TEST(Zero3Gathers, SmallBucketsAreSlowerThanPerLayerGathersAtShortSequences) {
  // With little compute per bucket, bucketed gathers cannot hide behind it and pay one collective
  // latency per bucket; FSDP's per-layer gathers prefetch a whole layer ahead.
  const Cluster cluster(testing::h100_cluster(2));
  const TrainingSpec t = training(256, 16);
  const double fsdp = simulate_training(cluster, small_gpt(), t, zero3(16, 0)).step_time_s;
  const double deepspeed = simulate_training(cluster, small_gpt(), t, zero3(16, 5'000'000)).step_time_s;
  EXPECT_GT(deepspeed, fsdp);
}

TEST(Zero3Gathers, BucketSizeNeedsZeroThreeAndADenseModel) {
  LayoutContext c;
  c.layers = 4;
  c.heads = 16;
  c.kv_heads = 16;
  c.ffn_hidden = 8192;
  c.gpus = 16;
  c.gpus_per_node = 8;
  c.global_batch = 16;
  c.micro_batch = 1;
  c.seq_len = 2048;
  EXPECT_NO_THROW(validate_layout(zero3(16, kBucket), c));
  Layout one = zero3(16, kBucket);
  one.zero_stage = 1;
  try {
    validate_layout(one, c);
    FAIL() << "a ZeRO-3 bucket size with ZeRO-1 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("zero3_bucket_elements"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validate_layout(zero3(16, -1), c), InputError);
  c.experts = 8;
  EXPECT_THROW(validate_layout(zero3(16, kBucket), c), InputError);
}

}  // namespace zero3_gather_test
}  // namespace clustersim
