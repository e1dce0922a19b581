#pragma once

#include <cstdint>
#include <string_view>

#include "core/data_type.h"
#include "cost_models/attention_predictor.h"
#include "cost_models/precision_policy.h"
#include "workloads/model_spec.h"
#include "workloads/moe_routing.h"

namespace clustersim {

// Activation recomputation (Megatron --recompute-granularity): none; selective recomputes the
// attention core (QKᵀ, softmax, dropout, ·V) in backward (Korthikanti et al. 2022, Sec. 5); full
// stores only each layer's input and re-runs the layer's forward before its backward.
enum class Recompute { kNone, kSelective, kFull };
// flash: one fused kernel (FlashAttention / cuDNN fused attention), never stores s×s tensors;
// naive: QKᵀ, scale-mask-softmax, dropout and ·V as separate kernels (Megatron's unfused path).
enum class AttentionKernel { kFlash, kNaive };

// Whose kernels run the step, which decides the op list, its bytes and launches, and the memory
// accounting (workloads/pytorch_eager_ops.h).
//   megatron       Megatron-LM with Transformer Engine: fused kernels (bias-GeLU, bias-dropout-add,
//                  fused layer norm, fused cross-entropy), 16-bit working weights, cuDNN attention.
//   pytorch-eager  plain PyTorch modules run eagerly under torch.autocast (bf16) over fp32
//                  parameters, as tools/reference/train_step.py: one kernel per ATen op, autocast's
//                  per-forward weight casts, fp32 normalisation, SDPA flash attention, fused AdamW;
//                  one micro-batch per GPU, alone or under DistributedDataParallel (dp > 1).
enum class Framework { kMegatron, kPytorchEager };

// CUDA graphs (workloads/host_costs.h prices a captured kernel at one graph node's host cost):
//   none    every kernel launched by the host thread;
//   layers  each transformer layer's forward and backward captured (Megatron-LM --enable-cuda-graph,
//           Transformer Engine's make_graphed_callables); in a mixture-of-experts layer only the
//           attention part (--cuda-graph-scope attn), since the dropless dispatcher synchronises;
//           embeddings, head, loss and optimizer stay eager. Framework megatron.
//   step    the whole forward, backward and optimizer step captured (torch.cuda.graph with
//           AdamW(capturable=True), as tools/reference/host_launch.py's graph steps); framework
//           pytorch-eager on one GPU or under DistributedDataParallel.
enum class CudaGraphs { kNone, kLayers, kStep };

// How Megatron-Core runs a mixture-of-experts layer's local experts (Megatron --moe-grouped-gemm):
//   grouped     one grouped GEMM per expert weight over every local expert (Transformer Engine's
//               TEGroupedMLP), the fused permutation and router kernels: a few launches per layer;
//   sequential  SequentialMLP: a loop over the local experts, each an MLP of Megatron's own
//               ColumnParallelLinear and RowParallelLinear with the compiled weighted SwiGLU, and the
//               router and permutation in PyTorch operations, as Megatron-Core's local spec runs
//               without Transformer Engine (the layer measured in tools/data/h200-2026-12-01-moe/).
enum class MoeExperts { kGrouped, kSequential };

std::string_view name_of(Recompute recompute);        // "none", "selective", "full"
std::string_view name_of(AttentionKernel attention);  // "flash", "naive"
Recompute parse_recompute(std::string_view text);
AttentionKernel parse_attention_kernel(std::string_view text);
std::string_view name_of(Framework framework);  // "megatron", "pytorch-eager"
Framework parse_framework(std::string_view text);
std::string_view name_of(CudaGraphs graphs);  // "none", "layers", "step"
CudaGraphs parse_cuda_graphs(std::string_view text);
std::string_view name_of(MoeExperts experts);  // "grouped", "sequential"
MoeExperts parse_moe_experts(std::string_view text);

// How a model is trained: batch, sequence, numerics and memory-saving options.
struct TrainingSpec {
  int64_t seq_len = 0;       // tokens per sequence s
  int64_t global_batch = 0;  // sequences per optimizer step over all data-parallel replicas
  int64_t micro_batch = 1;   // sequences per forward/backward pass b
  DataType compute_dtype = DataType::kBf16;  // GEMM inputs: bf16, fp16 or fp8 (fp8 keeps bf16 activations)
  Recompute recompute = Recompute::kNone;
  AttentionKernel attention = AttentionKernel::kFlash;
  // Which fused kernel runs attention "flash" in the Megatron op lists: cuDNN's fused attention
  // (Transformer Engine on Hopper; ComputeDefaults' efficiencies) or a FlashAttention-2-class kernel
  // (Dao's FlashAttention-2, PyTorch SDPA's flash backend, Triton FlashAttention: no Hopper-specific
  // path), priced per shape as ComputeCostModel prices kSdpaFlash. The pytorch-eager op lists always
  // run SDPA flash.
  FusedAttentionKernel flash_kernel = FusedAttentionKernel::kCudnn;
  // Whether RMSNorm, RoPE and SwiGLU's gate each run as one fused kernel (Megatron-LM with
  // Transformer Engine: TE's RMSNorm, --apply-rope-fusion, --bias-swiglu-fusion) or, false, as the
  // ATen kernels of plain PyTorch code (workloads/aten_kernels.h), as frameworks without those
  // kernels run them. Megatron op lists only: pytorch-eager prices its own ATen ops.
  bool fused_norm = true;
  bool fused_rope = true;
  bool fused_swiglu = true;
  // Naive attention's scale-mask-softmax as one fused kernel (Megatron --masked-softmax-fusion) or,
  // false, as the ATen kernels of a masked softmax in PyTorch operations (workloads/aten_kernels.h).
  bool fused_softmax = true;
  OptimizerKind optimizer = OptimizerKind::kAdam;
  Framework framework = Framework::kMegatron;
  CudaGraphs cuda_graphs = CudaGraphs::kNone;
  PrecisionPolicy precision = PrecisionPolicy::megatron_mixed();
  // Dropout probabilities (Megatron --hidden-dropout, --attention-dropout; default 0.1 each, 0 for
  // Llama recipes). A positive probability stores a 1-byte mask per element for backward.
  double hidden_dropout = 0.1;
  double attention_dropout = 0.1;
  // Mixture-of-experts models: how tokens spread over the experts (workloads/moe_routing.h).
  MoeRouting moe_routing;
  // Mixture-of-experts models under framework megatron: how the local experts run (MoeExperts).
  MoeExperts moe_experts = MoeExperts::kGrouped;

  // Element type of stored activations: the compute dtype for bf16/fp16; bf16 for fp8 compute
  // (fp8 recipes cast to fp8 per GEMM and keep bf16 activations; Transformer Engine's fp8 caches
  // of GEMM inputs are not modelled).
  DataType activation_dtype() const;

  // Throws InputError naming the field for non-positive seq_len, global_batch or micro_batch, a
  // global batch not divisible by the micro batch, a compute dtype other than bf16/fp16/fp8,
  // dropout outside [0, 1), an invalid precision policy, and (with learned positions) a sequence
  // longer than model.max_position_embeddings, and invalid MoE routing (expert_token_shares).
  // With framework pytorch-eager also what that op
  // model does not cover: parameters, gradients not fp32 or a master copy (autocast over fp32
  // parameters), a compute dtype other than bf16/fp16, an optimizer other than adam, naive
  // attention, selective recompute, non-zero dropout, and mixture-of-experts or latent attention.
  // flash_kernel sdpa-flash or flash-v1 needs attention flash; sdpa-flash a model without latent attention (equal
  // query/key and value head sizes). fused_norm false needs an RMSNorm model, fused_rope false a
  // RoPE model without latent attention, fused_swiglu false a SwiGLU MLP, fused_softmax false
  // attention naive, and all four framework megatron; moe_experts sequential framework megatron and a
  // mixture-of-experts model.
  void validate(const ModelSpec& model) const;

 private:
  void validate_fusion(const ModelSpec& model) const;
};

}  // namespace clustersim
