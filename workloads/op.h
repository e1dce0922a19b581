#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "cost_models/attention_predictor.h"
#include "cost_models/gemm_shape.h"
#include "cost_models/memory_access.h"

namespace clustersim {

// How an op is priced (ComputeCostModel) or carried out (parallelism/collectives).
enum class OpCost {
  kGemm,            // a (batched) matrix product: `gemm`, priced by FLOPs and efficiency
  kFlashAttention,  // a fused attention kernel: `kernel_flops` and HBM bytes
  kMemoryBound,     // elementwise / normalisation / reduction: `bytes_read + bytes_written`
  kCommunication,   // a collective among the rank's tensor- or context-parallel peers
};

enum class Pass {
  kForward,
  kBackward,
  kRecompute,  // a forward op re-run before backward (activation recomputation)
};

// Where Megatron-LM places the collectives of tensor, context and expert parallelism. Sizes follow
// the nccl-tests convention (collectives/collective.h): all_reduce = per-rank buffer, all_gather =
// gathered output, reduce_scatter = input, all_to_all = what each rank sends in total.
//   kTp*           on the tensor-parallel group: [micro_batch, seq/cp, hidden] at layer boundaries;
//   kCpKvExchange  one step of the context-parallel ring: each rank passes the K and V block it holds
//                  to the next rank (`comm_bytes` per step), `comm_steps` = cp − 1 times per attention;
//   kCpAllToAll    Ulysses: Q, K, V (or the attention output) between sequence and head shards;
//   kEpAllToAll    token dispatch or combine on the expert-parallel group (`comm_matrix`: n × n bytes,
//                  row = sender, column = receiver; empty = an even split);
//   kEpAllGather / kEpReduceScatter   the allgather dispatcher's token gather and output scatter;
//   kEtpAllGather / kEtpReduceScatter the expert-tensor-parallel gather of dispatched tokens and the
//                  scatter of the experts' partial outputs.
enum class CommKind {
  kNone,
  kTpAllReduce,
  kTpAllGather,
  kTpReduceScatter,
  kCpKvExchange,
  kCpAllToAll,
  kEpAllToAll,
  kEpAllGather,
  kEpReduceScatter,
  kEtpAllGather,
  kEtpReduceScatter,
};

// Whose Python issues a kernel, where a measurement prices that code as a whole rather than per
// kernel (workloads/host_costs.h):
//   kKernel           by the kernel's cost kind (the default)
//   kLocalExpert      a kernel of one of Megatron-Core's SequentialMLP experts (training.moe_experts
//                     sequential): its share of the expert's measured host time per call and pass
//   kLocalDispatcher  a kernel of the same layer's router and token dispatcher in plain PyTorch (no
//                     Transformer Engine: no fused permutation or router): its share of the measured
//                     host time of that part of the layer per pass
enum class HostPath { kKernel, kLocalExpert, kLocalDispatcher };

std::string_view name_of(OpCost cost);
std::string_view name_of(Pass pass);
std::string_view name_of(CommKind kind);

// One step of a rank's program for one micro-batch. Names are static strings such as "qkv",
// "qkv.dgrad", "qkv.wgrad", "attention.tp_all_reduce"; the pass says forward, backward or recompute.
struct Op {
  std::string_view name;
  OpCost cost = OpCost::kMemoryBound;
  Pass pass = Pass::kForward;
  GemmShape gemm;            // kGemm: the shape; kFlashAttention: only its dtype
  // FLOPs as counted for model FLOPs (Megatron/PaLM: 2 per multiply-add; attention over the full
  // s × s score matrix; elementwise ops 0).
  double flops = 0;
  // FLOPs the kernel executes: equal to `flops` except for causal fused attention, which skips the
  // masked half, and its backward, which recomputes the scores (2.5 × forward, FlashAttention's
  // benchmark convention).
  double kernel_flops = 0;
  bool attention_core = false;  // QKᵀ / softmax / ·V or the fused kernel (for the FLOP conventions)
  // kMemoryBound: a helper kernel inside a fused attention call of `attention` by `attention_kernel`
  // (flash's split-KV combine, dot_do_o, convert_dq, GQA's group sums). Priced by its bytes, except
  // where the call is priced from calibration samples, which time the call whole: then it takes no
  // GPU time of its own (its launch still costs the host).
  bool within_attention_call = false;
  Bytes bytes_read;             // HBM traffic of kMemoryBound and kFlashAttention ops
  Bytes bytes_written;
  // kMemoryBound: the kernel path deciding its rate (kStream: the copy rate, Megatron's fused kernels).
  MemoryAccess access = MemoryAccess::kStream;
  // kFlashAttention with a shape (batch > 0): priced per shape by this kernel; without one (Megatron
  // ops) by `kernel_flops` at the default cuDNN efficiencies.
  AttentionShape attention;
  FusedAttentionKernel attention_kernel = FusedAttentionKernel::kCudnn;
  // Activation bytes this forward op keeps until its backward (Korthikanti et al. 2022, Sec. 4),
  // under the training's recompute policy; 0 for backward and recompute ops.
  Bytes saved;
  CommKind comm = CommKind::kNone;  // kCommunication only
  Bytes comm_bytes;
  int64_t comm_steps = 1;
  std::vector<int64_t> comm_matrix;  // kEpAllToAll with uneven routing: n × n bytes (see CommKind)
  // Calls the host makes just before this op's launch that launch no kernel (workloads/host_costs.h
  // prices them), in the pytorch-eager op lists: nn.Module calls, tensor views (view, transpose,
  // reshape of a contiguous tensor), and split / chunk calls with the pieces they return.
  int host_module_calls = 0;
  int host_view_calls = 0;
  int host_split_calls = 0;
  int host_split_pieces = 0;
  // Backward only: the kernel-free autograd nodes of views (ViewBackward0, TransposeBackward0,
  // UnsafeViewBackward0) that autograd's engine runs around this kernel (workloads/host_costs.h).
  int host_grad_view_nodes = 0;
  // Where a measured call prices this kernel's host side (HostPath) and its share of that call's
  // host time (the kernels of one call or one pass share it evenly; 1 for kKernel).
  HostPath host_path = HostPath::kKernel;
  double host_share = 1;
};

}  // namespace clustersim
