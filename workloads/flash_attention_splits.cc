#include "workloads/flash_attention_splits.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace clustersim {

int64_t flash_forward_kv_splits(int64_t batch, int64_t heads, int64_t seq_q, int64_t seq_k, int64_t head_dim,
                                int64_t sm_count) {
  if (sm_count <= 0 || batch <= 0 || heads <= 0 || seq_q <= 0 || seq_k <= 0 || head_dim <= 0) return 1;
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t block_n = head_dim <= 64 ? 256 : (head_dim <= 128 ? 128 : 64);
  const int64_t n_blocks = ceil_div(seq_k, block_n);
  const int64_t tiles = batch * heads * ceil_div(seq_q, 64);
  const int64_t sms = 2 * sm_count;  // "128 threads per block": two blocks per SM
  // num_splits_heuristic, in its float arithmetic.
  if (static_cast<float>(tiles) >= 0.8f * static_cast<float>(sms)) return 1;
  const int64_t max_splits = std::min<int64_t>({128, sms, n_blocks});
  auto eligible = [&](int64_t splits) {
    return splits == 1 || ceil_div(n_blocks, splits) != ceil_div(n_blocks, splits - 1);
  };
  std::vector<float> efficiency;
  float best = 0.f;
  for (int64_t splits = 1; splits <= max_splits; ++splits) {
    float e = 0.f;
    if (eligible(splits)) {
      const float waves = static_cast<float>(tiles * splits) / static_cast<float>(sms);
      e = waves / std::ceil(waves);
      best = std::max(best, e);
    }
    efficiency.push_back(e);
  }
  for (int64_t splits = 1; splits <= max_splits; ++splits) {
    if (eligible(splits) && efficiency[static_cast<size_t>(splits - 1)] >= 0.85f * best) return splits;
  }
  return 1;
}

}  // namespace clustersim
