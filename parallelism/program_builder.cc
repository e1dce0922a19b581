#include "parallelism/program_builder.h"

#include <fmt/format.h>

#include "core/error.h"
#include "parallelism/pipeline_schedule.h"
#include "workloads/op_cost.h"
#include "workloads/pytorch_eager_ops.h"

namespace clustersim {

namespace {

WorkKind work_of(Pass pass) {
  switch (pass) {
    case Pass::kForward: return WorkKind::kForward;
    case Pass::kBackward: return WorkKind::kBackward;
    case Pass::kRecompute: return WorkKind::kRecompute;
  }
  return WorkKind::kForward;
}

void push_compute(std::vector<ProgramOp>& out, std::string_view label, WorkKind work, Duration duration, double flops,
                  bool merge) {
  if (merge && !out.empty() && out.back().kind == ProgramOp::Kind::kCompute && out.back().work == work) {
    out.back().duration += duration;
    out.back().flops += flops;
    return;
  }
  out.push_back(ProgramOp::compute(std::string(label), work, duration, flops));
}

// Appends `ops` priced by `cost`; communication points become collectives.
void append_ops(std::vector<ProgramOp>& out, const std::vector<Op>& ops, const ComputeCostModel& cost, int cp,
                bool merge) {
  for (const Op& op : ops) {
    if (op.cost != OpCost::kCommunication) {
      push_compute(out, op.name, work_of(op.pass), op_duration(op, cost), op.kernel_flops, merge);
      continue;
    }
    switch (op.comm) {
      case CommKind::kTpAllReduce:
        out.push_back(ProgramOp::collective(std::string(op.name), GroupKind::kTensor, CollectiveOp::kAllReduce,
                                            op.comm_bytes));
        break;
      case CommKind::kTpAllGather:
        out.push_back(ProgramOp::collective(std::string(op.name), GroupKind::kTensor, CollectiveOp::kAllGather,
                                            op.comm_bytes));
        break;
      case CommKind::kTpReduceScatter:
        out.push_back(ProgramOp::collective(std::string(op.name), GroupKind::kTensor, CollectiveOp::kReduceScatter,
                                            op.comm_bytes));
        break;
      case CommKind::kCpKvExchange:
        // The cp − 1 ring steps exchange every rank's K/V chunk once: the traffic of a ring
        // all-gather of the chunks (gathered output = cp × chunk).
        out.push_back(ProgramOp::collective(std::string(op.name), GroupKind::kContext, CollectiveOp::kAllGather,
                                            op.comm_bytes * cp));
        break;
      case CommKind::kNone: throw InternalError("communication op without a kind");
    }
  }
}

std::vector<ProgramOp> priced(const std::vector<Op>& ops, const ComputeCostModel& cost, int cp, bool merge) {
  std::vector<ProgramOp> out;
  append_ops(out, ops, cost, cp, merge);
  return out;
}

void append(std::vector<ProgramOp>& out, const std::vector<ProgramOp>& ops, bool merge) {
  for (const auto& op : ops) {
    if (op.kind == ProgramOp::Kind::kCompute) {
      push_compute(out, op.label, op.work, op.duration, op.flops, merge);
    } else {
      out.push_back(op);
    }
  }
}

Duration total_duration(const std::vector<Op>& ops, const ComputeCostModel& cost) {
  Duration d;
  for (const Op& op : ops) d += op_duration(op, cost);
  return d;
}

// One chunk of `layers` layers. With ZeRO-3 each layer's parameters are gathered one layer ahead.
struct ChunkParts {
  const std::vector<ProgramOp>* layer_forward;
  const std::vector<ProgramOp>* layer_backward;  // recompute + backward
  int64_t layer_params;
  Bytes layer_gather;  // ZeRO-3: gathered bytes of one layer's parameters (0 otherwise)
};

void append_layers(std::vector<ProgramOp>& out, const ChunkParts& parts, int layers, bool backward, bool merge) {
  const bool gather = parts.layer_gather.count() > 0;
  if (gather && layers > 0) {
    out.push_back(ProgramOp::collective("zero3_param_all_gather", GroupKind::kData, CollectiveOp::kAllGather,
                                        parts.layer_gather, 0));
  }
  for (int i = 0; i < layers; ++i) {
    if (gather) {
      if (i + 1 < layers) {
        out.push_back(ProgramOp::collective("zero3_param_all_gather", GroupKind::kData, CollectiveOp::kAllGather,
                                            parts.layer_gather, i + 1));
      }
      out.push_back(ProgramOp::wait(i));
    }
    append(out, backward ? *parts.layer_backward : *parts.layer_forward, merge);
    if (backward) out.push_back(ProgramOp::gradients_ready(GroupKind::kData, parts.layer_params));
  }
}

}  // namespace

TrainingPrograms build_training_programs(const Transformer& transformer, const ComputeCostModel& cost,
                                         const Layout& layout, const ProgramOptions& options) {
  const ModelSpec& model = transformer.model();
  const TrainingSpec& training = transformer.training();
  const bool merge = options.merge_compute;
  const int p = layout.pp;
  const int layers = static_cast<int>(model.layers);
  const int v = virtual_stages(layout, layers);
  const std::vector<int> stage_layers = layers_per_stage(layout, layers);
  const int64_t m = microbatches(layout, training.global_batch, training.micro_batch);
  if (m > INT32_MAX) throw InputError("too many microbatches per step");
  const PrecisionPolicy& precision = training.precision;

  // Price one layer once; every chunk copies it.
  const std::vector<ProgramOp> layer_forward = priced(transformer.layer_forward(), cost, layout.cp, merge);
  std::vector<ProgramOp> layer_backward = priced(transformer.layer_recompute(), cost, layout.cp, merge);
  append(layer_backward, priced(transformer.layer_backward(), cost, layout.cp, merge), merge);
  const std::vector<ProgramOp> embedding_forward = priced(transformer.embedding_forward(), cost, layout.cp, merge);
  const std::vector<ProgramOp> embedding_backward = priced(transformer.embedding_backward(), cost, layout.cp, merge);
  const std::vector<ProgramOp> head_forward = priced(transformer.head_forward(), cost, layout.cp, merge);
  const std::vector<ProgramOp> head_backward = priced(transformer.head_backward(), cost, layout.cp, merge);

  const ParameterCounts& params = transformer.parameters();
  const int64_t layer_params = params.layer.total();
  const Bytes layer_gather =
      layout.zero_stage >= 3 ? Bytes::of(layer_params) * precision.param_bytes() : Bytes::zero();
  const ChunkParts parts{&layer_forward, &layer_backward, layer_params, layer_gather};

  // Point-to-point payload per microbatch: [b, s/cp, h] activations, sharded by tp under sequence
  // parallelism (Megatron-Core sends the sequence-parallel tensor as it is).
  const int64_t act_bytes = bytes_per_element(training.activation_dtype());
  Bytes p2p = Bytes::of(transformer.tokens()) * model.hidden * act_bytes;
  if (layout.sequence_parallel) p2p = p2p.divided_ceil(layout.tp);

  TrainingPrograms out;
  out.microbatches = static_cast<int>(m);
  out.memory = stage_memory(transformer, layout);
  for (int s = 0; s < p; ++s) {
    const int chunk_layers = stage_layers[static_cast<size_t>(s)] / v;
    StageProgram stage;
    for (int c = 0; c < v; ++c) {
      const int vs = c * p + s;
      const bool first = vs == 0;
      const bool last = vs == p * v - 1;
      ChunkProgram chunk;
      if (first) append(chunk.forward.ops, embedding_forward, merge);
      append_layers(chunk.forward.ops, parts, chunk_layers, false, merge);
      if (last) append(chunk.forward.ops, head_forward, merge);
      if (last) {
        append(chunk.backward.ops, head_backward, merge);
        chunk.backward.ops.push_back(
            ProgramOp::gradients_ready(GroupKind::kData, params.lm_head + params.final_norm));
      }
      append_layers(chunk.backward.ops, parts, chunk_layers, true, merge);
      if (first) {
        append(chunk.backward.ops, embedding_backward, merge);
        chunk.backward.ops.push_back(
            ProgramOp::gradients_ready(GroupKind::kData, params.word_embedding + params.position_embedding));
      }
      chunk.activation_bytes = p2p;
      chunk.gradient_bytes = p2p;
      stage.chunks.push_back(std::move(chunk));
    }

    const bool first_stage = s == 0;
    const bool last_stage = s == p - 1;
    const int64_t stage_params = params.stage(stage_layers[static_cast<size_t>(s)], first_stage, last_stage, p > 1);
    stage.gradients.op = layout.zero_stage >= 1 ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
    stage.gradients.bytes_per_element = precision.grad_bytes();
    stage.gradients.bucket_elements = layout.grad_bucket_elements;
    stage.gradients.overlap = layout.overlap_grad_reduce;
    const int64_t optimizer_shard =
        layout.zero_stage >= 1 ? (stage_params + layout.dp - 1) / layout.dp : stage_params;
    stage.optimizer = total_duration(optimizer_step_ops(optimizer_shard, training), cost);
    if (layout.zero_stage == 1 || layout.zero_stage == 2) {
      stage.data_param_gather = Bytes::of(stage_params) * precision.param_bytes();
    }
    stage.overlap_param_gather = layout.overlap_param_gather;
    out.stages.push_back(std::move(stage));
  }
  return out;
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
  if (training.framework == Framework::kPytorchEager) {
    // One GPU's PyTorch step: the largest of its memory moments (workloads/pytorch_eager_ops.h).
    if (p != 1 || layout.dp != 1 || layout.zero_stage != 0 || m != 1) {
      throw InputError(fmt::format("training.framework pytorch-eager models one GPU running one micro-batch per step "
                                   "(pp 1, dp 1, zero 0, global_batch = micro_batch; got pp {}, dp {}, zero {}, {} "
                                   "micro-batches); use training.framework: megatron for parallel layouts",
                                   p, layout.dp, layout.zero_stage, m));
    }
    StageMemory mem;
    mem.layers = layers;
    mem.parameters = params.total();
    mem.inflight_microbatches = 1;
    mem.memory = pytorch_eager_peak_memory(model, training, transformer.dims(), mem.parameters).peak;
    return {mem};
  }
  const MemoryModel memory_model(training.precision, training.optimizer, layout.zero_stage,
                                 static_cast<int64_t>(layout.dp) * layout.cp, 1);

  // Full recompute keeps one layer's complete activations alive while it is recomputed.
  Bytes recompute_working_set;
  if (training.recompute == Recompute::kFull) {
    TrainingSpec no_recompute = training;
    no_recompute.recompute = Recompute::kNone;
    recompute_working_set = Transformer(model, no_recompute, transformer.shard()).layer_activation_bytes();
  }

  std::vector<StageMemory> out;
  for (int s = 0; s < p; ++s) {
    const bool first_stage = s == 0;
    const bool last_stage = s == p - 1;
    StageMemory mem;
    mem.stage = s;
    mem.layers = stage_layers[static_cast<size_t>(s)];
    mem.parameters = params.stage(mem.layers, first_stage, last_stage, p > 1);
    const int peak = peak_inflight_passes(layout.schedule, s, p, static_cast<int>(m), v);
    mem.inflight_microbatches = static_cast<double>(peak) / v;
    RankMemoryInputs inputs;
    inputs.dense_params = mem.parameters;
    Bytes per_microbatch = transformer.layer_activation_bytes() * mem.layers;
    if (first_stage) per_microbatch += transformer.embedding_activation_bytes();
    if (last_stage) per_microbatch += transformer.head_activation_bytes();
    inputs.activations_per_microbatch = per_microbatch;
    inputs.in_flight_microbatches = mem.inflight_microbatches;
    if (last_stage) inputs.logits = transformer.logits_bytes();
    mem.memory = memory_model.rank_memory(inputs);
    mem.memory.activations += recompute_working_set;
    out.push_back(mem);
  }
  return out;
}

}  // namespace clustersim
