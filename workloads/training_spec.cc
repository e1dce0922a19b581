#include "workloads/training_spec.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {

std::string_view name_of(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  throw InternalError("unknown Recompute value");
}

std::string_view name_of(AttentionKernel attention) {
  return attention == AttentionKernel::kFlash ? "flash" : "naive";
}

Recompute parse_recompute(std::string_view text) {
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  throw InputError(fmt::format("unknown recompute \"{}\" (valid: none, selective, full)", excerpt(text)));
}

AttentionKernel parse_attention_kernel(std::string_view text) {
  if (text == "flash") return AttentionKernel::kFlash;
  if (text == "naive") return AttentionKernel::kNaive;
  throw InputError(fmt::format("unknown attention \"{}\" (valid: flash, naive)", excerpt(text)));
}

std::string_view name_of(Framework framework) {
  return framework == Framework::kMegatron ? "megatron" : "pytorch-eager";
}

Framework parse_framework(std::string_view text) {
  if (text == "megatron") return Framework::kMegatron;
  if (text == "pytorch-eager") return Framework::kPytorchEager;
  throw InputError(fmt::format("unknown framework \"{}\" (valid: megatron, pytorch-eager)", excerpt(text)));
}

std::string_view name_of(CudaGraphs graphs) {
  switch (graphs) {
    case CudaGraphs::kNone: return "none";
    case CudaGraphs::kLayers: return "layers";
    case CudaGraphs::kStep: return "step";
  }
  return "none";
}

CudaGraphs parse_cuda_graphs(std::string_view text) {
  for (CudaGraphs g : {CudaGraphs::kNone, CudaGraphs::kLayers, CudaGraphs::kStep}) {
    if (text == name_of(g)) return g;
  }
  throw InputError(fmt::format("unknown cuda_graphs \"{}\" (valid: none, layers, step)", excerpt(text)));
}

std::string_view name_of(MoeExperts experts) {
  return experts == MoeExperts::kSequential ? "sequential" : "grouped";
}

MoeExperts parse_moe_experts(std::string_view text) {
  for (MoeExperts e : {MoeExperts::kGrouped, MoeExperts::kSequential}) {
    if (text == name_of(e)) return e;
  }
  throw InputError(fmt::format("unknown moe_experts \"{}\" (valid: grouped, sequential)", excerpt(text)));
}

DataType TrainingSpec::activation_dtype() const {
  return compute_dtype == DataType::kFp8 ? DataType::kBf16 : compute_dtype;
}

void TrainingSpec::validate_fusion(const ModelSpec& model) const {
  auto refuse = [&](const char* key, const std::string& why) {
    throw InputError(
        fmt::format("training.{}: false {} (model \"{}\"); remove the key or set it to true", key, why, model.name))
        .about({fmt::format("training.{}", key)});
  };
  const bool any_unfused = !fused_norm || !fused_rope || !fused_swiglu || !fused_softmax;
  if (any_unfused && framework == Framework::kPytorchEager) {
    throw InputError(
        "training.fused_norm, fused_rope, fused_swiglu and fused_softmax apply to training.framework "
        "megatron; pytorch-eager prices its own ATen kernels (workloads/pytorch_eager_ops.h)")
        .about({"training.fused_norm", "training.framework"});
  }
  if (!fused_softmax && attention != AttentionKernel::kNaive) {
    throw InputError(
        "training.fused_softmax: false prices naive attention's softmax in PyTorch operations; it needs "
        "training.attention: naive (flash attention has no separate softmax)")
        .about({"training.fused_softmax", "training.attention"});
  }
  if (!fused_norm && model.norm != NormKind::kRmsNorm) {
    refuse("fused_norm", "prices an RMSNorm written in PyTorch operations, but model.norm is layernorm, which "
                         "PyTorch runs as one kernel (torch.nn.LayerNorm)");
  }
  if (!fused_rope && model.position_embedding != PositionEmbedding::kRope) {
    refuse("fused_rope", "prices RoPE written in PyTorch operations, but the model has no rotary embeddings");
  }
  if (!fused_rope && model.mla.enabled()) {
    refuse("fused_rope", "is not modelled for latent attention (model.mla)");
  }
  if (!fused_swiglu && model.mlp != MlpKind::kSwiglu) {
    refuse("fused_swiglu", "prices SwiGLU's gate written in PyTorch operations, but model.mlp is not swiglu");
  }
}

void TrainingSpec::validate(const ModelSpec& model) const {
  auto positive = [](const char* key, int64_t value) {
    if (value <= 0) {
      throw InputError(fmt::format("training.{} must be a positive integer (got {})", key, value))
          .about({fmt::format("training.{}", key)});
    }
  };
  positive("seq_len", seq_len);
  positive("global_batch", global_batch);
  positive("micro_batch", micro_batch);
  if (global_batch % micro_batch != 0) {
    throw InputError(fmt::format("training.global_batch = {} is not a multiple of training.micro_batch = {} "
                                 "(e.g. use global_batch {}; with data parallelism it must be a multiple of "
                                 "micro_batch · dp)",
                                 global_batch, micro_batch,
                                 global_batch < micro_batch
                                     ? fmt::format("{}", micro_batch)
                                     : fmt::format("{} or {}", global_batch / micro_batch * micro_batch,
                                                   (global_batch / micro_batch + 1) * micro_batch)))
        .about({"training.global_batch", "training.micro_batch"});
  }
  if (compute_dtype != DataType::kBf16 && compute_dtype != DataType::kFp16 && compute_dtype != DataType::kFp8) {
    throw InputError(fmt::format("training.precision \"{}\" is not a training compute type (valid: bf16, fp16, fp8)",
                                 name_of(compute_dtype)))
        .about({"training.precision"});
  }
  for (auto [key, p] : {std::pair{"hidden_dropout", hidden_dropout}, std::pair{"attention_dropout", attention_dropout}}) {
    if (!(p >= 0 && p < 1)) {
      throw InputError(fmt::format("training.{} must be in [0, 1) (got {})", key, p))
          .about({fmt::format("training.{}", key)});
    }
  }
  precision.validate();
  if (flash_kernel != FusedAttentionKernel::kCudnn && attention != AttentionKernel::kFlash) {
    throw InputError(fmt::format("training.flash_kernel = {} needs training.attention: flash (got {})",
                                 name_of(flash_kernel), name_of(attention)))
        .about({"training.flash_kernel", "training.attention"});
  }
  if (flash_kernel == FusedAttentionKernel::kFlashV1) {
    // flash-attn 1.x runs head dimensions that are multiples of 8 up to 128 (its README, v1.0).
    const int64_t qk_dim = model.qk_head_size();
    if (qk_dim > 128) {
      throw InputError(fmt::format("training.flash_kernel = flash-v1 runs head dimensions up to 128; model \"{}\" has "
                                   "{} (use flash_kernel cudnn)",
                                   model.name, qk_dim))
          .about({"training.flash_kernel"});
    }
  }
  if (flash_kernel == FusedAttentionKernel::kSdpaFlash && model.mla.enabled()) {
    throw InputError(
        fmt::format("training.flash_kernel = sdpa-flash is not modelled for latent attention (model \"{}\" "
                    "sets model.mla: query/key and value heads differ in size); use flash_kernel: cudnn",
                    model.name))
        .about({"training.flash_kernel", "model.mla"});
  }
  if (model.sliding_window > 0) {
    // Megatron-Core passes the window to Transformer Engine's fused attention (--window-size); the
    // unfused path, PyTorch's SDPA flash backend and flash-attn 1.x take no window.
    if (framework == Framework::kPytorchEager || attention != AttentionKernel::kFlash ||
        flash_kernel != FusedAttentionKernel::kCudnn) {
      throw InputError(fmt::format("model.sliding_window = {} is modelled for training.attention: flash with "
                                   "flash_kernel: cudnn under framework megatron (got attention {}, flash_kernel {}, "
                                   "framework {})",
                                   model.sliding_window, name_of(attention), name_of(flash_kernel), name_of(framework)))
          .about({"model.sliding_window", "training.attention"});
    }
  }
  validate_fusion(model);
  if (moe_experts == MoeExperts::kSequential && framework != Framework::kMegatron) {
    throw InputError(
        "training.moe_experts: sequential is Megatron-Core's SequentialMLP; it needs training.framework: megatron")
        .about({"training.moe_experts", "training.framework"});
  }
  if (moe_experts == MoeExperts::kSequential && !model.moe.enabled()) {
    throw InputError(fmt::format("training.moe_experts: sequential is how a mixture-of-experts layer runs its experts; "
                                 "model {} has none (model.moe.num_experts 0); leave the key at grouped",
                                 model.name.empty() ? std::string("(unnamed)") : model.name))
        .about({"training.moe_experts"});
  }
  if (framework == Framework::kPytorchEager) {
    auto unsupported = [](const std::string& what) {
      throw InputError(fmt::format("training.framework pytorch-eager: {} (the op model follows "
                                   "tools/reference/train_step.py; use training.framework: megatron otherwise)",
                                   what))
          .about({"training.framework"});
    };
    // Two precisions: torch.autocast over fp32 parameters (train_step.py), or FSDP's mixed precision
    // (16-bit param_dtype over a sharded fp32 master, gradients reduced in grads_dtype).
    const bool autocast_fp32 = precision.param_dtype == DataType::kFp32 && precision.grad_dtype == DataType::kFp32 &&
                               !precision.master_weights;
    const bool fsdp_mixed = precision.param_dtype != DataType::kFp32 && precision.master_weights;
    if ((!autocast_fp32 && !fsdp_mixed) || precision.fp32_grad_copy) {
      unsupported(fmt::format("needs fp32 parameters and gradients without a master copy (torch.autocast over fp32 "
                              "parameters: training.params_dtype: fp32, grads_dtype: fp32, master_weights: false), or "
                              "FSDP mixed precision (params_dtype bf16 or fp16 with master_weights: true, with ZeRO "
                              "stage 3 or 2); got params {}, grads {}, master_weights {}",
                              name_of(precision.param_dtype), name_of(precision.grad_dtype), precision.master_weights));
    }
    if (compute_dtype != DataType::kBf16 && compute_dtype != DataType::kFp16) {
      unsupported(fmt::format("training.precision \"{}\" is not an autocast dtype (valid: bf16, fp16)",
                              name_of(compute_dtype)));
    }
    if (optimizer != OptimizerKind::kAdam) unsupported("training.optimizer must be adam (fused AdamW)");
    if (flash_kernel == FusedAttentionKernel::kFlashV1) {
      unsupported("training.flash_kernel flash-v1 is not an SDPA backend (valid: sdpa-flash, cudnn)");
    }
    if (attention != AttentionKernel::kFlash) unsupported("training.attention must be flash (SDPA flash backend)");
    if (recompute == Recompute::kSelective) {
      unsupported("training.recompute selective is not modelled (valid: none, full = torch.utils.checkpoint per layer)");
    }
    if (model.moe.enabled() || model.mla.enabled()) {
      unsupported(fmt::format("model \"{}\" has {}; the PyTorch eager op model covers dense transformers only", model.name,
                              model.moe.enabled() ? "mixture-of-experts layers" : "multi-head latent attention"));
    }
    if (hidden_dropout != 0 || attention_dropout != 0) {
      unsupported(fmt::format("dropout is not modelled (training.hidden_dropout = {}, attention_dropout = {}; valid: 0)",
                              hidden_dropout, attention_dropout));
    }
  }
  expert_token_shares(model, moe_routing);
  if (model.position_embedding == PositionEmbedding::kLearned && seq_len > model.max_position_embeddings) {
    throw InputError(fmt::format("training.seq_len = {} exceeds model.max_position_embeddings = {} of model \"{}\" "
                                 "(learned position embeddings have one row per position)",
                                 seq_len, model.max_position_embeddings, model.name))
        .about({"training.seq_len", "model.max_position_embeddings"});
  }
}

}  // namespace clustersim
