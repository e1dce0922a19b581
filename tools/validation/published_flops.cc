#include "tools/validation/published_flops.h"

namespace clustersim {

double sc21_step_flops(double global_batch, double seq_len, double layers, double hidden, double vocab) {
  return 96.0 * global_batch * seq_len * layers * hidden * hidden *
         (1.0 + seq_len / (6.0 * hidden) + vocab / (16.0 * layers * hidden));
}

double megatron_step_flops(double global_batch, double seq_len, double layers, double hidden, double heads,
                           double kv_heads, double head_dim, double ffn_hidden, bool swiglu, double vocab) {
  const double query_to_hidden = heads * head_dim / hidden;
  const double glu = swiglu ? 1.5 : 1.0;
  return 12.0 * global_batch * seq_len * layers * hidden * hidden *
         ((1.0 + kv_heads / heads + seq_len / hidden) * query_to_hidden + ffn_hidden / hidden * glu +
          vocab / (2.0 * layers * hidden));
}

double korthikanti_selective_hardware_flops(double global_batch, double seq_len, double layers, double hidden,
                                            double vocab) {
  return 72.0 * global_batch * seq_len * layers * hidden * hidden *
         (1.0 + seq_len / (3.0 * hidden) + vocab / (12.0 * hidden * layers));
}

double megatron_bridge_step_flops(double global_batch, double seq_len, double layers, double hidden, double heads,
                                  double kv_heads, double ffn_hidden, double vocab) {
  return global_batch * seq_len * layers * hidden * hidden *
         (12.0 + 12.0 * kv_heads / heads + 18.0 * ffn_hidden / hidden + 6.0 * seq_len / hidden +
          6.0 * vocab / (layers * hidden));
}

double llm_foundry_step_flops(double global_batch, double seq_len, double layers, double hidden, double parameters,
                              bool hardware) {
  const double passes = hardware ? 4.0 : 3.0;
  const double per_sequence = 2.0 * parameters * seq_len + 4.0 * layers * hidden * seq_len * seq_len;
  return passes * per_sequence * global_batch;
}

double palm_step_flops(double global_batch, double seq_len, double layers, double hidden, double parameters) {
  return (6.0 * parameters + 12.0 * layers * hidden * seq_len) * global_batch * seq_len;
}

}  // namespace clustersim
