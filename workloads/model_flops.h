#pragma once

#include "workloads/model_spec.h"
#include "workloads/training_spec.h"

namespace clustersim {

// FLOPs of one training step (global_batch sequences, all ranks together), for MFU and HFU.
//   model        forward + backward of every GEMM and of the attention core, no recomputation,
//                attention over the full s × s score matrix: the convention of Megatron-LM
//                (Narayanan et al. 2021 eq. 3 without recompute; Korthikanti et al. 2022
//                72·B·s·L·h²·(1 + s/(6h) + V/(12·h·L)) for GPT) and of PaLM (Chowdhery et al. 2022,
//                App. B: 6N + 12·L·H·Q·T per token, which also counts the full sequence). MFU uses it.
//                A sliding-window layer counts s × min(window, s) (every query against its window).
//   model_causal the same with the attention core's FLOPs halved, as causal kernels execute them
//                (sliding-window layers: the w(w + 1)/2 + (s − w)·w query-key pairs the kernel executes)
//                (FlashAttention's benchmarks count causal attention this way); reported alongside.
//   hardware     model + the forward FLOPs that recomputation repeats (full: every layer's
//                forward; selective: the naive attention core; with the fused kernel nothing). HFU.
//   executed     what the kernels run, recomputation included: the fused attention kernel at its
//                causal count forward and 2.5× that backward (FlashAttention's benchmark convention:
//                five matmuls backward against two forward), the unfused attention GEMMs over the
//                whole masked s × s matrix, every other op as in `model`. The executed fraction of
//                peak divides it by GPU-seconds × peak.
// The backward of each GEMM is two GEMMs of the forward's size (data and weight gradient), so a layer
// costs 3× its forward; the LM head uses the padded vocabulary. Elementwise ops are not counted.
struct StepFlops {
  double model = 0;
  double model_causal = 0;
  double hardware = 0;
  double executed = 0;
};

// Sums the ops of the whole (unsharded) model. Throws InputError for an invalid model or training.
StepFlops step_flops(const ModelSpec& model, const TrainingSpec& training);

// The closed form for GPT models (ffn = 4h, multi-head attention, GeLU):
// 72·B·s·L·h²·(1 + s/(6h) + V/(12·h·L)) (Korthikanti et al. 2022, App. A).
double megatron_gpt_model_flops(double global_batch, double seq_len, double layers, double hidden, double vocab);

}  // namespace clustersim
