#pragma once

// The layers of a chunk's pass in its program, with ZeRO-3's parameter gathers: FSDP's (each
// layer's parameters gathered one layer ahead) or DeepSpeed's buckets of at most
// layout.zero3_bucket_elements parameters fetched one bucket ahead of the compute that uses them;
// each layer's gradients-ready markers follow its backward. Internal to parallelism/ (the program
// builder).

#include <cstdint>
#include <vector>

#include "parallelism/rank_grid.h"
#include "parallelism/step_program.h"
#include "workloads/transformer.h"

namespace clustersim {

// One kind of layer, priced once; every chunk copies it.
struct PricedLayer {
  std::vector<ProgramOp> forward;
  std::vector<ProgramOp> backward;  // recompute + backward
  int64_t dense_params = 0;         // gradients on the data(-context) group
  int64_t expert_params = 0;        // gradients on the expert data-parallel group
  Bytes dense_gather;               // ZeRO-3: gathered bytes of the dense parameters (0 otherwise)
  Bytes expert_gather;              // ZeRO-3: gathered bytes of the expert parameters
};

struct ChunkParts {
  const Transformer* transformer;
  const PricedLayer* dense;
  const PricedLayer* moe;
  const PricedLayer* dense_window;  // the sliding-window variants (model.sliding_window > 0)
  const PricedLayer* moe_window;
  GroupKind data_group;
  int64_t zero3_bucket = 0;  // Layout::zero3_bucket_elements
  int64_t param_bytes = 2;   // bytes per gathered parameter
  const PricedLayer& of(int layer) const {
    const bool window = transformer->model().is_window_layer(layer);
    if (transformer->layer_kind(layer) == LayerKind::kMoe) return window ? *moe_window : *moe;
    return window ? *dense_window : *dense;
  }
};

// The layers of one chunk (model order in forward, reversed in backward). With ZeRO-3 each layer's
// parameters are gathered one layer ahead.
void append_layers(std::vector<ProgramOp>& out, const ChunkParts& parts, std::vector<int> layers, bool backward,
                   bool merge);

}  // namespace clustersim
