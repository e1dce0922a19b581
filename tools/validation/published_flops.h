#pragma once

// FLOPs of one training step as each published source counts them, so that a prediction of the
// step time can be turned into the source's own TFLOP/s or MFU (docs/validation/published/
// SOURCES.md, "FLOP-counting conventions differ"). All functions take the global batch B in
// sequences, the sequence length s in tokens, L layers, hidden size h, vocabulary V, and return
// FLOPs of one optimizer step (all GPUs together, 2 FLOPs per multiply-add). They throw nothing;
// callers validate the dimensions (positive) first.

#include <cstdint>

namespace clustersim {

// Narayanan et al. 2021 (SC21), eq. 3: F = 96·B·s·L·h²·(1 + s/(6h) + V/(16·L·h)): a GPT layer with
// ffn = 4h counted with activation recomputation (one extra forward pass, so 4 × the forward's
// 24·B·s·h² + 4·B·s²·h), logits 6·B·s·h·V. BigScience's "hardware TFLOPs" of BLOOM use the same
// expression (Megatron-DeepSpeed, checkpoint_activations_factor = 4).
double sc21_step_flops(double global_batch, double seq_len, double layers, double hidden, double vocab);

// Megatron-LM's model FLOPs (megatron/training/training.py num_floating_point_operations, r0.8):
//   12·B·s·L·h²·((1 + g/a + s/h)·(a·d/h) + (ffn/h)·glu + V/(2·L·h))
// with a query heads, g key/value groups, head size d, glu = 3/2 for SwiGLU, else 1; V the padded
// vocabulary. For a GPT layer (MHA, ffn = 4h) it equals Korthikanti et al. 2022's model FLOPs
// 72·B·s·L·h²·(1 + s/(6h) + V/(12·h·L)). No recomputation; attention over the full s × s matrix.
double megatron_step_flops(double global_batch, double seq_len, double layers, double hidden, double heads,
                           double kv_heads, double head_dim, double ffn_hidden, bool swiglu, double vocab);

// Korthikanti et al. 2022's hardware FLOPs with selective recomputation (App. A): the attention
// core is computed again, 72·B·s·L·h²·(1 + s/(3h) + V/(12·h·L)) for a GPT layer. Their HFU uses it.
double korthikanti_selective_hardware_flops(double global_batch, double seq_len, double layers, double hidden,
                                            double vocab);

// Megatron-Bridge / NeMo model FLOPs of a Llama-style model (performance-summary.md "Model
// TFLOP/sec/GPU"; megatron/bridge/training/utils/flop_utils.py transformer_flops):
//   B·s·L·h²·(12 + 12·g/a + 18·ffn/h + 6·s/h + 6·V/(L·h))
// i.e. SwiGLU MLP, GQA projections, and the attention core counted causally (half of s × s).
double megatron_bridge_step_flops(double global_batch, double seq_len, double layers, double hidden, double heads,
                                  double kv_heads, double ffn_hidden, double vocab);

// MosaicML llm-foundry (scripts/train/benchmarking/README.md, "How is MFU calculated"): per sequence
// 3·(2·N·s) + 3·(4·L·h·s²) for MFU, with 4 instead of 3 for HFU when activations are checkpointed;
// N = the model's parameter count as the README's NumParams column reports it.
double llm_foundry_step_flops(double global_batch, double seq_len, double layers, double hidden, double parameters,
                              bool hardware);

// PaLM's model FLOPs (Chowdhery et al. 2022, App. B): 6·N + 12·L·h·s per token (attention over
// the full sequence), N = all parameters including the embeddings.
double palm_step_flops(double global_batch, double seq_len, double layers, double hidden, double parameters);

}  // namespace clustersim
