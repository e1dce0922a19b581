#pragma once

// What the CPU thread of a training process spends to issue each GPU operation: the host side of
// the step simulation (parallelism/step_simulation.h runs the thread; parallelism/step_program.h's
// HostWork carries the costs). Every figure is a host time per call measured on the H200 machine
// with the GPU kept busy behind a long kernel, so that the host never waited (a VM on 16 cores of
// an Intel Xeon; PyTorch 2.11, CUDA 13.0, bf16 ops with autograd recording, medians):
//   tools/data/h200-2026-12-02-host/README.md (tools/reference/host_costs.py):
//     forward, autograd on: an elementwise op 14.1 µs, F.linear 36.0 µs, layer_norm 34.1 µs;
//     backward (autograd's C++ engine), per launched kernel: elementwise 20.0 µs, linear 34.0 µs
//       (two GEMMs per linear), layer_norm 33.2 µs (its input-gradient kernel; the affine chain's
//       gamma/beta kernel costs about an elementwise kernel more: 51.3 µs per op);
//     t.item() 13.0 µs; torch.distributed.all_reduce (NCCL, the call path) 34.1 µs;
//     AdamW(fused=True) over 100 tensors: 1,009 µs per step, 10.1 µs per parameter tensor.
//   tools/data/h200-2026-12-01-moe/README.md ("Host microbenchmarks"): Megatron-Core's
//     ColumnParallelLinear forward 90.0 µs.
//   tools/data/h200-2026-12-02-overheads/README.md (tools/reference/host_overheads.py):
//     an nn.Module call's own overhead 0.87 µs, a view / transpose / reshape 2.3 µs, a split or
//     chunk 1.08 µs + 1.57 µs per piece (the pytorch-eager op lists count them, Op::host_*_calls).
//   tools/data/h200-2026-12-02-step-phases/README.md (tools/reference/host_step_phases.py):
//     a kernel-free backward node of a view, 7.16 µs: the mean of ViewBackward0 6.58,
//     TransposeBackward0 8.35 and UnsafeViewBackward0 6.54 µs per node (chains of 200, the empty
//     chain's loss and leaf gradient subtracted; Op::host_grad_view_nodes counts them).
//   tools/data/h200-2026-12-02-host-size/README.md (tools/reference/host_size_scaling.py):
//     an elementwise op with an output of 1 MiB or more costs 9.6 µs more forward, 7.7 µs more per
//     backward kernel (GEMMs flat; normalisation not stepped, not applied).
//   tools/data/h200-2026-12-01-moe/ (tools/reference/megatron_moe_layer.py; Megatron-Core 0.20.0
//     without Transformer Engine, its local spec), for training.moe_experts sequential:
//     one SequentialMLP expert (Qwen3-30B-A3B's shape, fused SwiGLU), forward 409.2 µs per call
//     (run2/results.jsonl, micro "Megatron expert MLP (fused GLU), forward"); forward + backward
//     0.8745 ms per expert: the mean of the README's four least-squares slopes of host time over
//     E = 8 ... 128 experts ("Per expert": 0.709, 1.081, 0.859, 0.849 ms), so the backward is
//     465.3 µs per expert (the forward + backward() microbenchmark, 1,792 µs, pays a whole
//     backward() call per expert and is not used); the slopes' 128-expert points are the
//     Qwen3-30B-A3B layer cases at 1,024 and 4,096 tokens themselves (tests/megatron_moe_layer_test.cc);
//     the router and token dispatcher around the experts (softmax top-k router with auxiliary loss,
//     alltoall dispatcher at ep 1, permutations in PyTorch): forward 4.504 ms, backward 3.931 ms
//     per layer: the mean host_fwd_ms (7.778) and host_bwd_ms (7.654) of the four 8-expert cases
//     (qwen3-30b-a3b:alltoall:{1024,4096}:E8 of run1 and run2) less 8 experts at the costs above.
//     Measured on one machine and CPU, step to step within -30 % / +50 %.
//   tools/data/h200-2026-12-01-power/README.md ("Host side"): replay() of a captured
//     400-kernel graph of x.mul_ 204 µs: 0.51 µs per captured kernel (graph node).
// Host costs depend on the CPU (two machines here differed by 2x on the same tiny op); these are
// the defaults for every GPU, and run's report names them. Not measured: Transformer Engine's
// modules (not installed on the machine), so framework megatron prices its linear layers as
// Megatron-Core's own, and its attention and fused kernels as PyTorch's library calls.

#include <string>

#include "core/units.h"
#include "cost_models/calibration_profile.h"
#include "workloads/op.h"
#include "workloads/training_spec.h"

namespace clustersim {

struct HostCostDefaults {
  static constexpr double kElementwiseUs = 14.1;
  static constexpr double kLinearUs = 36.0;          // F.linear: a GEMM op of pytorch-eager
  static constexpr double kLibraryUs = 34.1;         // layer_norm: normalisation, attention (SDPA)
  // A normalisation's input-gradient kernel (layer_norm chain without affine: 33.6 µs per op over
  // 1.01 launches). Its weight-gradient kernel is a reduction, priced as a backward elementwise one.
  static constexpr double kBackwardNormUs = 33.2;
  static constexpr double kMegatronGemmUs = 90.0;    // Megatron-Core's linear layers
  static constexpr double kBackwardElementwiseUs = 20.0;
  static constexpr double kBackwardGemmUs = 34.0;    // also attention's backward
  static constexpr double kOptimizerPerTensorUs = 10.1;
  static constexpr double kCollectiveUs = 34.1;
  static constexpr double kSyncUs = 13.0;
  static constexpr double kGraphNodeUs = 0.51;
  // Python-level calls that launch nothing (h200-2026-12-02-overheads, net of the empty loop):
  static constexpr double kModuleCallUs = 0.87;    // m(x) 0.905 - m.forward(x) 0.037: __call__
  static constexpr double kViewUs = 2.3;           // view 2.17, transpose 2.51, reshape 2.35, unsqueeze 2.15
  static constexpr double kSplitCallUs = 1.08;     // chunk(2) 4.22 = call + 2 pieces, split(4) 7.37 =
  static constexpr double kSplitPieceUs = 1.57;    //   call + 4 pieces: solved for the two
  // A view's kernel-free backward node (h200-2026-12-02-step-phases, per node, net of the empty
  // chain): ViewBackward0 6.58, TransposeBackward0 8.35, UnsafeViewBackward0 6.54; their mean.
  static constexpr double kGradViewNodeUs = 7.16;
  // An elementwise op whose output is 1 MiB or more (h200-2026-12-02-host-size: a step between
  // 0.39 and 1.57 MB of output, at PyTorch's caching-allocator small/large pool boundary):
  static constexpr double kLargeOutputBytes = 1048576;
  static constexpr double kLargeElementwiseUs = 9.6;          // forward: 21.6 against 12.0 µs per op
  static constexpr double kLargeBackwardElementwiseUs = 7.7;  // backward: 27.7 against 20.0 µs per kernel
  // Megatron-Core's local spec (training.moe_experts sequential), per SequentialMLP expert and per
  // layer's router and dispatcher (h200-2026-12-01-moe, above): measured, not tuned.
  static constexpr double kLocalExpertForwardUs = 409.2;
  static constexpr double kLocalExpertUs = (709.0 + 1081.0 + 859.0 + 849.0) / 4;  // forward + backward
  static constexpr double kLocalExpertBackwardUs = kLocalExpertUs - kLocalExpertForwardUs;
  static constexpr double kLocalExpertsInSweep = 8;  // the smallest layer of the expert sweep
  static constexpr double kLocalDispatcherForwardUs =
      (7672.0 + 6490.0 + 7472.0 + 9478.0) / 4 - kLocalExpertsInSweep * kLocalExpertForwardUs;
  static constexpr double kLocalDispatcherBackwardUs =
      (7565.0 + 6490.0 + 6906.0 + 9654.0) / 4 - kLocalExpertsInSweep * kLocalExpertBackwardUs;
};

// Host costs of one framework's GPU operations (see the table above). All zero: no host side.
struct HostCosts {
  Duration elementwise;           // a memory-bound forward op
  Duration gemm;                  // a GEMM forward op
  Duration library;               // a fused attention or normalisation forward op
  Duration backward_norm;         // a normalisation's input-gradient kernel (the defaults' figure)
  Duration backward_elementwise;  // each memory-bound kernel of the backward
  Duration backward_gemm;         // each GEMM or attention kernel of the backward
  Duration optimizer_per_tensor;  // the optimizer step, per parameter tensor it updates
  Duration collective;            // an NCCL call
  Duration sync;                  // a device-to-host read of a finished value (.item())
  Duration graph_node;            // a kernel or NCCL call replayed from a CUDA graph
  Duration module_call;           // an nn.Module call's own overhead (Op::host_module_calls)
  Duration view;                  // a view, transpose or reshape: no kernel (Op::host_view_calls)
  Duration split_call;            // a split or chunk call (Op::host_split_calls) ...
  Duration split_piece;           // ... and each piece it returns (Op::host_split_pieces)
  Duration grad_view_node;        // a view's kernel-free backward node (Op::host_grad_view_nodes)
  Duration large_elementwise;           // added to an elementwise op with a >= 1 MiB output, forward
  Duration large_backward_elementwise;  // ... and to such a backward kernel
  // Megatron-Core's local spec, measured as calls (Op::host_path): a SequentialMLP expert's
  // forward and backward, and a layer's router and token dispatcher in either pass.
  Duration local_expert_forward;
  Duration local_expert_backward;
  Duration local_dispatcher_forward;
  Duration local_dispatcher_backward;
  std::string source;             // one line for reports: which numbers are in force
};

// The host costs of `training.framework`: the profile's measured host_costs where it has them
// (megatron_gemm for a megatron GEMM), else the defaults above; `source` says which.
HostCosts host_costs(const TrainingSpec& training, const CalibrationProfile* profile = nullptr);

// The host time to issue `op` (one kernel) by its pass and cost kind, plus the host-only calls
// before it (module calls and views, and in backward the kernel-free nodes of views); a kernel of a
// measured call (Op::host_path kLocalExpert, kLocalDispatcher) costs its share (Op::host_share) of
// that call's host time in its pass instead of its kind's;
// communication ops are NCCL calls (`collective`); a
// normalisation (MemoryAccess::kNormalization) is a library call (`library`, F.layer_norm's
// measured host time, not an elementwise op's), its input-gradient kernel
// (kNormalizationBackward) `backward_norm`. Recompute ops are forward ops.
Duration host_cost(const Op& op, const HostCosts& costs);

}  // namespace clustersim
