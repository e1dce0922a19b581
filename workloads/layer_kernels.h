#pragma once

// The memory-bound kernels the Megatron layer builders share (attention, MLP, experts, final norm):
// the norms, the MLP activation, and the ATen kernels of steps run unfused (training.fused_norm,
// fused_swiglu, fused_softmax false; workloads/aten_kernels.h). Internal to workloads/.

#include <cstdint>
#include <string_view>
#include <vector>

#include "workloads/aten_kernels.h"
#include "workloads/layer_sizes.h"
#include "workloads/op_list_builder.h"

namespace clustersim::megatron {

// Appends an unfused step's ATen kernels (workloads/aten_kernels.h) as memory-bound ops, each its
// own launch, all named `name`; `saved` goes on the first. `attention_core` marks them as part of
// the attention core (Op::attention_core).
void append_aten(OpListBuilder& add, std::string_view name, const std::vector<AtenKernel>& kernels, int64_t saved,
                 bool attention_core = false);

// A norm over the layer's [T(/tp), h] activations: one fused kernel (reads x, writes y) saving
// `saved` bytes, or with training.fused_norm false RMSNorm's ATen kernels, which also keep the
// normalised output for the weight's gradient when `saves_output`.
void norm_forward(OpListBuilder& add, const LayerSizes& z, std::string_view name, int64_t saved, bool saves_output);

// Its backward: fused, reads `reads` activations' worth (x, dy, and the residual gradient it adds
// in the layers) and writes dx; unfused, RMSNorm's autograd kernels.
void norm_backward(OpListBuilder& add, const LayerSizes& z, std::string_view name, int64_t reads);

// The MLP activation over `tokens` rows of fc1's `fc1_out` outputs into `ffn` inputs of fc2: one
// fused kernel (bias-GeLU, bias-SwiGLU), or for SwiGLU with training.fused_swiglu false the ATen
// kernels of silu(a)·g, which also keep silu(a) for the product's gradient.
void activation_forward(OpListBuilder& add, const LayerSizes& z, std::string_view name, int64_t tokens, int64_t ffn,
                        int64_t fc1_out, bool all);
// Its backward: reads the output gradient and fc1's output, writes fc1's output gradient (fused),
// or the ATen kernels of the product's and SiLU's gradients.
void activation_backward(OpListBuilder& add, const LayerSizes& z, std::string_view name, int64_t tokens, int64_t ffn,
                         int64_t fc1_out);

}  // namespace clustersim::megatron
