#pragma once

#include <cstdint>

#include "core/units.h"
#include "cost_models/precision_policy.h"

namespace clustersim {

// Device memory of one rank, by what it holds (the breakdown users check against).
struct MemoryBreakdown {
  Bytes params;            // working weights as the rank keeps them (its shard under ZeRO-3 / FSDP)
  // Unsharded or cast copies of weights alive at the moment: ZeRO-3 / FSDP's gathered units,
  // autocast's bf16 copies of fp32 weights (pytorch-eager).
  Bytes param_copies;
  Bytes grads;             // gradient buffer
  Bytes optimizer_state;   // master weights, fp32 gradient copy, moments
  Bytes activations;       // saved for backward, over the schedule's in-flight micro-batches
  Bytes logits;            // the loss's logit buffers at their peak (last pipeline stage; Transformer::logits_bytes)
  Bytes comm_buffers;      // communication buffers not aliased with the gradient buffer
  Bytes runtime_overhead;  // CUDA context, library workspaces

  Bytes other() const { return logits + comm_buffers + runtime_overhead; }
  Bytes total() const { return params + param_copies + grads + optimizer_state + activations + other(); }
  // What torch.cuda.max_memory_allocated would report: total() without the runtime overhead.
  Bytes allocated() const { return total() - runtime_overhead; }
  bool fits(Bytes capacity) const { return total() <= capacity; }
};

// What one rank holds, as plain numbers (the workload and the schedule compute them).
struct RankMemoryInputs {
  // Non-expert parameters on this rank, after tensor and pipeline parallel splitting.
  int64_t dense_params = 0;
  // Mixture-of-experts expert parameters on this rank, after expert (and expert-tensor) splitting;
  // their gradients and optimizer state are sharded by the expert data-parallel size
  // (docs/cases/moe_cp.md E1).
  int64_t expert_params = 0;
  // Activations one micro-batch leaves saved on this rank (all its layers).
  Bytes activations_per_microbatch;
  // Micro-batches whose activations are alive at the rank's peak, from the pipeline schedule:
  // 1F1B stage r of p holds p − r; interleaved 1F1B's first stage holds p·(1 + (p−1)/(p·v))
  // micro-batch equivalents (Korthikanti et al. 2022, Sec. 4.2.3). Fractional values are allowed.
  double in_flight_microbatches = 1.0;
  // The loss's logit buffers of the last stage at their peak (Transformer::logits_bytes; 0 elsewhere).
  Bytes logits;
  // Communication buffers outside the gradient buffer (Megatron's DDP buckets alias the gradient
  // buffer, so 0 there; PyTorch DDP without gradient_as_bucket_view copies gradients into buckets).
  Bytes comm_buffers;
};

// Per-rank memory of training state and activations.
//
// Model states follow the precision policy (bytes per parameter: params + grads + optimizer) and the
// sharding of ZeRO (Rajbhandari et al. 2020): stage 1 shards the optimizer state over the
// data-parallel group (Megatron's distributed optimizer is stage 1: 6 + 12/dp B/param with fp32
// gradients, Megatron-LM PR 1345), stage 2 also the gradients, stage 3 also the parameters. Expert
// parameters shard over the expert data-parallel size instead. Sharded sizes round up to whole
// bytes. Activations = activations_per_microbatch × in_flight_microbatches. Runtime overhead
// defaults to 1 GiB: a PyTorch process's CUDA context with cuBLAS, cuDNN and NCCL loaded occupies
// about 0.5–1 GiB of device memory that torch.cuda.memory_allocated does not show (a round,
// conservative estimate; pass the measured value where known). Not modelled: caching-allocator
// fragmentation, ZeRO-3 prefetch buffers, temporary buffers inside kernels.
class MemoryModel {
 public:
  // Throws InputError naming the field for zero_stage outside 0..3, dp or expert_dp below 1, and an
  // invalid precision policy.
  MemoryModel(PrecisionPolicy precision, OptimizerKind optimizer, int zero_stage, int64_t dp, int64_t expert_dp = 1,
              Bytes runtime_overhead = default_runtime_overhead());

  // Throws InputError for negative parameter counts or a negative/non-finite in-flight count.
  MemoryBreakdown rank_memory(const RankMemoryInputs& inputs) const;

  // Bytes per parameter as stored by one rank (after sharding), for dense or expert parameters:
  // e.g. 18 for Megatron without sharding, 6 + 12/dp with the distributed optimizer.
  struct BytesPerParameter {
    double params = 0;
    double grads = 0;
    double optimizer = 0;
    double total() const { return params + grads + optimizer; }
  };
  BytesPerParameter bytes_per_parameter(bool expert = false) const;

  static Bytes default_runtime_overhead() { return Bytes::gibibytes(1); }

 private:
  struct Shards {
    int64_t params;
    int64_t grads;
    int64_t optimizer;
  };
  Shards shards(bool expert) const;

  PrecisionPolicy precision_;
  OptimizerKind optimizer_;
  int zero_stage_;
  int64_t dp_;
  int64_t expert_dp_;
  Bytes runtime_overhead_;
};

}  // namespace clustersim
