#pragma once

// NCCL's ring algorithm: all_reduce (reduce-scatter then all-gather around the ring), all_gather,
// reduce_scatter, and the pipelined chains broadcast and reduce.
//
// Modelled after NCCL (src/graph/search.cc, connect.cc; S. Jeaugey, "NCCL 2.0", GTC 2017):
//   * Channels. Inside one node all channels follow the same NVLink/PCIe path, so they are merged
//     into one ring. Across nodes NCCL builds one ring per NIC and gives each ring's node crossing
//     its own NIC: ring r enters node k at the GPU of NIC (r + k) mod R and leaves it from the GPU
//     of NIC (r + k + 1) mod R, visiting the other GPUs in between (the order NCCL logs show:
//     "0 7 6 5 4 3 2 1" then "1 0 7 6 5 4 3 2"). The exit NIC of one node is the entry NIC of the
//     next, so rail-optimized fabrics stay on their rail (NCCL 2.20 "cross-nic rings without
//     cross-rail communication"). R is the smallest number of distinct NICs the group uses on a
//     node; on PCIe-only nodes R = 1, since one ring already fills the PCIe links (NVIDIA/nccl
//     issue 412).
//   * Data. The buffer is split evenly over the R rings; each ring splits its part into n blocks.
//     all_reduce takes 2(n−1) steps, all_gather and reduce_scatter n−1; in each step every rank
//     sends one block to its successor, so each rank sends 2(n−1)/n·S (all_reduce) or (n−1)/n·S.
//   * Pipelining. A phase is one step, or several consecutive steps merged (to stay within the
//     PlanOptions flow budget, and so that a phase's latency covers the slowest route it crosses);
//     a phase's transfer waits for the sender's previous phase and for the block it received in
//     the previous phase. The latency of the steps a phase stands for is the transfer's latency:
//     over 2(n−1) steps a chunk crosses the ring's hops in turn, so each step costs the ring's
//     mean hop cost — intra-node hops at StepCosts::intra_step, node crossings at inter_step
//     (NCCL tuning.cc's (nsteps − nInterSteps)·intraLat + nInterSteps·interLat).
//   * broadcast / reduce: a pipelined chain from (to) the root along each ring, n−1 hops carrying
//     the whole per-ring buffer; all hops run at once, each with the chain's whole fill latency.
// Closed form (analytical fidelity): base + Σ step latencies + the slowest hop's bytes over its
// share of the link, where a GPU's NVLink or a NIC carrying k ring flows gives each 1/k.

#include <span>
#include <string>
#include <vector>

#include "collectives/algorithm.h"

namespace clustersim {

// Rank orders (indices into the group) of the rings the ring algorithm runs, as described above.
std::vector<std::vector<int>> ring_orders(const GroupLayout& layout);

bool ring_supports(CollectiveOp op, const GroupLayout& layout, std::string* why);
TransferPlan ring_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                       const PlanOptions& options);
Duration ring_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs);
// 2 × rings: NCCL duplicates every ring it finds into two channels (connect.cc ncclTopoPostset).
int ring_channels(const GroupLayout& layout);

// Building block shared with the hierarchical algorithm: appends the transfers of a ring
// all_reduce / all_gather / reduce_scatter to `plan`; ring r (a rank order) carries ring_bytes[r]
// (the op's buffer size for that ring). The first phase waits for `start_after` and carries
// `start_latency` on top of its own. Returns the transfers of the last phase.
std::vector<int32_t> append_ring_collective(TransferPlan& plan, CollectiveOp op, std::span<const Bytes> ring_bytes,
                                            const std::vector<std::vector<int>>& rings, const GroupLayout& layout,
                                            const StepCosts& costs, const PlanOptions& options,
                                            std::span<const int32_t> start_after, Duration start_latency);

// Closed-form time of the same ring collective (all rings at once), without the base latency.
Duration ring_collective_time(CollectiveOp op, std::span<const Bytes> ring_bytes,
                              const std::vector<std::vector<int>>& rings, const GroupLayout& layout,
                              const StepCosts& costs);

// `size` split evenly over `rings` rings (the channels of one collective).
std::vector<Bytes> split_over_rings(Bytes size, size_t rings);

}  // namespace clustersim
