#pragma once

// The training step of a dense decoder as PyTorch runs it eagerly under torch.autocast (bf16)
// with fp32 parameters: the op model of `training.framework: pytorch-eager`, written from
// tools/reference/train_step.py (the reference step clustersim is validated against) and PyTorch's
// documented behaviour. One GPU, or data parallelism around it: DistributedDataParallel, or
// FullyShardedDataParallel with its mixed precision (16-bit param_dtype over a sharded fp32 master:
// the gathered weights are already 16-bit, so the per-forward weight casts below and autocast's
// weight copies drop out; the weight gradients are cast to fp32 when reduced in fp32); or pipeline
// stages as train_step.py --parallel pp runs them (contiguous layers per stage, each micro-batch's
// forward in its own autocast region, bf16 activations between stages); or tensor parallelism as
// train_step.py --parallel tp runs it: Megatron's column- and row-parallel layers (heads and MLP
// width split; a blocking all-reduce of the bf16 output after proj and fc2 in forward, of the fp32
// gradient of the norm output before each norm's backward), while every rank holds the whole
// embedding and LM head and computes the whole loss. Context and sequence parallelism are
// Megatron's only (framework megatron).
//
// What differs from the Megatron op model (workloads/transformer.h), kernel by kernel:
//   - autocast casts each linear layer's fp32 weight to bf16 in every forward (its cache lives for
//     one autocast region, torch.autocast docs), and the cast's backward turns each bf16 weight
//     gradient into the fp32 .grad (6 bytes per weight each way); the fp32 activations entering a
//     linear layer are cast too;
//   - normalisation runs in fp32 on an fp32 copy of its input (train_step.py's Fp32Norm, as
//     autocast runs layer_norm), its output cast to bf16 for the next GEMM;
//   - with biases, the row-parallel bias (`y + self.bias`, an fp32 parameter added outside the
//     autocast linear) promotes the output and with it the residual stream to fp32; without biases
//     the stream stays bf16 and each norm first copies it to fp32;
//   - QKV and fc1 biases ride in the GEMM epilogue (addmm); GeLU and SwiGLU (SiLU of the gate chunk
//     and the product with the up chunk: strided views) are separate kernels, as RoPE's multiplies,
//     adds and concatenation are;
//   - attention is F.scaled_dot_product_attention on the backend training.flash_kernel names
//     (sdpa-flash: FlashAttention-2, as train_step.py restricts it; cudnn: cuDNN's fused kernel);
//     with RoPE its inputs are contiguous and its output is copied back to [b, s, h];
//   - the loss is log_softmax of the bf16 logits (bf16 out) and nll_loss, which autocast runs in
//     fp32 (torch.autocast docs: "ops that can autocast to float32": nll_loss): the log-
//     probabilities are copied to fp32, and nll_loss keeps that copy for its backward (PyTorch's
//     derivatives.yaml passes `self` to nll_loss_backward);
//   - full recompute is torch.utils.checkpoint (non-reentrant) per layer: the forward is re-run
//     before the layer's backward, with its weight casts, up to the last op that saves a tensor
//     (checkpoint's early stop, on by default: the fc2 GEMM, its bias and residual adds are not
//     re-run);
//   - the optimizer is torch.optim.AdamW(fused=True): multi-tensor launches reading parameter,
//     gradient and both moments and writing parameter and moments (28 bytes per parameter), no
//     gradient clipping; zero_grad(set_to_none=True) launches nothing.
// Each memory-bound kernel carries its PyTorch launch path (cost_models/memory_access.h). The
// autocast casts of the QKV and fc1 biases (fp32 to bf16 for addmm's epilogue) and of their
// gradients back to fp32 are listed, small as they are: each is a launch the host thread pays for
// (workloads/host_costs.h). So are the tiny kernels that a profiled PyTorch 2.11 step of
// tools/reference/train_step.py launches (one H200, 2026-12-02): RoPE's table casts, flash's
// dot_do_o and convert_dq and its split-KV combine, GQA's group sums, the loss scalar's kernels, the
// zero fills of dense gradients and the first layer's casts of its bf16 input where the residual
// stream is fp32. Not listed: cuBLAS's own memsets and split-K reduction kernels inside the LM
// head's GEMMs (which cuBLAS picks by its heuristics: 3 launches in the profiled llama-220m step,
// 1 in gpt-125m's).

#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"
#include "cost_models/memory_model.h"
#include "workloads/model_spec.h"
#include "workloads/op.h"
#include "workloads/shard_spec.h"
#include "workloads/training_spec.h"

namespace clustersim {

struct PytorchEagerOps {
  std::vector<Op> layer_forward;
  std::vector<Op> layer_recompute;  // full recompute: the checkpointed layer's re-run forward
  std::vector<Op> layer_backward;
  std::vector<Op> embedding_forward;
  std::vector<Op> embedding_backward;
  std::vector<Op> head_forward;
  std::vector<Op> head_backward;
};

// Builds the op lists of one micro-batch. Each forward op's `saved` is what it keeps for backward
// (see pytorch_eager_layer_saved_bytes). Throws InputError when the shard has cp > 1 or sequence
// parallelism.
PytorchEagerOps pytorch_eager_ops(const ModelSpec& model, const TrainingSpec& training, const ShardedDims& dims);

// Bytes one layer keeps from its forward to its backward, without recompute (T = b·s tokens,
// 16-bit activations unless stated): the fp32 norm inputs (2 × 4Th), the bf16 inputs of QKV and fc1
// (2 × 2Th), the QKV output 2T(q + 2kv) (attention's q, k, v are views of it), with RoPE the rotated
// q and k 2T(q + kv) and the copied attention output 2Tq, the attention output 2Tq, the fc1 output
// 2T·fc1_out (GeLU's or SiLU's input), the fc2 input 2T·ffn and for SwiGLU the SiLU output 2T·ffn.
// The bf16 weight copies are counted apart (autocast_weight_bytes). With full recompute a layer
// keeps its input only: 4Th with biases (fp32 residual stream), else 2Th.
int64_t pytorch_eager_layer_saved_bytes(const ModelSpec& model, const TrainingSpec& training, const ShardedDims& dims,
                                        bool recompute);

// Peak device memory of the step (what torch.cuda.max_memory_allocated reports, plus the
// runtime overhead of MemoryModel::default_runtime_overhead()), the largest of four moments:
//   forward, at the loss:  fp32 parameters and AdamW moments (12 B/param), autocast's bf16 copies
//                          of every linear weight (2 B per weight, LM head included), the saved
//                          activations and the final norm's saved input and output (6Th), and the
//                          loss tensors 8TV: bf16 logits 2TV, bf16 log-probabilities 2TV, their
//                          fp32 copy 4TV;
//   backward, start:       as above but the logits freed and nll_loss's fp32 gradient 4TV alive
//                          (10TV); with full recompute only the LM head's bf16 weight is still held
//                          (the autocast cache is gone);
//   backward, first recomputed layer (full recompute): checkpoint inputs, the LM-head gradient
//                          (4 B/weight), one layer's activations and bf16 weights;
//   backward, end:         parameters, gradients (fp32, 4 B/param) and moments: 16 B/param.
// Activations grow and gradients replace them linearly in between, so these bound the step. In the
// Under FSDP with more than one micro-batch per step the gradients of the earlier micro-batches
// (FsdpSharding::accumulated_grad_bytes) are alive in every moment. In the breakdown: params = fp32
// parameters (this rank's shard), param_copies = bf16 copies and gathered weights alive then,
// grads = gradients alive then,
// optimizer_state = AdamW moments, activations = saved activations, logits = loss tensors.
struct PytorchEagerMemory {
  MemoryBreakdown peak;
  std::string moment;  // "forward (loss)", "backward (start)", "backward (first recomputed layer)", "backward (end)"
};
// Under FullyShardedDataParallel the model states (fp32 master parameter, gradient and two AdamW
// moments: 4 + 4 + 8 bytes per parameter) are divided over `shards` ranks and `gathered_bytes` of
// 16-bit weights are held unsharded; the moments are compared with those figures. An estimate: no
// FSDP measurement validates it.
// `accumulated_grad_bytes`: the gradients alive while later micro-batches of a step run (gradient
// accumulation, more than one micro-batch per step): the sharded fp32 gradients when every
// micro-batch reduce-scatters (FSDP outside no_sync, FSDP2), the unsharded ones under no_sync (HF
// Trainer and accelerate accumulate so); 0 with one micro-batch.
struct FsdpSharding {
  int64_t shards = 1;
  int64_t gathered_bytes = 0;
  int64_t accumulated_grad_bytes = 0;
};
// One pipeline stage of the model (train_step.py --parallel pp): `layers` of the model's layers,
// the input embedding on the first stage, the final norm, LM head and loss on the last, and the
// activations of `inflight_microbatches` micro-batches alive at once (GPipe: every micro-batch;
// parallelism/pipeline_schedule.h, peak_inflight_passes). Each micro-batch's forward is its own
// autocast region, so its graph keeps its own bf16 weight copies (2 B per linear weight of the
// stage) and, on the last stage, its loss tensors (6TV: bf16 log-probabilities and their fp32
// copy). A stage without the embedding keeps its received bf16 input (2Th, the leaf its gradient
// is sent from) and a stage without the head keeps its output (the residual stream, 4Th or 2Th)
// for out.backward(grad). Moments as above, the current micro-batch's over the others', plus
// "backward (first micro-batch done)": all gradients allocated, n − 1 micro-batches still held.
// Measured on two H200s (tools/data/h200x2-2026-11-29/reference-x2-pp*.jsonl).
struct EagerStageShare {
  int64_t layers = -1;  // layers on the stage; −1: all of the model's
  bool embedding = true;
  bool head = true;
  int64_t inflight_microbatches = 1;
};
// Throws InputError for a share with more layers than the model or fewer than one micro-batch.
PytorchEagerMemory pytorch_eager_peak_memory(const ModelSpec& model, const TrainingSpec& training,
                                             const ShardedDims& dims, int64_t parameters,
                                             const FsdpSharding* fsdp = nullptr,
                                             const EagerStageShare& share = EagerStageShare{});

// The fused AdamW step over `params` fp32 parameters in `tensors` tensors, as PyTorch launches it:
// "optimizer.step_count" (_foreach_add_ on the per-tensor step counters, 110 tensors a launch), then
// "optimizer.fused_adamw" once per multi_tensor_apply launch (at most 320 chunks of 65,536 elements
// and 36 tensors each), together moving 28 bytes per parameter. All kFusedOptimizer ops. Throws
// InputError for a negative count.
std::vector<Op> pytorch_eager_optimizer_ops(int64_t params, int64_t tensors);

}  // namespace clustersim
