#pragma once

// The traffic of DeepEP's normal dispatch and combine kernels on an expert-parallel group
// (MoeDispatcher::kDeepEp; DeepSeek-V3 technical report, arXiv:2412.19437 §3.2.2; DeepEP's
// get_dispatch_layout, which marks each token once per destination rank and once per destination
// node): a token crosses the network once per destination node, to the GPU of the sender's own
// rail (the same local index) there, which forwards it over NVLink once to each GPU holding any
// of its experts; a GPU receives a token once however many of its experts the token chose.
// Balanced routing: every GPU holds num_experts / ep experts and a token's top_k experts are
// drawn uniformly, within its router_group_topk groups when routing is group-limited.

#include <cstdint>
#include <vector>

#include "workloads/model_spec.h"

namespace clustersim {

// The probability that a token's top_k experts include one of a given block, the experts cut into
// `blocks` contiguous blocks of E/blocks (a node's or a GPU's experts, laid out contiguously:
// rank r holds experts [r·E/ep, (r+1)·E/ep)):
//   no group limit           1 − C(E − E/B, k) / C(E, k)  (k distinct experts of E, uniformly)
//   blocks of whole groups   (router_num_groups a multiple of B: s = groups/B groups per block)
//                            Σ_j P(j of the block's s groups among the M chosen) ·
//                                (1 − C((M − j)·E_g, k) / C(M·E_g, k)),
//                            P(j) hypergeometric C(s, j)·C(groups − s, M − j) / C(groups, M)
//   groups of whole blocks   (B a multiple of router_num_groups)
//                            (M/groups) · (1 − C(M·E_g − E/B, k) / C(M·E_g, k))
//   otherwise                as without a limit (the groups do not bound the blocks)
// with E_g = E / groups and M = router_group_topk. Throws InputError if `blocks` does not divide
// the experts.
double expert_block_hit_probability(const MoeSpec& moe, int64_t blocks);

// Bytes each rank of the group sends each other one, row-major [sender][receiver] (n = ep ranks,
// ranks_per_node of them on each of N = n / ranks_per_node nodes, the group laid out node by node),
// for `tokens` tokens of token_bytes each per rank, with q_gpu and q_node the hit probabilities of
// a GPU's and a node's experts:
//   same node, j ≠ i                   tokens · q_gpu · token_bytes · N   (its own tokens for j,
//                                      and those of the N − 1 remote senders on its rail, forwarded)
//   j on another node, on i's rail     tokens · q_node · token_bytes
//   otherwise (and i = j)              0
// Each rank so receives (n − 1)·tokens·q_gpu tokens, once each. The combine sends the transpose.
// Throws InputError if ranks_per_node does not divide ep, ep does not divide the experts, or a
// size is not positive.
std::vector<int64_t> deepep_dispatch_matrix(const MoeSpec& moe, int64_t ep, int64_t ranks_per_node, int64_t tokens,
                                            double token_bytes);

}  // namespace clustersim
