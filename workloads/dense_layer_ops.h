#pragma once

// The MLP of a dense Megatron layer as ops (workloads/transformer.h): [tp_all_gather (sp)], fc1, the
// activation, fc2, [tp_all_reduce or tp_reduce_scatter (sp)], and their backward; the same builder
// lists a mixture-of-experts layer's shared experts under their own names. Internal to workloads/.

#include <cstdint>
#include <string_view>

#include "workloads/layer_sizes.h"
#include "workloads/op_list_builder.h"

namespace clustersim::megatron {

// A tensor-parallel MLP of `ffn` (per rank) on the layer's tokens: the dense MLP ("fc1", ...) or the
// shared experts ("shared.fc1", ...).
struct MlpNames {
  std::string_view gather, fc1, activation, fc2, scatter_rs, scatter_ar;
};
inline constexpr MlpNames kDenseMlp{"mlp.tp_all_gather", "fc1", "activation", "fc2", "mlp.tp_reduce_scatter",
                                    "mlp.tp_all_reduce"};
inline constexpr MlpNames kSharedMlp{"shared.tp_all_gather",     "shared.fc1",
                                     "shared.activation",        "shared.fc2",
                                     "shared.tp_reduce_scatter", "shared.tp_all_reduce"};

struct MlpBackwardNames {
  std::string_view gather, fc2_dgrad, fc2_wgrad, activation, fc1_dgrad, input_gather, fc1_wgrad, scatter_rs,
      scatter_ar;
};
inline constexpr MlpBackwardNames kDenseMlpBackward{"mlp.tp_all_gather.backward",
                                                    "fc2.dgrad",
                                                    "fc2.wgrad",
                                                    "activation.backward",
                                                    "fc1.dgrad",
                                                    "fc1.input_all_gather",
                                                    "fc1.wgrad",
                                                    "mlp.tp_reduce_scatter.backward",
                                                    "mlp.tp_all_reduce.backward"};
inline constexpr MlpBackwardNames kSharedMlpBackward{"shared.tp_all_gather.backward",
                                                     "shared.fc2.dgrad",
                                                     "shared.fc2.wgrad",
                                                     "shared.activation.backward",
                                                     "shared.fc1.dgrad",
                                                     "shared.fc1.input_all_gather",
                                                     "shared.fc1.wgrad",
                                                     "shared.tp_reduce_scatter.backward",
                                                     "shared.tp_all_reduce.backward"};

// The forward ops of a tensor-parallel MLP of `ffn` intermediate columns per rank (fc1 writes
// `fc1_out`: 2·ffn for SwiGLU), saving its inputs when `all`.
void mlp_forward(OpListBuilder& add, const LayerSizes& z, bool all, const MlpNames& names, int64_t ffn,
                 int64_t fc1_out);
// Its backward: data- and weight-gradient GEMMs of fc2 and fc1 and the mirrored collectives.
void mlp_backward(OpListBuilder& add, const LayerSizes& z, const MlpBackwardNames& names, int64_t ffn, int64_t fc1_out);

}  // namespace clustersim::megatron
