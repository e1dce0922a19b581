// The pytorch-eager parts of the programs and of the stage memory (parallelism/eager_program.h).

#include "parallelism/eager_program.h"

#include <fmt/format.h>

#include "core/error.h"
#include "parallelism/pipeline_schedule.h"
#include "workloads/pytorch_eager_ops.h"

namespace clustersim {

namespace {

// Power work of a memory-bound kernel moving `bytes` in `duration` (empty without a power model).
PowerWork memory_power(Duration duration, Bytes bytes, const ComputeCostModel& cost) {
  const PowerModel* power = cost.power_model();
  return power == nullptr ? PowerWork{} : power->memory_bound(duration, cost.kernel_gap(), bytes);
}

}  // namespace

void add_ddp_bucket_copies(StageProgram& stage, const ComputeCostModel& cost, const PrecisionPolicy& precision,
                           const HostCosts& host) {
  int64_t elements = 0;
  for (ChunkProgram& chunk : stage.chunks) {
    std::vector<ProgramOp> ops;
    ops.reserve(chunk.backward.ops.size() * 2);
    for (ProgramOp& op : chunk.backward.ops) {
      const bool ready = op.kind == ProgramOp::Kind::kGradientsReady && op.elements > 0;
      const int64_t n = ready ? op.elements : 0;
      ops.push_back(std::move(op));
      if (n == 0) continue;
      elements += n;
      const Bytes moved = Bytes::of(checked_mul(2 * precision.grad_bytes(), n, "DDP bucket bytes"));
      const Duration d = cost.memory_bound_time(moved, MemoryAccess::kElementwise);
      // Launched by the reducer's autograd hook, from the backward's C++ thread.
      ops.push_back(ProgramOp::compute("ddp.grad_to_bucket", WorkKind::kBackward, d, 0, memory_power(d, moved, cost),
                                       HostWork::kernel(host.backward_elementwise, d)));
    }
    chunk.backward.ops = std::move(ops);
  }
  const Bytes back = Bytes::of(checked_mul(2 * precision.grad_bytes(), elements, "DDP bucket bytes"));
  stage.after_reductions = cost.memory_bound_time(back, MemoryAccess::kElementwise);
  stage.after_reductions_power = memory_power(stage.after_reductions, back, cost);
  stage.after_reductions_host = HostWork::kernel(host.backward_elementwise, stage.after_reductions);
}

void check_pytorch_eager_layout(const TrainingSpec& training, const Layout& layout) {
  if (training.framework != Framework::kPytorchEager) return;
  const bool fsdp = layout.zero_stage == 3 || layout.zero_stage == 2;
  const int64_t m = microbatches(layout, training.global_batch, training.micro_batch);
  if (layout.pp > 1) {
    // train_step.py --parallel pp: pipeline stages alone, GPipe (or 1F1B), no model chunks.
    if (layout.tp != 1 || layout.cp != 1 || layout.dp != 1 || layout.zero_stage != 0 || layout.vpp > 1 ||
        layout.layers_per_virtual_stage > 0 || layout.schedule == PipelineSchedule::kInterleaved1F1B) {
      throw InputError(fmt::format("training.framework: pytorch-eager with pp {} models pipeline stages alone (tp 1, "
                                   "cp 1, dp 1, zero 0 and no distributed_optimizer, schedule gpipe or 1f1b without "
                                   "virtual stages); got tp {}, cp {}, dp {}, zero {}, vpp {}, schedule {}; use "
                                   "training.framework: megatron for other layouts",
                                   layout.pp, layout.tp, layout.cp, layout.dp, layout.zero_stage, layout.vpp,
                                   name_of(layout.schedule)))
          .about({"training.framework"});
    }
  } else if (layout.tp > 1) {
    // train_step.py --parallel tp: tensor parallelism alone, one micro-batch.
    if (layout.cp != 1 || layout.dp != 1 || layout.zero_stage != 0 || m != 1 || layout.sequence_parallel ||
        layout.tp_comm_overlap) {
      throw InputError(fmt::format("training.framework: pytorch-eager with tp {} models tensor parallelism alone "
                                   "(cp 1, dp 1, zero 0 and no distributed_optimizer, one micro-batch: global_batch = "
                                   "micro_batch, sequence_parallel and tp_comm_overlap off); got cp {}, dp {}, zero {}, "
                                   "micro-batches per step {}, sequence_parallel {}, tp_comm_overlap {}; use "
                                   "training.framework: megatron for other layouts",
                                   layout.tp, layout.cp, layout.dp, layout.zero_stage, m,
                                   layout.sequence_parallel ? "on" : "off", layout.tp_comm_overlap ? "on" : "off"))
          .about({"training.framework"});
    }
  } else if (layout.cp != 1 || (layout.zero_stage != 0 && !fsdp) || (!fsdp && m != 1)) {
    throw InputError(fmt::format("training.framework: pytorch-eager models PyTorch steps alone or under "
                                 "DistributedDataParallel (tp 1, cp 1, zero 0, one micro-batch per GPU: "
                                 "global_batch = micro_batch · dp), FullyShardedDataParallel (zero 3, or 2 for "
                                 "SHARD_GRAD_OP), pipeline stages (pp > 1, dp 1) or tensor parallelism (tp > 1, dp 1); "
                                 "got tp {}, pp {}, cp {}, zero {}, "
                                 "micro-batches per GPU {}; use training.framework: megatron for other layouts",
                                 layout.tp, layout.pp, layout.cp, layout.zero_stage, m))
          .about({"training.framework"});
  }
  if (training.precision.param_dtype != DataType::kFp32 && !fsdp) {
    throw InputError(fmt::format("training.params_dtype: {} with training.framework pytorch-eager is FSDP's mixed "
                                 "precision and needs parallelism.zero: 3 or 2 (got zero {}); without FSDP use "
                                 "params_dtype: fp32 (torch.autocast over fp32 parameters)",
                                 name_of(training.precision.param_dtype), layout.zero_stage))
        .about({"training.params_dtype", "training.framework"});
  }
}

std::vector<StageMemory> eager_stage_memory(const Transformer& transformer, const Layout& layout) {
  const ModelSpec& model = transformer.model();
  const TrainingSpec& training = transformer.training();
  const int p = layout.pp;
  const int layers = static_cast<int>(model.layers);
  const std::vector<int> stage_layers = layers_per_stage(layout, layers);
  const int64_t m = microbatches(layout, training.global_batch, training.micro_batch);
  const ParameterCounts& params = transformer.parameters();
  // One GPU's PyTorch step: the largest of its memory moments (workloads/pytorch_eager_ops.h);
  // with dp > 1 under torch.nn.parallel.DistributedDataParallel (one micro-batch per GPU) or, with
  // ZeRO stage 3 or 2, under FullyShardedDataParallel (FULL_SHARD or SHARD_GRAD_OP; gradient
  // accumulation allowed).
  check_pytorch_eager_layout(training, layout);
  const bool fsdp = layout.zero_stage == 3 || layout.zero_stage == 2;
  if (p > 1) {
    // Pipeline stages (train_step.py --parallel pp): each stage's layers, embedding or head, and
    // the micro-batches its schedule keeps in flight.
    std::vector<StageMemory> out;
    for (int s = 0; s < p; ++s) {
      StageMemory mem;
      mem.stage = s;
      mem.layers = stage_layers[static_cast<size_t>(s)];
      mem.parameters = stage_parameters(transformer, layout, s).total();
      EagerStageShare share;
      share.layers = mem.layers;
      share.embedding = s == 0;
      share.head = s == p - 1;
      share.inflight_microbatches = peak_inflight_passes(layout.schedule, s, p, static_cast<int>(m), 1);
      mem.inflight_microbatches = static_cast<double>(share.inflight_microbatches);
      const PytorchEagerMemory eager =
          pytorch_eager_peak_memory(model, training, transformer.dims(), mem.parameters, nullptr, share);
      mem.memory = eager.peak;
      mem.peak_moment = eager.moment;
      out.push_back(mem);
    }
    return out;
  }
  StageMemory mem;
  mem.layers = layers;
  mem.parameters = params.total();
  mem.inflight_microbatches = 1;
  FsdpSharding sharding;
  if (fsdp) {
    // Gathered 16-bit weights: two layers' with FULL_SHARD (the one in use and the one prefetched;
    // limit_all_gathers), the whole model's with SHARD_GRAD_OP (kept from forward to backward).
    sharding.shards = layout.shard_dp();
    const int64_t gathered = layout.zero_stage == 3 ? 2 * params.layer.total() : mem.parameters;
    sharding.gathered_bytes = checked_mul(gathered, training.precision.param_bytes(), "FSDP bytes");
    // Gradient accumulation: the fp32 gradients of the earlier micro-batches, sharded when each
    // micro-batch reduce-scatters, whole under no_sync (the step's one reduction at its end).
    if (m > 1) {
      const int64_t shards = sharding.shards;
      sharding.accumulated_grad_bytes =
          layout.reduces_every_microbatch()
              ? checked_mul((mem.parameters + shards - 1) / shards, 4, "FSDP gradient bytes")
              : checked_mul(mem.parameters, 4, "FSDP gradient bytes");
    }
  }
  const PytorchEagerMemory eager =
      pytorch_eager_peak_memory(model, training, transformer.dims(), mem.parameters, fsdp ? &sharding : nullptr);
  mem.memory = eager.peak;
  mem.peak_moment = eager.moment;
  if (!fsdp && layout.dp > 1) {
    // DDP's reducer keeps its buckets as flat tensors beside the parameters' .grad (the default
    // gradient_as_bucket_view=False), one gradient's worth for the whole model, alive for the
    // whole step (torch/nn/parallel/distributed.py). Measured on two H200s: +4.91 GiB for
    // gpt-1.3b's 1.32 B fp32 gradients (tools/data/h200x2-2026-11-29/reference-x2.jsonl).
    mem.memory.comm_buffers = Bytes::of(checked_mul(mem.parameters, training.precision.grad_bytes(), "DDP bucket bytes"));
  }
  return {mem};
}

}  // namespace clustersim
