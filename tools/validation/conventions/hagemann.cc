// Hagemann et al. 2023, "Efficient Parallelization Layouts for Large-Scale Distributed Model
// Training" (arXiv:2311.05610): the sweep data files of Llama 13B, 30B and 65B at 2k and 8k tokens
// on A100 80GB, trained with Aleph Alpha's scaling framework. The files give layout, kernels and MFU,
// not the model's shapes, the batch or the hardware. FLOPs as PaLM counts them
// (tools/validation/published_flops.h).

#include <fmt/format.h>

#include <array>

#include "tools/validation/conventions/conventions.h"
#include "tools/validation/published_flops.h"

namespace clustersim::conventions {
namespace {

// LLaMA-1 shapes (Touvron et al. 2023, Table 2: layers, d_model, heads; ffn from the released
// params.json: multiple_of 256 over 8/3·d). Hagemann et al.'s sweep files name only "Llama 13B".
struct LlamaShape {
  std::string_view name;
  int64_t layers, hidden, heads, ffn;
};
constexpr std::array<LlamaShape, 4> kLlama1 = {{{"Llama 7B", 32, 4096, 32, 11008},
                                                {"Llama 13B", 40, 5120, 40, 13824},
                                                {"Llama 30B", 60, 6656, 52, 17920},
                                                {"Llama 65B", 80, 8192, 64, 22016}}};

// Hagemann et al.: the global batch holds 4,194,304 tokens (2048 × 2k or 512 × 8k sequences) and the
// vocabulary 128,000 tokens. Neither is in the data files; both are inferred from them: MFU × step
// time × GPUs × 312 TFLOP/s divided by PaLM's 6N + 12·L·h·s per token is constant within every file
// and equals 4,194,304 tokens to within 1 % (2 % in the 32-GPU file) for Llama 13B, 30B and 65B at
// 2k and 8k when N counts an untied 128,000-token embedding and LM head (with LLaMA's 32,000 tokens
// it is off by 6-8 %; tools/validation/published_run_test.cc checks every row).
constexpr int64_t kHagemannBatchTokens = 4'194'304;
constexpr int64_t kHagemannVocab = 128'000;

// The attention kernel the file's kernel column names ("torch", "fused", "flash_attentionv1 + RMS
// kernel", ...), empty when not given.
std::string kernel_of(const PublishedConfig& c) { return note_value(c.notes, "kernel=").value_or(""); }

class HagemannConventions final : public PublicationConventions {
 public:
  SourceConvention id() const override { return SourceConvention::kHagemann; }
  std::string_view name() const override { return "Hagemann et al. 2023"; }
  bool describes(const std::string& source) const override {
    return contains(source, "Hagemann") || contains(source, "2311.05610");
  }

  std::optional<std::string> node_for_unnamed_gpu(ConventionContext& ctx) const override {
    ctx.assume("GPU = A100-SXM4-80GB in DGX A100 nodes (8 × 200 Gb/s HDR)",
               "not in the data files; their TFLOP/s-to-MFU ratio implies a 312 TFLOP/s peak");
    return "dgx-a100";
  }

  std::optional<int64_t> unstated_seq_len(ConventionContext& ctx) const override {
    const int64_t seq_len = contains(ctx.config.source, "8k") ? 8192 : 2048;
    ctx.assume(fmt::format("seq_len = {}", seq_len), "from the data file's name (\"8k\"; 2k otherwise)");
    return seq_len;
  }

  std::optional<int64_t> unstated_global_batch(ConventionContext& ctx, int64_t seq_len, int64_t /*micro_batch*/,
                                               int64_t /*dp*/) const override {
    const int64_t global_batch = kHagemannBatchTokens / seq_len;
    ctx.assume(fmt::format("global_batch = {}", global_batch),
               "inferred: 4,194,304 tokens per step makes the files' MFU and step times agree with PaLM's FLOPs");
    return global_batch;
  }

  std::optional<ModelSpec> model(ConventionContext& ctx, int64_t seq_len) const override {
    const PublishedConfig& c = ctx.config;
    for (const auto& shape : kLlama1) {
      if (c.model != shape.name) continue;
      ctx.assume(fmt::format("layers {}, hidden {}, heads {}, ffn {}", shape.layers, shape.hidden, shape.heads,
                             shape.ffn),
                 "LLaMA-1 shapes, Touvron et al. 2023 Table 2; the data files name only the model");
      ctx.assume(fmt::format("vocab = {}", kHagemannVocab),
                 "inferred: PaLM FLOPs per step from the files' MFU are constant only with a 128,000-token "
                 "untied vocabulary");
      ModelSpec m = llama_model(c.model, shape.layers, shape.hidden, shape.heads, shape.ffn, kHagemannVocab);
      m.make_vocab_size_divisible_by = 1;
      return m;
    }
    return model_from_columns(ctx, seq_len);
  }

  bool naive_attention(ConventionContext& ctx) const override {
    const std::string kernel = kernel_of(ctx.config);
    return kernel == "torch" || kernel == "fused";
  }

  void kernels(ConventionContext& ctx, TrainingSpec& t) const override {
    const std::string kernel = kernel_of(ctx.config);
    // Aleph Alpha's scaling framework writes RMSNorm, RoPE and SwiGLU in PyTorch operations
    // (src/scaling/core/nn/norm/rms_norm.py, rotary.py, mlp.py); the sweep files' kernel column
    // names a fused RMSNorm ("+ RMS kernel") where a run used one.
    t.fused_rope = false;
    t.fused_swiglu = false;
    t.fused_norm = contains(kernel, "RMS kernel");
    ctx.assume(fmt::format("RoPE and SwiGLU as PyTorch operations, RMSNorm {}",
                           t.fused_norm ? "fused (the file's \"RMS kernel\")" : "as PyTorch operations"),
               "Aleph Alpha's scaling framework (github.com/Aleph-Alpha/scaling, src/scaling/core/nn) has no "
               "fused kernels for them");
    if (kernel == "torch") {
      t.fused_softmax = false;
      ctx.assume("masked softmax as PyTorch operations", "kernel \"torch\": scaling's MaskedSoftmaxTorch");
    }
    if (kernel.starts_with("flash_attentionv1")) {
      t.flash_kernel = FusedAttentionKernel::kFlashV1;
      ctx.assume("attention kernel = FlashAttention v1 (flash-v1)", fmt::format("kernel \"{}\"", kernel));
    }
  }

  // The files' MFU: PaLM's 6N + 12·L·h·s per token (with the inferred batch and vocabulary above).
  double step_flops(const PublishedScenario& ps, const StepFlops& /*simulated*/, bool /*hardware*/) const override {
    const FlopShape f = flop_shape(ps);
    return palm_step_flops(f.global_batch, f.seq_len, f.layers, f.hidden, ps.parameters);
  }
  bool achieved_counts_recompute() const override { return false; }

  void unstated_zero(ConventionContext& ctx, Layout& l) const override {
    l.zero_stage = 1;
    ctx.assume("zero 1 (optimizer state sharded over data parallelism)",
               "not in the data files; unsharded Adam state at tp = pp = 1 would need 18 B/param, 234 GB for 13B");
  }
};

}  // namespace

const PublicationConventions& hagemann_conventions() {
  static const HagemannConventions conventions;
  return conventions;
}

}  // namespace clustersim::conventions
