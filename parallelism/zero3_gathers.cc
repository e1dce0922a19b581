// ZeRO-3's parameter gathers around a chunk's layers (parallelism/zero3_gathers.h).

#include "parallelism/zero3_gathers.h"

#include <algorithm>
#include <cmath>

#include "parallelism/program_ops.h"

namespace clustersim {

namespace {

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

}  // namespace

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

}  // namespace clustersim
