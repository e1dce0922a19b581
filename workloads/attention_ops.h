#pragma once

// The attention half of a Megatron layer as ops (workloads/transformer.h gives the order and the
// shapes): input_norm, the QKV projection (or multi-head latent attention's down- and
// up-projections), RoPE, the attention core (one fused kernel or the naive QKᵀ, softmax, dropout,
// ·V) with its context-parallel communication (the K/V ring or Ulysses' all-to-alls), proj, the
// tensor-parallel collectives and attention_residual. Internal to workloads/.

#include "workloads/layer_sizes.h"
#include "workloads/op_list_builder.h"

namespace clustersim::megatron {

// input_norm through attention_residual, forward (saving what `policy` keeps for backward).
void attention_forward(OpListBuilder& add, const LayerSizes& z, SavePolicy policy);
// Their backward, attention_residual.backward through input_norm.backward.
void attention_backward(OpListBuilder& add, const LayerSizes& z);
// The attention core alone, forward: used by the layer forward and by selective recompute.
void attention_core_forward(OpListBuilder& add, const LayerSizes& z, SavePolicy policy);

}  // namespace clustersim::megatron
