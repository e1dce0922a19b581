#include "parallelism/program_builder.h"

#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <tuple>

#include "core/error.h"
#include "parallelism/context_parallel_ring.h"
#include "parallelism/pipeline_schedule.h"
#include "parallelism/program_ops.h"
#include "parallelism/tp_comm_overlap.h"
#include "parallelism/zero3_gathers.h"
#include "workloads/host_costs.h"
#include "workloads/op_cost.h"

namespace clustersim {

namespace {

ProgramOp collective(const Op& op, GroupKind group, CollectiveOp collective_op, Bytes size) {
  return ProgramOp::collective(std::string(op.name), group, collective_op, size);
}

// Which ops of a list a CUDA graph captures (training.cuda_graphs).
enum class GraphCapture {
  kNone,
  kAll,
  kAttention,  // a mixture-of-experts layer under `layers`: all but its MLP part (Megatron's attn scope)
};

// Whether `op` of a mixture-of-experts layer belongs to its MLP part: the pre-MLP norm, router,
// dispatcher, experts, shared experts and the residual after them.
bool moe_mlp_part(const Op& op) {
  for (std::string_view prefix : {"moe.", "experts.", "router", "shared.", "mlp", "post_attention_norm"}) {
    if (op.name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

// How a layout turns ops into program ops.
struct Pricing {
  const ComputeCostModel* cost;
  int cp = 1;
  int tp = 1;
  bool merge = true;
  bool tp_overlap = false;  // Layout::tp_comm_overlap (layer ops only: not the embedding or the head)
  const HostCosts* host = nullptr;
  // Blocking syncs after a mixture-of-experts layer's permutation (forward and recompute): the
  // dispatcher's read of the tokens per expert (ProgramOptions::host).
  int moe_syncs = 0;
  GraphCapture capture = GraphCapture::kNone;
  // The host cost of issuing `op`: one graph node where a graph captures it.
  Duration host_of(const Op& op) const {
    const bool captured = capture == GraphCapture::kAll || (capture == GraphCapture::kAttention && !moe_mlp_part(op));
    return captured ? host->graph_node : host_cost(op, *host);
  }
};

// Appends `ops` priced by `cost`; communication points become collectives on their groups. With
// tensor-parallel overlap, the all-gathers and reduce-scatters next to TE's userbuffers GEMMs run
// overlapped with them (parallelism/tp_comm_overlap.h).
void append_ops(std::vector<ProgramOp>& out, const std::vector<Op>& ops, const Pricing& pricing) {
  const ComputeCostModel& cost = *pricing.cost;
  const int cp = pricing.cp;
  const bool merge = pricing.merge;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (pricing.tp_overlap) {
      const TpOverlapMatch match = match_tp_overlap(ops, i);
      switch (match.method) {
        case TpOverlapMethod::kRingExchange: append_ring_exchange(out, op, ops[i + 1], cost, pricing.tp); break;
        case TpOverlapMethod::kPipeline: append_pipelined_reduce_scatter(out, op, ops[i + 1], cost); break;
        case TpOverlapMethod::kBulk: append_bulk_overlap(out, op, ops[i + 1], ops[i + 2], ops[i + 3], cost); break;
        case TpOverlapMethod::kNone: break;
      }
      if (match.method != TpOverlapMethod::kNone) {
        i += match.ops - 1;
        continue;
      }
    }
    if (op.cost != OpCost::kCommunication) {
      const Duration d = op_duration(op, cost);
      push_compute(out, op.name, work_of(op.pass), d, op.kernel_flops, op_power(op, d, cost),
                   HostWork::kernel(pricing.host_of(op), d), merge);
      if (op.pass != Pass::kBackward && op.name == "moe.permute") {
        for (int k = 0; k < pricing.moe_syncs; ++k) {
          out.push_back(ProgramOp::sync("moe.tokens_per_expert", pricing.host->sync));
        }
      }
      continue;
    }
    const size_t first_collective = out.size();
    switch (op.comm) {
      case CommKind::kTpAllReduce:
        out.push_back(collective(op, GroupKind::kTensor, CollectiveOp::kAllReduce, op.comm_bytes));
        break;
      case CommKind::kTpAllGather:
        out.push_back(collective(op, GroupKind::kTensor, CollectiveOp::kAllGather, op.comm_bytes));
        break;
      case CommKind::kTpReduceScatter:
        out.push_back(collective(op, GroupKind::kTensor, CollectiveOp::kReduceScatter, op.comm_bytes));
        break;
      case CommKind::kCpKvExchange: {
        // The workload places the exchange right before the fused attention core it feeds.
        check_invariant(i + 1 < ops.size() && ops[i + 1].cost == OpCost::kFlashAttention,
                        "context-parallel ring exchange without the attention core after it");
        append_ring(out, op, ops[i + 1], cost, cp, pricing.host_of(op), pricing.host_of(ops[i + 1]), merge);
        ++i;
        break;
      }
      case CommKind::kCpAllToAll:
        out.push_back(collective(op, GroupKind::kContext, CollectiveOp::kAllToAll, op.comm_bytes));
        break;
      case CommKind::kEpAllToAll: {
        ProgramOp p = collective(op, GroupKind::kExpert, CollectiveOp::kAllToAll, op.comm_bytes);
        if (!op.comm_matrix.empty()) p.all_to_all_bytes = std::make_shared<const std::vector<int64_t>>(op.comm_matrix);
        out.push_back(std::move(p));
        break;
      }
      case CommKind::kEpAllGather:
        out.push_back(collective(op, GroupKind::kExpert, CollectiveOp::kAllGather, op.comm_bytes));
        break;
      case CommKind::kEpReduceScatter:
        out.push_back(collective(op, GroupKind::kExpert, CollectiveOp::kReduceScatter, op.comm_bytes));
        break;
      case CommKind::kEtpAllGather:
        out.push_back(collective(op, GroupKind::kExpertTensor, CollectiveOp::kAllGather, op.comm_bytes));
        break;
      case CommKind::kEtpReduceScatter:
        out.push_back(collective(op, GroupKind::kExpertTensor, CollectiveOp::kReduceScatter, op.comm_bytes));
        break;
      case CommKind::kNone: throw InternalError("communication op without a kind");
    }
    for (size_t k = first_collective; k < out.size(); ++k) {
      if (out[k].kind == ProgramOp::Kind::kCollective) out[k].host.issue = pricing.host_of(op);
    }
  }
}

std::vector<ProgramOp> priced(const std::vector<Op>& ops, const Pricing& pricing) {
  std::vector<ProgramOp> out;
  append_ops(out, ops, pricing);
  return out;
}

Duration total_duration(const std::vector<Op>& ops, const ComputeCostModel& cost) {
  Duration d;
  for (const Op& op : ops) d += op_duration(op, cost);
  return d;
}

// Parameter tensors of one layer: its non-empty weight and bias fields (a LayerNorm's weight and
// bias, and the routed experts' weights of one kind, counted once).
int64_t layer_tensors(const LayerParameters& p) {
  int64_t n = 0;
  for (int64_t field : {p.input_norm, p.qkv_weight, p.qkv_bias, p.q_down_weight, p.q_up_weight, p.kv_down_weight,
                        p.kv_up_weight, p.latent_norms, p.proj_weight, p.proj_bias, p.attention_sinks,
                        p.post_attention_norm, p.fc1_weight, p.fc1_bias, p.fc2_weight, p.fc2_bias, p.router_weight,
                        p.shared_fc1_weight, p.shared_fc2_weight, p.expert_weights, p.expert_biases}) {
    n += field > 0 ? 1 : 0;
  }
  return n;
}

// Parameter tensors the optimizer of `stage` updates: its layers', with the embeddings on the
// first stage and the final norm and LM head on the last.
int64_t stage_tensors(const Transformer& transformer, const Layout& layout, int stage) {
  const ParameterCounts& p = transformer.parameters();
  int64_t n = 0;
  for (int layer : stage_layer_indices(layout, static_cast<int>(transformer.model().layers), stage)) {
    n += layer_tensors(transformer.layer_kind(layer) == LayerKind::kMoe ? p.moe_layer : p.layer);
  }
  if (stage == 0) n += (p.word_embedding > 0 ? 1 : 0) + (p.position_embedding > 0 ? 1 : 0);
  if (stage == layout.pp - 1) n += (p.final_norm > 0 ? 1 : 0) + (p.lm_head > 0 ? 1 : 0);
  return n;
}

}  // namespace

int64_t gradient_bucket_elements(const Layout& layout, const TrainingSpec& training) {
  if (layout.grad_bucket_elements > 0) return layout.grad_bucket_elements;
  if (training.framework == Framework::kPytorchEager) {
    constexpr int64_t kDdpBucketCapBytes = int64_t{25} << 20;  // bucket_cap_mb = 25
    return kDdpBucketCapBytes / training.precision.grad_bytes();
  }
  constexpr int64_t kMegatronMinBucket = 40'000'000;
  constexpr int64_t kMegatronBucketPerDpRank = 1'000'000;
  return std::max(kMegatronMinBucket, kMegatronBucketPerDpRank * layout.dp);
}

void check_bucket_counts(const Transformer& transformer, const Layout& layout) {
  // Each bucket is an event of the simulation (ZeRO-3 gathers: one per bucket and micro-batch): a
  // bucket size far below a stage's parameters would run for hours, so the count is bounded before
  // any program is built: gradient buckets like the micro-batches (kMaxMicrobatchesPerPipeline),
  // ZeRO-3 gathers per step at 2^18 (Llama-3-8B on one DGX H100 at tp 2 with 32 micro-batches:
  // 128,512 gathers of 1e6 parameters simulate in 8 s, 1.28 M of 1e5 took 72 s).
  constexpr int64_t kMaxZero3GathersPerStep = int64_t{1} << 18;
  const TrainingSpec& training = transformer.training();
  const int64_t m = microbatches(layout, training.global_batch, training.micro_batch);
  const int64_t bucket_elements = gradient_bucket_elements(layout, training);
  for (int s = 0; s < layout.pp; ++s) {
    const int64_t stage_total = stage_parameters(transformer, layout, s).total();
    for (auto [key, elements, per_step, limit] :
         {std::tuple<const char*, int64_t, int64_t, int64_t>{"parallelism.grad_bucket_elements", bucket_elements, 1,
                                                             kMaxMicrobatchesPerPipeline},
          std::tuple<const char*, int64_t, int64_t, int64_t>{
              "parallelism.zero3_bucket_elements", layout.zero_stage >= 3 ? layout.zero3_bucket_elements : 0, m,
              kMaxZero3GathersPerStep}}) {
      if (elements <= 0) continue;
      const int64_t buckets = (stage_total + elements - 1) / elements;
      if (buckets > limit / per_step) {
        const int64_t most = std::max<int64_t>(1, limit / per_step);
        throw InputError(fmt::format("{}: {} makes {} buckets of pipeline stage {}'s {} parameters{}; at most {} "
                                     "(valid: at least {} for this model and layout)",
                                     key, elements, buckets, s, stage_total,
                                     per_step > 1
                                         ? fmt::format(", each gathered in each of the {} micro-batches", per_step)
                                         : "",
                                     most, (stage_total + most - 1) / most))
            .about({key});
      }
    }
  }
}

TrainingPrograms build_training_programs(const Transformer& transformer, const ComputeCostModel& cost,
                                         const Layout& layout, const ProgramOptions& options) {
  const ModelSpec& model = transformer.model();
  const TrainingSpec& training = transformer.training();
  const bool merge = options.merge_compute;
  const int p = layout.pp;
  const int layers = static_cast<int>(model.layers);
  const int v = virtual_stages(layout, layers);
  const int64_t m = microbatches(layout, training.global_batch, training.micro_batch);
  if (m > INT32_MAX) throw InputError("too many microbatches per step");
  const PrecisionPolicy& precision = training.precision;
  const GroupKind data_group = layout.hybrid_shard() ? GroupKind::kDataShard
                               : layout.cp > 1        ? GroupKind::kDataContext
                                                      : GroupKind::kData;
  // The deepep dispatcher's traffic needs the expert-parallel group's node layout
  // (simulate_training sets it); without it the programs would price a plain all-to-all.
  check_invariant(transformer.dims().dispatcher != MoeDispatcher::kDeepEp || transformer.dims().ep <= 1 ||
                      transformer.dims().ep_ranks_per_node > 0,
                  "deepep programs built without the expert-parallel group's ranks per node");

  // Price each kind of layer once; every chunk copies it.
  const ParameterCounts& params = transformer.parameters();
  // Megatron-Core's dispatchers read the tokens per expert on the host after the permutation:
  // once for alltoall (MoEAlltoAllTokenDispatcher._maybe_dtoh_and_synchronize) and the flex
  // dispatcher with DeepEP (its dispatch returns the received token counts to the host), twice for
  // allgather (the counts' .cpu() and masked_select's nonzero); measured for alltoall and
  // allgather on one H200 (tools/data/h200-2026-12-01-moe/README.md, "One blocking sync
  // per layer and step"). pytorch-eager has no MoE layer.
  const int moe_syncs = training.framework != Framework::kMegatron          ? 0
                        : layout.moe_dispatcher == MoeDispatcher::kAllGather ? 2
                                                                             : 1;
  const bool whole_step_graph = training.cuda_graphs == CudaGraphs::kStep;
  const Pricing plain{&cost,          layout.cp, layout.tp, merge, false, &options.host, moe_syncs,
                      whole_step_graph ? GraphCapture::kAll : GraphCapture::kNone};
  auto price = [&](LayerKind kind, const LayerParameters& counts, bool window = false) {
    const LayerOps& ops = transformer.layer(kind, window);
    Pricing layer_pricing = plain;
    layer_pricing.tp_overlap = layout.tp_comm_overlap && layout.tp > 1;
    if (training.cuda_graphs == CudaGraphs::kLayers) {
      layer_pricing.capture = kind == LayerKind::kMoe ? GraphCapture::kAttention : GraphCapture::kAll;
    }
    PricedLayer l;
    l.forward = priced(ops.forward, layer_pricing);
    l.backward = priced(ops.recompute, layer_pricing);
    append(l.backward, priced(ops.backward, layer_pricing), merge);
    l.dense_params = counts.dense();
    l.expert_params = counts.expert();
    if (layout.zero_stage >= 3) {
      l.dense_gather = Bytes::of(l.dense_params) * precision.param_bytes();
      l.expert_gather = Bytes::of(l.expert_params) * precision.param_bytes();
    }
    return l;
  };
  const PricedLayer dense_layer = price(LayerKind::kDense, params.layer);
  const PricedLayer moe_layer = model.moe.enabled() ? price(LayerKind::kMoe, params.moe_layer) : PricedLayer{};
  const bool windows = model.sliding_window > 0;
  const PricedLayer dense_window = windows ? price(LayerKind::kDense, params.layer, true) : PricedLayer{};
  const PricedLayer moe_window =
      windows && model.moe.enabled() ? price(LayerKind::kMoe, params.moe_layer, true) : PricedLayer{};
  const ChunkParts parts{&transformer, &dense_layer, &moe_layer, &dense_window, &moe_window, data_group,
                         layout.zero_stage >= 3 ? layout.zero3_bucket_elements : 0, precision.param_bytes()};
  const std::vector<ProgramOp> embedding_forward = priced(transformer.embedding_forward(), plain);
  const std::vector<ProgramOp> embedding_backward = priced(transformer.embedding_backward(), plain);
  const std::vector<ProgramOp> head_forward = priced(transformer.head_forward(), plain);
  const std::vector<ProgramOp> head_backward = priced(transformer.head_backward(), plain);

  // Point-to-point payload per microbatch: [b, s/cp, h] activations, sharded by tp under sequence
  // parallelism (Megatron-Core sends the sequence-parallel tensor as it is).
  const int64_t act_bytes = bytes_per_element(training.activation_dtype());
  Bytes p2p = Bytes::of(transformer.tokens()) * model.hidden * act_bytes;
  if (layout.sequence_parallel) p2p = p2p.divided_ceil(layout.tp);

  TrainingPrograms out;
  out.microbatches = static_cast<int>(m);
  out.memory = stage_memory(transformer, layout);
  const int64_t dense_shards = static_cast<int64_t>(layout.shard_dp()) * layout.cp;
  const int64_t bucket_elements = gradient_bucket_elements(layout, training);
  check_bucket_counts(transformer, layout);
  const int64_t expert_shards = layout.expert_dp();
  for (int s = 0; s < p; ++s) {
    const StageParameters stage_params = stage_parameters(transformer, layout, s);
    StageProgram stage;
    for (int c = 0; c < v; ++c) {
      const int vs = c * p + s;
      const bool first = vs == 0;
      const bool last = vs == p * v - 1;
      const std::vector<int> held = chunk_layers(layout, layers, s, c);
      ChunkProgram chunk;
      if (first) append(chunk.forward.ops, embedding_forward, merge);
      append_layers(chunk.forward.ops, parts, held, false, merge);
      if (last) append(chunk.forward.ops, head_forward, merge);
      if (last) {
        append(chunk.backward.ops, head_backward, merge);
        chunk.backward.ops.push_back(ProgramOp::gradients_ready(data_group, params.lm_head + params.final_norm));
      }
      append_layers(chunk.backward.ops, parts, held, true, merge);
      if (first) {
        append(chunk.backward.ops, embedding_backward, merge);
        chunk.backward.ops.push_back(
            ProgramOp::gradients_ready(data_group, params.word_embedding + params.position_embedding));
      }
      chunk.activation_bytes = p2p;
      chunk.gradient_bytes = p2p;
      stage.chunks.push_back(std::move(chunk));
    }

    stage.data_group = data_group;
    stage.gradients.op = layout.grad_reduce_op == GradReduceOp::kAllReduce       ? CollectiveOp::kAllReduce
                         : layout.grad_reduce_op == GradReduceOp::kReduceScatter ? CollectiveOp::kReduceScatter
                         : layout.zero_stage >= 1                                ? CollectiveOp::kReduceScatter
                                                                                 : CollectiveOp::kAllReduce;
    stage.gradients.bytes_per_element = precision.grad_bytes();
    stage.gradients.bucket_elements = bucket_elements;
    stage.gradients.overlap = layout.overlap_grad_reduce;
    stage.gradients.pipeline_aligned = training.framework == Framework::kMegatron && layout.pp > 1 &&
                                       layout.schedule != PipelineSchedule::kGpipe;
    if (layout.hybrid_shard()) stage.gradients.replicate_shards = dense_shards;
    stage.gradients.every_microbatch = layout.reduces_every_microbatch();
    // ZeRO >= 1: the optimizer updates this rank's shard, dense parameters over dp·cp ranks and expert
    // parameters over the expert data-parallel ranks.
    const int64_t optimizer_shard =
        layout.zero_stage >= 1 ? (stage_params.dense + dense_shards - 1) / dense_shards +
                                     (stage_params.expert + expert_shards - 1) / expert_shards
                               : stage_params.total();
    const std::vector<Op> optimizer_ops =
        optimizer_step_ops(optimizer_shard, stage_tensors(transformer, layout, s), training);
    stage.optimizer = total_duration(optimizer_ops, cost);
    for (const Op& op : optimizer_ops) stage.optimizer_power += op_power(op, op_duration(op, cost), cost);
    // The host prepares every parameter tensor's share of the multi-tensor launches before the GPU
    // runs them (AdamW(fused=True): 10.1 µs per tensor, workloads/host_costs.h).
    // Captured in a whole-step graph (a capturable optimizer): one graph node per kernel.
    stage.optimizer_host = HostWork::kernel(
        whole_step_graph ? options.host.graph_node * static_cast<int64_t>(optimizer_ops.size())
                         : options.host.optimizer_per_tensor * stage_tensors(transformer, layout, s),
        stage.optimizer);
    // pytorch-eager runs the launches one by one: eagerly the host's per-tensor preparation comes
    // before the first launch (the rest issue behind it at no further cost), replayed each is a node.
    if (training.framework == Framework::kPytorchEager && optimizer_ops.size() > 1) {
      for (size_t i = 0; i < optimizer_ops.size(); ++i) {
        const Op& op = optimizer_ops[i];
        const Duration d = op_duration(op, cost);
        const Duration host = whole_step_graph ? options.host.graph_node
                              : i == 0         ? stage.optimizer_host.issue
                                               : Duration::zero();
        stage.optimizer_launches.push_back(
            OptimizerLaunch{std::string(op.name), d, op_power(op, d, cost), HostWork::kernel(host, d)});
      }
    }
    // Megatron-Core clips gradients by their global norm (--clip-grad, default 1.0), which it reads
    // on the host (get_grad_norm_fp32 returns total_norm.item()) before the update: one sync per
    // step. train_step.py's pytorch-eager loop neither clips nor reads the loss inside the step.
    if (training.framework == Framework::kMegatron) stage.optimizer_sync = options.host.sync;
    if (training.framework == Framework::kPytorchEager && layout.dp > 1 && layout.zero_stage == 0) {
      HostCosts ddp_host = options.host;
      if (whole_step_graph) ddp_host.backward_elementwise = options.host.graph_node;
      add_ddp_bucket_copies(stage, cost, precision, ddp_host);
    }
    if (layout.zero_stage == 1 || layout.zero_stage == 2) {
      stage.data_param_gather = Bytes::of(stage_params.dense) * precision.param_bytes();
      stage.expert_param_gather = Bytes::of(stage_params.expert) * precision.param_bytes();
    }
    stage.overlap_param_gather = layout.overlap_param_gather;
    // Tied word embedding split over the first and the last stage (Megatron; pytorch-eager's
    // reference pipeline unties nothing across stages it does not model): their gradients are
    // summed between the two before the optimizer.
    if (model.tied_embeddings && p > 1 && (s == 0 || s == p - 1) && training.framework == Framework::kMegatron) {
      stage.embedding_grad_reduce =
          Bytes::of(checked_mul(params.word_embedding, precision.grad_bytes(), "embedding gradient bytes"));
    }
    out.stages.push_back(std::move(stage));
  }
  return out;
}

void check_cuda_graphs(const TrainingSpec& training, const Layout& layout) {
  const bool eager = training.framework == Framework::kPytorchEager;
  if (training.cuda_graphs == CudaGraphs::kLayers && eager) {
    throw InputError("training.cuda_graphs: layers captures Megatron's transformer layers (framework megatron); "
                     "with framework pytorch-eager use step (one GPU or DistributedDataParallel) or none")
        .about({"training.cuda_graphs"});
  }
  if (training.cuda_graphs == CudaGraphs::kStep &&
      (!eager || layout.tp != 1 || layout.pp != 1 || layout.cp != 1 || layout.zero_stage != 0)) {
    throw InputError(fmt::format(
        "training.cuda_graphs: step captures a whole pytorch-eager step on one GPU or under DistributedDataParallel "
        "(framework pytorch-eager, tp 1, pp 1, cp 1, zero 0); got framework {}, tp {}, pp {}, cp {}, zero {}; use "
        "{} or none",
        name_of(training.framework), layout.tp, layout.pp, layout.cp, layout.zero_stage,
        eager ? "a layout of one GPU or DDP" : "layers")).about({"training.cuda_graphs"});
  }
}

}  // namespace clustersim
