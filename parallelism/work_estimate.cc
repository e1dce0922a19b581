#include "parallelism/work_estimate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "collectives/collective_runner.h"
#include "engine/simulator.h"
#include "parallelism/rank_grid.h"
#include "parallelism/step_simulation.h"

namespace clustersim {

uint64_t StepWork::events() const {
  return static_cast<uint64_t>(static_cast<double>(ops) * kEventsPerOp +
                               static_cast<double>(transfers) * kEventsPerTransfer);
}

double StepWork::seconds(Fidelity fidelity) const {
  return static_cast<double>(events()) /
         (fidelity == Fidelity::kFlow ? kFlowEventsPerSecond : kAnalyticalEventsPerSecond);
}

std::string describe_estimated_seconds(double s) {
  if (s < 90) return fmt::format("{:.0f} s", std::max(s, 1.0));
  if (s < 5400) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

namespace {

class WorkCounter {
 public:
  WorkCounter(const Cluster& cluster, const Layout& layout, const SimulationOptions& options)
      : cluster_(cluster),
        layout_(layout),
        options_(options),
        grid_(layout),
        runner_(sim_, cluster, nullptr, Fidelity::kAnalytical, options.collective_profile),
        stage_gpus_(layout.world_size() / layout.pp),
        ranks_per_stage_(options.representative
                             ? static_cast<int>(representative_lines(cluster, layout, options.fidelity, RankCoord{}).size())
                             : stage_gpus_) {}

  // One call of a collective of `kind` from stage `stage`'s representative rank, `calls` times.
  void collective(int stage, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype, uint64_t calls,
                  const std::vector<int64_t>* matrix = nullptr) {
    if (calls == 0 || size.count() == 0) return;
    const std::vector<int> members = grid_.group_of(kind, representative(stage));
    if (members.size() == 1) {
      work_.ops += calls;
      return;
    }
    // Each group of the stage runs it once: the mirrors (representative) or the rendezvous of
    // its members (every rank).
    const uint64_t groups = static_cast<uint64_t>(stage_gpus_) / members.size();
    const uint64_t instances = options_.representative ? (flow_between(members) ? groups : 1) : groups;
    work_.collectives += calls * instances;
    // At flow fidelity a call is an event per group that runs it (its completion), not per member:
    // its members rendezvous, and each goes on from the completion. Analytical runs count every
    // member's call (their estimate is a bound: parallelism/work_estimate.h).
    const bool per_group = !options_.representative && options_.fidelity == Fidelity::kFlow;
    work_.ops += calls * (per_group ? groups : static_cast<uint64_t>(ranks_per_stage_));
    if (!flow_between(members)) return;
    CollectiveRequest request;
    request.op = op;
    request.group.assign(members.begin(), members.end());
    request.size = size;
    request.dtype = dtype;
    if (matrix != nullptr) request.all_to_all_bytes = *matrix;
    work_.transfers += calls * instances * runner_.transfer_count(request);
  }

  // `calls` pipeline sends of `size` from stage `stage` to stage `target`, on every tp·cp·dp line.
  void send(int stage, int target, Bytes size, uint64_t calls) {
    if (calls == 0 || size.count() == 0 || stage == target) return;
    const int from = representative(stage);
    RankCoord to = grid_.coord_of(from);
    to.pp = target;
    const std::vector<int> pair{from, grid_.rank_of(to)};
    const uint64_t lines = options_.representative && !flow_between(pair) ? 1 : static_cast<uint64_t>(stage_gpus_);
    work_.ops += calls * static_cast<uint64_t>(ranks_per_stage_);
    if (!flow_between(pair)) return;
    CollectiveRequest request;
    request.op = CollectiveOp::kSendRecv;
    request.group.assign(pair.begin(), pair.end());
    request.size = size;
    request.dtype = DataType::kBf16;
    work_.transfers += calls * lines * runner_.transfer_count(request);
  }

  void compute(uint64_t ops) { work_.ops += ops * static_cast<uint64_t>(ranks_per_stage()); }

  StepWork result() {
    work_.simulated_ranks = ranks_per_stage() * layout_.pp;
    return work_;
  }

 private:
  int ranks_per_stage() const { return ranks_per_stage_; }
  int representative(int stage) const { return grid_.rank_of(RankCoord{0, 0, 0, stage}); }

  // Flow fidelity and not every member in one NVSwitch node (simulate_step prices those in
  // closed form: they share no link with other groups).
  bool flow_between(const std::vector<int>& members) const {
    if (options_.fidelity != Fidelity::kFlow) return false;
    const int node = cluster_.node_of(members.front());
    if (cluster_.node_spec(node).intra != IntraNodeFabric::kNvSwitch) return true;
    return std::any_of(members.begin(), members.end(), [&](int m) { return cluster_.node_of(m) != node; });
  }

  const Cluster& cluster_;
  const Layout& layout_;
  const SimulationOptions& options_;
  RankGrid grid_;
  Simulator sim_;
  CollectiveRunner runner_;
  int stage_gpus_;
  int ranks_per_stage_;  // simulated: representative_lines, or every rank
  StepWork work_;
};

DataType gradient_dtype(const GradientReduction& g) { return g.bytes_per_element == 4 ? DataType::kFp32 : DataType::kBf16; }

}  // namespace

StepWork estimate_step_work(const Cluster& cluster, const Layout& layout, const std::vector<StageProgram>& stages,
                            int microbatches, const SimulationOptions& options) {
  WorkCounter counter(cluster, layout, options);
  const uint64_t m = static_cast<uint64_t>(microbatches);
  const int pp = layout.pp;
  for (int s = 0; s < static_cast<int>(stages.size()); ++s) {
    const StageProgram& program = stages[static_cast<size_t>(s)];
    const int v = static_cast<int>(program.chunks.size());
    std::vector<int64_t> ready(kGroupKindCount, 0);
    for (int c = 0; c < v; ++c) {
      const ChunkProgram& chunk = program.chunks[static_cast<size_t>(c)];
      for (const PassProgram* pass : {&chunk.forward, &chunk.backward}) {
        for (const ProgramOp& op : pass->ops) {
          switch (op.kind) {
            case ProgramOp::Kind::kCompute:
            case ProgramOp::Kind::kWait:
            case ProgramOp::Kind::kSync: counter.compute(m); break;
            case ProgramOp::Kind::kCollective:
              counter.collective(s, op.group, op.op, op.size, DataType::kBf16, m, op.all_to_all_bytes.get());
              break;
            case ProgramOp::Kind::kGradientsReady:
              ready[static_cast<size_t>(op.group)] += op.elements;
              break;
          }
        }
      }
      // Virtual stage c·pp + s sends activations forward and gradients back, per microbatch.
      const int vs = c * pp + s;
      const int last = v * pp - 1;
      if (vs < last) counter.send(s, (vs + 1) % pp, chunk.activation_bytes, m);
      if (vs > 0) counter.send(s, (vs - 1 + pp) % pp, chunk.gradient_bytes, m);
    }
    // The data-parallel reductions: buckets of bucket_elements (one bucket without overlap),
    // every microbatch or once; hybrid sharding's replica all-reduce after each.
    const GradientReduction& g = program.gradients;
    const uint64_t reductions = g.every_microbatch ? m : 1;
    for (int k = 0; k < kGroupKindCount; ++k) {
      const int64_t elements = ready[static_cast<size_t>(k)];  // per reduction (the template's backward)
      if (elements <= 0) continue;
      const int64_t bucket = g.overlap ? std::min(g.bucket_elements, elements) : elements;
      const uint64_t buckets = static_cast<uint64_t>((elements + bucket - 1) / bucket);
      const GroupKind kind = static_cast<GroupKind>(k);
      counter.collective(s, kind, g.op, Bytes::of(bucket) * g.bytes_per_element, gradient_dtype(g),
                         buckets * reductions);
      if (kind == GroupKind::kDataShard && g.replicate_shards > 0) {
        const int64_t shard = (bucket + g.replicate_shards - 1) / g.replicate_shards;
        counter.collective(s, GroupKind::kDataReplicate, CollectiveOp::kAllReduce,
                           Bytes::of(shard) * g.bytes_per_element, gradient_dtype(g), buckets * reductions);
      }
    }
    counter.compute(program.optimizer_launches.empty() ? 1 : program.optimizer_launches.size());
    if (program.embedding_grad_reduce.count() > 0) {
      counter.collective(s, GroupKind::kEmbedding, CollectiveOp::kAllReduce, program.embedding_grad_reduce,
                         DataType::kFp32, 1);
    }
    if (!program.overlap_param_gather) {
      counter.collective(s, program.data_group, CollectiveOp::kAllGather, program.data_param_gather, DataType::kBf16,
                         1);
      counter.collective(s, GroupKind::kExpertData, CollectiveOp::kAllGather, program.expert_param_gather,
                         DataType::kBf16, 1);
    }
  }
  return counter.result();
}

}  // namespace clustersim
