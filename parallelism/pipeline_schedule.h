#pragma once

// The order in which one pipeline rank runs the forward and backward passes of its microbatches.
//
// GPipe: all forwards, then all backwards (Huang et al. 2019). 1F1B: p − r − 1 warm-up forwards,
// then alternating one forward / one backward, then the remaining backwards (PipeDream-Flush,
// Narayanan et al. 2021). Interleaved 1F1B: each rank holds v model chunks; the warm-up is
// (p − r − 1)·2 + (v − 1)·p chunk-forwards and microbatches advance in groups of p through the
// chunks (Megatron-LM core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving; Narayanan et al. SC21 §2.2.2).

#include <cstdint>
#include <vector>

#include "parallelism/layout.h"

namespace clustersim {

enum class PassKind { kForward, kBackward };

struct PipelinePass {
  PassKind kind = PassKind::kForward;
  int microbatch = 0;  // 0 .. m−1
  int chunk = 0;       // model chunk on this rank, 0 .. v−1 (always 0 without interleaving)
  bool operator==(const PipelinePass&) const = default;
};

// Forward passes a rank runs before its first backward: GPipe m·v (0 with one stage, which has no
// pipeline: Megatron-LM's forward_backward_no_pipelining); 1F1B min(p − r − 1, m);
// interleaved min((p − r − 1)·2 + (v − 1)·p, m·v). Throws InputError for rank outside [0, p) or
// non-positive p, m, v.
int warmup_passes(PipelineSchedule schedule, int rank, int stages, int microbatches, int chunks);

// The passes of rank `rank` (0 = first stage) in execution order: m·v forwards and m·v backwards.
// For the interleaved schedule m must be a multiple of p (validate_layout checks it).
std::vector<PipelinePass> schedule_passes(PipelineSchedule schedule, int rank, int stages, int microbatches,
                                          int chunks);

// The largest number of chunk-microbatches whose activations are held at once by `rank` (forwards
// done, backwards not yet done) when running schedule_passes(): 1F1B min(p − r, m); interleaved
// rank 0 with p = 4, v = 2, m = 8 holds 11 (L5).
int peak_inflight_passes(PipelineSchedule schedule, int rank, int stages, int microbatches, int chunks);

}  // namespace clustersim
