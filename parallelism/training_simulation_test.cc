#include "parallelism/training_simulation.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "parallelism/test_clusters.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace training_simulation_test {

// A GPT of 12 layers, h 2048: small enough to simulate every rank of 16 GPUs quickly.
ModelSpec small_gpt() { return testing::small_gpt(12); }

TrainingSpec small_training(int64_t global_batch = 32) { return testing::sequences(2048, global_batch); }

TEST(TrainingSimulation, BreakdownSumsToStepTimeAndFiguresAreConsistent) {
  const Cluster cluster(testing::h100_cluster(2));
  Layout layout{.tp = 2, .pp = 2, .dp = 4};
  const TrainingReport r = simulate_training(cluster, small_gpt(), small_training(), layout);
  ASSERT_GT(r.step_time_s, 0);
  const auto& b = r.breakdown;
  EXPECT_EQ(b.compute + b.exposed_comm + b.bubble + b.optimizer + b.host_bound + b.other, r.step.step_time);
  EXPECT_EQ(b.other, Duration::zero());         // the critical rank's time is fully accounted
  EXPECT_GT(b.exposed_comm, Duration::zero());  // tp = 2 all-reduces block the compute stream
  EXPECT_GT(b.bubble, Duration::zero());        // pp = 2
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 32.0 * 2048 / r.step_time_s);
  // MFU = model FLOPs / (step time × GPUs × peak), and no recomputation means HFU = MFU.
  EXPECT_DOUBLE_EQ(r.mfu, r.flops.model / (r.step_time_s * 16 * 989e12));
  EXPECT_DOUBLE_EQ(r.hfu, r.mfu);
  EXPECT_GT(r.mfu, 0.05);
  EXPECT_LT(r.mfu, 1.0);
  EXPECT_EQ(r.microbatches, 32 / 4);
  ASSERT_EQ(r.programs.memory.size(), 2U);
  EXPECT_TRUE(r.fits);
}

// DeepSpeed's pipeline engine with its bf16 optimizer all-reduces whole gradients under ZeRO-1
// (grad_reduce_op all_reduce); Megatron's distributed optimizer reduce-scatters them. Reduced after
// the backward pass, the all-reduce moves about twice a reduce-scatter's bytes (ring: 2·(n−1)/n
// against (n−1)/n of the buffer), so the exposed communication grows by about one reduce-scatter.
TEST(TrainingSimulation, WholeGradientAllReduceUnderZeroOne) {
  const Cluster cluster(testing::h100_cluster(2));
  Layout scatter{.tp = 2, .pp = 2, .dp = 4, .zero_stage = 1, .overlap_grad_reduce = false};
  Layout all_reduce = scatter;
  all_reduce.grad_reduce_op = GradReduceOp::kAllReduce;
  const TrainingReport a = simulate_training(cluster, small_gpt(), small_training(), scatter);
  const TrainingReport b = simulate_training(cluster, small_gpt(), small_training(), all_reduce);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(a.programs.stages[s].gradients.op, CollectiveOp::kReduceScatter);
    EXPECT_EQ(b.programs.stages[s].gradients.op, CollectiveOp::kAllReduce);
    EXPECT_EQ(b.programs.stages[s].data_param_gather, a.programs.stages[s].data_param_gather);  // shard update
  }
  const Duration extra = b.breakdown.exposed_comm - a.breakdown.exposed_comm;
  EXPECT_GT(extra, Duration::zero());
  // The extra time is about one more reduce-scatter: at most the whole exposed reduction before.
  EXPECT_LT(extra, a.breakdown.exposed_comm);
  EXPECT_NEAR(b.step_time_s - a.step_time_s, extra.to_seconds(), 1e-9);
  // Memory is unchanged: ZeRO-1 keeps whole gradients either way.
  EXPECT_EQ(a.programs.memory[0].memory.total(), b.programs.memory[0].memory.total());
  // all_reduce with sharded gradients, reduce_scatter without a sharded optimizer: refused.
  Layout zero2 = all_reduce;
  zero2.zero_stage = 2;
  EXPECT_THROW(simulate_training(cluster, small_gpt(), small_training(), zero2), InputError);
  Layout zero0{.tp = 2, .pp = 2, .dp = 4, .grad_reduce_op = GradReduceOp::kReduceScatter};
  EXPECT_THROW(simulate_training(cluster, small_gpt(), small_training(), zero0), InputError);
}

// A tied word embedding with pp > 1: the first and the last stage all-reduce its fp32 gradient
// (vocab/tp × h × 4 bytes) between them before the optimizer; untied, or with pp = 1, nothing.
TEST(TrainingSimulation, TiedEmbeddingGradientsAreSummedAcrossTheEndStages) {
  const Cluster cluster(testing::h100_cluster(2));
  ModelSpec tied = small_gpt();
  tied.tied_embeddings = true;
  ModelSpec untied = tied;
  untied.tied_embeddings = false;
  const Layout layout{.tp = 2, .pp = 2, .dp = 4, .overlap_grad_reduce = false};
  TrainingSimulationOptions o;
  o.record_trace = true;
  const TrainingReport a = simulate_training(cluster, tied, small_training(), layout, o);
  const TrainingReport b = simulate_training(cluster, untied, small_training(), layout, o);
  const int64_t vocab_per_rank = padded_vocab_size(tied.vocab, tied.make_vocab_size_divisible_by, 2) / 2;
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(a.programs.stages[s].embedding_grad_reduce.count(), vocab_per_rank * tied.hidden * 4) << s;
    EXPECT_EQ(b.programs.stages[s].embedding_grad_reduce.count(), 0) << s;
  }
  int spans = 0;
  for (const TraceSpan& span : a.step.trace) {
    if (span.name != "embedding_grad_all_reduce") continue;
    ++spans;
    EXPECT_EQ(span.stream, "emb");
    EXPECT_GT(span.end, span.start);
  }
  EXPECT_EQ(spans, 2);  // the representative rank of each end stage
  EXPECT_GT(a.breakdown.exposed_comm, b.breakdown.exposed_comm);
  const TrainingReport one = simulate_training(cluster, tied, small_training(), Layout{.tp = 2, .dp = 8}, o);
  EXPECT_EQ(one.programs.stages[0].embedding_grad_reduce.count(), 0);
}

// The recorded waits of each simulated rank's compute stream are its bubble, exposed communication
// and host-bound time, span by span: their sums equal the breakdown's parts, and a step without
// record_trace records none.
TEST(TrainingSimulation, RecordedWaitsSumToTheRankBreakdown) {
  const Cluster cluster(testing::h100_cluster(2));
  TrainingSimulationOptions o;
  o.record_trace = true;
  for (const Layout& layout : {Layout{.tp = 2, .pp = 2, .dp = 4}, Layout{.tp = 1, .pp = 4, .dp = 4}}) {
    const TrainingReport r = simulate_training(cluster, small_gpt(), small_training(), layout, o);
    ASSERT_FALSE(r.step.waits.empty());
    for (const RankBreakdown& rank : r.step.ranks) {
      Duration bubble, exposed, host;
      for (const TraceSpan& w : r.step.waits) {
        if (w.rank != rank.rank) continue;
        EXPECT_EQ(w.stream, "wait");
        EXPECT_GT(w.end, w.start);
        const Duration d = w.end - w.start;
        if (w.name == "bubble") {
          bubble += d;
        } else if (w.name == "exposed_comm") {
          exposed += d;
        } else {
          EXPECT_EQ(w.name, "host_bound");
          host += d;
        }
      }
      EXPECT_EQ(bubble, rank.bubble) << rank.rank;
      EXPECT_EQ(exposed, rank.exposed_comm) << rank.rank;
      EXPECT_EQ(host, rank.host_bound) << rank.rank;
    }
    EXPECT_GT(r.step.ranks.back().bubble, Duration::zero());  // pp > 1: the later stages wait for inputs
    const TrainingReport untraced = simulate_training(cluster, small_gpt(), small_training(), layout);
    EXPECT_TRUE(untraced.step.waits.empty());
  }
}

// "other" is the step time less the parts, in picoseconds: where the parts add up to the step time
// it is exactly 0 (printed "0.0000 s", never a rounding residue such as "-0.0000 s"), and the six
// parts always sum to the step time exactly.
TEST(TrainingSimulation, FullyAccountedStepHasExactlyZeroOther) {
  const Cluster cluster(testing::h100_cluster(2));
  int accounted = 0;
  for (const Layout& layout : {Layout{.tp = 2, .pp = 2, .dp = 4}, Layout{.tp = 8, .pp = 1, .dp = 2},
                              Layout{.tp = 1, .pp = 4, .dp = 4}, Layout{.tp = 4, .pp = 4, .dp = 1}}) {
    const TrainingReport r = simulate_training(cluster, small_gpt(), small_training(), layout);
    const RankBreakdown& crit = r.step.ranks[r.step.critical];
    const TimeBreakdown& b = r.breakdown;
    EXPECT_EQ(b.compute, crit.compute);
    EXPECT_EQ(b.host_bound, crit.host_bound);
    EXPECT_EQ(b.compute + b.exposed_comm + b.bubble + b.optimizer + b.host_bound + b.other, r.step.step_time)
        << layout.tp << "/" << layout.pp << "/" << layout.dp;
    if (crit.compute + crit.exposed_comm + crit.bubble + crit.optimizer + crit.host_bound != r.step.step_time) continue;
    ++accounted;
    EXPECT_EQ(r.breakdown.other, Duration::zero()) << layout.tp << "/" << layout.pp << "/" << layout.dp;
  }
  EXPECT_GT(accounted, 0);
}

TEST(TrainingSimulation, RecomputationRaisesHfuAboveMfu) {
  const Cluster cluster(testing::h100_cluster(1));
  TrainingSpec t = small_training(16);
  t.recompute = Recompute::kFull;
  const TrainingReport r = simulate_training(cluster, small_gpt(), t, Layout{.tp = 8});
  EXPECT_GT(r.hfu, r.mfu);
  EXPECT_GT(r.step.ranks[r.step.critical].recompute, Duration::zero());
}

// The representative simulation (one rank per stage) equals the full one on a small cluster, at
// both fidelities (DESIGN.md: symmetry with proof).
TEST(TrainingSimulation, RepresentativeRanksMatchFullSimulation) {
  const Cluster cluster(testing::h100_cluster(2));
  for (Fidelity f : {Fidelity::kAnalytical, Fidelity::kFlow}) {
    for (Layout layout : {Layout{.tp = 2, .pp = 2, .dp = 4}, Layout{.tp = 4, .pp = 1, .dp = 4, .zero_stage = 1},
                          Layout{.tp = 1, .pp = 4, .dp = 4, .vpp = 3, .schedule = PipelineSchedule::kInterleaved1F1B}}) {
      TrainingSimulationOptions rep{{.fidelity = f, .representative = true}};
      TrainingSimulationOptions full{{.fidelity = f, .representative = false}};
      const TrainingReport a = simulate_training(cluster, small_gpt(), small_training(), layout, rep);
      const TrainingReport b = simulate_training(cluster, small_gpt(), small_training(), layout, full);
      EXPECT_EQ(a.step.step_time, b.step.step_time)
          << "fidelity " << static_cast<int>(f) << " tp " << layout.tp << " pp " << layout.pp;
      EXPECT_EQ(b.step.ranks.size(), 16U);
      EXPECT_EQ(a.step.ranks.size(), static_cast<size_t>(layout.pp));
    }
  }
}

TEST(TrainingSimulation, SameInputGivesSameEventStream) {
  const Cluster cluster(testing::h100_cluster(2));
  Layout layout{.tp = 2, .pp = 2, .dp = 4};
  TrainingSimulationOptions o{{.fidelity = Fidelity::kFlow}};
  const TrainingReport a = simulate_training(cluster, small_gpt(), small_training(), layout, o);
  const TrainingReport b = simulate_training(cluster, small_gpt(), small_training(), layout, o);
  EXPECT_EQ(a.step.fingerprint, b.step.fingerprint);
  EXPECT_EQ(a.step.events, b.step.events);
  EXPECT_EQ(a.step.step_time, b.step.step_time);
}

TEST(TrainingSimulation, MemoryM2Llama7bDoesNotFitWithoutDistributedOptimizer) {
  // Llama-2-7B, tp = pp = 1, dp = 8: 18 B/param = 121.3 GB > 80 GB; with the distributed
  // optimizer 6 + 12/8 = 7.5 B/param = 50.5 GB of model state.
  const Cluster cluster(testing::h100_cluster(1));
  TrainingSpec t;
  t.seq_len = 4096;
  t.global_batch = 8;
  t.micro_batch = 1;
  t.recompute = Recompute::kFull;
  const ModelSpec m = testing::llama2_7b();
  const TrainingReport plain = simulate_training(cluster, m, t, Layout{.dp = 8});
  EXPECT_FALSE(plain.fits);
  const double p = 6'738'415'616.0;
  const auto& mem = plain.programs.memory[0].memory;
  EXPECT_NEAR(static_cast<double>((mem.params + mem.grads + mem.optimizer_state).count()), 18 * p, 1.0);
  const TrainingReport sharded = simulate_training(cluster, m, t, Layout{.dp = 8, .zero_stage = 1});
  const auto& mem1 = sharded.programs.memory[0].memory;
  EXPECT_NEAR(static_cast<double>((mem1.params + mem1.grads + mem1.optimizer_state).count()), 7.5 * p, 8.0);
  EXPECT_TRUE(sharded.fits);
}

TEST(TrainingSimulation, RejectsInvalidLayoutsWithNamedFields) {
  const Cluster cluster(testing::h100_cluster(1));
  try {
    simulate_training(cluster, small_gpt(), small_training(), Layout{.tp = 3});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("parallelism"), std::string::npos) << e.what();
  }
}

}  // namespace training_simulation_test
}  // namespace clustersim
