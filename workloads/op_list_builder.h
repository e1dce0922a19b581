#pragma once

// The one builder both op models write their lists with: the Megatron-LM op lists of
// workloads/transformer.h and PyTorch eager mode's of workloads/pytorch_eager_ops.h. It appends
// GEMMs, memory-bound kernels and collectives of one pass with the shapes and byte counts of one
// rank, so that every op of both models is filled in the same way (FLOPs, bytes read and written,
// saved activations, the pass).

#include <cstdint>
#include <string_view>
#include <vector>

#include "workloads/aten_kernels.h"
#include "workloads/op.h"

namespace clustersim {

// Whether an FP8 GEMM is preceded by the cast of its activation operand.
enum class Fp8Casts {
  kNone,               // no cast listed (PyTorch eager mode's op lists)
  kTransformerEngine,  // Transformer Engine's fused cast-transpose before each FP8 GEMM (Megatron)
};

// Appends ops of one pass to a list. Sizes are element counts × bytes, each a byte count (int64).
class OpListBuilder {
 public:
  // `casts`: the FP8 casts listed before FP8 GEMMs; `tp`: the tensor-parallel size, for the casts
  // ahead of sequence-parallel all-gathers.
  OpListBuilder(std::vector<Op>& ops, Pass pass, Fp8Casts casts = Fp8Casts::kNone, int64_t tp = 1)
      : ops_(ops), pass_(pass), casts_(casts), tp_(tp) {}

  // A GEMM [m, k] × [k, n] → [m, n] (`batch` of them, A transposed when `a_transposed`) in `dtype`:
  // 2·m·n·k·batch FLOPs, A and B read and C written once, `saved_bytes` kept for backward.
  // With Fp8Casts::kTransformerEngine an FP8 GEMM first quantizes its activation operand A (the
  // layer input, or in backward the output gradient) from 16 bits: TE's fused cast-transpose reads
  // it once and writes the FP8 copy and its transpose (2 + 1 + 1 bytes per element), the transpose
  // serving the weight-gradient GEMM later, which therefore casts nothing (a_transposed). A
  // sequence-parallel all-gather right before the GEMM gathers the FP8 copy: the cast runs on this
  // rank's 1/tp of the rows before it and the gather moves one byte per element (TE's FP8
  // all-gather). Weights are cast once per step (TE caches them across microbatches) and are not
  // listed; TE keeps the FP8 copies for backward, but saved activations stay counted in 16 bits.
  Op& gemm(std::string_view name, int64_t m, int64_t n, int64_t k, DataType dtype, int64_t saved_bytes = 0,
           int64_t batch = 1, bool a_transposed = false);

  // A memory-bound kernel reading `read_bytes` and writing `written_bytes`, keeping `saved_bytes`
  // for backward, on the memory path `access` (cost_models/memory_access.h; Op's default where not
  // given).
  Op& memory(std::string_view name, int64_t read_bytes, int64_t written_bytes, int64_t saved_bytes = 0);
  Op& memory(std::string_view name, MemoryAccess access, int64_t read_bytes, int64_t written_bytes,
             int64_t saved_bytes = 0);
  // One ATen kernel (workloads/aten_kernels.h) as a memory-bound op on its own memory path.
  Op& kernel(std::string_view name, const AtenKernel& kernel, int64_t saved_bytes = 0) {
    return memory(name, kernel.access, kernel.read, kernel.written, saved_bytes);
  }

  // A fused attention kernel (FlashAttention's, cuDNN's, SDPA's) reading `read_bytes` (Q, K, V; in
  // backward also O and dO) and writing `written_bytes` in `dtype`: `flops` by the model's
  // convention (the full s × s score matrix, workloads/transformer.h), `kernel_flops` what the kernel
  // executes; an op of the attention core (Op::attention_core). Where a predictor prices it by its
  // call shape the caller sets Op::attention and Op::attention_kernel.
  Op& fused_attention(std::string_view name, int64_t read_bytes, int64_t written_bytes, int64_t saved_bytes,
                      DataType dtype, double flops, double kernel_flops);

  // A collective of `kind` moving `bytes` (the nccl-tests convention, workloads/op.h), `steps` times.
  Op& comm(std::string_view name, CommKind kind, int64_t bytes, int64_t steps = 1);

  // The ops of the list so far (the caller's and this builder's), and op `i` of it.
  size_t size() const { return ops_.size(); }
  Op& op(size_t i) { return ops_.at(i); }

 private:
  void fp8_cast(int64_t elements);

  std::vector<Op>& ops_;
  Pass pass_;
  Fp8Casts casts_;
  int64_t tp_;
};

}  // namespace clustersim
