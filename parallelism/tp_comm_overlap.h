#pragma once

// Tensor-parallel communication overlapped with the GEMMs next to it, as Transformer Engine's
// userbuffers run it under Megatron-Core's --tp-comm-overlap (which needs sequence parallelism).
//
// Megatron-Core hands TE no overlap configuration unless --tp-comm-overlap-cfg is given, so TE's
// defaults apply (NVIDIA/TransformerEngine transformer_engine/pytorch/module/base.py,
// initialize_ub(): the `methods` table and get_default_config()):
//   ring_exchange  qkv_fprop and fc1_fprop (the sequence-parallel all-gather of the layer input)
//                  and proj_dgrad and fc2_dgrad (the all-gather of the output gradient). The GEMM is
//                  split into tp chunks along the tokens; while the chunk in hand is multiplied, the
//                  next shard arrives from the ring neighbour by a point-to-point copy (use_ce: the
//                  copy engines move it, num_sm = 1), so the GEMM keeps its SMs. tp − 1 exchanges,
//                  each overlapped with one chunk; the last chunk runs alone.
//   pipeline       proj_fprop and fc2_fprop (the reduce-scatter of the output). The GEMM is split
//                  into num_splits = 4 chunks along the tokens; the reduce-scatter of chunk i (a
//                  userbuffers kernel on num_sm = 16 SMs) runs while chunk i + 1 is multiplied; the
//                  last one is exposed.
//   bulk           qkv_dgrad and fc1_dgrad with the all-gather of the saved sequence-sharded input
//                  (the weight gradient needs it), qkv_wgrad and fc1_wgrad with the reduce-scatter of
//                  the input gradient: the whole collective (16 SMs) alongside the whole GEMM.
// What the overlap costs: a GEMM overlapped by a 16-SM userbuffers kernel is launched on
// sm_count − 16 SMs (set_sm_margin, TE 2.x's default for pipeline and bulk: CommOverlapCore sets
// _math_sms = sm_count − num_comm_sm; TE 1.x launched it on every SM and the two kernels competed
// for them), modelled as the GEMM taking sm_count / (sm_count − 16) times longer (1.14× on the 132
// SMs of an H100 SXM). A ring-exchange step costs the GEMM nothing.
// Simplified: a GEMM's time scales with its SMs (no wave quantisation); the chunk GEMMs are priced at
// their own shapes (M / chunks) by the cost model, so their lower efficiency is kept; the userbuffers
// collectives are priced as NCCL's on the tensor group (the ring exchange as an all-to-all whose
// matrix has one block per row, each rank's shard to its successor). Recipes may tune the SM counts
// per GEMM (Megatron-Bridge's userbuffers_* configurations); the defaults stand for them.

#include <cstddef>
#include <vector>

#include "cost_models/compute_cost_model.h"
#include "parallelism/step_program.h"
#include "workloads/op.h"

namespace clustersim {

// Transformer Engine's default userbuffers configuration (initialize_ub, get_default_config).
struct TpOverlapDefaults {
  static constexpr int kCommSms = 16;        // num_sm of the pipeline and bulk methods
  static constexpr int kPipelineSplits = 4;  // num_splits of the pipeline method
};

// How a run of ops is overlapped: the method and how many ops of the list it takes.
enum class TpOverlapMethod { kNone, kRingExchange, kPipeline, kBulk };

struct TpOverlapMatch {
  TpOverlapMethod method = TpOverlapMethod::kNone;
  size_t ops = 0;  // ops of the list consumed from the match position
};

// True for the GEMMs of TE's userbuffers layers: "qkv", "proj", "fc1", "fc2" and their ".dgrad" and
// ".wgrad" (not the LM head, MLA's projections, shared or routed experts).
bool userbuffers_gemm(const Op& op);

// The overlap that starts at ops[i] of a layer's op list (Transformer's order), if any:
//   kTpAllGather, userbuffers GEMM                              ring exchange (2 ops)
//   userbuffers GEMM, kTpReduceScatter (forward or recompute)   pipeline (2 ops)
//   dgrad GEMM, kTpAllGather, wgrad GEMM, kTpReduceScatter      bulk (4 ops; backward)
TpOverlapMatch match_tp_overlap(const std::vector<Op>& ops, size_t i);

// sm_count / (sm_count − kCommSms): how much longer a GEMM overlapped by a userbuffers kernel runs.
// Throws InputError naming the SM count when the GPU has no more than kCommSms SMs.
double overlapped_gemm_slowdown(int sm_count);

// Program handles the overlaps use (asynchronous collectives of one pass, see ProgramOp): the
// exchange or bulk collective under kFirstTpOverlapHandle, the pipeline's reduce-scatters under
// kFirstTpOverlapHandle .. + kPipelineSplits − 1.
constexpr int kFirstTpOverlapHandle = 1;
constexpr int kTpOverlapHandles = TpOverlapDefaults::kPipelineSplits;

// Appends the all-gather `gather` ([T, h] gathered bytes on `tp` ranks) overlapped with the GEMM
// `gemm` (M = T tokens) by ring exchange: for i in 0..tp−1, an asynchronous exchange of
// gather.comm_bytes / tp per rank to the ring successor (while i < tp − 1), the GEMM of M / tp rows,
// and the wait for the exchange. Throws InternalError if tp < 2.
void append_ring_exchange(std::vector<ProgramOp>& out, const Op& gather, const Op& gemm, const ComputeCostModel& cost,
                          int tp);

// Appends the GEMM `gemm` (M = T tokens) pipelined with the reduce-scatter `scatter` of its output
// (comm_bytes = the [T, h] input of the reduce-scatter): kPipelineSplits GEMMs of M / splits rows,
// each slowed by overlapped_gemm_slowdown() and followed by the asynchronous reduce-scatter of
// comm_bytes / splits; then a wait for each. The reduce-scatters queue on the tensor group's stream.
void append_pipelined_reduce_scatter(std::vector<ProgramOp>& out, const Op& gemm, const Op& scatter,
                                     const ComputeCostModel& cost);

// Appends the bulk overlaps of a column-parallel layer's backward: the all-gather `gather` of the
// saved input started before the data-gradient GEMM `dgrad` and waited for after it, then the
// reduce-scatter `scatter` of the input gradient started before the weight-gradient GEMM `wgrad` and
// waited for after it; both GEMMs slowed by overlapped_gemm_slowdown().
void append_bulk_overlap(std::vector<ProgramOp>& out, const Op& dgrad, const Op& gather, const Op& wgrad,
                         const Op& scatter, const ComputeCostModel& cost);

}  // namespace clustersim
