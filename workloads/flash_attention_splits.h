#pragma once

#include <cstdint>

namespace clustersim {

// How many KV splits FlashAttention-2's forward uses (flash-attention csrc/flash_attn/flash_api.cpp:
// set_params_splitkv and num_splits_heuristic, vendored by PyTorch in
// aten/src/ATen/native/transformers/cuda/flash_attn/flash_api.cpp and used by SDPA's flash
// backend). Without dropout the forward asks num_splits_heuristic(b · heads · ceil(s_q / 64),
// 2 · SMs, ceil(s_k / block_n), 128), block_n = 256 for head_dim ≤ 64, 128 up to 128, else 64:
// one split when the (batch, head, 64-row block) tiles fill 80 % of twice the SMs; else the
// fewest eligible splits whose wave efficiency (tiles · splits / (2 · SMs) over its ceiling)
// reaches 85 % of the best, a split count being eligible when it changes ceil(n_blocks / splits).
// More than one split runs flash_fwd_splitkv_kernel and then flash_fwd_splitkv_combine_kernel,
// which merges the splits' fp32 partial outputs by their log-sum-exps. Measured on an H200 (132 SMs,
// PyTorch 2.11): b 1, 16 heads, s 512, d 64 takes 2 splits (a combine kernel); b 1, 12 heads, s 256
// takes 1. Returns 1 for sm_count ≤ 0 (the GPU unknown) or non-positive sizes.
int64_t flash_forward_kv_splits(int64_t batch, int64_t heads, int64_t seq_q, int64_t seq_k, int64_t head_dim,
                                int64_t sm_count);

}  // namespace clustersim
