// mosaicml/llm-foundry, scripts/train/benchmarking/README.md: MPT models trained with Composer and
// PyTorch FSDP (no tensor or pipeline parallelism) on A100 and H100, in bf16 or FP8. FLOPs as its
// MFU counts them (NumParams, tools/validation/published_flops.h).

#include "tools/validation/conventions/conventions.h"
#include "tools/validation/published_flops.h"

namespace clustersim::conventions {
namespace {

class LlmFoundryConventions final : public PublicationConventions {
 public:
  SourceConvention id() const override { return SourceConvention::kLlmFoundry; }
  std::string_view name() const override { return "llm-foundry"; }
  bool describes(const std::string& source) const override { return contains(source, "llm-foundry"); }

  void note_node(ConventionContext& ctx) const override {
    if (contains(ctx.config.gpu_type, "H100")) {
      ctx.assume("fabric = 8 × 400 Gb/s per node (dgx-h100)", "the H100 tables do not state the interconnect");
    }
  }

  bool model_parallel(ConventionContext& ctx, int64_t& /*tp*/, int64_t& /*pp*/) const override {
    const PublishedConfig& c = ctx.config;
    if (!c.tp || !c.pp) assume_unsplit(ctx, "FSDP data parallelism only (no TP/PP in these benchmarks)");
    return true;
  }

  std::optional<ModelSpec> model(ConventionContext& ctx, int64_t seq_len) const override {
    const PublishedConfig& c = ctx.config;
    if (!c.layers || !c.hidden || !c.heads || !c.vocab) return model_from_columns(ctx, seq_len);
    // MPT (llm-foundry mpt-*.yaml): GeLU MLP of 4h, LayerNorm, ALiBi, tied embeddings, no biases,
    // no dropout.
    ModelSpec m = gpt_model(c, seq_len);
    m.position_embedding = PositionEmbedding::kAlibi;
    m.max_position_embeddings = 0;
    m.linear_bias = false;
    m.make_vocab_size_divisible_by = 1;
    return m;
  }

  // The README's "How is MFU calculated": NumParams-based, 4 instead of 3 passes for HFU under
  // activation checkpointing.
  double step_flops(const PublishedScenario& ps, const StepFlops& /*simulated*/, bool hardware) const override {
    const FlopShape f = flop_shape(ps);
    return llm_foundry_step_flops(f.global_batch, f.seq_len, f.layers, f.hidden, ps.parameters,
                                  hardware && f.recompute == Recompute::kFull);
  }
  bool achieved_counts_recompute() const override { return false; }

  void mixed_precision(ConventionContext& ctx, TrainingSpec& t) const override {
    if (contains(ctx.config.precision, "PURE")) {
      t.precision.grad_dtype = DataType::kBf16;  // FSDP mixed precision PURE reduces gradients in bf16
    }
  }

  void kernels(ConventionContext& ctx, TrainingSpec& t) const override {
    if (ctx.out.node == "dgx-h100") {
      // MPT's attention is the Triton FlashAttention kernel (scripts/train/benchmarking/submit_benchmarks.py:
      // --attn_impl triton by default; the README: "our models use Flash Attention"), written for Ampere: on
      // Hopper it runs as FlashAttention-2 does, well below cuDNN's Hopper kernel (FlashAttention-3 paper,
      // arXiv:2407.08608, Fig. 5: FA2 298-335 vs cuDNN 484-539 TFLOP/s, causal, head dim 128).
      t.flash_kernel = FusedAttentionKernel::kSdpaFlash;
      ctx.assume("attention kernel = FlashAttention-2 class (sdpa-flash)",
                 "MPT runs Triton FlashAttention (submit_benchmarks.py --attn_impl triton), which has no Hopper path");
    }
    if (t.compute_dtype != DataType::kFp8) {
      // llm-foundry trains MPT with Composer: PyTorch modules run eagerly under autocast inside FSDP
      // (mixed precision DEFAULT or PURE), not Megatron's fused kernels (train.py builds the model
      // from llmfoundry/models/mpt/modeling_mpt.py; submit_benchmarks.py sets no torch.compile).
      // Its FP8 rows use Transformer Engine layers and stay on the Megatron op model.
      t.framework = Framework::kPytorchEager;
      ctx.assume("framework = pytorch-eager (PyTorch modules under autocast, FSDP mixed precision)",
                 "Composer + FSDP eager training; the Megatron op model prices fused kernels MPT does not use");
    }
  }
};

}  // namespace

const PublicationConventions& llm_foundry_conventions() {
  static const LlmFoundryConventions conventions;
  return conventions;
}

}  // namespace clustersim::conventions
