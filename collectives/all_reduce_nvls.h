#pragma once

// NVLink SHARP (NVLS) all_reduce: the NVSwitch reduces and multicasts (Hopper and later; NCCL 2.17+,
// "NVLS" algorithm). Each GPU reduces its 1/n shard with multimem.ld_reduce — the switch reads the
// shard from every GPU, adds, and returns the sum — and multicasts the summed shard back with
// multimem.st. Per GPU and direction its NVLink therefore carries S (its whole buffer read by the
// switch; then the multicast it receives) plus S/n (the reduced shard it receives; then the shard it
// stores): (n + 1)/n · S instead of the ring's 2(n − 1)/n · S. Bus bandwidth can exceed the link:
// 2(n − 1)/(n + 1) · B_NVLink ideally; ≈ 480 GB/s is measured on 8 × H100/H200 (450 GB/s per
// direction, nccl-tests).
//
// Represented in the flow network by one flow per GPU to another GPU of the node carrying
// (n + 1)/n · S: the NVSwitch fabric is non-blocking, so this loads every GPU's NVLink in both
// directions exactly as the multimem loads and stores do. The switch's reduction throughput is
// below the link rate: NCCL's nvlsEfficiency (0.85 Hopper, 0.74 Blackwell; NCCL src/graph/tuning.cc)
// applies on top of the NVLink transport efficiency (GroupLayout::nvls_efficiency).
//
// One node only (multi-node NVLS needs NVLink SHARP plus IB SHARP, not modelled), all_reduce only:
// NCCL also runs all_gather and reduce_scatter on NVLS, but their one-to-many multicast cannot be
// represented by point-to-point flows and gains no bandwidth over the ring on one node.
// Latency: NCCL tuning.cc hwLat NVLINK NVLS Simple, once (no per-rank steps).

#include <string>

#include "collectives/algorithm.h"

namespace clustersim {

bool nvls_supports(CollectiveOp op, const GroupLayout& layout, std::string* why);
TransferPlan nvls_plan(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs,
                       const PlanOptions& options);
Duration nvls_estimate(const CollectiveRequest& request, const GroupLayout& layout, const StepCosts& costs);
// NCCL_NVLS_NCHANNELS default (16, NCCL environment variable documentation).
int nvls_channels(const GroupLayout& layout);

// Bytes each GPU's NVLink carries per direction: S + the GPU's shard of S.
Bytes nvls_bytes_per_gpu(Bytes size, int ranks, int rank);

}  // namespace clustersim
