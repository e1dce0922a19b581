#pragma once

// The mixture-of-experts part of a Megatron MoE layer as ops (workloads/transformer.h): the router,
// the token dispatcher (alltoall, allgather or deepep) with its permutations, the grouped expert
// GEMMs of the busiest expert-parallel rank, the combine and the shared experts; it replaces the
// dense layer's MLP. Internal to workloads/.

#include "workloads/layer_sizes.h"
#include "workloads/op_list_builder.h"

namespace clustersim::megatron {

// Router through unpermute and the shared experts, forward (saving their inputs when `all`).
void moe_forward(OpListBuilder& add, const LayerSizes& z, bool all);
// Their backward, in reverse.
void moe_backward(OpListBuilder& add, const LayerSizes& z);

}  // namespace clustersim::megatron
