#include "parallelism/program_builder.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <tuple>

#include "core/error.h"
#include "parallelism/pipeline_schedule.h"
#include "parallelism/tp_comm_overlap.h"
#include "workloads/host_costs.h"
#include "workloads/op_cost.h"
#include "workloads/pytorch_eager_ops.h"

namespace clustersim {

namespace {

void push_compute(std::vector<ProgramOp>& out, std::string_view label, WorkKind work, Duration duration, double flops,
                  const PowerWork& power, const HostWork& host, bool merge) {
  if (merge && !out.empty() && out.back().kind == ProgramOp::Kind::kCompute && out.back().work == work) {
    out.back().host.then(host, duration);
    out.back().duration += duration;
    out.back().flops += flops;
    out.back().power += power;
    return;
  }
  out.push_back(ProgramOp::compute(std::string(label), work, duration, flops, power, host));
}

// Power work of a memory-bound kernel moving `bytes` in `duration` (empty without a power model).
PowerWork memory_power(Duration duration, Bytes bytes, const ComputeCostModel& cost) {
  const PowerModel* power = cost.power_model();
  return power == nullptr ? PowerWork{} : power->memory_bound(duration, cost.kernel_gap(), bytes);
}

// Handle of the context-parallel ring's exchange in a pass (one at a time: started, waited, reused);
// the tensor-parallel overlaps use kFirstTpOverlapHandle .. + kTpOverlapHandles − 1
// (parallelism/tp_comm_overlap.h), ZeRO-3 parameter gathers kFirstGatherHandle and up.
constexpr int kRingHandle = 0;
constexpr int kFirstGatherHandle = kFirstTpOverlapHandle + kTpOverlapHandles;
static_assert(kFirstTpOverlapHandle > kRingHandle);

ProgramOp collective(const Op& op, GroupKind group, CollectiveOp collective_op, Bytes size) {
  return ProgramOp::collective(std::string(op.name), group, collective_op, size);
}

// One attention core run as the ring of context parallelism (TransformerEngine's p2p context-
// parallel attention): cp steps, each computing the attention of the K/V block in hand (1/cp of the
// core: with zig-zag sharding every step has the same causal work) while the block moves on to the
// next rank: an asynchronous exchange on the context group (every rank sends `exchange.comm_bytes`
// to its successor: an all-to-all whose matrix has one block per row), waited for before the next
// step. The last step has nothing left to send.
void append_ring(std::vector<ProgramOp>& out, const Op& exchange, const Op& core, const ComputeCostModel& cost,
                 int cp, Duration exchange_host, Duration core_host, bool merge) {
  Op step = core;
  const double parts = static_cast<double>(cp);
  step.flops = core.flops / parts;
  step.kernel_flops = core.kernel_flops / parts;
  step.bytes_read = core.bytes_read.scaled(1.0 / parts);
  step.bytes_written = core.bytes_written.scaled(1.0 / parts);
  const Duration step_time = op_duration(step, cost);
  auto ring = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(cp) * static_cast<size_t>(cp), 0);
  for (int r = 0; r < cp; ++r) (*ring)[static_cast<size_t>(r * cp + (r + 1) % cp)] = exchange.comm_bytes.count();
  for (int i = 0; i < cp; ++i) {
    const bool send = i + 1 < cp;
    if (send) {
      ProgramOp p = ProgramOp::collective(std::string(exchange.name), GroupKind::kContext, CollectiveOp::kAllToAll,
                                          exchange.comm_bytes, kRingHandle);
      p.all_to_all_bytes = ring;
      p.host.issue = exchange_host;
      out.push_back(std::move(p));
    }
    push_compute(out, core.name, work_of(core.pass), step_time, step.kernel_flops, op_power(step, step_time, cost),
                 HostWork::kernel(core_host, step_time), merge);
    if (send) out.push_back(ProgramOp::wait(kRingHandle));
  }
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

void append(std::vector<ProgramOp>& out, const std::vector<ProgramOp>& ops, bool merge) {
  for (const auto& op : ops) {
    if (op.kind == ProgramOp::Kind::kCompute) {
      push_compute(out, op.label, op.work, op.duration, op.flops, op.power, op.host, merge);
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

// The ZeRO-3 gathers of one layer's parameters under handles kFirstGatherHandle + 2·i and + 2·i + 1.
int gather(std::vector<ProgramOp>& out, const ChunkParts& parts, const PricedLayer& layer, int i) {
  int started = 0;
  if (layer.dense_gather.count() > 0) {
    out.push_back(ProgramOp::collective("zero3_param_all_gather", parts.data_group, CollectiveOp::kAllGather,
                                        layer.dense_gather, kFirstGatherHandle + 2 * i));
    ++started;
  }
  if (layer.expert_gather.count() > 0) {
    out.push_back(ProgramOp::collective("zero3_expert_param_all_gather", GroupKind::kExpertData,
                                        CollectiveOp::kAllGather, layer.expert_gather, kFirstGatherHandle + 2 * i + 1));
    ++started;
  }
  return started;
}

// DeepSpeed ZeRO-3's parameter gathers over the layers of one pass (parallelism/layout.h,
// zero3_bucket_elements = B): each layer's dense parameters are gathered in ceil(P / B) all-gathers of
// at most B parameters on the data group, one after another across the layers; the gather of the
// next bucket is started when the previous one is taken into use, so at most one bucket is fetched
// ahead (stage3_prefetch_bucket_size bounds the prefetched parameters). Bucket j of a layer is needed
// from the point where the layer has done the share of its compute that the parameters before it
// make up (compute assumed proportional to the parameters it uses); a compute op that spans such a
// point is split there. Two alternating handles suffice: the bucket in use and the next.
void append_layers_bucketed(std::vector<ProgramOp>& out, const ChunkParts& parts, std::vector<int> layers,
                            bool backward, bool merge) {
  if (backward) std::reverse(layers.begin(), layers.end());
  const int64_t bucket = parts.zero3_bucket;
  std::vector<int64_t> sizes;  // every bucket of the pass, in order
  for (int layer : layers) {
    for (int64_t left = parts.of(layer).dense_params; left > 0; left -= bucket) sizes.push_back(std::min(left, bucket));
  }
  auto handle = [](size_t k) { return kFirstGatherHandle + static_cast<int>(k % 2); };
  auto issue = [&](size_t k) {
    if (k >= sizes.size()) return;
    out.push_back(ProgramOp::collective("zero3_param_all_gather", parts.data_group, CollectiveOp::kAllGather,
                                        Bytes::of(sizes[k]) * parts.param_bytes, handle(k)));
  };
  issue(0);
  size_t k = 0;  // the bucket taken into use next
  auto take = [&] {
    issue(k + 1);
    out.push_back(ProgramOp::wait(handle(k)));
    ++k;
  };
  for (int layer_index : layers) {
    const PricedLayer& layer = parts.of(layer_index);
    const std::vector<ProgramOp>& ops = backward ? layer.backward : layer.forward;
    Duration total;
    for (const ProgramOp& op : ops) total += op.kind == ProgramOp::Kind::kCompute ? op.duration : Duration::zero();
    // Compute times at which this layer's buckets are taken into use.
    std::vector<Duration> starts;
    int64_t before = 0;
    for (int64_t left = layer.dense_params; left > 0; left -= bucket) {
      starts.push_back(Duration::picoseconds(static_cast<int64_t>(
          std::llround(static_cast<double>(total.ps()) * static_cast<double>(before) /
                       static_cast<double>(layer.dense_params)))));
      before += std::min(left, bucket);
    }
    size_t next = 0;  // index into `starts`
    Duration done;
    auto take_due = [&] {
      while (next < starts.size() && starts[next] <= done) {
        take();
        ++next;
      }
    };
    take_due();
    for (const ProgramOp& op : ops) {
      if (op.kind != ProgramOp::Kind::kCompute) {
        out.push_back(op);
        continue;
      }
      Duration left = op.duration;
      while (next < starts.size() && done + left > starts[next]) {
        const Duration part = starts[next] - done;
        const double share = static_cast<double>(part.ps()) / static_cast<double>(op.duration.ps());
        push_compute(out, op.label, op.work, part, op.flops * share, op.power.scaled(share), op.host.scaled(share),
                     merge);
        done += part;
        left -= part;
        take_due();
      }
      if (left > Duration::zero()) {
        const double share = static_cast<double>(left.ps()) / static_cast<double>(op.duration.ps());
        push_compute(out, op.label, op.work, left, op.flops * share, op.power.scaled(share), op.host.scaled(share),
                     merge);
        done += left;
      }
    }
    take_due();  // buckets of a layer without compute left
    if (backward) out.push_back(ProgramOp::gradients_ready(parts.data_group, layer.dense_params));
  }
}

// The layers of one chunk (model order in forward, reversed in backward). With ZeRO-3 each layer's
// parameters are gathered one layer ahead.
void append_layers(std::vector<ProgramOp>& out, const ChunkParts& parts, std::vector<int> layers, bool backward,
                   bool merge) {
  if (parts.zero3_bucket > 0) {
    append_layers_bucketed(out, parts, std::move(layers), backward, merge);
    return;
  }
  if (backward) std::reverse(layers.begin(), layers.end());
  const int n = static_cast<int>(layers.size());
  if (n > 0) gather(out, parts, parts.of(layers.front()), 0);
  for (int i = 0; i < n; ++i) {
    const PricedLayer& layer = parts.of(layers[static_cast<size_t>(i)]);
    if (i + 1 < n) gather(out, parts, parts.of(layers[static_cast<size_t>(i + 1)]), i + 1);
    if (layer.dense_gather.count() > 0) out.push_back(ProgramOp::wait(kFirstGatherHandle + 2 * i));
    if (layer.expert_gather.count() > 0) out.push_back(ProgramOp::wait(kFirstGatherHandle + 2 * i + 1));
    append(out, backward ? layer.backward : layer.forward, merge);
    if (backward) {
      out.push_back(ProgramOp::gradients_ready(parts.data_group, layer.dense_params));
      if (layer.expert_params > 0)
        out.push_back(ProgramOp::gradients_ready(GroupKind::kExpertData, layer.expert_params));
    }
  }
}

// The layers stage `stage` holds over all its chunks.
std::vector<int> stage_layer_indices(const Layout& layout, int layers, int stage) {
  std::vector<int> out;
  const int v = virtual_stages(layout, layers);
  for (int c = 0; c < v; ++c) {
    const std::vector<int> chunk = chunk_layers(layout, layers, stage, c);
    out.insert(out.end(), chunk.begin(), chunk.end());
  }
  return out;
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

// Dense and expert parameters of the representative rank of `stage`.
StageParameters stage_parameters(const Transformer& transformer, const Layout& layout, int stage) {
  const int layers = static_cast<int>(transformer.model().layers);
  int64_t moe = 0;
  const std::vector<int> held = stage_layer_indices(layout, layers, stage);
  for (int layer : held) moe += transformer.layer_kind(layer) == LayerKind::kMoe ? 1 : 0;
  const int64_t dense = static_cast<int64_t>(held.size()) - moe;
  return transformer.parameters().stage(dense, moe, stage == 0, stage == layout.pp - 1, layout.pp > 1);
}

// torch.nn.parallel.DistributedDataParallel's copies with its default gradient_as_bucket_view=False
// (torch/csrc/distributed/c10d/reducer.cpp): as each gradient is ready, mark_variable_ready_dense
// writes it into its bucket divided by the world size (at::mul_out: the gradient read, the bucket
// written); once every bucket is reduced, finalize_backward copies each bucket back into the
// parameters' .grad (read and written again). Each pass moves 2 × the gradient bytes on the compute
// stream; the first follows every kGradientsReady marker of the backward passes, the second runs
// after the reductions (StageProgram::after_reductions).
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

}  // namespace

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
  const int64_t expert_shards = layout.expert_dp();
  for (int s = 0; s < p; ++s) {
    // Each bucket is an event of the simulation (ZeRO-3 gathers: one per bucket and micro-batch): a
    // bucket size far below the stage's parameters would run for hours, so the count is bounded
    // before any program is built: gradient buckets like the micro-batches
    // (kMaxMicrobatchesPerPipeline), ZeRO-3 gathers per step at 2^18 (Llama-3-8B on one DGX H100
    // at tp 2 with 32 micro-batches: 128,512 gathers of 1e6 parameters simulate in 8 s, 1.28 M of
    // 1e5 took 72 s).
    const StageParameters stage_params = stage_parameters(transformer, layout, s);
    {
      constexpr int64_t kMaxZero3GathersPerStep = int64_t{1} << 18;
      const int64_t stage_total = stage_params.total();
      for (auto [key, elements, per_step, limit] :
           {std::tuple<const char*, int64_t, int64_t, int64_t>{"parallelism.grad_bucket_elements",
                                                               layout.grad_bucket_elements, 1,
                                                               kMaxMicrobatchesPerPipeline},
            std::tuple<const char*, int64_t, int64_t, int64_t>{
                "parallelism.zero3_bucket_elements", layout.zero_stage >= 3 ? layout.zero3_bucket_elements : 0, m,
                kMaxZero3GathersPerStep}}) {
        if (elements <= 0) continue;
        const int64_t buckets = (stage_total + elements - 1) / elements;
        if (buckets > limit / per_step) {
          const int64_t most = std::max<int64_t>(1, limit / per_step);
          throw InputError(fmt::format(
              "{}: {} makes {} buckets of pipeline stage {}'s {} parameters{}; at most {} (use at least {})", key,
              elements, buckets, s, stage_total,
              per_step > 1 ? fmt::format(", each gathered in each of the {} micro-batches", per_step) : "", most,
              (stage_total + most - 1) / most));
        }
      }
    }
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
    stage.gradients.bucket_elements = layout.grad_bucket_elements;
    stage.gradients.overlap = layout.overlap_grad_reduce;
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
                                   name_of(layout.schedule)));
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
                                   layout.sequence_parallel ? "on" : "off", layout.tp_comm_overlap ? "on" : "off"));
    }
  } else if (layout.cp != 1 || (layout.zero_stage != 0 && !fsdp) || (!fsdp && m != 1)) {
    throw InputError(fmt::format("training.framework: pytorch-eager models PyTorch steps alone or under "
                                 "DistributedDataParallel (tp 1, cp 1, zero 0, one micro-batch per GPU: "
                                 "global_batch = micro_batch · dp), FullyShardedDataParallel (zero 3, or 2 for "
                                 "SHARD_GRAD_OP), pipeline stages (pp > 1, dp 1) or tensor parallelism (tp > 1, dp 1); "
                                 "got tp {}, pp {}, cp {}, zero {}, "
                                 "micro-batches per GPU {}; use training.framework: megatron for other layouts",
                                 layout.tp, layout.pp, layout.cp, layout.zero_stage, m));
  }
  if (training.precision.param_dtype != DataType::kFp32 && !fsdp) {
    throw InputError(fmt::format("training.params_dtype: {} with training.framework pytorch-eager is FSDP's mixed "
                                 "precision and needs parallelism.zero: 3 or 2 (got zero {}); without FSDP use "
                                 "params_dtype: fp32 (torch.autocast over fp32 parameters)",
                                 name_of(training.precision.param_dtype), layout.zero_stage));
  }
}

void check_cuda_graphs(const TrainingSpec& training, const Layout& layout) {
  const bool eager = training.framework == Framework::kPytorchEager;
  if (training.cuda_graphs == CudaGraphs::kLayers && eager) {
    throw InputError("training.cuda_graphs: layers captures Megatron's transformer layers (framework megatron); "
                     "with framework pytorch-eager use step (one GPU or DistributedDataParallel) or none");
  }
  if (training.cuda_graphs == CudaGraphs::kStep &&
      (!eager || layout.tp != 1 || layout.pp != 1 || layout.cp != 1 || layout.zero_stage != 0)) {
    throw InputError(fmt::format(
        "training.cuda_graphs: step captures a whole pytorch-eager step on one GPU or under DistributedDataParallel "
        "(framework pytorch-eager, tp 1, pp 1, cp 1, zero 0); got framework {}, tp {}, pp {}, cp {}, zero {}; use "
        "{} or none",
        name_of(training.framework), layout.tp, layout.pp, layout.cp, layout.zero_stage, eager ? "a layout of one GPU or DDP" : "layers"));
  }
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
  if (training.framework == Framework::kPytorchEager) {
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
