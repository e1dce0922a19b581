#pragma once

// How context parallelism cuts a causal sequence over cp ranks, and the attention work each rank
// then has (docs/cases/moe_cp.md E2).
//
//   contiguous  rank r holds tokens [r·s/cp, (r+1)·s/cp): with causal attention the last rank's
//               queries see the most keys, so work grows with r (cp = 2, s = 8: 10 vs 26 query-key
//               pairs; for long sequences the ratio tends to (2·cp − 1) : 1 between the last and
//               the first rank, 3 : 1 at cp = 2);
//   zig-zag     the sequence is cut into 2·cp chunks and rank r holds chunks r and 2·cp − 1 − r
//               (cp = 2, tokens 1..8: {1, 2, 7, 8} and {3, 4, 5, 6}), which gives every rank the
//               same work. Megatron-LM / TransformerEngine shard this way for causal context-parallel
//               attention (get_batch_on_this_cp_rank), and so does the simulator.
// The sequence must split into 2·cp equal chunks (validate_sharding rejects other lengths).

#include <cstdint>
#include <vector>

namespace clustersim {

enum class SequenceSharding { kContiguous, kZigZag };

// The 1-based token positions rank `rank` of `cp` holds, in increasing order. Throws InputError
// when cp < 1, rank is outside [0, cp) or seq_len is not a positive multiple of 2·cp.
std::vector<int64_t> context_parallel_tokens(int64_t seq_len, int64_t cp, int64_t rank, SequenceSharding sharding);

// Causal attention work of each rank: the query-key pairs its queries attend to, Σ over its tokens
// of the token's position (a token at position p sees keys 1..p). Same errors as above.
std::vector<int64_t> causal_attention_work(int64_t seq_len, int64_t cp, SequenceSharding sharding);

}  // namespace clustersim
