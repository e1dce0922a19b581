// The MLP ops of a dense Megatron layer and of the shared experts (workloads/dense_layer_ops.h).

#include "workloads/dense_layer_ops.h"

#include "workloads/layer_kernels.h"

namespace clustersim::megatron {

void mlp_forward(OpListBuilder& add, const LayerSizes& z, bool all, const MlpNames& names, int64_t ffn,
                 int64_t fc1_out) {
  const int64_t column_input = z.sp ? z.hidden_tokens() : z.full_hidden();
  if (z.sp) add.comm(names.gather, CommKind::kTpAllGather, z.full_hidden());
  add.gemm(names.fc1, z.tokens, fc1_out, z.h, z.gemm, all ? column_input : 0);
  activation_forward(add, z, names.activation, z.tokens, ffn, fc1_out, all);
  add.gemm(names.fc2, z.tokens, z.h, ffn, z.gemm, all ? z.tokens * ffn * z.e : 0);
  if (z.tp) {
    add.comm(z.sp ? names.scatter_rs : names.scatter_ar, z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce,
             z.full_hidden());
  }
}

void mlp_backward(OpListBuilder& add, const LayerSizes& z, const MlpBackwardNames& names, int64_t ffn,
                  int64_t fc1_out) {
  if (z.sp) add.comm(names.gather, CommKind::kTpAllGather, z.full_hidden());
  add.gemm(names.fc2_dgrad, z.tokens, ffn, z.h, z.gemm);
  add.gemm(names.fc2_wgrad, z.h, ffn, z.tokens, z.gemm, 0, 1, true);
  activation_backward(add, z, names.activation, z.tokens, ffn, fc1_out);
  add.gemm(names.fc1_dgrad, z.tokens, z.h, fc1_out, z.gemm);
  if (z.sp) add.comm(names.input_gather, CommKind::kTpAllGather, z.full_hidden());
  add.gemm(names.fc1_wgrad, fc1_out, z.h, z.tokens, z.gemm, 0, 1, true);
  if (z.tp) {
    add.comm(z.sp ? names.scatter_rs : names.scatter_ar, z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce,
             z.full_hidden());
  }
}

}  // namespace clustersim::megatron
