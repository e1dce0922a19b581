// Expert and context parallelism through the programs and the step simulation:
// docs/cases/moe_cp.md E1 (expert memory), E2 (the ring overlapped with attention),
// docs/cases/collectives.md C4 (the busiest receiver sets the dispatch time, end to end),
// docs/cases/layouts.md L3 and L7, the expert and data-context groups, and the search over
// ep and cp.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "cost_models/compute_cost_model.h"
#include "parallelism/layout_search.h"
#include "parallelism/program_builder.h"
#include "parallelism/rank_grid.h"
#include "parallelism/test_clusters.h"
#include "parallelism/training_simulation.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace moe_cp_test {

TrainingSpec training(int64_t seq_len, int64_t micro_batch, int64_t global_batch) {
  TrainingSpec t;
  t.seq_len = seq_len;
  t.micro_batch = micro_batch;
  t.global_batch = global_batch;
  t.hidden_dropout = 0;
  t.attention_dropout = 0;
  return t;
}

// A 2-layer MoE of Mixtral's width with 8 experts of 4096, top-1 (a histogram may then put up to
// all of a token's slot on one expert).
ModelSpec small_moe() {
  ModelSpec m = testing::mixtral_8x7b();
  m.name = "small-moe";
  m.layers = 2;
  m.moe.top_k = 1;
  m.moe.moe_ffn_hidden = 4096;
  return m;
}

TEST(ExpertParallel, E1MixtralMiddleStageMemory) {
  // docs/cases/moe_cp.md E1: Mixtral-8x7B on 64 GPUs, tp 2, pp 4, ep 8, etp 1 → dp 8, expert-dp
  // 64 / (1 · 8 · 4) = 2; distributed optimizer, bf16 parameters, fp32 gradients. A middle stage holds
  // ≈ 168.1 M dense parameters at (6 + 12/8) B and ≈ 1,409.3 M expert parameters at (6 + 12/2) B:
  // ≈ 18.17 GB. Dividing everything by tp alone would give ≈ 43.5 GB.
  const Layout layout{.tp = 2, .pp = 4, .dp = 8, .ep = 8, .sequence_parallel = true, .zero_stage = 1,
                      .order = "tp-cp-ep-dp-pp"};
  EXPECT_EQ(layout.expert_dp(), 2);
  const Transformer t(testing::mixtral_8x7b(), training(4096, 1, 64), shard_spec(layout));
  const std::vector<StageMemory> stages = stage_memory(t, layout);
  ASSERT_EQ(stages.size(), 4U);
  const StageMemory& middle = stages[1];
  const int64_t h = 4096;
  const int64_t dense = 8 * ((h * (32 + 2 * 8) * 128 + 32 * 128 * h) / 2 + h * 8 + 2 * h);
  const int64_t expert = 8 * 3 * h * 14336;
  EXPECT_EQ(middle.parameters, dense);
  EXPECT_EQ(middle.expert_parameters, expert);
  EXPECT_NEAR(static_cast<double>(dense) / 1e6, 168.1, 0.1);
  EXPECT_NEAR(static_cast<double>(expert) / 1e6, 1409.3, 0.1);
  const MemoryBreakdown& m = middle.memory;
  const double states = static_cast<double>((m.params + m.grads + m.optimizer_state).count());
  EXPECT_NEAR(states, static_cast<double>(dense) * (6 + 12.0 / 8) + static_cast<double>(expert) * (6 + 12.0 / 2), 4);
  EXPECT_NEAR(states / 1e9, 18.17, 0.01);
  const double naive = static_cast<double>(dense * 2 + 8 * 8 * 3 * h * 14336) / 2 * (6 + 12.0 / 8);
  EXPECT_NEAR(naive / 1e9, 43.5, 0.05);
  // Routed-expert activations do not shrink with ep: the same stage at ep 2 saves as much per layer.
  const Layout ep2{.tp = 2, .pp = 4, .dp = 8, .ep = 2, .sequence_parallel = true, .zero_stage = 1};
  const Transformer t2(testing::mixtral_8x7b(), training(4096, 1, 64), shard_spec(ep2));
  EXPECT_EQ(t2.layer(LayerKind::kMoe).activation_bytes, t.layer(LayerKind::kMoe).activation_bytes);
}

TEST(ExpertParallel, ExpertGradientsReduceOnTheExpertDataGroup) {
  const Layout layout{.tp = 2, .pp = 4, .dp = 8, .ep = 8, .sequence_parallel = true, .zero_stage = 1};
  const Transformer t(testing::mixtral_8x7b(), training(4096, 1, 64), shard_spec(layout));
  const ComputeCostModel cost(testing::h100_node().gpu);
  const TrainingPrograms programs = build_training_programs(t, cost, layout);
  const StageProgram& stage = programs.stages[1];
  int64_t dense = 0, expert = 0;
  for (const ProgramOp& op : stage.chunks[0].backward.ops) {
    if (op.kind != ProgramOp::Kind::kGradientsReady) continue;
    (op.group == GroupKind::kExpertData ? expert : dense) += op.elements;
    EXPECT_TRUE(op.group == GroupKind::kExpertData || op.group == GroupKind::kData);
  }
  EXPECT_EQ(dense, programs.memory[1].parameters);
  EXPECT_EQ(expert, programs.memory[1].expert_parameters);
  // Distributed optimizer: dense parameters gathered over dp, expert parameters over expert-dp.
  EXPECT_EQ(stage.data_param_gather, Bytes::of(dense) * 2);
  EXPECT_EQ(stage.expert_param_gather, Bytes::of(expert) * 2);
  // Two all-to-alls per MoE layer forward (dispatch, combine) on the expert group.
  int a2a = 0;
  for (const ProgramOp& op : stage.chunks[0].forward.ops) {
    if (op.kind == ProgramOp::Kind::kCollective && op.op == CollectiveOp::kAllToAll) {
      EXPECT_EQ(op.group, GroupKind::kExpert);
      ++a2a;
    }
  }
  EXPECT_EQ(a2a, 2 * 8);
}

// The simulated time of the first "moe.dispatch" of a traced step.
double dispatch_seconds(const ModelSpec& model, const TrainingSpec& t, const Layout& layout, const Cluster& cluster) {
  TrainingSimulationOptions o;
  o.fidelity = Fidelity::kAnalytical;
  o.record_trace = true;
  const TrainingReport r = simulate_training(cluster, model, t, layout, o);
  for (const TraceSpan& span : r.step.trace) {
    if (span.name == "moe.dispatch") {
      EXPECT_EQ(span.stream, "ep");
      return (span.end - span.start).to_seconds();
    }
  }
  ADD_FAILURE() << "no moe.dispatch in the trace";
  return 0;
}

TEST(ExpertParallel, C4BusiestReceiverSetsTheDispatchTimeEndToEnd) {
  // docs/cases/collectives.md C4 through the step simulation: 8 GPUs on 8 nodes (one 400G NIC
  // each: network-bound), ep 8, one expert per GPU. Balanced, every GPU receives 7/8 of a rank's
  // tokens from its peers (112 of 128 units); with the histogram {192, 101 ×6, 98} (sum 896 = 7 · 128)
  // the busiest GPU receives 7 · 128 · 192/896 = 192. The dispatch time follows the busiest receiver:
  // (t − F) scales by 192/112 = 1.71, F the size-independent latency, from two balanced sizes:
  // t(b) = F + b·X ⇒ F = 2·t(4) − t(8).
  const Cluster cluster(testing::h100_cluster(8, 1));
  const ModelSpec m = small_moe();
  const Layout layout{.dp = 8, .ep = 8, .order = "tp-cp-ep-dp-pp"};
  const double t4 = dispatch_seconds(m, training(4096, 4, 32), layout, cluster);
  const double t8 = dispatch_seconds(m, training(4096, 8, 64), layout, cluster);
  const double fixed = 2 * t4 - t8;
  TrainingSpec skewed = training(4096, 8, 64);
  skewed.moe_routing.expert_load = {192, 101, 101, 101, 101, 101, 101, 98};
  const double ts = dispatch_seconds(m, skewed, layout, cluster);
  EXPECT_GT(fixed, 0);
  EXPECT_LT(fixed, 0.01 * t8);
  EXPECT_NEAR((ts - fixed) / (t8 - fixed), 192.0 / 112.0, 1e-4);
  // The same imbalance as a skew parameter: expert 0 takes 192/112 of the mean.
  TrainingSpec skew = training(4096, 8, 64);
  skew.moe_routing.skew = 192.0 / 112.0;
  EXPECT_NEAR((dispatch_seconds(m, skew, layout, cluster) - fixed) / (t8 - fixed), 192.0 / 112.0, 1e-4);
  // And the busiest rank's experts set the compute: the step is slower than balanced.
  TrainingSimulationOptions o;
  const double balanced_step = simulate_training(cluster, m, training(4096, 8, 64), layout, o).step_time_s;
  const double skewed_step = simulate_training(cluster, m, skewed, layout, o).step_time_s;
  EXPECT_GT(skewed_step, balanced_step);
}

// DeepEP's dispatch (moe_dispatcher deepep) on 4 nodes of 8 GPUs, ep 32, 64 experts top-8 in 8
// groups of which a token uses 4 (at most 4 nodes): a token crosses the network once per node it
// hits rather than once per expert copy, so the network-bound dispatch is faster than alltoall's;
// with fp8 GEMMs the dispatch moves 1 + 4/128 bytes per element, the combine 2.
TEST(ExpertParallel, DeepEpDispatchCrossesTheNetworkOncePerNode) {
  const Cluster cluster(testing::h100_cluster(4, 8));
  ModelSpec m = small_moe();
  m.moe.num_experts = 64;
  m.moe.top_k = 8;
  m.moe.moe_ffn_hidden = 1024;
  m.moe.router_num_groups = 8;
  m.moe.router_group_topk = 4;
  Layout alltoall{.dp = 32, .ep = 32, .order = "tp-cp-ep-dp-pp"};
  Layout deepep = alltoall;
  deepep.moe_dispatcher = MoeDispatcher::kDeepEp;
  const TrainingSpec t = training(4096, 1, 32);
  const double a = dispatch_seconds(m, t, alltoall, cluster);
  const double d = dispatch_seconds(m, t, deepep, cluster);
  EXPECT_LT(d, 0.8 * a);
  EXPECT_EQ(expert_ranks_per_node(deepep, cluster), 8);
  // The op bytes: the dispatch's row of the matrix, fp8 when the GEMMs are.
  ShardSpec shard = shard_spec(deepep);
  shard.ep_ranks_per_node = 8;
  TrainingSpec fp8 = t;
  fp8.compute_dtype = DataType::kFp8;
  const Transformer tr(m, fp8, shard);
  const auto& ops = tr.layer(LayerKind::kMoe).forward;
  int64_t dispatch = 0, combine = 0;
  for (const Op& op : ops) {
    if (op.name == "moe.dispatch") dispatch = op.comm_bytes.count();
    if (op.name == "moe.combine") combine = op.comm_bytes.count();
  }
  ASSERT_GT(dispatch, 0);
  EXPECT_NEAR(static_cast<double>(dispatch) / static_cast<double>(combine), (1 + 4.0 / 128) / 2, 1e-6);
  // Megatron's flex dispatcher permutes once (moe.permute) and sorts no chunks; its alltoall
  // dispatcher sorts the received chunks by local expert (2 experts per rank here).
  auto has_op = [](const std::vector<Op>& list, const std::string& name) {
    return std::any_of(list.begin(), list.end(), [&](const Op& op) { return op.name == name; });
  };
  EXPECT_TRUE(has_op(ops, "moe.permute"));
  EXPECT_FALSE(has_op(ops, "moe.sort_chunks"));
  EXPECT_TRUE(has_op(Transformer(m, fp8, shard_spec(alltoall)).layer(LayerKind::kMoe).forward, "moe.sort_chunks"));
  // An expert-parallel group that does not lie node by node (12 ranks over nodes of 8: 8 + 4) is
  // refused with the reason.
  const Cluster three(testing::h100_cluster(3, 8));
  ModelSpec m48 = m;
  m48.moe.num_experts = 48;
  Layout uneven = deepep;
  uneven.dp = 24;
  uneven.ep = 12;
  EXPECT_EQ(expert_ranks_per_node(uneven, three), 0);
  try {
    simulate_training(three, m48, training(4096, 1, 24), uneven, {});
    ADD_FAILURE() << "an uneven deepep group was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("node by node"), std::string::npos) << e.what();
  }
  // Skewed routing is not modelled for deepep: refused, not priced as balanced.
  TrainingSpec skewed = t;
  skewed.moe_routing.skew = 1.5;
  EXPECT_THROW(simulate_training(cluster, m, skewed, deepep, {}), InputError);
}

TEST(ExpertParallel, L7TensorOneExpertEightDataEight) {
  // docs/cases/layouts.md L7: tp = 1 with ep = 8 and dp = 8 on one 8-GPU node simulates to the
  // end with finite, deterministic times and non-zero collective times (flow fidelity).
  const Cluster cluster(testing::h100_cluster(1));
  const Layout layout{.dp = 8, .ep = 8, .zero_stage = 1, .order = "tp-cp-ep-dp-pp"};
  TrainingSimulationOptions o;
  o.fidelity = Fidelity::kFlow;
  o.record_trace = true;
  const TrainingReport a = simulate_training(cluster, small_moe(), training(4096, 1, 16), layout, o);
  const TrainingReport b = simulate_training(cluster, small_moe(), training(4096, 1, 16), layout, o);
  EXPECT_TRUE(std::isfinite(a.step_time_s));
  EXPECT_GT(a.step_time_s, 0);
  EXPECT_EQ(a.step.fingerprint, b.step.fingerprint);
  EXPECT_EQ(a.step.step_time, b.step.step_time);
  int ep_spans = 0;
  for (const TraceSpan& span : a.step.trace) {
    if (span.stream != "ep") continue;
    ++ep_spans;
    EXPECT_GT(span.end - span.start, Duration::zero()) << span.name;
  }
  EXPECT_EQ(ep_spans, 2 * 2 * 2 * 2);  // 2 layers × (dispatch, combine) × (forward, backward) × 2 microbatches
  EXPECT_GT(a.breakdown.exposed_comm, Duration::zero());
}

TEST(ExpertParallel, L3ExpertsAndEpAndOtherExpertRules) {
  // 256 experts with ep 3 → rejected, naming the valid ep.
  LayoutContext c;
  c.layers = 4;
  c.heads = 32;
  c.kv_heads = 8;
  c.experts = 256;
  c.moe_ffn_hidden = 2048;
  c.gpus = 3;
  c.global_batch = 3;
  c.micro_batch = 1;
  c.seq_len = 4096;
  try {
    validate_layout(Layout{.dp = 3, .ep = 3}, c);
    FAIL();
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("256 experts"), std::string::npos) << what;
    EXPECT_NE(what.find("1, 2, 4, 8, 16, 32, 64, 128, 256"), std::string::npos) << what;
  }
  c.gpus = 8;
  c.global_batch = 8;
  EXPECT_NO_THROW(validate_layout(Layout{.dp = 8, .ep = 8}, c));
  // ep · etp must divide tp · cp · dp; etp must divide the expert size.
  EXPECT_THROW(validate_layout(Layout{.dp = 8, .ep = 8, .etp = 2}, c), InputError);
  c.moe_ffn_hidden = 2049;
  EXPECT_THROW(validate_layout(Layout{.dp = 8, .ep = 4, .etp = 2}, c), InputError);
  c.moe_ffn_hidden = 2048;
  // Tensor parallelism with experts needs sequence parallelism (Megatron-Core).
  c.global_batch = 4;
  EXPECT_THROW(validate_layout(Layout{.tp = 2, .dp = 4, .ep = 8}, c), InputError);
  EXPECT_NO_THROW(validate_layout(Layout{.tp = 2, .dp = 4, .ep = 8, .sequence_parallel = true}, c));
  // "ep" must sit next to "dp" in the order.
  EXPECT_THROW(validate_layout(Layout{.dp = 8, .ep = 8, .order = "ep-tp-cp-dp-pp"}, c), InputError);
}

TEST(ExpertParallel, OrderPlacesExpertGroupsInsideOrAcrossDataGroups) {
  // tp 1, dp 8, ep 4 → expert-dp 2. "ep-dp": expert ranks consecutive; "dp-ep": expert-dp inside.
  RankGrid inside(Layout{.dp = 8, .ep = 4, .order = "tp-cp-ep-dp-pp"});
  EXPECT_EQ(inside.group_of(GroupKind::kExpert, 0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(inside.group_of(GroupKind::kExpertData, 0), (std::vector<int>{0, 4}));
  RankGrid across(Layout{.dp = 8, .ep = 4, .order = "tp-cp-dp-ep-pp"});
  EXPECT_EQ(across.group_of(GroupKind::kExpert, 0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(across.group_of(GroupKind::kExpertData, 0), (std::vector<int>{0, 1}));
}

TEST(ContextParallel, GradientsAndOptimizerSpanDataAndContextRanks) {
  // Megatron reduces gradients and shards the distributed optimizer over dp · cp ranks.
  RankGrid grid(Layout{.tp = 2, .pp = 1, .dp = 2, .cp = 2});
  EXPECT_EQ(grid.group_of(GroupKind::kDataContext, 0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(grid.group_of(GroupKind::kDataContext, 3), (std::vector<int>{1, 3, 5, 7}));
  const Layout layout{.tp = 2, .pp = 1, .dp = 2, .cp = 2, .sequence_parallel = true, .zero_stage = 1};
  const Transformer t(testing::llama3_8b(), training(8192, 1, 8), shard_spec(layout));
  const TrainingPrograms programs = build_training_programs(t, ComputeCostModel(testing::h100_node().gpu), layout);
  EXPECT_EQ(programs.stages[0].data_group, GroupKind::kDataContext);
  for (const ProgramOp& op : programs.stages[0].chunks[0].backward.ops) {
    if (op.kind == ProgramOp::Kind::kGradientsReady) {
      EXPECT_EQ(op.group, GroupKind::kDataContext);
    }
  }
  // The optimizer state is sharded over dp · cp = 4 (memory model).
  const MemoryBreakdown& m = programs.memory[0].memory;
  EXPECT_EQ(m.optimizer_state, Bytes::of(programs.memory[0].parameters * 12).divided_ceil(4));
}

TEST(ContextParallel, E2RingStepsOverlapTheExchangeWithAttention) {
  // cp = 4: each layer's attention runs as 4 steps; 3 asynchronous K/V exchanges on the context group
  // of 2 · (s/cp) · kv_heads · head_dim · 2 bytes (Llama-3-8B: 8 KV heads), each waited for after the
  // step computed meanwhile.
  const int cp = 4;
  const int64_t s = 32768;
  const Layout layout{.pp = 1, .dp = 1, .cp = cp, .order = "tp-cp-dp-pp"};
  const Transformer t(testing::llama3_8b(), training(s, 1, 1), shard_spec(layout));
  const ComputeCostModel cost(testing::h100_node().gpu);
  ProgramOptions options;
  options.merge_compute = false;
  const TrainingPrograms programs = build_training_programs(t, cost, layout, options);
  const std::vector<ProgramOp>& fwd = programs.stages[0].chunks[0].forward.ops;
  int exchanges = 0, waits = 0, steps = 0;
  for (size_t i = 0; i < fwd.size(); ++i) {
    const ProgramOp& op = fwd[i];
    if (op.kind == ProgramOp::Kind::kCollective && op.group == GroupKind::kContext) {
      ++exchanges;
      EXPECT_GE(op.handle, 0);  // asynchronous
      EXPECT_EQ(op.size, Bytes::of(2 * (s / cp) * 8 * 128 * 2));
      ASSERT_TRUE(op.all_to_all_bytes);
      // Each rank sends its block to the next rank of the ring.
      for (int r = 0; r < cp; ++r) {
        EXPECT_EQ((*op.all_to_all_bytes)[static_cast<size_t>(r * cp + (r + 1) % cp)], op.size.count());
      }
      ASSERT_LT(i + 2, fwd.size());
      EXPECT_EQ(fwd[i + 1].label, "flash_attention");  // computed while the exchange runs
      EXPECT_EQ(fwd[i + 2].kind, ProgramOp::Kind::kWait);
    }
    waits += op.kind == ProgramOp::Kind::kWait;
    steps += op.kind == ProgramOp::Kind::kCompute && op.label == "flash_attention";
  }
  EXPECT_EQ(exchanges, 32 * (cp - 1));
  EXPECT_EQ(waits, 32 * (cp - 1));
  EXPECT_EQ(steps, 32 * cp);
  // In the simulated step every exchange starts with an attention step on the same rank.
  const Cluster cluster(testing::h100_cluster(1, cp));
  TrainingSimulationOptions o;
  o.record_trace = true;
  const TrainingReport r = simulate_training(cluster, testing::llama3_8b(), training(s, 1, 1), layout, o);
  std::set<int64_t> attention_starts;
  for (const TraceSpan& span : r.step.trace) {
    if (span.stream == "compute" && span.name == "flash_attention") attention_starts.insert(span.start.ps());
  }
  int overlapped = 0;
  for (const TraceSpan& span : r.step.trace) {
    if (span.stream != "cp" || span.name != "attention.cp_kv_exchange") continue;
    EXPECT_EQ(attention_starts.count(span.start.ps()), 1U);
    ++overlapped;
  }
  EXPECT_EQ(overlapped, 32 * (cp - 1));
}

TEST(LayoutSearch, SpaceCoversExpertAndContextSizes) {
  SearchSpace space;
  space.tp = {1, 2};
  space.pp = {1};
  space.cp = {1, 2};
  space.ep = {1, 2, 4, 8};
  space.sequence_parallel = {true, false};
  Layout base;
  base.order = "tp-cp-ep-dp-pp";
  SearchContext context{.gpus = 16, .gpus_per_node = 8, .layers = 2, .heads = 32};
  const std::vector<LayoutCandidate> candidates = expand_search_space(space, base, training(4096, 1, 64), context);
  std::set<std::tuple<int, int, int>> seen;
  for (const auto& c : candidates) {
    EXPECT_EQ(c.layout.world_size(), 16);
    seen.insert({c.layout.tp, c.layout.cp, c.layout.ep});
  }
  EXPECT_EQ(seen.size(), 2U * 2U * 4U);
  // A search on 16 GPUs finds MoE layouts and rejects the ones the expert rules forbid.
  const Cluster cluster(testing::h100_cluster(2));
  SearchProblem problem;
  problem.cluster = &cluster;
  problem.model = small_moe();
  problem.training = training(4096, 1, 64);
  problem.base = base;
  problem.space = space;
  const SearchResult result = search_layouts(problem, SearchOptions{.threads = 1});
  ASSERT_FALSE(result.ranking.empty());
  bool rejected_by_rule = false;
  for (const auto& r : result.rejected) rejected_by_rule |= r.reason == RejectReason::kLayoutRule;
  EXPECT_TRUE(rejected_by_rule);  // tp 2 without sequence parallelism
  std::set<int> ranked_ep;
  for (const RankedLayout& r : result.ranking) ranked_ep.insert(result.candidates[r.index].layout.ep);
  EXPECT_GT(ranked_ep.size(), 1U);
}

}  // namespace moe_cp_test
}  // namespace clustersim
