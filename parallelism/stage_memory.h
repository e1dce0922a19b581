#pragma once

// The memory of each pipeline stage's representative rank (parameters, gradients, optimizer state,
// the activations of the micro-batches in flight, logits, ZeRO-3's gathered weights; for
// pytorch-eager its peak memory moment, parallelism/eager_program.h), and the layers and
// parameters a stage holds.

#include <cstdint>
#include <string>
#include <vector>

#include "cost_models/memory_model.h"
#include "parallelism/layout.h"
#include "workloads/parameter_count.h"
#include "workloads/transformer.h"

namespace clustersim {

// Memory of one rank of each stage (the representative tp = cp = dp = 0 rank).
struct StageMemory {
  int stage = 0;
  int layers = 0;
  int64_t parameters = 0;           // dense parameters held by the rank (before ZeRO sharding)
  int64_t expert_parameters = 0;    // routed-expert parameters held by the rank (before sharding)
  double inflight_microbatches = 0; // stage-microbatch equivalents held at the peak
  MemoryBreakdown memory;
  std::string peak_moment;          // pytorch-eager: when the peak occurs (PytorchEagerMemory::moment)
};

// The memory of each stage's representative rank (what build_training_programs() reports in
// `memory`), without pricing or building any program: the cheap path a layout search uses to drop
// layouts that cannot fit before simulating them. Same preconditions as build_training_programs().
std::vector<StageMemory> stage_memory(const Transformer& transformer, const Layout& layout);

// The layers stage `stage` holds over all its chunks.
std::vector<int> stage_layer_indices(const Layout& layout, int layers, int stage);

// Dense and expert parameters of the representative rank of `stage`.
StageParameters stage_parameters(const Transformer& transformer, const Layout& layout, int stage);

}  // namespace clustersim
