// Mixture-of-experts layers: parameter counts of the published models, the ops of one MoE layer
// per rank (router, permutation, dispatch, grouped expert GEMMs), routing imbalance, capacity and
// the memory effect of expert parallelism (docs/cases/moe_cp.md E1).

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/error.h"
#include "workloads/host_costs.h"
#include "workloads/model_flops.h"
#include "workloads/parameter_count.h"
#include "workloads/test_models.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace moe_test {

const Op& find(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  throw std::runtime_error("no op " + std::string(name));
}

bool has(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return true;
  }
  return false;
}

Bytes saved_by(const std::vector<Op>& ops, std::string_view prefix) {
  Bytes total;
  for (const Op& op : ops) {
    if (op.name.starts_with(prefix)) total += op.saved;
  }
  return total;
}

TEST(MoeParameters, Mixtral8x7bTotalAndActive) {
  // Per layer: attention h·(32 + 2·8)·128 + 32·128·h, two RMSNorms 2h, router 8h, eight SwiGLU experts
  // 3·h·14336; embedding and LM head 2·V·h, final norm h. Published: 46.7 B total, 12.9 B active
  // (Mistral AI, "Mixtral of experts", 2023; Jiang et al. 2024 §2).
  const int64_t h = 4096, v = 32000, layers = 32, f = 14336;
  const int64_t attention = h * (32 + 2 * 8) * 128 + 32 * 128 * h;
  const int64_t expert = 3 * h * f;
  const int64_t total = layers * (attention + 2 * h + 8 * h + 8 * expert) + 2 * v * h + h;
  const ModelSpec m = testing::mixtral_8x7b();
  const ParameterCounts c = count_parameters(m);
  EXPECT_EQ(c.total(), total);
  EXPECT_EQ(c.moe_layers, layers);
  EXPECT_EQ(c.expert_total(), layers * 8 * expert);
  const int64_t active = count_active_parameters(m);
  EXPECT_EQ(active, total - layers * 6 * expert);
  // Within the published figures' rounding (3 significant digits) and within 1 %.
  EXPECT_NEAR(static_cast<double>(total) / 1e9, 46.7, 0.05);
  EXPECT_NEAR(static_cast<double>(active) / 1e9, 12.9, 0.05);
  EXPECT_NEAR(static_cast<double>(total) / 46.7e9, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(active) / 12.9e9, 1.0, 0.01);
}

TEST(MoeParameters, DeepSeekV3TotalAndActivated) {
  // MLA per layer: q_down h·1536, q_up 1536·128·(128 + 64), kv_down h·(512 + 64), kv_up 512·128·(128 +
  // 128), proj 128·128·h, latent norms 1536 + 512, layer norms 2h. MLP: 3 dense layers of 3·h·18432;
  // 58 MoE layers with router 256·h and 1 shared + 256 routed SwiGLU experts of 3·h·2048.
  // Published (arXiv:2412.19437 §1): 671 B total, 37 B activated per token.
  const int64_t h = 7168, v = 129280;
  const int64_t attention = h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h + 2048 + 2 * h;
  const int64_t expert = 3 * h * 2048;
  const int64_t dense_layer = attention + 3 * h * 18432;
  const int64_t moe_layer = attention + 256 * h + expert + 256 * expert;
  const int64_t total = 3 * dense_layer + 58 * moe_layer + 2 * v * h + h;
  const ModelSpec m = testing::deepseek_v3();
  const ParameterCounts c = count_parameters(m);
  EXPECT_EQ(c.layer.total(), dense_layer);
  EXPECT_EQ(c.moe_layer.total(), moe_layer);
  EXPECT_EQ(c.total(), total);
  EXPECT_NEAR(static_cast<double>(total) / 1e9, 671, 0.5);  // the published figure's rounding
  EXPECT_NEAR(static_cast<double>(total) / 671e9, 1.0, 0.01);
  // Activated: the 8 chosen of 256 routed experts. DeepSeek's figure leaves out the input embedding
  // (DeepSeek-V2 and V3 both round only that way; see count_active_parameters).
  const int64_t activated = count_active_parameters(m, false);
  EXPECT_EQ(activated, total - v * h - 58 * 248 * expert);
  EXPECT_NEAR(static_cast<double>(activated) / 1e9, 37, 0.5);  // 36.63 B: "37 B" to 2 significant digits
  EXPECT_EQ(count_active_parameters(m, true) - activated, v * h);
}

TEST(MoeParameters, ExpertShardingByEpAndEtpAndStageSplit) {
  // docs/cases/moe_cp.md E1: a middle stage of Mixtral-8x7B at tp 2, ep 8, etp 1 (8 layers)
  // holds ≈ 168.1 M dense parameters (attention / tp, router and norms whole) and ≈ 1,409.3 M expert
  // parameters (one expert per layer).
  const int64_t h = 4096;
  const ParameterCounts c =
      count_parameters(testing::mixtral_8x7b(), ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 8});
  const StageParameters stage = c.stage(0, 8, false, false, true);
  EXPECT_EQ(stage.dense, 8 * ((h * 48 * 128 + 32 * 128 * h) / 2 + 8 * h + 2 * h));
  EXPECT_EQ(stage.expert, 8 * 3 * h * 14336);
  EXPECT_NEAR(static_cast<double>(stage.dense) / 1e6, 168.1, 0.1);
  EXPECT_NEAR(static_cast<double>(stage.expert) / 1e6, 1409.3, 0.1);
  // etp 2 halves each expert instead: ep 4 × etp 2 holds 2 experts of half the size.
  const ParameterCounts e = count_parameters(testing::mixtral_8x7b(),
                                             ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 4, .etp = 2});
  EXPECT_EQ(e.moe_layer.expert(), 2 * 3 * h * (14336 / 2));
}

TrainingSpec training(int64_t seq_len, int64_t micro_batch = 1) {
  TrainingSpec t = testing::training(seq_len, micro_batch, Recompute::kNone, AttentionKernel::kFlash);
  t.hidden_dropout = 0;
  t.attention_dropout = 0;
  return t;
}

TEST(MoeLayer, RouterPermutationDispatchAndGroupedGemms) {
  // Mixtral at tp 2 (sequence parallel), ep 8: each rank routes T/tp = 2048 of 4096 tokens; each
  // sends 2048 × top-2 × h × 2 bytes; its one local expert processes 2048 · 2 · 8 / 8 tokens.
  const int64_t s = 4096, h = 4096, routed = s / 2, k = 2;
  const Transformer t(testing::mixtral_8x7b(), training(s),
                      ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 8});
  const std::vector<Op>& f = t.layer(LayerKind::kMoe).forward;
  const Op& router = find(f, "router");
  EXPECT_EQ(router.gemm.m, routed);
  EXPECT_EQ(router.gemm.n, 8);
  EXPECT_EQ(router.gemm.k, h);
  EXPECT_TRUE(has(f, "router.topk"));
  EXPECT_TRUE(has(f, "router.aux_loss"));  // Mixtral: auxiliary load-balancing loss
  const Op& permute = find(f, "moe.permute");
  EXPECT_EQ(permute.bytes_written.count(), routed * k * h * 2);
  const Op& dispatch = find(f, "moe.dispatch");
  EXPECT_EQ(dispatch.comm, CommKind::kEpAllToAll);
  EXPECT_EQ(dispatch.comm_bytes.count(), routed * k * h * 2);
  EXPECT_TRUE(dispatch.comm_matrix.empty());  // balanced: an even split
  EXPECT_EQ(find(f, "moe.combine").comm_bytes, dispatch.comm_bytes);
  EXPECT_FALSE(has(f, "moe.sort_chunks"));  // one local expert: nothing to sort
  const Op& fc1 = find(f, "experts.fc1");
  EXPECT_EQ(fc1.gemm.batch, 1);
  EXPECT_EQ(fc1.gemm.m, routed * k);
  EXPECT_EQ(fc1.gemm.n, 2 * 14336);
  EXPECT_EQ(fc1.gemm.k, h);
  EXPECT_EQ(find(f, "experts.fc2").gemm.k, 14336);
  EXPECT_EQ(t.expert_tokens(), routed * k);
  // No tensor-parallel collective around the routed experts (tokens stay sequence-sharded); the
  // attention's two remain.
  int tp_collectives = 0;
  for (const Op& op : f) tp_collectives += op.comm == CommKind::kTpAllGather || op.comm == CommKind::kTpReduceScatter;
  EXPECT_EQ(tp_collectives, 2);
  // Backward: the two all-to-alls again, and data and weight gradients of every expert GEMM.
  const std::vector<Op>& b = t.layer(LayerKind::kMoe).backward;
  for (std::string_view name : {"moe.combine.backward", "moe.dispatch.backward", "experts.fc1.dgrad",
                                "experts.fc1.wgrad", "experts.fc2.dgrad", "experts.fc2.wgrad", "router.dgrad",
                                "router.wgrad"}) {
    EXPECT_TRUE(has(b, name)) << name;
  }
  // Two local experts at ep 4: grouped GEMM over 2 experts of 2048 · 2 · 4 / 8 tokens each.
  const Transformer t4(testing::mixtral_8x7b(), training(s), ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 4});
  const Op& grouped = find(t4.layer(LayerKind::kMoe).forward, "experts.fc1");
  EXPECT_EQ(grouped.gemm.batch, 2);
  EXPECT_EQ(grouped.gemm.m, routed * k * 4 / 8);
  EXPECT_TRUE(has(t4.layer(LayerKind::kMoe).forward, "moe.sort_chunks"));
  EXPECT_DOUBLE_EQ(grouped.flops, fc1.flops);  // the same expert work per rank
}

TEST(MoeLayer, E1RoutedExpertActivationsScaleWithTopKTokensAndFfnOverTp) {
  // docs/cases/moe_cp.md E1: routed-expert activations ∝ top_k · s · b · moe_ffn / tp; expert
  // parallelism moves tokens between ranks but does not reduce them.
  const ModelSpec m = testing::mixtral_8x7b();
  const int64_t s = 4096;
  auto experts_saved = [&](ShardSpec shard, int64_t b = 1) {
    const Transformer t(m, training(s, b), shard);
    return saved_by(t.layer(LayerKind::kMoe).forward, "experts.").count();
  };
  const int64_t tp2_ep8 = experts_saved(ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 8});
  // fc1 input h, SwiGLU input 2·ffn, fc2 input ffn per routed token copy; T/tp · top_k copies.
  EXPECT_EQ(tp2_ep8, s / 2 * 2 * (4096 + 2 * 14336 + 14336) * 2);
  EXPECT_EQ(experts_saved(ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 1}), tp2_ep8);
  EXPECT_EQ(experts_saved(ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 2}), tp2_ep8);
  EXPECT_EQ(experts_saved(ShardSpec{.tp = 4, .sequence_parallel = true, .ep = 8}), tp2_ep8 / 2);
  EXPECT_EQ(experts_saved(ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 8}, 2), 2 * tp2_ep8);
  // etp splits each expert's ffn but gathers etp× the tokens: the same product.
  const Transformer etp(m, training(s), ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 4, .etp = 2});
  EXPECT_EQ(find(etp.layer(LayerKind::kMoe).forward, "experts.fc2").saved.count(), s / 2 * 2 * 14336 * 2);
  EXPECT_EQ(find(etp.layer(LayerKind::kMoe).forward, "moe.etp_all_gather").comm, CommKind::kEtpAllGather);
}

TEST(MoeLayer, RoutingSkewLoadsTheBusiestRankAndItsReceiverColumn) {
  // 8 experts on ep 8 (one per rank), skew 1.5: expert 0 takes 1.5/8 of the slots, its rank's
  // experts process 1.5× the balanced tokens, and column 0 of the dispatch matrix carries 1.5× the
  // balanced block from every sender.
  const int64_t s = 4096, h = 4096, routed = s / 2, k = 2;
  TrainingSpec t = training(s);
  t.moe_routing.skew = 1.5;
  const Transformer skewed(testing::mixtral_8x7b(), t, ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 8});
  EXPECT_NEAR(skewed.expert_rank_shares()[0], 1.5 / 8, 1e-12);
  EXPECT_NEAR(std::accumulate(skewed.expert_rank_shares().begin(), skewed.expert_rank_shares().end(), 0.0), 1.0,
              1e-12);
  EXPECT_EQ(skewed.expert_tokens(), routed * k * 3 / 2);
  EXPECT_EQ(find(skewed.layer(LayerKind::kMoe).forward, "experts.fc1").gemm.m, routed * k * 3 / 2);
  const Op& dispatch = find(skewed.layer(LayerKind::kMoe).forward, "moe.dispatch");
  ASSERT_EQ(dispatch.comm_matrix.size(), 64U);
  const int64_t block = routed * k * h * 2 / 8;
  for (int src = 0; src < 8; ++src) {
    EXPECT_EQ(dispatch.comm_matrix[static_cast<size_t>(src) * 8], block * 3 / 2);
    int64_t row = 0;
    for (int dst = 0; dst < 8; ++dst) row += dispatch.comm_matrix[static_cast<size_t>(src * 8 + dst)];
    EXPECT_NEAR(static_cast<double>(row), static_cast<double>(dispatch.comm_bytes.count()), 8.0);
  }
  // The combine sends the same blocks back: the transpose.
  const Op& combine = find(skewed.layer(LayerKind::kMoe).forward, "moe.combine");
  EXPECT_EQ(combine.comm_matrix[1], dispatch.comm_matrix[8]);
  // A histogram of 8 experts with the busiest at 192 of a mean 112 (cases/collectives.md C4).
  t.moe_routing.skew = 1.0;
  t.moe_routing.expert_load = {192, 101, 101, 101, 101, 101, 101, 98};
  const Transformer histogram(testing::mixtral_8x7b(), t, ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 8});
  EXPECT_NEAR(histogram.expert_rank_shares()[0], 192.0 / 896, 1e-12);
  // Two experts per rank at ep 4: rank 0 holds experts 0 and 1.
  const Transformer ep4(testing::mixtral_8x7b(), t, ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 4});
  EXPECT_NEAR(ep4.expert_rank_shares()[0], (192.0 + 101) / 896, 1e-12);
}

TEST(MoeLayer, CapacityFactorDropsTokensAboveTheCap) {
  // Capacity 1.0: no expert takes more than its balanced share; with skew 2 the busiest expert drops
  // half of its tokens and the rank processes the balanced count.
  const int64_t s = 4096, routed = s / 2, k = 2;
  TrainingSpec t = training(s);
  t.moe_routing.skew = 2.0;
  t.moe_routing.capacity_factor = 1.0;
  const Transformer capped(testing::mixtral_8x7b(), t, ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 8});
  EXPECT_EQ(capped.expert_tokens(), routed * k);
  const double kept = 1.0 / 8 + 7 * (1.0 - 2.0 / 8) / 7;
  EXPECT_EQ(find(capped.layer(LayerKind::kMoe).forward, "moe.permute").bytes_written.count(),
            static_cast<int64_t>(std::ceil(routed * k * kept)) * 4096 * 2);
}

TEST(MoeLayer, RoutingInputsAreValidated) {
  TrainingSpec t = training(4096);
  t.moe_routing.skew = 5;  // above num_experts / top_k = 4
  EXPECT_THROW(t.validate(testing::mixtral_8x7b()), InputError);
  t.moe_routing.skew = 0.5;
  EXPECT_THROW(t.validate(testing::mixtral_8x7b()), InputError);
  t.moe_routing.skew = 1;
  t.moe_routing.expert_load = {1, 2, 3};  // 3 entries for 8 experts
  try {
    t.validate(testing::mixtral_8x7b());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.moe_routing.expert_load"), std::string::npos) << e.what();
  }
  t.moe_routing.expert_load = {100, 0, 0, 0, 0, 0, 0, 0};  // all slots on one expert: above 1/top_k
  EXPECT_THROW(t.validate(testing::mixtral_8x7b()), InputError);
  t.moe_routing.expert_load.clear();
  t.moe_routing.skew = 2;
  EXPECT_THROW(t.validate(testing::llama2_7b()), InputError);  // routing for a dense model
  // Expert sharding rules: 8 experts on ep 3; tp 2 without sequence parallelism; etp not dividing ffn.
  EXPECT_THROW(Transformer(testing::mixtral_8x7b(), training(4096), ShardSpec{.tp = 1, .ep = 3}), InputError);
  EXPECT_THROW(Transformer(testing::mixtral_8x7b(), training(4096), ShardSpec{.tp = 2, .ep = 8}), InputError);
  EXPECT_THROW(Transformer(testing::mixtral_8x7b(), training(4096), ShardSpec{.ep = 1, .etp = 3}), InputError);
  EXPECT_THROW(Transformer(testing::llama2_7b(), training(4096), ShardSpec{.ep = 2}), InputError);
}

TEST(MoeLayer, AuxLossFreeBalancingChangesOnlyTheRouter) {
  ModelSpec aux = testing::mixtral_8x7b();
  ModelSpec free = aux;
  free.moe.balancing = MoeBalancing::kAuxLossFree;
  const ShardSpec shard{.tp = 2, .sequence_parallel = true, .ep = 8};
  const Transformer a(aux, training(4096), shard);
  const Transformer b(free, training(4096), shard);
  auto non_router = [](const std::vector<Op>& ops) {
    std::vector<std::string_view> names;
    for (const Op& op : ops) {
      if (!op.name.starts_with("router")) names.push_back(op.name);
    }
    return names;
  };
  EXPECT_EQ(non_router(a.layer(LayerKind::kMoe).forward), non_router(b.layer(LayerKind::kMoe).forward));
  EXPECT_TRUE(has(a.layer(LayerKind::kMoe).forward, "router.aux_loss"));
  EXPECT_FALSE(has(b.layer(LayerKind::kMoe).forward, "router.aux_loss"));
  EXPECT_TRUE(has(b.layer(LayerKind::kMoe).forward, "router.expert_bias"));
  EXPECT_EQ(a.layer(LayerKind::kMoe).activation_bytes, b.layer(LayerKind::kMoe).activation_bytes);
}

TEST(MoeLayer, AllGatherDispatcherGathersTheGroupsTokens) {
  // Megatron's allgather dispatcher: all-gather [ep · T_r, h] on the expert-parallel group, reduce-
  // scatter the outputs; the experts process the same tokens as with all-to-all.
  const int64_t s = 4096, routed = s / 2;
  const Transformer t(testing::mixtral_8x7b(), training(s),
                      ShardSpec{.tp = 2, .sequence_parallel = true, .ep = 8, .dispatcher = MoeDispatcher::kAllGather});
  const std::vector<Op>& f = t.layer(LayerKind::kMoe).forward;
  EXPECT_FALSE(has(f, "moe.dispatch"));
  EXPECT_EQ(find(f, "moe.dispatch_all_gather").comm_bytes.count(), 8 * routed * 4096 * 2);
  EXPECT_EQ(find(f, "moe.combine_reduce_scatter").comm, CommKind::kEpReduceScatter);
  EXPECT_EQ(find(f, "experts.fc1").gemm.m, routed * 2);
}

TEST(MoeLayer, DeepSeekV3LatentAttentionSharedExpertAndDenseLayers) {
  const int64_t s = 4096, tp = 2;
  const Transformer t(testing::deepseek_v3(), training(s),
                      ShardSpec{.tp = tp, .sequence_parallel = true, .ep = 8});
  EXPECT_EQ(t.layer_kind(2), LayerKind::kDense);
  EXPECT_EQ(t.layer_kind(3), LayerKind::kMoe);
  const std::vector<Op>& f = t.layer(LayerKind::kMoe).forward;
  // MLA: replicated down-projections on all T tokens, column-parallel up-projections.
  EXPECT_EQ(find(f, "q_down").gemm.n, 1536);
  EXPECT_EQ(find(f, "q_up").gemm.n, 128 / tp * (128 + 64));
  EXPECT_EQ(find(f, "kv_down").gemm.n, 512 + 64);
  EXPECT_EQ(find(f, "kv_up").gemm.n, 128 / tp * (128 + 128));
  EXPECT_EQ(find(f, "proj").gemm.k, 128 / tp * 128);
  EXPECT_FALSE(has(f, "qkv"));
  // Attention core over query/key heads of 192 and value heads of 128.
  EXPECT_DOUBLE_EQ(find(f, "flash_attention").flops, 2.0 * s * s * (128 / tp) * (192 + 128));
  // One shared expert of 2048 beside the routed ones, tensor-parallel like a dense MLP.
  EXPECT_EQ(find(f, "shared.fc1").gemm.n, 2 * 2048 / tp);
  EXPECT_TRUE(has(f, "router.expert_bias"));  // auxiliary-loss-free balancing
  EXPECT_EQ(find(f, "experts.fc1").gemm.batch, 256 / 8);
  // The dense layers have fc1 of 18432 / tp.
  EXPECT_EQ(find(t.layer(LayerKind::kDense).forward, "fc1").gemm.n, 2 * 18432 / tp);
}

TEST(MoeLayer, ModelFlopsCountTheTopKExperts) {
  // Model FLOPs per token of a Mixtral MoE MLP: forward 2 · top_k · 3 · h · ffn (+ the router 2·h·E),
  // backward twice that; per step × global_batch · s tokens.
  const ModelSpec m = testing::mixtral_8x7b();
  TrainingSpec t = training(4096);
  t.global_batch = 8;
  const StepFlops flops = step_flops(m, t);
  ModelSpec dense = m;  // the same model with a dense MLP of top_k · ffn: identical GEMM FLOPs per token
  dense.moe = MoeSpec{};
  dense.ffn_hidden = 2 * 14336;
  const StepFlops reference = step_flops(dense, t);
  const double router = 3.0 * 2 * 4096 * 8 * 4096 * 8 * 32;  // 3 × 2·T·h·E per layer, 8 sequences, 32 layers
  EXPECT_NEAR(flops.model, reference.model + router, reference.model * 1e-12);
  // Skew does not change model FLOPs.
  t.moe_routing.skew = 2;
  EXPECT_DOUBLE_EQ(step_flops(m, t).model, flops.model);
}

// training.moe_experts sequential (Megatron-Core's SequentialMLP, workloads/host_costs.h): Mixtral
// at ep 1 runs its 8 experts one after the other, 3 kernels each forward and 6 backward (the
// measured 3.00 / 5.95 per expert of tools/data/h200-2026-12-01-moe/README.md, "Per expert"), with
// the grouped path's FLOPs; each expert's kernels cost its measured host time per call and pass,
// the router and dispatcher's kernels the measured host time of that part of the layer, the
// received tokens are sorted into the experts' chunks at ep 1 too, and the compiled SwiGLU's
// kernels take their measured memory paths.
TEST(MoeLayer, SequentialExpertsRunEachExpertAsAMeasuredCall) {
  const int64_t s = 4096, k = 2, experts = 8;
  TrainingSpec t = training(s);
  const Transformer grouped(testing::mixtral_8x7b(), t);
  t.moe_experts = MoeExperts::kSequential;
  const Transformer sequential(testing::mixtral_8x7b(), t);
  const LayerOps& g = grouped.layer(LayerKind::kMoe);
  const LayerOps& q = sequential.layer(LayerKind::kMoe);
  const HostCosts costs = host_costs(t);
  auto expert_ops = [](const std::vector<Op>& ops, std::string_view prefix) {
    std::vector<const Op*> out;
    for (const Op& op : ops) {
      if (op.name.starts_with(prefix)) out.push_back(&op);
    }
    return out;
  };
  const std::vector<const Op*> fwd = expert_ops(q.forward, "experts.");
  const std::vector<const Op*> bwd = expert_ops(q.backward, "experts.");
  ASSERT_EQ(fwd.size(), static_cast<size_t>(3 * experts));
  ASSERT_EQ(bwd.size(), static_cast<size_t>(6 * experts));
  double flops = 0, grouped_flops = 0;
  Duration forward_host, backward_host;
  for (const Op* op : fwd) {
    EXPECT_EQ(op->host_path, HostPath::kLocalExpert);
    if (op->cost == OpCost::kGemm) {
      EXPECT_EQ(op->gemm.m, s * k / experts) << op->name;
    }
    flops += op->flops;
    forward_host += host_cost(*op, costs);
  }
  for (const Op* op : bwd) {
    flops += op->flops;
    backward_host += host_cost(*op, costs);
  }
  for (const std::vector<const Op*>& ops : {expert_ops(g.forward, "experts."), expert_ops(g.backward, "experts.")}) {
    for (const Op* op : ops) grouped_flops += op->flops;
  }
  EXPECT_NEAR(flops, grouped_flops, grouped_flops * 1e-12);
  // The compiled weighted SwiGLU's Triton kernels run on their own measured paths, the grouped
  // path's activation at the copy rate.
  EXPECT_EQ(find(q.forward, "experts.activation").access, MemoryAccess::kCompiledGlu);
  EXPECT_EQ(find(q.backward, "experts.activation.backward").access, MemoryAccess::kCompiledGluBackward);
  EXPECT_EQ(find(q.backward, "experts.activation.probs_grad").access, MemoryAccess::kCompiledGluBackward);
  EXPECT_EQ(find(g.forward, "experts.activation").access, MemoryAccess::kStream);
  EXPECT_EQ(parse_memory_access("compiled_glu_backward"), MemoryAccess::kCompiledGluBackward);
  // Shares of a call sum to the call (each rounded to a picosecond).
  auto picoseconds = [](Duration d) { return static_cast<double>(d.ps()); };
  EXPECT_NEAR(picoseconds(forward_host), picoseconds(costs.local_expert_forward * experts), 3.0 * experts);
  EXPECT_NEAR(picoseconds(backward_host), picoseconds(costs.local_expert_backward * experts), 6.0 * experts);
  // The router and dispatcher: every other kernel of the MoE part, one measured part per pass.
  Duration dispatcher;
  int sorts = 0;
  for (const Op& op : q.forward) {
    if (op.host_path != HostPath::kLocalDispatcher) continue;
    EXPECT_TRUE(op.name.starts_with("router") || op.name.starts_with("moe.")) << op.name;
    dispatcher += host_cost(op, costs) - costs.split_call * op.host_split_calls -
                  costs.split_piece * op.host_split_pieces;
    if (op.name == "moe.sort_chunks" || op.name == "moe.unsort_chunks") {
      ++sorts;
      EXPECT_EQ(op.host_split_pieces, experts);
    }
  }
  EXPECT_EQ(sorts, 2);
  EXPECT_NEAR(picoseconds(dispatcher), picoseconds(costs.local_dispatcher_forward), 16);
  EXPECT_TRUE(has(q.backward, "moe.sort_chunks.backward"));
  EXPECT_FALSE(has(g.forward, "moe.sort_chunks"));  // the grouped path at ep 1, as before
  // Everything outside the MoE part keeps its kernel's price.
  for (const Op& op : q.forward) {
    if (op.name.starts_with("qkv") || op.name.starts_with("post_attention_norm")) {
      EXPECT_EQ(op.host_path, HostPath::kKernel) << op.name;
    }
  }
  // Only framework megatron has SequentialMLP.
  t.framework = Framework::kPytorchEager;
  EXPECT_THROW(t.validate(testing::mixtral_8x7b()), InputError);
}

}  // namespace moe_test
}  // namespace clustersim
