#pragma once

#include <cstdint>
#include <string_view>

#include "core/data_type.h"

namespace clustersim {

// The optimizer, which decides how many state tensors each parameter carries.
//   adam: two moments (exp_avg, exp_avg_sq) — torch.optim.AdamW, Megatron's FusedAdam.
//   sgd:  one momentum buffer — Megatron's SGD with --sgd-momentum (default 0.9).
enum class OptimizerKind { kAdam, kSgd };

std::string_view name_of(OptimizerKind optimizer);
// "adam" or "sgd". Throws InputError naming the text and the valid names.
OptimizerKind parse_optimizer(std::string_view text);
// State tensors per parameter: adam 2, sgd 1.
int optimizer_state_count(OptimizerKind optimizer);

// Where each byte of a parameter's training state lives, made explicit because frameworks differ
// (docs/cases/memory.md M1, M2):
//   param_dtype            working weights the forward pass reads (bf16/fp16, or fp32)
//   grad_dtype             the gradient buffer backward accumulates into: Megatron keeps an fp32
//                          main_grad (--accumulate-allreduce-grads-in-fp32), DeepSpeed a 16-bit one
//   master_weights         an fp32 copy of the weights owned by the optimizer (mixed precision)
//   fp32_grad_copy         an extra fp32 copy of the gradients owned by the optimizer (DeepSpeed
//                          ZeRO keeps one per partition; the ZeRO paper's K = 12 leaves it out)
//   optimizer_state_dtype  dtype of the moments
// Bytes per parameter, unsharded: params + grads + optimizer, where optimizer = master (4) +
// fp32 grad copy (4) + states × state size. Megatron's default (bf16, fp32 grads, master, Adam
// fp32) is 2 + 4 + 12 = 18 B/param (Megatron-LM issue 654); sharding is applied by MemoryModel.
struct PrecisionPolicy {
  DataType param_dtype = DataType::kBf16;
  DataType grad_dtype = DataType::kFp32;
  bool master_weights = true;
  bool fp32_grad_copy = false;
  DataType optimizer_state_dtype = DataType::kFp32;

  // Megatron-LM mixed precision: 16-bit params, fp32 main grads, fp32 master, fp32 moments.
  static PrecisionPolicy megatron_mixed(DataType param_dtype = DataType::kBf16);
  // DeepSpeed ZeRO mixed precision: 16-bit params and grads, fp32 master, fp32 moments; with
  // `fp32_grad_copy` the optimizer also holds fp32 gradients (DeepSpeed's estimator, 18 B sharded).
  static PrecisionPolicy deepspeed_mixed(DataType param_dtype, bool fp32_grad_copy);
  // Pure fp32: fp32 weights, grads and moments, no second copy (4 + 4 + 8 = 16 B/param for Adam).
  static PrecisionPolicy pure_fp32();

  // Throws InputError when the combination is meaningless: a master copy of fp32 weights, an fp8
  // parameter or gradient dtype (fp8 training keeps 16-bit or fp32 weights and casts per GEMM),
  // or moments narrower than 16 bits.
  void validate() const;

  int64_t param_bytes() const;                                  // per parameter
  int64_t grad_bytes() const;                                   // per parameter
  int64_t optimizer_bytes(OptimizerKind optimizer) const;       // master + grad copy + states
};

}  // namespace clustersim
