// NVIDIA-NeMo/Megatron-Bridge, docs/performance-summary.md: tokens/s and TFLOP/s per GPU of its
// performance recipes (scripts/performance/configs/) for Llama 3, DeepSeek-V3, Qwen3 and GPT-OSS on
// H100, B200, GB200 and GB300. The summary names the model only; the recipes give the rest. FLOPs as
// Megatron-Bridge's formula counts them (tools/validation/published_flops.h).

#include <fmt/format.h>

#include <map>

#include "scenarios/hardware_presets.h"
#include "tools/validation/conventions/conventions.h"

namespace clustersim::conventions {
namespace {

// Megatron-Bridge model names → shipped model presets (same architecture: Llama 3.1 405B is
// Llama 3 405B with a longer RoPE context; the mixture-of-experts presets follow the released
// configs that Megatron-Bridge's providers copy).
const std::map<std::string, std::string>& bridge_presets() {
  static const std::map<std::string, std::string> presets = {
      {"LLAMA3_8B", "llama3-8b"},    {"LLAMA3_70B", "llama3-70b"},       {"LLAMA3.1_405B", "llama3-405b"},
      {"DeepSeekV3", "deepseek-v3"}, {"Qwen3_30B_a3B", "qwen3-30b-a3b"}, {"Qwen3_235B_a22B", "qwen3-235b-a22b"},
      {"GPT OSS 120B", "gpt-oss-120b"}};
  return presets;
}

class MegatronBridgeConventions final : public PublicationConventions {
 public:
  SourceConvention id() const override { return SourceConvention::kMegatronBridge; }
  std::string_view name() const override { return "Megatron-Bridge"; }
  bool describes(const std::string& source) const override { return contains(source, "Megatron-Bridge"); }

  std::optional<ModelSpec> model(ConventionContext& ctx, int64_t seq_len) const override {
    const PublishedConfig& c = ctx.config;
    const auto it = bridge_presets().find(c.model);
    if (it == bridge_presets().end()) return model_from_columns(ctx, seq_len);
    ModelSpec m = load_model_preset(it->second);
    m.name = c.model;
    ctx.assume(fmt::format("model = preset {}", it->second), "the performance summary names only the model");
    if (it->second == "deepseek-v3") {
      ctx.out.flop_mtp_layers = 1;
      ctx.assume("one multi-token-prediction layer in the FLOP count, not simulated",
                 "the published TFLOP/s per token matches Megatron-Bridge's formula with mtp_num_layers = 1");
    }
    if (it->second == "gpt-oss-120b") {
      ctx.out.flop_ungated_mlp = true;
      ctx.assume("the FLOP count prices the experts' MLP as ungated (2 matrices, not SwiGLU's 3) and every layer's "
                 "attention over the whole sequence",
                 "223 TFLOP/s per 8,213 tokens/s (B200, s 4,096) and 488 per 15,876 (GB200, s 8,192) are 27.15 and "
                 "30.74 GFLOP per token: Megatron-Bridge's formula with glu = 1, not 1.5 (34.3 and 37.9)");
    }
    return m;
  }

  bool unstated_sequence_parallel(ConventionContext& ctx) const override {
    ctx.assume("sequence_parallel = true", "Megatron-Bridge recipes pair tensor with sequence parallelism");
    return true;
  }

  void tp_comm_overlap(ConventionContext& ctx, Layout& l) const override {
    // Megatron-Bridge's performance recipes set comm_overlap.tp_comm_overlap with a userbuffers
    // configuration for every tensor-parallel Llama run
    // (scripts/performance/configs/llama/llama3_llm_pretrain.py, llama31_llm_pretrain.py).
    l.tp_comm_overlap = true;
    ctx.assume("tp_comm_overlap = true", "Megatron-Bridge's performance recipes enable userbuffers overlap with tp > 1");
  }

  void unstated_zero(ConventionContext& ctx, Layout& l) const override {
    l.zero_stage = 1;
    l.overlap_param_gather = true;
    ctx.assume("distributed optimizer (zero 1) with overlapped parameter gather", "the Megatron-Bridge recipes' default");
  }
};

}  // namespace

const PublicationConventions& megatron_bridge_conventions() {
  static const MegatronBridgeConventions conventions;
  return conventions;
}

}  // namespace clustersim::conventions
