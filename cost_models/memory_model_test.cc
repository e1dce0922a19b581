#include "cost_models/memory_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace clustersim {
namespace memory_model_test {

constexpr double kGiB = 1073741824.0;

TEST(MemoryModel, M1ZeroStage2WithAndWithoutTheFp32GradientCopy) {
  // docs/cases/memory.md M1: 2,851 M parameters, 8 GPUs, ZeRO-2, mixed-precision Adam.
  // DeepSpeed's estimator: 2P unsharded + (2 + 4 + 4 + 8)P/8 sharded = 11.28 GiB.
  const int64_t p = 2'851'000'000;
  const MemoryModel deepspeed(PrecisionPolicy::deepspeed_mixed(DataType::kFp16, true), OptimizerKind::kAdam, 2, 8);
  const MemoryBreakdown with_copy = deepspeed.rank_memory({.dense_params = p});
  const double model_states = (with_copy.params + with_copy.grads + with_copy.optimizer_state).to_gib();
  EXPECT_DOUBLE_EQ(model_states * kGiB, 2.0 * p + 18.0 * p / 8);
  EXPECT_NEAR(model_states, 11.28, 0.005);
  // The ZeRO paper: 2Ψ + (2 + K)Ψ/N with K = 12 (no fp32 gradient copy) = 9.96 GiB.
  const MemoryModel zero_paper(PrecisionPolicy::deepspeed_mixed(DataType::kFp16, false), OptimizerKind::kAdam, 2, 8);
  const MemoryBreakdown k12 = zero_paper.rank_memory({.dense_params = p});
  EXPECT_DOUBLE_EQ((k12.params + k12.grads + k12.optimizer_state).to_gib() * kGiB, 2.0 * p + 14.0 * p / 8);
  EXPECT_NEAR((k12.params + k12.grads + k12.optimizer_state).to_gib(), 9.96, 0.005);
}

TEST(MemoryModel, M1ZeroPaperFigure1AcrossStages) {
  // Rajbhandari et al. 2020, Fig. 1: 7.5 B parameters, 64 GPUs, K = 12:
  // stage 0: (2 + 2 + 12)Ψ = 120 GB; 1: 4Ψ + 12Ψ/64 = 31.4; 2: 2Ψ + 14Ψ/64 = 16.6; 3: 16Ψ/64 = 1.9.
  const int64_t p = 7'500'000'000;
  const double expected[] = {16.0 * p, 4.0 * p + 12.0 * p / 64, 2.0 * p + 14.0 * p / 64, 16.0 * p / 64};
  const double paper_gb[] = {120, 31.4, 16.6, 1.9};
  for (int stage = 0; stage <= 3; ++stage) {
    const MemoryModel model(PrecisionPolicy::deepspeed_mixed(DataType::kFp16, false), OptimizerKind::kAdam, stage, 64);
    const MemoryBreakdown m = model.rank_memory({.dense_params = p});
    const Bytes states = m.params + m.grads + m.optimizer_state;
    EXPECT_NEAR(static_cast<double>(states.count()), expected[stage], 2.0) << "stage " << stage;
    EXPECT_NEAR(states.to_gb(), paper_gb[stage], 0.05) << "stage " << stage;
  }
}

TEST(MemoryModel, M2MegatronBytesPerParameter) {
  // docs/cases/memory.md M2: Llama-2-7B, dp = 8.
  const int64_t p = 6'738'415'616;
  const MemoryModel plain(PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam, 0, 8);
  EXPECT_DOUBLE_EQ(plain.bytes_per_parameter().total(), 18.0);
  const MemoryBreakdown m = plain.rank_memory({.dense_params = p});
  EXPECT_EQ((m.params + m.grads + m.optimizer_state).count(), 18 * p);
  EXPECT_NEAR((m.params + m.grads + m.optimizer_state).to_gb(), 121.3, 0.05);
  EXPECT_FALSE(m.fits(Bytes::gigabytes(80)));  // reported as out of memory on an 80 GB GPU

  const MemoryModel distributed(PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam, 1, 8);
  EXPECT_DOUBLE_EQ(distributed.bytes_per_parameter().total(), 6.0 + 12.0 / 8);
  const MemoryBreakdown d = distributed.rank_memory({.dense_params = p});
  EXPECT_NEAR((d.params + d.grads + d.optimizer_state).to_gb(), 50.5, 0.05);

  PrecisionPolicy bf16_grads = PrecisionPolicy::megatron_mixed();
  bf16_grads.grad_dtype = DataType::kBf16;
  const MemoryModel bf16(bf16_grads, OptimizerKind::kAdam, 1, 8);
  EXPECT_DOUBLE_EQ(bf16.bytes_per_parameter().total(), 4.0 + 12.0 / 8);
  const MemoryBreakdown b = bf16.rank_memory({.dense_params = p});
  EXPECT_NEAR((b.params + b.grads + b.optimizer_state).to_gb(), 37.1, 0.05);

  // Pure fp32: 4 (weights) + 8 (m, v) = 12 B/param plus 4 B of gradients.
  const MemoryModel fp32(PrecisionPolicy::pure_fp32(), OptimizerKind::kAdam, 0, 8);
  EXPECT_DOUBLE_EQ(fp32.bytes_per_parameter().params + fp32.bytes_per_parameter().optimizer, 12.0);
  EXPECT_DOUBLE_EQ(fp32.bytes_per_parameter().grads, 4.0);
  // SGD with momentum keeps one state: 2 + 4 + 4 + 4 = 14.
  EXPECT_DOUBLE_EQ(MemoryModel(PrecisionPolicy::megatron_mixed(), OptimizerKind::kSgd, 0, 1)
                       .bytes_per_parameter()
                       .total(),
                   14.0);
}

TEST(MemoryModel, M3Gpt3OnSixtyFourA100ModelStates) {
  // docs/cases/memory.md M3: 18 B × 12h² × 96 layers / 64 GPUs (tp 8 × pp 8), h = 12288,
  // embeddings excluded = 45.5625 GiB exactly.
  const int64_t h = 12288;
  const int64_t params_per_rank = 12 * h * h * 96 / 64;
  const MemoryModel model(PrecisionPolicy::megatron_mixed(DataType::kFp16), OptimizerKind::kAdam, 0, 1);
  const MemoryBreakdown m = model.rank_memory({.dense_params = params_per_rank});
  EXPECT_EQ((m.params + m.grads + m.optimizer_state).count(), 18 * params_per_rank);
  EXPECT_DOUBLE_EQ((m.params + m.grads + m.optimizer_state).to_gib(), 45.5625);
}

TEST(MemoryModel, ActivationsScaleWithTheScheduleInFlightCount) {
  // Korthikanti et al. 2022: the first stage of interleaved 1F1B holds p·(1 + (p−1)/(p·v)) micro-
  // batch equivalents; for p = 8, v = 3 that is 8 × 31/24.
  const MemoryModel model(PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam, 0, 1);
  const Bytes per_microbatch = Bytes::of(24'000'000'000);
  const MemoryBreakdown m =
      model.rank_memory({.activations_per_microbatch = per_microbatch, .in_flight_microbatches = 8.0 * 31 / 24});
  EXPECT_EQ(m.activations.count(), 248'000'000'000);  // 24e9 × 8 × 31/24
  EXPECT_EQ(m.runtime_overhead, MemoryModel::default_runtime_overhead());
  EXPECT_EQ(m.total(), m.activations + m.runtime_overhead);
  EXPECT_EQ(m.allocated(), m.activations);
}

TEST(MemoryModel, M5UnevenStagesPeakAtTheLargestStage) {
  // docs/cases/memory.md M5: stages of [1, 2, 2, 3] layers, 1F1B with p = 4 (stage r holds
  // p − r micro-batches). Each stage holds its own layers' states; the 3-layer stage's layer part is
  // 1.5× the average stage (2 layers). GPT layers of h = 8192 (12h² parameters), s = 2048, b = 1,
  // selective recompute with sequence parallel at t = 1: 34·s·b·h activation bytes per layer.
  const std::vector<int64_t> layers = {1, 2, 2, 3};
  const int64_t per_layer = 12LL * 8192 * 8192;
  const Bytes activations_per_layer = Bytes::of(34LL * 2048 * 1 * 8192);
  const MemoryModel model(PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam, 1, 8);
  std::vector<MemoryBreakdown> stages;
  for (size_t r = 0; r < layers.size(); ++r) {
    stages.push_back(model.rank_memory({.dense_params = layers[r] * per_layer,
                                        .activations_per_microbatch = activations_per_layer * layers[r],
                                        .in_flight_microbatches = static_cast<double>(layers.size() - r)}));
  }
  auto states = [](const MemoryBreakdown& m) { return m.params + m.grads + m.optimizer_state; };
  const auto peak = std::max_element(stages.begin(), stages.end(),
                                     [](const auto& a, const auto& b) { return a.total() < b.total(); });
  EXPECT_EQ(peak - stages.begin(), 3);
  int64_t sum = 0;
  for (const auto& s : stages) sum += states(s).count();
  EXPECT_NEAR(static_cast<double>(states(stages[3]).count()) / (static_cast<double>(sum) / 4), 1.5, 1e-6);
}

TEST(MemoryModel, E1ExpertStateShardsByExpertDataParallelSize) {
  // docs/cases/moe_cp.md E1: Mixtral-8x7B on 64 GPUs, tp 2, pp 4, ep 8, etp 1 → dp 8,
  // expert-dp 2; distributed optimizer, bf16 params, fp32 grads. A middle stage (8 layers):
  //   dense per layer per rank: (QKV h·(32 + 2·8)·128 + proj 32·128·h) / tp + router h·8 + 2 norms h
  //   experts per layer per rank: 8 experts / ep 8 = 1 expert of SwiGLU 3·h·14336
  const int64_t h = 4096;
  const int64_t dense = 8 * ((h * (32 + 2 * 8) * 128 + 32 * 128 * h) / 2 + h * 8 + 2 * h);
  const int64_t expert = 8 * (3 * h * 14336);
  EXPECT_NEAR(dense / 1e6, 168.1, 0.2);
  EXPECT_NEAR(expert / 1e6, 1409.3, 0.1);
  const MemoryModel model(PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam, 1, 8, 2);
  EXPECT_DOUBLE_EQ(model.bytes_per_parameter(false).total(), 6.0 + 12.0 / 8);
  EXPECT_DOUBLE_EQ(model.bytes_per_parameter(true).total(), 6.0 + 12.0 / 2);
  const MemoryBreakdown m = model.rank_memory({.dense_params = dense, .expert_params = expert});
  const Bytes states = m.params + m.grads + m.optimizer_state;
  EXPECT_NEAR(static_cast<double>(states.count()), dense * 7.5 + expert * 12.0, 2.0);
  EXPECT_NEAR(states.to_gb(), 18.17, 0.01);
}

TEST(MemoryModel, RejectsInvalidSettingsNamingTheField) {
  EXPECT_THROW(MemoryModel(PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam, 4, 8), InputError);
  EXPECT_THROW(MemoryModel(PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam, 1, 0), InputError);
  PrecisionPolicy redundant = PrecisionPolicy::pure_fp32();
  redundant.master_weights = true;
  EXPECT_THROW(MemoryModel(redundant, OptimizerKind::kAdam, 0, 1), InputError);
  const MemoryModel model(PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam, 0, 1);
  EXPECT_THROW(model.rank_memory({.dense_params = -1}), InputError);
  EXPECT_THROW(model.rank_memory({.in_flight_microbatches = -1}), InputError);
  try {
    MemoryModel(PrecisionPolicy::megatron_mixed(), OptimizerKind::kAdam, 5, 8);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("parallelism.zero"), std::string::npos);
  }
}

}  // namespace memory_model_test
}  // namespace clustersim
