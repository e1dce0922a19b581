#pragma once

// What the Megatron-LM code of 2021-22 did, shared by the publications that ran it: Narayanan et
// al. 2021 (SC21, megatron_sc21.cc), Korthikanti et al. 2022 (megatron_korthikanti.cc), and in part
// BigScience's Megatron-DeepSpeed (bigscience.cc).

#include "tools/validation/conventions/conventions.h"

namespace clustersim::conventions {

// Megatron-LM's GPT runs keep its default dropout of 0.1 (hidden and attention); Llama and MPT
// recipes train without.
constexpr double kMegatronGptDropout = 0.1;

// Records that attention is Megatron-LM's unfused softmax path (FlashAttention came later, 2022);
// returns true.
bool megatron_2021_naive_attention(ConventionContext& ctx);

// Megatron-LM of 2021-22 all-reduced gradients after the backward pass (DDP_impl local); DeepSpeed's
// pipeline engine likewise reduces after the last microbatch. Sets layout.overlap_grad_reduce
// (only ZeRO-3 overlaps) and records it where data parallelism reduces anything.
void reduce_after_backward(ConventionContext& ctx, Layout& layout);

// FLOPs of a step as SC21 counts them: with `hardware` and full recomputation eq. 3 (96·B·s·L·h²·
// (1 + s/6h + V/16Lh), the recomputed forward included), else Megatron-LM's model FLOPs
// (tools/validation/published_flops.h). SC21 and BigScience's training log.
double sc21_source_flops(const PublishedScenario& ps, bool hardware);

// FLOPs of a step as Korthikanti et al. count them (and the Megatron-LM README's MFU): as SC21's,
// and with `hardware` under selective recomputation the appendix's count of the recomputed
// attention core (korthikanti_selective_hardware_flops).
double korthikanti_source_flops(const PublishedScenario& ps, bool hardware);

// The 2021-22 Megatron-LM conventions that SC21 and Korthikanti et al. share: fp16 ("mixed precision
// (16-bit)"), naive attention, dropout 0.1, gradients reduced after the backward pass, and the
// ZeRO-3 rows run with DeepSpeed's defaults.
class Megatron2021Conventions : public PublicationConventions {
 public:
  DataType unstated_precision(ConventionContext& ctx) const override;
  void note_precision(ConventionContext& ctx, DataType dtype) const override;
  bool naive_attention(ConventionContext& ctx) const override { return megatron_2021_naive_attention(ctx); }
  double dropout() const override { return kMegatronGptDropout; }
  void gradient_reduction(ConventionContext& ctx, Layout& layout, TrainingSpec& training,
                          DataType params_dtype) const override;
};

}  // namespace clustersim::conventions
