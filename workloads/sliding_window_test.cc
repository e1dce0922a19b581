// Sliding-window attention (ModelSpec::sliding_window, full_attention_every): which layers attend
// through the window, the attention FLOPs the model counts and the kernel executes, the step's
// model FLOPs, and the combinations that are refused.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "workloads/model_flops.h"
#include "workloads/parameter_count.h"
#include "workloads/test_models.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace sliding_window_test {

// Llama-2-7B's shape with GPT-OSS's pattern: a 128-token window on layers 0, 2, 4, ... and the
// whole sequence on layers 1, 3, 5, ...
ModelSpec windowed(int64_t window, int64_t full_every) {
  ModelSpec m = testing::llama2_7b();
  m.sliding_window = window;
  m.full_attention_every = full_every;
  return m;
}

TrainingSpec training(int64_t seq) {
  TrainingSpec t;
  t.seq_len = seq;
  t.global_batch = 1;
  t.micro_batch = 1;
  t.attention = AttentionKernel::kFlash;
  return t;
}

const Op& flash_forward(const LayerOps& ops) {
  for (const Op& op : ops.forward) {
    if (op.name == "flash_attention") return op;
  }
  throw std::runtime_error("no flash_attention op");
}

TEST(SlidingWindow, LayerPatternFollowsFullAttentionEvery) {
  const ModelSpec oss = windowed(128, 2);
  for (int64_t layer = 0; layer < 6; ++layer) EXPECT_EQ(oss.is_window_layer(layer), layer % 2 == 0) << layer;
  const ModelSpec gemma3 = windowed(1024, 6);  // five local layers, then a global one
  for (int64_t layer = 0; layer < 12; ++layer) EXPECT_EQ(gemma3.is_window_layer(layer), layer % 6 != 5) << layer;
  const ModelSpec mistral = windowed(4096, 0);  // every layer windowed
  for (int64_t layer = 0; layer < 4; ++layer) EXPECT_TRUE(mistral.is_window_layer(layer));
  EXPECT_FALSE(testing::llama2_7b().is_window_layer(0));
}

// Tiles of 128 queries × 128 keys: with a 128-token window every query tile after the first needs
// its own diagonal tile and the one before (256 keys per query), the first only its own; a
// 512-token window reaches 5 tiles back... Counted here tile by tile.
TEST(SlidingWindow, KernelsComputeWholeTiles) {
  EXPECT_EQ(windowed_tile_pairs(4096, 128), 128 * 128 + 31 * 128 * 256);
  EXPECT_EQ(windowed_tile_pairs(4096, 512), 128 * (128 + 256 + 384 + 512) + 28 * 128 * 640);
  EXPECT_EQ(windowed_tile_pairs(4096, 1), 4096 * 128);  // a query sees itself: the diagonal tile
  EXPECT_EQ(windowed_tile_pairs(100, 128), 100 * 128);  // one partial tile of queries
  EXPECT_THROW(windowed_tile_pairs(0, 128), InputError);
  EXPECT_THROW(windowed_tile_pairs(4096, 0), InputError);
}

// With s = 4096, w = 128, 32 heads of 128: the model counts s·w query-key pairs, the kernel computes
// the tiles the windows touch; each pair costs 2 FLOPs per multiply-add in QKᵀ and in ·V.
TEST(SlidingWindow, AttentionFlopsCountTheWindow) {
  const int64_t s = 4096, w = 128, heads = 32, d = 128;
  const Transformer t(windowed(w, 2), training(s));
  const Op& window = flash_forward(t.layer(LayerKind::kDense, true));
  const Op& full = flash_forward(t.layer(LayerKind::kDense, false));
  const double per_pair = 2.0 * heads * (d + d);
  EXPECT_DOUBLE_EQ(window.flops, per_pair * s * w);
  EXPECT_DOUBLE_EQ(window.kernel_flops, per_pair * static_cast<double>(windowed_tile_pairs(s, w)));
  EXPECT_DOUBLE_EQ(full.flops, per_pair * s * s);
  EXPECT_DOUBLE_EQ(full.kernel_flops, full.flops / 2);
  // The layers differ only in the attention core: same GEMMs, same saved activations (the fused
  // kernel keeps Q, K, V and its output either way).
  EXPECT_EQ(t.layer(LayerKind::kDense, true).forward.size(), t.layer(LayerKind::kDense, false).forward.size());
  EXPECT_EQ(t.layer(LayerKind::kDense, true).activation_bytes, t.layer(LayerKind::kDense, false).activation_bytes);
  EXPECT_EQ(&t.layer_at(0), &t.layer(LayerKind::kDense, true));
  EXPECT_EQ(&t.layer_at(1), &t.layer(LayerKind::kDense, false));
  // A window no shorter than the sequence counts the whole matrix, as full attention does.
  const Transformer wide(windowed(s, 0), training(s));
  EXPECT_DOUBLE_EQ(flash_forward(wide.layer_at(0)).flops, full.flops);
}

// Model FLOPs of the step: half the layers (16 of 32) count s·w pairs instead of s², forward and
// backward (3 × 2·pairs·heads·(d + d)); model_causal counts what the kernels compute.
TEST(SlidingWindow, StepFlopsCountHalfTheLayersThroughTheWindow) {
  const int64_t s = 4096, w = 128;
  const double per_pair = 2.0 * 32 * 256;
  const StepFlops plain = step_flops(testing::llama2_7b(), training(s));
  const StepFlops oss = step_flops(windowed(w, 2), training(s));
  const double saved = 16 * 3 * per_pair * (static_cast<double>(s) * s - static_cast<double>(s) * w);
  EXPECT_NEAR(oss.model, plain.model - saved, 1e-9 * plain.model);
  const double executed_window = 16 * 3 * per_pair * static_cast<double>(windowed_tile_pairs(s, w));
  const double executed_full = 16 * 3 * per_pair * static_cast<double>(s) * s / 2;
  const double attention_model = 16 * 3 * per_pair * (static_cast<double>(s) * w + static_cast<double>(s) * s);
  EXPECT_NEAR(oss.model_causal, oss.model - attention_model + executed_window + executed_full, 1e-9 * oss.model);
}

// Measured on an H200 (tools/reference/window_attention.py; tools/data/h200-2026-11-30/):
// FlexAttention's kernel time with a window, as a fraction of its full causal time, against the
// fraction of the causal half's pairs that windowed_tile_pairs counts. Windows of 2,048 run in the
// counted time (forward −1 … +4 %, backward −11 … −3 %); at 512 and 128 the kernel's per-tile work
// the count leaves out makes it 1.05–1.39× and 1.48–2.01× slower than counted. The bounds hold that
// gap where it is, so that a change widening it fails here.
TEST(SlidingWindow, TileCountFollowsMeasuredWindowedKernels) {
  std::ifstream file(std::string(CLUSTERSIM_SOURCE_DIR) + "/tools/data/h200-2026-11-30/window_attention.jsonl");
  ASSERT_TRUE(file) << "measurement file missing";
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, std::pair<double, double>> flex;  // s, heads, d, window
  for (std::string line; std::getline(file, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["kernel"] != "flex") continue;
    flex[{j["s"].get<int64_t>(), j["heads"].get<int64_t>(), j["head_dim"].get<int64_t>(), j["window"].get<int64_t>()}] =
        {j["forward_us"].get<double>(), j["backward_us"].get<double>()};
  }
  int checked = 0;
  for (const auto& [key, times] : flex) {
    const auto [s, heads, d, w] = key;
    if (w == 0) continue;
    const auto& causal = flex.at({s, heads, d, 0});
    const double half = static_cast<double>(s) * static_cast<double>(s) / 2;
    const double counted = std::min(static_cast<double>(windowed_tile_pairs(s, w)), half) / half;
    for (const double measured : {times.first / causal.first, times.second / causal.second}) {
      const double slower = measured / counted;
      if (w >= 2048) {
        EXPECT_NEAR(slower, 1.0, 0.12) << s << " " << heads << " " << d << " window " << w;
      } else if (w >= 512) {
        EXPECT_GE(slower, 1.0) << s << " window " << w;
        EXPECT_LE(slower, 1.45) << s << " window " << w;
      } else {
        EXPECT_GE(slower, 1.4) << s << " window " << w;
        EXPECT_LE(slower, 2.1) << s << " window " << w;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 18);  // 3 shapes × 3 windows × forward and backward
}

TEST(SlidingWindow, InvalidCombinationsAreRefused) {
  auto refusal = [](const ModelSpec& m, const TrainingSpec& t, ShardSpec shard = {}) -> std::string {
    try {
      const Transformer x(m, t, shard);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refusal(windowed(-1, 0), training(2048)).find("model.sliding_window"), std::string::npos);
  EXPECT_NE(refusal(windowed(0, 2), training(2048)).find("model.full_attention_every"), std::string::npos);
  EXPECT_NE(refusal(windowed(128, 1), training(2048)).find("full_attention_every = 1"), std::string::npos);
  EXPECT_NE(refusal(windowed(128, 33), training(2048)).find("exceeds model.layers = 32"), std::string::npos);
  EXPECT_EQ(refusal(windowed(128, 32), training(2048)), "");
  TrainingSpec naive = training(2048);
  naive.attention = AttentionKernel::kNaive;
  EXPECT_NE(refusal(windowed(128, 2), naive).find("attention: flash"), std::string::npos);
  TrainingSpec sdpa = training(2048);
  sdpa.flash_kernel = FusedAttentionKernel::kSdpaFlash;
  EXPECT_NE(refusal(windowed(128, 2), sdpa).find("flash_kernel: cudnn"), std::string::npos);
  EXPECT_NE(refusal(windowed(128, 2), training(2048), ShardSpec{.cp = 2}).find("parallelism.cp"), std::string::npos);
  EXPECT_EQ(refusal(windowed(128, 2), training(2048)), "");
}

TEST(SlidingWindow, AttentionSinksAddOneParameterPerHeadAndLayer) {
  ModelSpec m = windowed(128, 2);
  const int64_t without = count_parameters(m).total();
  m.attention_sinks = true;
  EXPECT_EQ(count_parameters(m).total() - without, m.layers * m.heads);
  EXPECT_EQ(count_parameters(m, ShardSpec{.tp = 2}).layer.attention_sinks, m.heads / 2);
}

}  // namespace sliding_window_test
}  // namespace clustersim
