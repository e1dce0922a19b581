#pragma once

// NCCL's double binary tree all_reduce (Sanders, Speck, Träff, "Two-tree algorithms for full
// bandwidth broadcast, reduction and scan", Parallel Computing 2009; NCCL 2.4, "Massively Scale
// Your Deep Learning Training with NCCL 2.4", NVIDIA developer blog 2019).
//
//   * Between nodes, two complementary binary trees: tree 0 is the in-order binary tree over the
//     node indices (node r's parent is found from the lowest set bit of r, NCCL src/graph/trees.cc
//     ncclGetBtree); tree 1 mirrors it (even node count) or shifts it by one (odd count), so a node
//     that is interior in one tree is a leaf in the other. Each tree carries half of the buffer.
//   * Inside a node, a chain: the tree's head GPU talks to the other nodes, the rest of the node's
//     ranks hang below it in a line.
//   * Channels: the pair of trees is repeated once per NIC of the node (as for rings), each pair
//     with its head on a different NIC, and the buffer is split over all trees.
//   * Every edge carries its tree's share once up (reduce) and once down (broadcast). Chunks are
//     pipelined, so all edges stream at once; the fill latency (NCCL tuning.cc:
//     2 · ((ppn − 1) · intraLat + log2(nNodes) · interLat)) is paid up front.
//   * Bandwidth, per NCCL tuning.cc ncclTopoTuneModel ("busBw = std::min(busBw*.92,
//     nChannels*perChMaxTreeBw)"): the trees stream at 0.92 of what their links give (StepCosts
//     efficiency, protocol.cc), and each channel pair (one per NIC) no faster than the measured
//     per-channel ceiling perChMaxTreeBws, LL128: perChMaxTreeLL128Bws (StepCosts::channel_ceiling; Hopper, more than two
//     nodes: 36 GB/s of tree busBw, i.e. 18 GB/s algbw per NIC). The ceiling is why NCCL's tree
//     falls behind the ring at large messages on 3+ nodes (NVIDIA/nccl issue 1368: 5 × 8 H100,
//     4 × 400 Gb/s per node, tree ≈ 150 GB/s busbw against ring ≈ 190).
// On exactly two nodes a node sends S through its NICs (S/2 up in one tree, S/2 down in the other)
// where a ring sends 2(n−1)/n · S: the tree's bus bandwidth approaches 2(n−1)/n times the network
// bandwidth when NVLink does not limit it (cases C2).

#include <string>
#include <vector>

#include "collectives/algorithm.h"

namespace clustersim {

// Node-level binary tree: parent of every node index (−1 for the root) for tree 0 or 1 of a
// double binary tree over `nodes` nodes.
std::vector<int> double_binary_tree_parents(int nodes, int tree);

bool tree_supports(CollectiveOp op, const GroupLayout& layout, std::string* why);
TransferPlan tree_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                       const PlanOptions& options);
Duration tree_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs);
int tree_channels(const GroupLayout& layout);

}  // namespace clustersim
