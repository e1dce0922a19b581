// NVIDIA-NeMo/Megatron-Bridge, docs/performance-summary.md: tokens/s and TFLOP/s per GPU of its
// performance recipes (scripts/performance/configs/) for Llama 3, DeepSeek-V3, Qwen3 and GPT-OSS on
// H100, B200, GB200 and GB300. The summary names the model only; the recipes give the rest. FLOPs as
// Megatron-Bridge's formula counts them (tools/validation/published_flops.h).

#include <fmt/format.h>

#include <map>

#include "scenarios/hardware_presets.h"
#include "tools/validation/conventions/conventions.h"
#include "tools/validation/published_flops.h"
#include "workloads/shard_spec.h"

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

// Megatron-Bridge's model FLOPs of a mixture-of-experts or latent-attention model
// (megatron/bridge/training/utils/flop_utils.py transformer_flops, which performance-summary.md's
// "Model TFLOP/sec/GPU" uses): per token 12·L·h·(ffn·glu·L_dense/L + (top_k·moe_ffn + shared)·glu·
// L_moe/L) + attention + 6·h·V_padded, glu = 3/2 for SwiGLU; attention for GQA
// 12·L·h²·(a·d/h)·(1 + g/a + s/(2h)), for MLA 6·L·(q_lora·(h + a·(d + r) + 1) + kv_lora·(h + a·(d + v) + 1)
// + h·r + a·v·h + s·a·(d + r)/2 + s·a·v/2) — the attention core counted causally (half of s × s).
// With `mtp` multi-token-prediction layers: each counts as one more (MoE) layer, plus its norms and
// 2h² projection 6·mtp·(3h + 2h²), and one more LM head 6·h·V each. `ungated`: glu = 1 for SwiGLU
// too (GPT-OSS's published TFLOP/s, PublishedScenario::flop_ungated_mlp). Sliding windows are not
// in the formula: every layer's attention counts the whole sequence.
double bridge_moe_step_flops(const ModelSpec& m, const TrainingSpec& t, int tp, int mtp, bool ungated) {
  const double B = static_cast<double>(t.global_batch);
  const double s = static_cast<double>(t.seq_len);
  const double extra = static_cast<double>(mtp);
  const double L = static_cast<double>(m.layers) + extra;
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads);
  const double glu = m.mlp == MlpKind::kSwiglu && !ungated ? 1.5 : 1.0;
  const double dense_layers = static_cast<double>(m.dense_layer_count());
  const double moe_layers = static_cast<double>(m.moe_layer_count()) + extra;
  const MoeSpec& moe = m.moe;
  const double mlp = 12 * h *
                     (static_cast<double>(m.ffn_hidden) * glu * dense_layers +
                      static_cast<double>(moe.top_k * moe.moe_ffn_hidden + moe.shared_ffn()) * glu * moe_layers);
  double attention = 0;
  if (m.mla.enabled()) {
    const double d = static_cast<double>(m.head_size());
    const double r = static_cast<double>(m.mla.rope_head_dim);
    const double v = static_cast<double>(m.v_head_size());
    const double q_lora = static_cast<double>(m.mla.q_lora_rank);
    const double kv_lora = static_cast<double>(m.mla.kv_lora_rank);
    const double q_term = q_lora > 0 ? q_lora * (h + a * (d + r) + 1) : h * a * (d + r);
    attention = 6 * L *
                (q_term + kv_lora * (h + a * (d + v) + 1) + h * r + a * v * h + s * a * (d + r) / 2 + s * a * v / 2);
  } else {
    const double d = static_cast<double>(m.head_size());
    const double g = static_cast<double>(m.kv_head_count());
    attention = 12 * L * h * h * (a * d / h) * (1 + g / a + s / (2 * h));
  }
  const double vocab = static_cast<double>(padded_vocab_size(m.vocab, m.make_vocab_size_divisible_by, tp));
  return B * s * (mlp + attention + 6 * extra * (3 * h + 2 * h * h) + 6 * h * vocab * (1 + extra));
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

  double step_flops(const PublishedScenario& ps, const StepFlops& /*simulated*/, bool /*hardware*/) const override {
    const ModelSpec& m = ps.scenario.model;
    if (m.moe.enabled() || m.mla.enabled()) {
      return bridge_moe_step_flops(m, ps.scenario.training, ps.scenario.layout.tp, ps.flop_mtp_layers,
                                   ps.flop_ungated_mlp);
    }
    const FlopShape f = flop_shape(ps);
    return megatron_bridge_step_flops(f.global_batch, f.seq_len, f.layers, f.hidden, f.heads, f.kv_heads,
                                      f.ffn_hidden, f.vocab);
  }
  bool achieved_counts_recompute() const override { return false; }

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
