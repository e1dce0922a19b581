#include "tools/validation/conventions/megatron_2021.h"

#include "tools/validation/published_flops.h"

namespace clustersim::conventions {

bool megatron_2021_naive_attention(ConventionContext& ctx) {
  ctx.assume("attention = naive", "Megatron-LM's unfused softmax path; FlashAttention came later (2022)");
  return true;
}

void reduce_after_backward(ConventionContext& ctx, Layout& l) {
  l.overlap_grad_reduce = l.zero_stage == 3;
  if (l.dp > 1 && l.zero_stage != 3) {
    ctx.assume("no gradient-reduction overlap", "2021-22 Megatron-LM and DeepSpeed reduce after the backward pass");
  }
}

double sc21_source_flops(const PublishedScenario& ps, bool hardware) {
  const FlopShape f = flop_shape(ps);
  if (hardware && f.recompute == Recompute::kFull) {
    return sc21_step_flops(f.global_batch, f.seq_len, f.layers, f.hidden, f.vocab);
  }
  return megatron_step_flops(f.global_batch, f.seq_len, f.layers, f.hidden, f.heads, f.kv_heads, f.head_size,
                             f.ffn_hidden, f.swiglu, f.vocab);
}

double korthikanti_source_flops(const PublishedScenario& ps, bool hardware) {
  const FlopShape f = flop_shape(ps);
  if (hardware && f.recompute == Recompute::kSelective) {
    return korthikanti_selective_hardware_flops(f.global_batch, f.seq_len, f.layers, f.hidden, f.vocab);
  }
  return sc21_source_flops(ps, hardware);
}

DataType Megatron2021Conventions::unstated_precision(ConventionContext& ctx) const {
  ctx.assume("precision = fp16", "not stated");
  return DataType::kFp16;
}

void Megatron2021Conventions::note_precision(ConventionContext& ctx, DataType dtype) const {
  if (dtype == DataType::kFp16 && !contains(lower(ctx.config.precision), "fp16")) {
    ctx.assume("precision = fp16", "\"mixed precision (16-bit)\": the 2021-22 Megatron-LM GPT runs used --fp16");
  }
}

void Megatron2021Conventions::gradient_reduction(ConventionContext& ctx, Layout& l, TrainingSpec& t,
                                                 DataType params_dtype) const {
  reduce_after_backward(ctx, l);
  if (l.zero_stage == 3) {
    t.precision = PrecisionPolicy::deepspeed_mixed(params_dtype, false);  // Table 2's ZeRO-3 runs are DeepSpeed's
    // DeepSpeed's defaults (deepspeed/runtime/zero/config.py): stage3_prefetch_bucket_size 5e7 parameters
    // fetched ahead of use, reduce_bucket_size 5e8 gradient elements per reduction.
    l.zero3_bucket_elements = 50'000'000;
    l.grad_bucket_elements = 500'000'000;
    ctx.assume("DeepSpeed ZeRO-3 gathers of 5e7 parameters prefetched one bucket ahead, gradient buckets of 5e8",
               "stage3_prefetch_bucket_size and reduce_bucket_size defaults; SC21 gives no ZeRO settings");
  }
}

}  // namespace clustersim::conventions
