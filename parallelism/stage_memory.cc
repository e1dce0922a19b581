// Each stage's memory (parallelism/stage_memory.h).

#include "parallelism/stage_memory.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/error.h"
#include "parallelism/eager_program.h"
#include "parallelism/pipeline_schedule.h"
#include "parallelism/program_builder.h"

namespace clustersim {

std::vector<int> stage_layer_indices(const Layout& layout, int layers, int stage) {
  std::vector<int> out;
  const int v = virtual_stages(layout, layers);
  for (int c = 0; c < v; ++c) {
    const std::vector<int> chunk = chunk_layers(layout, layers, stage, c);
    out.insert(out.end(), chunk.begin(), chunk.end());
  }
  return out;
}

StageParameters stage_parameters(const Transformer& transformer, const Layout& layout, int stage) {
  const int layers = static_cast<int>(transformer.model().layers);
  int64_t moe = 0;
  const std::vector<int> held = stage_layer_indices(layout, layers, stage);
  for (int layer : held) moe += transformer.layer_kind(layer) == LayerKind::kMoe ? 1 : 0;
  const int64_t dense = static_cast<int64_t>(held.size()) - moe;
  return transformer.parameters().stage(dense, moe, stage == 0, stage == layout.pp - 1, layout.pp > 1);
}

std::vector<StageMemory> stage_memory(const Transformer& transformer, const Layout& layout) {
  const ModelSpec& model = transformer.model();
  const TrainingSpec& training = transformer.training();
  const int p = layout.pp;
  const int layers = static_cast<int>(model.layers);
  const int v = virtual_stages(layout, layers);
  const std::vector<int> stage_layers = layers_per_stage(layout, layers);
  const int64_t m = microbatches(layout, training.global_batch, training.micro_batch);
  if (m > INT32_MAX) throw InputError("too many microbatches per step");
  const ParameterCounts& params = transformer.parameters();
  check_cuda_graphs(training, layout);
  if (training.framework == Framework::kPytorchEager) return eager_stage_memory(transformer, layout);
  // Sharded state spans the shard group: dp·cp ranks, or dp_shard·cp under hybrid sharding.
  const MemoryModel memory_model(training.precision, training.optimizer, layout.zero_stage,
                                 static_cast<int64_t>(layout.shard_dp()) * layout.cp, layout.expert_dp());

  // Full recompute keeps one layer's complete activations alive while it is recomputed.
  Bytes recompute_dense;
  Bytes recompute_moe;
  if (training.recompute == Recompute::kFull) {
    TrainingSpec no_recompute = training;
    no_recompute.recompute = Recompute::kNone;
    const Transformer whole(model, no_recompute, transformer.shard());
    recompute_dense = whole.layer(LayerKind::kDense).activation_bytes;
    if (model.moe.enabled()) recompute_moe = whole.layer(LayerKind::kMoe).activation_bytes;
  }

  std::vector<StageMemory> out;
  for (int s = 0; s < p; ++s) {
    const bool first_stage = s == 0;
    const bool last_stage = s == p - 1;
    StageMemory mem;
    mem.stage = s;
    mem.layers = stage_layers[static_cast<size_t>(s)];
    const StageParameters held = stage_parameters(transformer, layout, s);
    mem.parameters = held.dense;
    mem.expert_parameters = held.expert;
    const int peak = peak_inflight_passes(layout.schedule, s, p, static_cast<int>(m), v);
    mem.inflight_microbatches = static_cast<double>(peak) / v;
    RankMemoryInputs inputs;
    inputs.dense_params = held.dense;
    inputs.expert_params = held.expert;
    Bytes per_microbatch;
    Bytes working_set;
    for (int layer : stage_layer_indices(layout, layers, s)) {
      const bool moe = transformer.layer_kind(layer) == LayerKind::kMoe;
      per_microbatch += transformer.layer_at(layer).activation_bytes;
      working_set = std::max(working_set, moe ? recompute_moe : recompute_dense);
    }
    if (first_stage) per_microbatch += transformer.embedding_activation_bytes();
    if (last_stage) per_microbatch += transformer.head_activation_bytes();
    inputs.activations_per_microbatch = per_microbatch;
    inputs.in_flight_microbatches = mem.inflight_microbatches;
    if (last_stage) inputs.logits = transformer.logits_bytes();
    mem.memory = memory_model.rank_memory(inputs);
    mem.memory.activations += working_set;
    // ZeRO 2/3 reducing once per step (reduce_every_microbatch false) accumulates the whole
    // gradients over the micro-batches before its one reduce-scatter: they are not sharded then.
    if (layout.zero_stage >= 2 && !layout.reduces_every_microbatch() && m > 1) {
      mem.memory.grads = Bytes::of(checked_mul(held.dense + held.expert, training.precision.grad_bytes(), "gradient bytes"));
    }
    // ZeRO-3 holds gathered weights unsharded: the layer in use and the one prefetched (FSDP's
    // FULL_SHARD with limit_all_gathers), or two of DeepSpeed's buckets (zero3_bucket_elements).
    if (layout.zero_stage >= 3) {
      const int64_t layer = std::max(params.layer.total(), params.moe_layer.total());
      const int64_t unit = layout.zero3_bucket_elements > 0 ? std::min(layer, layout.zero3_bucket_elements) : layer;
      mem.memory.param_copies = Bytes::of(checked_mul(2 * unit, training.precision.param_bytes(), "ZeRO-3 bytes"));
    }
    out.push_back(mem);
  }
  return out;
}

}  // namespace clustersim
