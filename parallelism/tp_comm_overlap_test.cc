// Tensor-parallel communication overlapped with GEMMs (Megatron-Core --tp-comm-overlap, Transformer
// Engine's userbuffers defaults): which collectives are overlapped, how each method's time follows
// from its chunk GEMMs and collectives, the SM share it costs, and the layout rule.

#include "parallelism/tp_comm_overlap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "parallelism/program_builder.h"
#include "parallelism/step_simulation.h"
#include "parallelism/test_clusters.h"
#include "parallelism/training_simulation.h"
#include "workloads/op_cost.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace tp_comm_overlap_test {

TrainingSpec training(int64_t seq_len, int64_t global_batch) {
  TrainingSpec t;
  t.seq_len = seq_len;
  t.micro_batch = 1;
  t.global_batch = global_batch;
  t.hidden_dropout = 0;
  t.attention_dropout = 0;
  return t;
}

const Op& find(const std::vector<Op>& ops, std::string_view name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; });
  if (it == ops.end()) throw std::runtime_error("no op " + std::string(name));
  return *it;
}

// Simulates `forward` as the only work of one step on a tp-rank node (one microbatch, no backward,
// no optimizer) and returns the step time.
Duration forward_time(const std::vector<ProgramOp>& forward, int tp) {
  const Cluster cluster(testing::h100_cluster(1, tp, FabricType::kSingleSwitch));
  const Layout layout{.tp = tp, .sequence_parallel = true};
  std::vector<StageProgram> stages(1);
  stages[0].chunks.resize(1);
  stages[0].chunks[0].forward.ops = forward;
  return simulate_step(cluster, layout, stages, 1, {}).step_time;
}

// The analytical time of `request` on the tensor group 0..tp−1 of that node.
Duration collective_time(CollectiveOp op, Bytes size, int tp, std::vector<int64_t> matrix = {}) {
  const Cluster cluster(testing::h100_cluster(1, tp, FabricType::kSingleSwitch));
  Simulator sim;
  const CollectiveRunner runner(sim, cluster, nullptr, Fidelity::kAnalytical);
  CollectiveRequest request;
  request.op = op;
  for (int r = 0; r < tp; ++r) request.group.push_back(r);
  request.size = size;
  request.all_to_all_bytes = std::move(matrix);
  return runner.estimate(request);
}

Op rows(const Op& gemm, int parts) {
  Op block = gemm;
  block.gemm.m = (gemm.gemm.m + parts - 1) / parts;
  block.flops /= parts;
  block.kernel_flops /= parts;
  block.bytes_read = gemm.bytes_read.scaled(1.0 / parts);
  block.bytes_written = gemm.bytes_written.scaled(1.0 / parts);
  return block;
}

TEST(TpCommOverlap, UserbuffersLayersAreTransformerEnginesFour) {
  Op gemm;
  gemm.cost = OpCost::kGemm;
  for (const char* name : {"qkv", "proj", "fc1", "fc2", "qkv.dgrad", "qkv.wgrad", "proj.dgrad", "fc2.wgrad"}) {
    gemm.name = name;
    EXPECT_TRUE(userbuffers_gemm(gemm)) << name;
  }
  for (const char* name : {"lm_head", "shared.fc1", "experts.fc1", "q_up", "router", "qkv.other"}) {
    gemm.name = name;
    EXPECT_FALSE(userbuffers_gemm(gemm)) << name;
  }
  Op comm = gemm;
  comm.name = "qkv";
  comm.cost = OpCost::kCommunication;
  EXPECT_FALSE(userbuffers_gemm(comm));
}

TEST(TpCommOverlap, SmShareOfTheCommunicationKernels) {
  // 132 SMs (H100 SXM) less TE's 16 for the userbuffers kernel: the GEMM takes 132/116 as long.
  EXPECT_DOUBLE_EQ(overlapped_gemm_slowdown(132), 132.0 / (132 - 16));
  EXPECT_DOUBLE_EQ(overlapped_gemm_slowdown(108), 108.0 / (108 - 16));  // A100
  EXPECT_THROW(overlapped_gemm_slowdown(16), InputError);
}

// A Llama-3-8B layer at tp 4 with sequence parallelism, s = 4096.
struct Fixture {
  static constexpr int kTp = 4;
  Transformer transformer{testing::llama3_8b(), training(4096, 4), ShardSpec{.tp = kTp, .sequence_parallel = true}};
  ComputeCostModel cost{testing::h100_node().gpu};
  const std::vector<Op>& forward() const { return transformer.layer(LayerKind::kDense).forward; }
  const std::vector<Op>& backward() const { return transformer.layer(LayerKind::kDense).backward; }
};

TEST(TpCommOverlap, RingExchangeStepsOverlapChunksOfTheGemm) {
  const Fixture f;
  const int tp = Fixture::kTp;
  const Op& gather = find(f.forward(), "attention.tp_all_gather");
  const Op& qkv = find(f.forward(), "qkv");
  const std::vector<Op>& ops = f.forward();
  const size_t at = static_cast<size_t>(&gather - ops.data());
  const TpOverlapMatch match = match_tp_overlap(ops, at);
  EXPECT_EQ(match.method, TpOverlapMethod::kRingExchange);
  EXPECT_EQ(match.ops, 2U);

  std::vector<ProgramOp> out;
  append_ring_exchange(out, gather, qkv, f.cost, tp);
  // tp chunks of T/tp rows; tp − 1 exchanges of the [T/tp, h] shard, each to the ring successor.
  const Duration chunk = op_duration(rows(qkv, tp), f.cost);
  const Bytes shard = gather.comm_bytes.divided_ceil(tp);
  int exchanges = 0, chunks = 0;
  for (const ProgramOp& op : out) {
    if (op.kind == ProgramOp::Kind::kCompute) {
      EXPECT_EQ(op.duration, chunk);
      ++chunks;
    }
    if (op.kind != ProgramOp::Kind::kCollective) continue;
    ++exchanges;
    EXPECT_EQ(op.group, GroupKind::kTensor);
    EXPECT_EQ(op.op, CollectiveOp::kAllToAll);
    EXPECT_EQ(op.size, shard);
    EXPECT_GE(op.handle, 0);
    ASSERT_TRUE(op.all_to_all_bytes);
    for (int r = 0; r < tp; ++r) EXPECT_EQ((*op.all_to_all_bytes)[static_cast<size_t>(r * tp + (r + 1) % tp)], shard.count());
  }
  EXPECT_EQ(chunks, tp);
  EXPECT_EQ(exchanges, tp - 1);
  // Time: (tp − 1) steps of max(chunk, exchange), then the last chunk alone.
  std::vector<int64_t> matrix(static_cast<size_t>(tp * tp), 0);
  for (int r = 0; r < tp; ++r) matrix[static_cast<size_t>(r * tp + (r + 1) % tp)] = shard.count();
  const Duration exchange = collective_time(CollectiveOp::kAllToAll, shard, tp, matrix);
  EXPECT_EQ(forward_time(out, tp), std::max(chunk, exchange) * (tp - 1) + chunk);
  // Without overlap the same work takes the whole all-gather, then the whole GEMM.
  const Duration blocking = collective_time(CollectiveOp::kAllGather, gather.comm_bytes, tp) + op_duration(qkv, f.cost);
  EXPECT_LT(forward_time(out, tp), blocking);
}

TEST(TpCommOverlap, PipelinedReduceScatterHidesAllButTheLastChunk) {
  const Fixture f;
  const int tp = Fixture::kTp;
  const std::vector<Op>& ops = f.forward();
  const Op& fc2 = find(ops, "fc2");
  const size_t at = static_cast<size_t>(&fc2 - ops.data());
  ASSERT_EQ(match_tp_overlap(ops, at).method, TpOverlapMethod::kPipeline);
  const Op& scatter = ops[at + 1];
  std::vector<ProgramOp> out;
  append_pipelined_reduce_scatter(out, fc2, scatter, f.cost);
  constexpr int kSplits = TpOverlapDefaults::kPipelineSplits;
  // Four GEMMs of T/4 rows on 132 − 16 SMs, each followed by the reduce-scatter of its quarter.
  const Duration chunk = op_duration(rows(fc2, kSplits), f.cost).scaled(132.0 / 116.0);
  const Duration scatter_time =
      collective_time(CollectiveOp::kReduceScatter, scatter.comm_bytes.divided_ceil(kSplits), tp);
  // The reduce-scatters run one at a time on the tensor group's stream: chunk k's starts when the
  // GEMM chunk is done and the previous reduce-scatter has finished.
  Duration stream_free;
  for (int k = 0; k < kSplits; ++k) stream_free = std::max(chunk * (k + 1), stream_free) + scatter_time;
  EXPECT_EQ(forward_time(out, tp), stream_free);
  int scatters = 0;
  for (const ProgramOp& op : out) scatters += op.kind == ProgramOp::Kind::kCollective;
  EXPECT_EQ(scatters, kSplits);
}

TEST(TpCommOverlap, BulkOverlapsTheInputGatherAndTheGradientScatter) {
  const Fixture f;
  const int tp = Fixture::kTp;
  const std::vector<Op>& ops = f.backward();
  const Op& dgrad = find(ops, "fc1.dgrad");
  const size_t at = static_cast<size_t>(&dgrad - ops.data());
  const TpOverlapMatch match = match_tp_overlap(ops, at);
  ASSERT_EQ(match.method, TpOverlapMethod::kBulk);
  EXPECT_EQ(match.ops, 4U);
  std::vector<ProgramOp> out;
  append_bulk_overlap(out, ops[at], ops[at + 1], ops[at + 2], ops[at + 3], f.cost);
  for (ProgramOp& op : out) op.work = WorkKind::kForward;  // simulated as a forward pass
  const double slow = 132.0 / 116.0;
  const Duration gather = collective_time(CollectiveOp::kAllGather, ops[at + 1].comm_bytes, tp);
  const Duration scatter = collective_time(CollectiveOp::kReduceScatter, ops[at + 3].comm_bytes, tp);
  const Duration expected = std::max(gather, op_duration(ops[at], f.cost).scaled(slow)) +
                            std::max(scatter, op_duration(ops[at + 2], f.cost).scaled(slow));
  EXPECT_EQ(forward_time(out, tp), expected);
}

TEST(TpCommOverlap, EveryLayerCollectiveIsOverlappedAndTheStepIsShorter) {
  // Llama-3-8B, tp 8 with sequence parallelism on one node: with the overlap no tensor-parallel
  // collective of a layer blocks the compute stream; the embedding and the LM head keep theirs.
  const Cluster cluster(testing::h100_cluster(1));
  Layout layout{.tp = 8, .sequence_parallel = true};
  const TrainingSpec t = training(4096, 4);
  const Transformer transformer(testing::llama3_8b(), t, shard_spec(layout));
  const ComputeCostModel cost(testing::h100_node().gpu);
  ProgramOptions options;
  options.merge_compute = false;
  layout.tp_comm_overlap = true;
  const TrainingPrograms programs = build_training_programs(transformer, cost, layout, options);
  int blocking = 0, asynchronous = 0;
  for (const ProgramOp& op : programs.stages[0].chunks[0].forward.ops) {
    if (op.kind != ProgramOp::Kind::kCollective || op.group != GroupKind::kTensor) continue;
    const bool outside_layers = op.label.starts_with("embedding") || op.label.starts_with("head") ||
                                op.label.starts_with("cross_entropy");
    if (op.handle < 0) {
      EXPECT_TRUE(outside_layers) << op.label;
      ++blocking;
    } else {
      ++asynchronous;
    }
  }
  // Per layer: two ring exchanges of tp − 1 steps and two pipelines of 4 reduce-scatters.
  EXPECT_EQ(asynchronous, 32 * (2 * (8 - 1) + 2 * TpOverlapDefaults::kPipelineSplits));
  EXPECT_GT(blocking, 0);

  TrainingSimulationOptions o;
  const double overlapped = simulate_training(cluster, testing::llama3_8b(), t, layout, o).step_time_s;
  layout.tp_comm_overlap = false;
  const double plain = simulate_training(cluster, testing::llama3_8b(), t, layout, o).step_time_s;
  EXPECT_LT(overlapped, plain);
}

TEST(TpCommOverlap, NeedsSequenceParallelism) {
  LayoutContext c;
  c.layers = 32;
  c.heads = 32;
  c.kv_heads = 8;
  c.ffn_hidden = 14336;
  c.gpus = 8;
  c.gpus_per_node = 8;
  c.global_batch = 8;
  c.micro_batch = 1;
  c.seq_len = 4096;
  Layout layout{.tp = 8, .tp_comm_overlap = true};
  try {
    validate_layout(layout, c);
    FAIL() << "tp_comm_overlap without sequence parallelism was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("tp_comm_overlap"), std::string::npos) << what;
    EXPECT_NE(what.find("sequence_parallel"), std::string::npos) << what;
  }
  layout.sequence_parallel = true;
  EXPECT_NO_THROW(validate_layout(layout, c));
  Layout single{.tp = 1, .dp = 8, .tp_comm_overlap = true};
  EXPECT_THROW(validate_layout(single, c), InputError);
}

}  // namespace tp_comm_overlap_test
}  // namespace clustersim
