// Norms, the MLP activation and unfused ATen kernels of the Megatron layers
// (workloads/layer_kernels.h).

#include "workloads/layer_kernels.h"

namespace clustersim::megatron {

void append_aten(OpListBuilder& add, std::string_view name, const std::vector<AtenKernel>& kernels, int64_t saved,
                 bool attention_core) {
  for (size_t i = 0; i < kernels.size(); ++i) {
    Op& op = add.kernel(name, kernels[i], i == 0 ? saved : 0);
    op.attention_core = attention_core;
  }
}

void norm_forward(OpListBuilder& add, const LayerSizes& z, std::string_view name, int64_t saved, bool saves_output) {
  const int64_t seq_hidden = z.hidden_tokens();
  if (z.fused_norm) {
    add.memory(name, seq_hidden, seq_hidden, saved);
    return;
  }
  append_aten(add, name, rms_norm_forward_kernels(z.seq_tokens, z.h, z.e), saved + (saves_output ? seq_hidden : 0));
}

// Its backward: fused, reads `reads` activations' worth (x, dy, and the residual gradient it adds
// in the layers) and writes dx; unfused, RMSNorm's autograd kernels.
void norm_backward(OpListBuilder& add, const LayerSizes& z, std::string_view name, int64_t reads) {
  const int64_t seq_hidden = z.hidden_tokens();
  if (z.fused_norm) {
    add.memory(name, reads * seq_hidden, seq_hidden);
    return;
  }
  append_aten(add, name, rms_norm_backward_kernels(z.seq_tokens, z.h, z.e), 0);
}

void activation_forward(OpListBuilder& add, const LayerSizes& z, std::string_view name, int64_t tokens, int64_t ffn,
                        int64_t fc1_out, bool all) {
  if (z.swiglu && !z.fused_swiglu) {
    append_aten(add, name, swiglu_forward_kernels(tokens * ffn), all ? tokens * (fc1_out + ffn) * z.e : 0);
    return;
  }
  add.memory(name, tokens * fc1_out * z.e, tokens * ffn * z.e, all ? tokens * fc1_out * z.e : 0);
}

void activation_backward(OpListBuilder& add, const LayerSizes& z, std::string_view name, int64_t tokens, int64_t ffn,
                         int64_t fc1_out) {
  if (z.swiglu && !z.fused_swiglu) {
    append_aten(add, name, swiglu_backward_kernels(tokens * ffn), 0);
    return;
  }
  add.memory(name, tokens * (ffn + fc1_out) * z.e, tokens * fc1_out * z.e);
}

}  // namespace clustersim::megatron
