#include "parallelism/validate_run.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"
#include "parallelism/program_builder.h"
#include "parallelism/test_clusters.h"
#include "parallelism/training_simulation.h"
#include "workloads/shard_spec.h"
#include "workloads/test_models.h"

namespace clustersim {
namespace validate_run_test {

// The message of the InputError `check` throws; empty when it throws none.
std::string refusal(const std::function<void()>& check) {
  try {
    check();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A GPT of 12 layers, h 2048, 16 heads on 16 H100 (2 nodes of 8).
ModelSpec small_gpt() { return testing::small_gpt(12); }

TrainingSpec small_training(int64_t global_batch = 32) { return testing::sequences(2048, global_batch); }

// PyTorch modules under autocast over fp32 parameters (no FSDP), without dropout (not modelled).
void make_eager(TrainingSpec& t) {
  t.framework = Framework::kPytorchEager;
  t.precision = PrecisionPolicy::pure_fp32();
  t.hidden_dropout = 0;
  t.attention_dropout = 0;
}

// What validate_run refuses, with the message of the underlying check, for a run that passes every
// check before it (so that the refusal is that check's).
struct Refused {
  std::string message;  // validate_run's
  std::string check;    // the underlying check's
};

Refused refused(const ModelSpec& model, const TrainingSpec& training, const Layout& layout, const Cluster& cluster,
                const std::function<void()>& check) {
  return {refusal([&] { validate_run(model, training, layout, ClusterContext{cluster}); }), refusal(check)};
}

TEST(ValidateRun, AcceptsAValidRun) {
  const Cluster cluster(testing::h100_cluster(2));
  EXPECT_EQ(refusal([&] {
              validate_run(small_gpt(), small_training(), Layout{.tp = 2, .pp = 2, .dp = 4}, ClusterContext{cluster});
            }),
            "");
}

TEST(ValidateRun, RefusesTheModel) {
  const Cluster cluster(testing::h100_cluster(2));
  ModelSpec m = small_gpt();
  m.layers = 0;
  const Refused r = refused(m, small_training(), Layout{.dp = 16}, cluster, [&] { m.validate(); });
  EXPECT_NE(r.check, "");
  EXPECT_EQ(r.message, r.check);
}

TEST(ValidateRun, RefusesTheTrainingSpec) {
  const Cluster cluster(testing::h100_cluster(2));
  TrainingSpec t = small_training();
  t.micro_batch = 0;
  const ModelSpec m = small_gpt();
  ASSERT_EQ(refusal([&] { m.validate(); }), "");
  const Refused r = refused(m, t, Layout{.dp = 16}, cluster, [&] { t.validate(m); });
  EXPECT_NE(r.check, "");
  EXPECT_EQ(r.message, r.check);
}

TEST(ValidateRun, RefusesTheLayout) {
  const Cluster cluster(testing::h100_cluster(2));
  const ModelSpec m = small_gpt();
  const TrainingSpec t = small_training();
  const Layout layout{.tp = 3, .dp = 5};  // 15 of 16 GPUs, tp not dividing 16 heads
  ASSERT_EQ(refusal([&] { t.validate(m); }), "");
  const Refused r = refused(m, t, layout, cluster, [&] { validate_layout(layout, layout_context(m, t, cluster, false)); });
  EXPECT_NE(r.check, "");
  EXPECT_EQ(r.message, r.check);
}

TEST(ValidateRun, RefusesDeepEpGroupsThatDoNotLieNodeByNode) {
  // 12 expert-parallel ranks over nodes of 8: 8 + 4.
  const Cluster cluster(testing::h100_cluster(3, 8));
  ModelSpec m = testing::mixtral_8x7b();
  m.layers = 2;
  m.moe.num_experts = 48;
  m.moe.top_k = 8;
  m.moe.moe_ffn_hidden = 1024;
  const TrainingSpec t = small_training(24);
  const Layout layout{.dp = 24, .ep = 12, .moe_dispatcher = MoeDispatcher::kDeepEp, .order = "tp-cp-ep-dp-pp"};
  ASSERT_EQ(refusal([&] { validate_layout(layout, layout_context(m, t, cluster, false)); }), "");
  const Refused r = refused(m, t, layout, cluster, [&] { check_deepep_node_layout(layout, cluster); });
  EXPECT_NE(r.check.find("node by node"), std::string::npos) << r.check;
  EXPECT_EQ(r.message, r.check);
  // Without the node checks (a search's rules) it is left to the simulation.
  EXPECT_EQ(refusal([&] { validate_run(m, t, layout, ClusterContext{cluster, false, /*check_nodes=*/false}); }), "");
}

TEST(ValidateRun, RefusesAClusterOfTwoGpuModels) {
  ClusterSpec spec = testing::h100_cluster(2);
  spec.nodes[1].gpu.name = "test-h100-other";
  const Cluster cluster(spec);
  const Layout layout{.tp = 2, .pp = 2, .dp = 4};
  ASSERT_EQ(refusal([&] { validate_layout(layout, layout_context(small_gpt(), small_training(), cluster, false)); }),
            "");
  const Refused r = refused(small_gpt(), small_training(), layout, cluster, [&] { uniform_gpu(cluster); });
  EXPECT_NE(r.check.find("one GPU model throughout"), std::string::npos) << r.check;
  EXPECT_EQ(r.message, r.check);
  EXPECT_EQ(refusal([&] {
              validate_run(small_gpt(), small_training(), layout, ClusterContext{cluster, false, /*check_nodes=*/false});
            }),
            "");
}

TEST(ValidateRun, RefusesTheSharding) {
  // A dispatcher for a dense model: the layout's rules pass, the sharding refuses it.
  const Cluster cluster(testing::h100_cluster(2));
  const ModelSpec m = small_gpt();
  const TrainingSpec t = small_training();
  const Layout layout{.dp = 16, .moe_dispatcher = MoeDispatcher::kAllGather};
  ASSERT_EQ(refusal([&] { validate_layout(layout, layout_context(m, t, cluster, false)); }), "");
  const Refused r = refused(m, t, layout, cluster, [&] { validate_sharding(m, t, shard_spec(layout)); });
  EXPECT_NE(r.check, "");
  EXPECT_EQ(r.message, r.check);
}

TEST(ValidateRun, RefusesCudaGraphsTheFrameworkCannotCapture) {
  // Megatron's per-layer graphs under pytorch-eager, on a layout pytorch-eager covers (DDP, one
  // micro-batch per GPU).
  const Cluster cluster(testing::h100_cluster(2));
  const ModelSpec m = small_gpt();
  TrainingSpec t = small_training(16);
  make_eager(t);
  t.cuda_graphs = CudaGraphs::kLayers;
  const Layout layout{.dp = 16};
  ASSERT_EQ(refusal([&] { t.validate(m); }), "");
  ASSERT_EQ(refusal([&] { validate_sharding(m, t, shard_spec(layout)); }), "");
  ASSERT_EQ(refusal([&] { check_pytorch_eager_layout(t, layout); }), "");
  const Refused r = refused(m, t, layout, cluster, [&] { check_cuda_graphs(t, layout); });
  EXPECT_NE(r.check.find("training.cuda_graphs"), std::string::npos) << r.check;
  EXPECT_EQ(r.message, r.check);
}

TEST(ValidateRun, RefusesLayoutsPytorchEagerDoesNotCover) {
  // DistributedDataParallel with two micro-batches per GPU (gradient accumulation without FSDP).
  const Cluster cluster(testing::h100_cluster(2));
  const ModelSpec m = small_gpt();
  TrainingSpec t = small_training(32);
  make_eager(t);
  const Layout layout{.dp = 16};
  ASSERT_EQ(refusal([&] { t.validate(m); }), "");
  ASSERT_EQ(refusal([&] { validate_layout(layout, layout_context(m, t, cluster, false)); }), "");
  ASSERT_EQ(refusal([&] { check_cuda_graphs(t, layout); }), "");
  const Refused r = refused(m, t, layout, cluster, [&] { check_pytorch_eager_layout(t, layout); });
  EXPECT_NE(r.check.find("training.framework: pytorch-eager"), std::string::npos) << r.check;
  EXPECT_EQ(r.message, r.check);
}

// simulate_training refuses a run with validate_run's message.
TEST(ValidateRun, IsWhatSimulateTrainingRefusesWith) {
  const Cluster cluster(testing::h100_cluster(2));
  const ModelSpec m = small_gpt();
  TrainingSpec t = small_training(32);
  make_eager(t);
  const Layout layout{.dp = 16};
  const std::string message = refusal([&] { validate_run(m, t, layout, ClusterContext{cluster}); });
  ASSERT_NE(message, "");
  EXPECT_EQ(refusal([&] { simulate_training(cluster, m, t, layout); }), message);
}

}  // namespace validate_run_test
}  // namespace clustersim
