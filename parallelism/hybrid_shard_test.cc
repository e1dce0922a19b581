// Hybrid sharding (Layout::dp_shard): ZeRO state sharded inside groups of dp_shard data-parallel
// ranks and replicated across dp / dp_shard groups (FSDP HYBRID_SHARD, Megatron-Core's
// --num-distributed-optimizer-instances).

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"
#include "parallelism/program_builder.h"
#include "parallelism/rank_grid.h"
#include "parallelism/step_simulation.h"
#include "parallelism/test_clusters.h"
#include "parallelism/training_simulation.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace hybrid_shard_test {

// A GPT of 4 layers, h 2048 (50,358,272 parameters per layer).
ModelSpec small_gpt() { return testing::small_gpt(4); }

TrainingSpec training(int64_t seq_len, int64_t global_batch) { return testing::sequences(seq_len, global_batch); }

LayoutContext context(int gpus, int experts = 0) {
  LayoutContext c;
  c.layers = 4;
  c.heads = 16;
  c.kv_heads = 16;
  c.ffn_hidden = 8192;
  c.gpus = gpus;
  c.gpus_per_node = 8;
  c.global_batch = gpus;
  c.micro_batch = 1;
  c.seq_len = 2048;
  c.experts = experts;
  return c;
}

TEST(HybridShard, ShardGroupsAreConsecutiveDataRanksWithTheirContextRanks) {
  // tp 2 · cp 2 · dp 8, order tp-cp-dp-pp: rank = tp + 2·cp + 4·dp. dp_shard 4: two shard groups
  // of 4 data-parallel indices (× 2 cp ranks = 8 ranks), replicated twice.
  Layout l{.tp = 2, .dp = 8, .cp = 2, .zero_stage = 1};
  l.dp_shard = 4;
  ASSERT_NO_THROW(validate_layout(l, context(32)));
  ASSERT_TRUE(l.hybrid_shard());
  const RankGrid grid(l);
  const int rank = grid.rank_of(RankCoord{.tp = 1, .cp = 1, .dp = 5, .pp = 0});
  std::vector<int> shard;
  for (int d = 4; d < 8; ++d) {
    for (int c = 0; c < 2; ++c) shard.push_back(grid.rank_of(RankCoord{.tp = 1, .cp = c, .dp = d, .pp = 0}));
  }
  std::sort(shard.begin(), shard.end());
  EXPECT_EQ(grid.group_of(GroupKind::kDataShard, rank), shard);
  const std::vector<int> replicas = {grid.rank_of(RankCoord{.tp = 1, .cp = 1, .dp = 1, .pp = 0}), rank};
  EXPECT_EQ(grid.group_of(GroupKind::kDataReplicate, rank), replicas);
  // Every rank of the stage is in exactly one shard group and one replica group, and a shard
  // group and a replica group share exactly one rank.
  std::set<std::vector<int>> shard_groups, replica_groups;
  for (int r = 0; r < l.world_size(); ++r) {
    shard_groups.insert(grid.group_of(GroupKind::kDataShard, r));
    replica_groups.insert(grid.group_of(GroupKind::kDataReplicate, r));
  }
  EXPECT_EQ(shard_groups.size(), 2u * 2u);      // per tp rank: dp / dp_shard groups
  EXPECT_EQ(replica_groups.size(), 2u * 2u * 4u);  // per tp, cp and place in the shard group
}

TEST(HybridShard, ValidationNamesTheKeyAndTheValidValues) {
  auto message = [](const Layout& l, const LayoutContext& c) -> std::string {
    try {
      validate_layout(l, c);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  Layout l{.dp = 16, .zero_stage = 3};
  l.dp_shard = 6;
  EXPECT_NE(message(l, context(16)).find("parallelism.dp_shard = 6: must be 0"), std::string::npos);
  EXPECT_NE(message(l, context(16)).find("1, 2, 4, 8, 16"), std::string::npos);
  l.dp_shard = 8;
  EXPECT_EQ(message(l, context(16)), "");
  l.zero_stage = 0;
  EXPECT_NE(message(l, context(16)).find("nothing is sharded without ZeRO"), std::string::npos);
  l.zero_stage = 1;
  l.grad_reduce_op = GradReduceOp::kAllReduce;
  EXPECT_NE(message(l, context(16)).find("grad_reduce_op all_reduce does not apply"), std::string::npos);
  l.grad_reduce_op = GradReduceOp::kAuto;
  EXPECT_NE(message(l, context(16, 8)).find("not modelled for mixture-of-experts"), std::string::npos);
  l.dp_shard = -1;
  EXPECT_NE(message(l, context(16)).find("parallelism.dp_shard = -1"), std::string::npos);
  // dp_shard = dp is full sharding, and so is dp_shard 0.
  l.dp_shard = 16;
  EXPECT_EQ(message(l, context(16)), "");
  EXPECT_FALSE(l.hybrid_shard());
}

TEST(HybridShard, ModelStateIsThatOfFullShardingOverTheShardGroup) {
  // ZeRO-3 over dp 16 with dp_shard 4 keeps per rank what ZeRO-3 over 4 ranks keeps: parameters,
  // gradients and optimizer state divided by 4, not 16.
  for (int zero : {1, 2, 3}) {
    Layout hybrid{.dp = 16, .zero_stage = zero};
    hybrid.dp_shard = 4;
    const Layout four{.dp = 4, .zero_stage = zero};
    const Layout sixteen{.dp = 16, .zero_stage = zero};
    const Transformer t(small_gpt(), training(2048, 16), shard_spec(hybrid));
    const MemoryBreakdown h = stage_memory(t, hybrid)[0].memory;
    const MemoryBreakdown f = stage_memory(t, four)[0].memory;
    const MemoryBreakdown s = stage_memory(t, sixteen)[0].memory;
    EXPECT_EQ(h.params, f.params) << "zero " << zero;
    EXPECT_EQ(h.grads, f.grads) << "zero " << zero;
    EXPECT_EQ(h.optimizer_state, f.optimizer_state) << "zero " << zero;
    EXPECT_GT(h.optimizer_state, s.optimizer_state) << "zero " << zero;
  }
}

TEST(HybridShard, GradientsReducedOncePerStepAreWholeUnderZeroTwoAndThree) {
  // 4 micro-batches per rank (global batch 64 over dp 16). Reduced after every micro-batch (auto
  // under ZeRO 2/3), the gradients stay sharded; reduced once per step they accumulate whole.
  for (int zero : {2, 3}) {
    Layout every{.dp = 16, .zero_stage = zero};
    const Transformer t(small_gpt(), training(2048, 64), shard_spec(every));
    const StageMemory sharded = stage_memory(t, every)[0];
    Layout once = every;
    once.reduce_every_microbatch = false;
    const StageMemory whole = stage_memory(t, once)[0];
    const int64_t grad_bytes = t.training().precision.grad_bytes();
    EXPECT_EQ(whole.memory.grads, Bytes::of(sharded.parameters * grad_bytes)) << "zero " << zero;
    EXPECT_EQ(sharded.memory.grads, Bytes::of(sharded.parameters * grad_bytes).divided_ceil(16)) << "zero " << zero;
  }
}

TEST(HybridShard, ProgramsReduceInTheShardGroupAndAllReduceTheShardAcrossReplicas) {
  Layout l{.dp = 16, .zero_stage = 3};
  l.dp_shard = 8;
  const Transformer t(small_gpt(), training(2048, 16), shard_spec(l));
  const ComputeCostModel cost(testing::h100_node().gpu);
  const TrainingPrograms programs = build_training_programs(t, cost, l);
  const StageProgram& stage = programs.stages[0];
  EXPECT_EQ(stage.data_group, GroupKind::kDataShard);
  EXPECT_EQ(stage.gradients.op, CollectiveOp::kReduceScatter);
  EXPECT_EQ(stage.gradients.replicate_shards, 8);
  int gathers = 0, ready = 0;
  for (const PassProgram* pass : {&stage.chunks[0].forward, &stage.chunks[0].backward}) {
    for (const ProgramOp& op : pass->ops) {
      if (op.kind == ProgramOp::Kind::kCollective && op.label == "zero3_param_all_gather") {
        EXPECT_EQ(op.group, GroupKind::kDataShard);
        ++gathers;
      }
      if (op.kind == ProgramOp::Kind::kGradientsReady) {
        EXPECT_EQ(op.group, GroupKind::kDataShard);
        ++ready;
      }
    }
  }
  EXPECT_GT(gathers, 0);
  EXPECT_GT(ready, 0);
}

// Every compute op of the programs at zero time and every host cost zero: what is left is communication.
std::vector<StageProgram> communication_only(std::vector<StageProgram> stages) {
  for (StageProgram& s : stages) {
    for (ChunkProgram& c : s.chunks) {
      for (PassProgram* pass : {&c.forward, &c.backward}) {
        for (ProgramOp& op : pass->ops) {
          if (op.kind == ProgramOp::Kind::kCompute) op.duration = Duration::zero();
          op.host = HostWork{};
        }
      }
    }
    s.optimizer = Duration::zero();
    s.optimizer_launches.clear();
    s.optimizer_host = HostWork{};
    s.optimizer_sync = Duration::zero();
    s.after_reductions = Duration::zero();
    s.after_reductions_host = HostWork{};
  }
  return stages;
}

TEST(HybridShard, StepIsTheShardReduceScatterThenTheReplicaAllReduceThenTheShardGather) {
  // ZeRO-1 (distributed optimizer) over 16 ranks on two 8-GPU nodes, dp_shard 8: one reduction at
  // the end of the step (overlap off), so the communication is, in order on one rank: the
  // gradients' reduce-scatter inside the node, the all-reduce of the 1/8 shard across the two
  // nodes, and the parameters' all-gather inside the node.
  const Cluster cluster(testing::h100_cluster(2));
  Layout l{.dp = 16, .zero_stage = 1};
  l.dp_shard = 8;
  l.overlap_grad_reduce = false;
  const Transformer t(small_gpt(), training(2048, 16), shard_spec(l));
  const ComputeCostModel cost(testing::h100_node().gpu);
  const TrainingPrograms programs = build_training_programs(t, cost, l);
  const std::vector<StageProgram> stages = communication_only(programs.stages);
  const int64_t elements = t.parameters().total();
  const int64_t grad_bytes = stages[0].gradients.bytes_per_element;
  Simulator sim;
  const CollectiveRunner runner(sim, cluster, nullptr, Fidelity::kAnalytical);
  auto estimate = [&](CollectiveOp op, std::vector<int> group, Bytes size) {
    CollectiveRequest request;
    request.op = op;
    request.group = std::move(group);
    request.size = size;
    request.dtype = grad_bytes == 4 ? DataType::kFp32 : DataType::kBf16;
    return runner.estimate(request);
  };
  const Duration reduce_scatter =
      estimate(CollectiveOp::kReduceScatter, {0, 1, 2, 3, 4, 5, 6, 7}, Bytes::of(elements) * grad_bytes);
  const Duration all_reduce = estimate(CollectiveOp::kAllReduce, {0, 8}, Bytes::of((elements + 7) / 8) * grad_bytes);
  CollectiveRequest gather;
  gather.op = CollectiveOp::kAllGather;
  gather.group = {0, 1, 2, 3, 4, 5, 6, 7};
  gather.size = stages[0].data_param_gather;
  gather.dtype = DataType::kBf16;
  const Duration all_gather = runner.estimate(gather);
  const StepResult r = simulate_step(cluster, l, stages, 1, {});
  EXPECT_EQ(r.step_time, reduce_scatter + all_reduce + all_gather);

  // Full sharding over the 16 ranks: one reduce-scatter and one all-gather across both nodes.
  Layout full = l;
  full.dp_shard = 0;
  const TrainingPrograms full_programs = build_training_programs(t, cost, full);
  std::vector<int> all(16);
  for (int i = 0; i < 16; ++i) all[static_cast<size_t>(i)] = i;
  CollectiveRequest full_gather = gather;
  full_gather.group = all;
  const Duration full_time = estimate(CollectiveOp::kReduceScatter, all, Bytes::of(elements) * grad_bytes) +
                             runner.estimate(full_gather);
  EXPECT_EQ(simulate_step(cluster, full, communication_only(full_programs.stages), 1, {}).step_time, full_time);
}

TEST(HybridShard, BothFidelitiesAndTheFullSimulationAgreeWithoutSharedLinks) {
  // Two nodes, each shard group inside a node and each replica pair on its own rail: no link is
  // shared between concurrent collectives, so flow and analytical fidelity, representative or not,
  // give step times within a few percent.
  const Cluster cluster(testing::h100_cluster(2));
  Layout l{.dp = 16, .zero_stage = 3};
  l.dp_shard = 8;
  TrainingSimulationOptions analytical;
  analytical.fidelity = Fidelity::kAnalytical;
  TrainingSimulationOptions flow;
  flow.fidelity = Fidelity::kFlow;
  TrainingSimulationOptions flow_full = flow;
  flow_full.representative = false;
  const TrainingSpec tr = training(2048, 32);
  const double a = simulate_training(cluster, small_gpt(), tr, l, analytical).step_time_s;
  const double f = simulate_training(cluster, small_gpt(), tr, l, flow).step_time_s;
  const double ff = simulate_training(cluster, small_gpt(), tr, l, flow_full).step_time_s;
  EXPECT_NEAR(f / a, 1.0, 0.05);
  EXPECT_NEAR(ff / f, 1.0, 0.01);
}

}  // namespace hybrid_shard_test
}  // namespace clustersim
