#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "cost_models/memory_access.h"

namespace clustersim {

// One ATen kernel of an elementwise step written as plain PyTorch operations and run eagerly: what
// it computes (for traces and tests), the memory path that decides its rate
// (cost_models/memory_access.h) and the bytes it reads and writes. Each operand is read and each
// result written once; reductions to one value per row write `tokens` elements.
struct AtenKernel {
  std::string_view step;
  MemoryAccess access = MemoryAccess::kElementwise;
  int64_t read = 0;     // bytes
  int64_t written = 0;  // bytes
};

// RoPE of one bf16 tensor of `elements` elements as tools/reference/train_step.py applies it
// (apply_rotary over the two halves): x1·cos and x2·sin, x2·cos and x1·sin on the strided halves (one
// strided pass reading and writing 2b, b = 2·elements bytes), a subtraction and an addition (2b read,
// b written) and their concatenation (b, b). The rotate_half form (x·cos + cat(−x2, x1)·sin, as in
// Aleph Alpha's scaling and Hugging Face's Llama) moves 10b instead of these 9b. Throws InputError for
// a negative count.
std::vector<AtenKernel> rope_forward_kernels(int64_t elements);
// Its backward: the negation and four multiplies on strided halves and the scatters of the halves'
// gradients into full-size zeros (7b/2 read and written, strided); two adds, two zero fills and the
// sum of the two full-size gradients (4b, 4b).
std::vector<AtenKernel> rope_backward_kernels(int64_t elements);

// RoPE of one bf16 tensor [b, heads, s, d] of `elements` elements exactly as
// tools/reference/train_step.py's apply_rotary computes it (the pytorch-eager op lists), one kernel
// per PyTorch operation (9, as a profiled PyTorch 2.11 step on one H200 launches them, 2026-12-02):
// the fp32 cos and sin tables [s, d/2] of `table_elements` elements each cast to bf16
// (cos.to(x.dtype), sin.to(x.dtype), in every call); x1·cos, x2·sin, their difference, x2·cos,
// x1·sin, their sum, and the concatenation of the two. With b = 2·elements bytes: each multiply
// reads a strided half (b/2) and the bf16 table and writes b/2; the subtraction and the addition
// read b and write b/2; the concatenation reads and writes b. The kernels above group these for the
// Megatron op lists. Throws InputError for negative counts.
std::vector<AtenKernel> apply_rotary_forward_kernels(int64_t elements, int64_t table_elements);
// Its backward, in autograd's order (12 kernels): x1·sin's and x2·cos's multiplies by the tables
// (g2·sin, g2·cos, on the strided halves of the concatenation's gradient), the subtraction's negation
// (−g1), x2·sin's multiply and its add_ into x2's gradient, x1·cos's multiply and its add_ into x1's;
// then each half's slice backward (a zero fill of a full-size gradient, b written, and the copy of
// the half into it, b/2 read and written, strided) and the add_ of the two full-size gradients (2b
// read, b written).
std::vector<AtenKernel> apply_rotary_backward_kernels(int64_t elements, int64_t table_elements);

// SwiGLU's gate as PyTorch computes it unfused, silu(a) · g over the two halves of fc1's bf16 output
// (Megatron-LM's path without --bias-swiglu-fusion, train_step.py's): `elements` = tokens × ffn per
// rank. Forward: SiLU of the strided half (2·n·2 bytes moved) and the product (reads both halves,
// writes n). Backward: the product's two input gradients, SiLU's backward and the chunk's backward
// concatenating the two half-gradients.
std::vector<AtenKernel> swiglu_forward_kernels(int64_t elements);
std::vector<AtenKernel> swiglu_backward_kernels(int64_t elements);

// RMSNorm written in PyTorch operations over [tokens, hidden] activations of `element_bytes` bytes:
// y = (x · rsqrt(mean(x²) + ε)).float().type_as(x) · w, as Aleph Alpha's scaling framework writes it
// (src/scaling/core/nn/norm/rms_norm.py; LLaMA's reference model differs only in casting x to fp32
// first). Forward: pow, mean over the row, + ε, rsqrt, the broadcast multiply, the .float() and
// .type_as() round trip and the weight multiply: 8 kernels moving 13 × tokens × hidden × element
// bytes (2 bytes: 26 bytes per element, against 4 for a fused kernel). Backward (autograd, reverse
// order): the weight multiply's input gradient, the weight gradient's product and column sum, the
// two casts' backwards, the normalising multiply's two gradients (a product and a row sum for the
// rsqrt branch), rsqrt's and mean's backwards, pow's backward (2·x·g) and the sum of x's two
// gradients: 13 kernels moving 27 × tokens × hidden × element bytes. Throws InputError for negative
// sizes or element bytes other than 2 or 4.
std::vector<AtenKernel> rms_norm_forward_kernels(int64_t tokens, int64_t hidden, int64_t element_bytes);
std::vector<AtenKernel> rms_norm_backward_kernels(int64_t tokens, int64_t hidden, int64_t element_bytes);

// Masked softmax over `elements` attention scores (element_bytes 2 or 4) in PyTorch operations, as
// Aleph Alpha's scaling framework's MaskedSoftmaxTorch runs it with its defaults (softmax in the
// scores' dtype, the 1/√d scale already applied by baddbmm; src/scaling/core/nn/masked_softmax/
// masked_softmax.py): a copy of the score view before the in-place fill, masked_fill_ with the
// [s, s] boolean mask broadcast (one byte per score), and softmax: 3 kernels moving
// (6 × element_bytes + 1) bytes per score (a fused scale-mask-softmax: 2 × element_bytes). Backward:
// softmax's (reads its output and the gradient) and the fill's (zeroes the masked gradient):
// (5 × element_bytes + 1) per score (fused: 3 × element_bytes). Megatron-LM
// without --masked-softmax-fusion multiplies by the scale in place of the copy (the same bytes) and
// adds that multiply's backward, not counted. Throws InputError for a negative count or element
// bytes other than 2 or 4.
std::vector<AtenKernel> masked_softmax_forward_kernels(int64_t elements, int64_t element_bytes);
std::vector<AtenKernel> masked_softmax_backward_kernels(int64_t elements, int64_t element_bytes);

}  // namespace clustersim
