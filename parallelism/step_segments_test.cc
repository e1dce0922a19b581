// The fast paths a layout search relies on give exactly what the full paths give:
//  - at analytical fidelity the step simulation runs a pass's compute ops and the blocking
//    collectives that start alone as one event (step_simulation.cc, Segment); with a trace
//    recorded every op is its own event, so the two must agree to the picosecond;
//  - stage_memory() is the memory build_training_programs() reports.

#include <gtest/gtest.h>

#include <tuple>

#include "core/error.h"
#include "parallelism/program_builder.h"
#include "parallelism/test_clusters.h"
#include "parallelism/training_simulation.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace step_segments_test {

ModelSpec small_gpt() { return testing::small_gpt(12); }

struct Case {
  Layout layout;
  Recompute recompute;
};

std::vector<Case> cases() {
  return {
      {Layout{.tp = 2, .pp = 2, .dp = 4}, Recompute::kNone},
      {Layout{.tp = 8, .pp = 2, .dp = 1, .sequence_parallel = true, .zero_stage = 1}, Recompute::kFull},
      {Layout{.tp = 2, .pp = 2, .dp = 4, .vpp = 3, .schedule = PipelineSchedule::kInterleaved1F1B},
       Recompute::kSelective},
      {Layout{.tp = 4, .pp = 1, .dp = 4, .zero_stage = 3}, Recompute::kNone},
      {Layout{.tp = 1, .pp = 4, .dp = 4, .schedule = PipelineSchedule::kGpipe}, Recompute::kFull},
  };
}

TEST(StepSegments, AnalyticalStepIsTheSameWithAndWithoutOneEventPerOp) {
  const Cluster cluster(testing::h100_cluster(2));
  for (bool representative : {true, false}) {
    for (const Case& c : cases()) {
      TrainingSpec t;
      t.seq_len = 2048;
      t.global_batch = 32;
      t.micro_batch = 1;
      t.recompute = c.recompute;
      TrainingSimulationOptions fused;
      fused.fidelity = Fidelity::kAnalytical;
      fused.representative = representative;
      TrainingSimulationOptions per_op = fused;
      per_op.record_trace = true;  // one event per op, every op in the trace
      const TrainingReport a = simulate_training(cluster, small_gpt(), t, c.layout, fused);
      const TrainingReport b = simulate_training(cluster, small_gpt(), t, c.layout, per_op);
      EXPECT_EQ(a.step.step_time, b.step.step_time);
      ASSERT_EQ(a.step.ranks.size(), b.step.ranks.size());
      for (size_t r = 0; r < a.step.ranks.size(); ++r) {
        EXPECT_EQ(a.step.ranks[r].compute, b.step.ranks[r].compute);
        EXPECT_EQ(a.step.ranks[r].recompute, b.step.ranks[r].recompute);
        EXPECT_EQ(a.step.ranks[r].exposed_comm, b.step.ranks[r].exposed_comm);
        EXPECT_EQ(a.step.ranks[r].bubble, b.step.ranks[r].bubble);
        EXPECT_EQ(a.step.ranks[r].optimizer, b.step.ranks[r].optimizer);
        EXPECT_EQ(a.step.ranks[r].finish, b.step.ranks[r].finish);
      }
      if (representative) {
        EXPECT_LT(a.step.events, b.step.events);
      }
    }
  }
}

TEST(StageMemory, IsTheMemoryTheProgramBuilderReports) {
  const GpuSpec gpu = testing::h100_node().gpu;
  const ComputeCostModel cost(gpu);
  for (const Case& c : cases()) {
    TrainingSpec t;
    t.seq_len = 2048;
    t.global_batch = 32;
    t.micro_batch = 2;
    t.recompute = c.recompute;
    const Transformer transformer(small_gpt(), t, ShardSpec{c.layout.tp, c.layout.sequence_parallel, c.layout.cp});
    const TrainingPrograms programs = build_training_programs(transformer, cost, c.layout);
    const std::vector<StageMemory> alone = stage_memory(transformer, c.layout);
    ASSERT_EQ(alone.size(), programs.memory.size());
    for (size_t s = 0; s < alone.size(); ++s) {
      EXPECT_EQ(alone[s].memory.total(), programs.memory[s].memory.total());
      EXPECT_EQ(alone[s].memory.activations, programs.memory[s].memory.activations);
      EXPECT_EQ(alone[s].parameters, programs.memory[s].parameters);
      EXPECT_EQ(alone[s].inflight_microbatches, programs.memory[s].inflight_microbatches);
    }
  }
}

}  // namespace step_segments_test
}  // namespace clustersim

namespace clustersim {
namespace step_segments_test {

// training.framework pytorch-eager: one micro-batch per GPU, alone or under DistributedDataParallel.
// With dp > 1 the peak adds DDP's bucket copy of the gradients (4 B per fp32 gradient) and the step
// DDP's copies into and out of its buckets. Pipeline stages and tensor parallelism run alone (dp 1),
// without interleaving; context parallelism and ZeRO 1 are refused.
TEST(PytorchEagerMemory, DataParallelAddsTheBucketCopyAndOtherLayoutsAreRefused) {
  TrainingSpec t = testing::training(1024, 2, Recompute::kNone, AttentionKernel::kFlash);
  t.framework = Framework::kPytorchEager;
  t.precision = PrecisionPolicy::pure_fp32();
  t.hidden_dropout = 0;
  t.attention_dropout = 0;
  t.global_batch = 2;
  const Transformer transformer(small_gpt(), t, ShardSpec{1, false, 1});
  Layout one{.dp = 1};
  const std::vector<StageMemory> alone = stage_memory(transformer, one);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].memory.comm_buffers, Bytes::zero());

  TrainingSpec t2 = t;
  t2.global_batch = 4;  // two ranks of one micro-batch each
  const Transformer two(small_gpt(), t2, ShardSpec{1, false, 1});
  Layout ddp;
  ddp.dp = 2;
  const std::vector<StageMemory> data_parallel = stage_memory(two, ddp);
  ASSERT_EQ(data_parallel.size(), 1u);
  EXPECT_EQ(data_parallel[0].memory.comm_buffers, Bytes::of(4 * alone[0].parameters));
  EXPECT_EQ(data_parallel[0].memory.total(), alone[0].memory.total() + Bytes::of(4 * alone[0].parameters));

  for (auto [tp, pp, dp, zero] : {std::tuple{2, 1, 2, 0}, std::tuple{1, 2, 2, 0}, std::tuple{1, 1, 1, 1}}) {
    Layout other;
    other.tp = tp;
    other.pp = pp;
    other.dp = dp;
    other.zero_stage = zero;
    EXPECT_THROW(stage_memory(dp > 1 ? two : transformer, other), InputError) << tp << " " << pp << " " << dp << " " << zero;
  }
  // Pipeline stages alone (train_step.py --parallel pp), GPipe: each stage keeps every micro-batch;
  // the last holds the head, so it has the loss tensors. Interleaving is refused.
  TrainingSpec t4 = t;
  t4.global_batch = 8;  // four micro-batches
  const Transformer four(small_gpt(), t4, ShardSpec{1, false, 1});
  Layout gpipe;
  gpipe.pp = 2;
  gpipe.schedule = PipelineSchedule::kGpipe;
  const std::vector<StageMemory> stages = stage_memory(four, gpipe);
  ASSERT_EQ(stages.size(), 2u);
  for (const StageMemory& stage : stages) EXPECT_EQ(stage.inflight_microbatches, 4.0);
  EXPECT_EQ(stages[0].memory.logits, Bytes::zero());
  EXPECT_GT(stages[1].memory.logits, Bytes::zero());
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(stages[static_cast<size_t>(s)].parameters,
              four.parameters().stage(stages[static_cast<size_t>(s)].layers, 0, s == 0, s == 1, true).total());
  }
  EXPECT_EQ(stages[0].layers + stages[1].layers, small_gpt().layers);
  Layout interleaved = gpipe;
  interleaved.vpp = 2;
  interleaved.schedule = PipelineSchedule::kInterleaved1F1B;
  EXPECT_THROW(stage_memory(four, interleaved), InputError);
  // DDP's copies on the compute stream (program_builder.cc, add_ddp_bucket_copies): every gradient
  // written into its bucket as it is ready (read + write, fp32), and copied back after the
  // reductions. One GPU has neither.
  const ComputeCostModel cost(testing::h100_node().gpu);
  const TrainingPrograms single = build_training_programs(transformer, cost, one);
  const TrainingPrograms programs = build_training_programs(two, cost, ddp);
  ASSERT_EQ(programs.stages.size(), 1u);
  const Duration per_pass = cost.memory_bound_time(Bytes::of(8 * alone[0].parameters), MemoryAccess::kElementwise);
  EXPECT_EQ(single.stages[0].after_reductions, Duration::zero());
  EXPECT_EQ(programs.stages[0].after_reductions, per_pass);
  int64_t ready = 0;
  Duration copies, expected;
  for (const ProgramOp& op : programs.stages[0].chunks[0].backward.ops) {
    if (op.kind == ProgramOp::Kind::kGradientsReady) {
      ready += op.elements;
      expected += cost.memory_bound_time(Bytes::of(8 * op.elements), MemoryAccess::kElementwise);
    }
    if (op.label == "ddp.grad_to_bucket") copies += op.duration;
  }
  EXPECT_EQ(ready, alone[0].parameters);
  EXPECT_EQ(copies, expected);  // one kernel per ready group, each with its launch gap
  EXPECT_GT(copies, per_pass);
  for (const ProgramOp& op : single.stages[0].chunks[0].backward.ops) EXPECT_NE(op.label, "ddp.grad_to_bucket");

  // FullyShardedDataParallel (zero 3): gradient accumulation allowed, model states sharded (16 B
  // per parameter over dp), no DDP copies; FSDP's 16-bit parameters need zero 3.
  TrainingSpec fsdp_training = t;
  fsdp_training.precision = PrecisionPolicy::megatron_mixed();
  fsdp_training.global_batch = 16;  // four micro-batches on each of two ranks
  const Transformer fsdp_model(small_gpt(), fsdp_training, ShardSpec{1, false, 1});
  Layout fsdp{.dp = 2, .zero_stage = 3};
  const std::vector<StageMemory> sharded = stage_memory(fsdp_model, fsdp);
  const int64_t shard = (alone[0].parameters + 1) / 2;
  // Reduced after every micro-batch (the default under ZeRO 3, as FSDP outside no_sync): the
  // sharded fp32 gradients of the earlier micro-batches stay alive in the later ones' forward.
  EXPECT_EQ(sharded[0].memory.grads, Bytes::of(4 * shard));
  // Accumulated under no_sync (HF Trainer, accelerate): the whole fp32 gradients instead.
  Layout no_sync = fsdp;
  no_sync.reduce_every_microbatch = false;
  EXPECT_EQ(stage_memory(fsdp_model, no_sync)[0].memory.grads, Bytes::of(4 * alone[0].parameters));
  EXPECT_EQ(sharded[0].memory.optimizer_state, Bytes::of(8 * shard));
  EXPECT_EQ(sharded[0].memory.comm_buffers, Bytes::zero());
  // With the states sharded, the peak is a moment with activations alive, not the optimizer step.
  EXPECT_GT(sharded[0].memory.activations, Bytes::zero());
  EXPECT_EQ(sharded[0].memory.params, Bytes::of(4 * shard));
  EXPECT_EQ(sharded[0].memory.param_copies, Bytes::of(2 * 2 * fsdp_model.parameters().layer.total()));
  EXPECT_EQ(build_training_programs(fsdp_model, cost, fsdp).stages[0].after_reductions, Duration::zero());
  EXPECT_THROW(stage_memory(fsdp_model, ddp), InputError);  // bf16 parameters without FSDP

  TrainingSpec accumulate = t;
  accumulate.global_batch = 4;  // two micro-batches on one GPU
  EXPECT_THROW(stage_memory(Transformer(small_gpt(), accumulate, ShardSpec{1, false, 1}), one),
               InputError);
}

}  // namespace step_segments_test
}  // namespace clustersim
