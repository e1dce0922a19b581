// The communication side of a simulated step (parallelism/step_simulation_engine.h): each rank's
// stream per process group, the collectives started on them (a rendezvous of the simulated members,
// the symmetric groups a representative rank stands for), pipeline sends, and the data-parallel
// gradient buckets.

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <fmt/format.h>

#include "core/error.h"
#include "parallelism/step_simulation_engine.h"

namespace clustersim::step_sim {

namespace {

// A completion to be called `count` times: the last call runs `done` (a collective and the
// mirrors it waits for). Copies share one count and one `done`.
template <typename F>
std::function<void()> last_of(size_t count, F done) {
  struct State {
    size_t remaining;
    F done;
  };
  auto state = std::make_shared<State>(State{count, std::move(done)});
  return [state] {
    if (--state->remaining == 0) state->done();
  };
}

const char* stream_of(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTensor: return "tp";
    case GroupKind::kContext: return "cp";
    case GroupKind::kData: return "dp";
    case GroupKind::kPipeline: return "pp";
    case GroupKind::kExpert: return "ep";
    case GroupKind::kExpertTensor: return "etp";
    case GroupKind::kExpertData: return "edp";
    case GroupKind::kDataContext: return "dp";
    case GroupKind::kEmbedding: return "emb";
    case GroupKind::kDataShard: return "dp";
    case GroupKind::kDataReplicate: return "dp_replicate";
  }
  return "?";
}

}  // namespace

const std::vector<int>& StepSimulation::group(Rank& r, GroupKind kind) {
  auto& g = r.groups[index_of(kind)];
  if (g.empty()) g = grid_.group_of(kind, r.rank);
  return g;
}

int StepSimulation::simulated_members(const std::vector<int>& members) const {
  int n = 0;
  for (int m : members) n += simulated_index_[static_cast<size_t>(m)] >= 0 ? 1 : 0;
  return n;
}

void StepSimulation::issue_collective(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype,
                                      const std::string& label, std::function<void()> done, const Matrix& matrix) {
  CommStream& stream = r.streams[index_of(kind)];
  Rank* rank = &r;
  auto start = [this, rank, kind, op, size, dtype, label, done = std::move(done), matrix] {
    start_on_stream(*rank, kind, op, size, dtype, label, done, matrix);
  };
  if (stream.busy) {
    stream.waiting.push_back(std::move(start));
    return;
  }
  stream.busy = true;
  start();
}

void StepSimulation::release_stream(Rank& r, GroupKind kind) { release(r.streams[index_of(kind)]); }

void StepSimulation::release(CommStream& stream) {
  if (stream.waiting.empty()) {
    stream.busy = false;
    return;
  }
  auto next = std::move(stream.waiting.front());
  stream.waiting.pop_front();
  next();
}

bool StepSimulation::streams_idle(const Rank& r, const std::array<int, kGroupKinds>& used) const {
  for (size_t k = 0; k < kGroupKinds; ++k) {
    if (used[k] > 0 && r.streams[k].busy) return false;
  }
  return true;
}

void StepSimulation::start_on_stream(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype,
                                     const std::string& label, const std::function<void()>& done,
                                     const Matrix& matrix) {
  const std::vector<int>& members = group(r, kind);
  const Time issued = sim_.now();
  Rank* rank = &r;
  auto finish = [this, rank, kind, label, issued, done] {
    record(*rank, stream_of(kind), label, issued);
    release_stream(*rank, kind);
    done();
  };
  if (members.size() == 1 || size.count() == 0) {
    sim_.schedule_after(Duration::zero(), finish);
    return;
  }
  const int needed = simulated_members(members);
  if (needed == 1 && options_.representative && options_.fidelity == Fidelity::kFlow && ties_ranks(kind)) {
    if (int* pending = pending_lanes(r); pending != nullptr && *pending > 0) {
      Rank* held = &r;
      r.held_for_lanes.push_back([this, held, kind, op, size, dtype, label, done, matrix] {
        start_on_stream(*held, kind, op, size, dtype, label, done, matrix);
      });
      return;
    }
  }
  const int sequence = r.collective_sequence[index_of(kind)]++;
  if (needed == 1) {
    if (options_.representative && options_.fidelity == Fidelity::kFlow && !inside_nvswitch_node(members)) {
      start_mirrored(r, kind, op, size, dtype, std::move(finish), matrix);
    } else {
      start_collective(op, members, size, dtype, std::move(finish), matrix);
    }
    return;
  }
  auto key = std::make_tuple(static_cast<int>(kind), members.front(), sequence);
  Rendezvous& rv = rendezvous_[key];
  rv.on_complete.push_back(std::move(finish));
  if (++rv.arrived < needed) return;
  auto callbacks = std::move(rv.on_complete);
  rendezvous_.erase(key);
  start_collective(
      op, members, size, dtype,
      [callbacks = std::move(callbacks)] {
        for (const auto& c : callbacks) c();
      },
      matrix);
}

bool StepSimulation::inside_nvswitch_node(const std::vector<int>& members) const {
  const int node = cluster_.node_of(members.front());
  if (cluster_.node_spec(node).intra != IntraNodeFabric::kNvSwitch) return false;
  for (int m : members) {
    if (cluster_.node_of(m) != node) return false;
  }
  return true;
}

void StepSimulation::start_collective(CollectiveOp op, const std::vector<int>& members, Bytes size, DataType dtype,
                                      std::function<void()> done, const Matrix& matrix) {
  CollectiveRequest request;
  request.op = op;
  request.group.assign(members.begin(), members.end());  // rank r runs on GPU r
  request.size = size;
  request.dtype = dtype;
  if (matrix) request.all_to_all_bytes = *matrix;
  CollectiveRunner& runner = inside_nvswitch_node(members) ? *analytical_runner_ : *runner_;
  runner.start(request, std::move(done));
}

bool StepSimulation::ties_ranks(GroupKind kind) const {
  switch (kind) {
    case GroupKind::kTensor:
    case GroupKind::kContext:
    case GroupKind::kExpert:
    case GroupKind::kExpertTensor: return true;
    case GroupKind::kData:
    case GroupKind::kDataContext:
    case GroupKind::kDataShard: return layout_.zero_stage >= 3;
    case GroupKind::kPipeline:
    case GroupKind::kExpertData:
    case GroupKind::kEmbedding:
    case GroupKind::kDataReplicate: return false;
  }
  return false;
}

const std::vector<char>& StepSimulation::coupled_ranks(Rank& r) {
  auto [it, inserted] = coupled_.try_emplace(r.stage);
  std::vector<char>& coupled = it->second;
  if (!inserted) return coupled;
  std::vector<GroupKind> kinds;
  for (size_t k = 0; k < kGroupKinds; ++k) {
    if (ties_ranks(static_cast<GroupKind>(k))) kinds.push_back(static_cast<GroupKind>(k));
  }
  coupled.assign(static_cast<size_t>(layout_.world_size()), 0);
  std::vector<int> frontier{r.rank};
  coupled[static_cast<size_t>(r.rank)] = 1;
  while (!frontier.empty()) {
    const int x = frontier.back();
    frontier.pop_back();
    for (GroupKind kind : kinds) {
      for (int m : grid_.group_of(kind, x)) {
        if (coupled[static_cast<size_t>(m)]) continue;
        coupled[static_cast<size_t>(m)] = 1;
        frontier.push_back(m);
      }
    }
  }
  return coupled;
}

StepSimulation::Mirrors& StepSimulation::mirrored_groups(Rank& r, GroupKind kind) {
  auto [it, inserted] = mirror_groups_.try_emplace(std::make_pair(r.stage, static_cast<int>(kind)));
  Mirrors& mirrors = it->second;
  if (!inserted) return mirrors;
  const bool ties = ties_ranks(kind);
  const std::vector<char>* coupled = ties ? &coupled_ranks(r) : nullptr;
  const std::vector<int>& own = group(r, kind);
  std::vector<char> seen(static_cast<size_t>(layout_.world_size()), 0);
  for (int m : own) seen[static_cast<size_t>(m)] = 1;
  for (int other = 0; other < layout_.world_size(); ++other) {
    if (seen[static_cast<size_t>(other)] || grid_.coord_of(other).pp != r.stage) continue;
    MirrorGroup g{grid_.group_of(kind, other), {}, Time::zero(), &r};
    bool tied = false;
    for (int m : g.members) {
      seen[static_cast<size_t>(m)] = 1;
      tied = tied || (coupled != nullptr && (*coupled)[static_cast<size_t>(m)]);
    }
    (tied ? mirrors.tied : mirrors.others).push_back(std::move(g));
  }
  return mirrors;
}

void StepSimulation::start_mirrored(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype,
                                    std::function<void()> done, const Matrix& matrix) {
  Mirrors& mirrors = mirrored_groups(r, kind);
  // Of a kind that ties ranks: what r did between its previous collective of this kind and this
  // one (compute that waited for the previous one): a group lagging behind r does the same before
  // its own next call. Other kinds' calls do not hold up the compute that issues them, so a
  // lagging group's next call starts when its previous one ends.
  const Duration gap =
      mirrors.rep_done && ties_ranks(kind) ? sim_.now() - *mirrors.rep_done : Duration::zero();
  Mirrors* m = &mirrors;
  auto one_done = last_of(mirrors.tied.size() + 1, [this, m, done = std::move(done)] {
    m->rep_done = sim_.now();
    done();
  });
  start_collective(op, group(r, kind), size, dtype, one_done, matrix);
  for (const auto& g : mirrors.tied) start_collective(op, g.members, size, dtype, one_done, matrix);
  for (MirrorGroup& g : mirrors.others) {
    ++r.outstanding_mirrors;
    start_mirror(g, gap, op, size, dtype, matrix);
  }
}

void StepSimulation::mirror_done(Rank& r) {
  if (--r.outstanding_mirrors == 0 && r.wait == WaitKind::kMirrors) resume(r);
}

void StepSimulation::start_mirror(MirrorGroup& g, Duration gap, CollectiveOp op, Bytes size, DataType dtype,
                                  const Matrix& matrix) {
  MirrorGroup* group = &g;
  auto start = [this, group, op, size, dtype, matrix] {
    start_collective(
        op, group->members, size, dtype,
        [this, group] {
          group->last_end = sim_.now();
          mirror_done(*group->owner);
          release(group->stream);
        },
        matrix);
  };
  if (g.stream.busy) {
    g.stream.waiting.push_back([this, gap, start] {
      if (gap > Duration::zero()) {
        sim_.schedule_after(gap, start);
      } else {
        start();
      }
    });
    return;
  }
  g.stream.busy = true;
  const Time ready = g.last_end + gap;
  if (ready > sim_.now()) {
    sim_.schedule_at(ready, std::move(start));
  } else {
    start();
  }
}

void StepSimulation::send_pipeline(Rank& r, int target_stage, Bytes size, bool forward, size_t slot,
                                   std::function<void(Rank&)> arrive) {
  RankCoord dest = r.coord;
  dest.pp = target_stage;
  const int dest_rank = grid_.rank_of(dest);
  const int dest_index = simulated_index_[static_cast<size_t>(dest_rank)];
  check_invariant(dest_index >= 0, "pipeline send to a rank that is not simulated");
  Rank* receiver = ranks_[static_cast<size_t>(dest_index)].get();
  const Time issued = sim_.now();
  Rank* sender = &r;
  auto delivered = [this, receiver, sender, issued, arrive = std::move(arrive)] {
    record(*sender, "pp", "send", issued);
    arrive(*receiver);
  };
  if (dest_rank == r.rank || size.count() == 0) {
    sim_.schedule_after(Duration::zero(), delivered);
    return;
  }
  if (!options_.representative || options_.fidelity != Fidelity::kFlow || inside_nvswitch_node({r.rank, dest_rank})) {
    start_collective(CollectiveOp::kSendRecv, {r.rank, dest_rank}, size, DataType::kBf16, std::move(delivered));
    return;
  }
  // The same send of every other (tp, cp, dp) lane. The receiver starts its pass when its own
  // payload is there; its collectives of tied kinds in that pass wait, as the tied ranks' own
  // would, for the lanes tied to it (coupled_ranks) to have delivered theirs (start_on_stream);
  // the other lanes' sends run beside it, counted as outstanding mirrors.
  const std::vector<char>& coupled = coupled_ranks(r);
  std::vector<std::pair<int, int>> tied;
  std::vector<std::pair<int, int>> others;
  for (int t = 0; t < layout_.tp; ++t) {
    for (int c = 0; c < layout_.cp; ++c) {
      for (int d = 0; d < layout_.dp; ++d) {
        if (t == r.coord.tp && c == r.coord.cp && d == r.coord.dp) continue;
        const int src = grid_.rank_of(RankCoord{t, c, d, r.stage});
        const int dst = grid_.rank_of(RankCoord{t, c, d, target_stage});
        (coupled[static_cast<size_t>(src)] ? tied : others).emplace_back(src, dst);
      }
    }
  }
  start_collective(CollectiveOp::kSendRecv, {r.rank, dest_rank}, size, DataType::kBf16, std::move(delivered));
  int* pending = &(forward ? receiver->forward_lanes : receiver->backward_lanes)[slot];
  *pending += static_cast<int>(tied.size());
  for (const auto& [src, dst] : tied) {
    start_collective(CollectiveOp::kSendRecv, {src, dst}, size, DataType::kBf16, [receiver, pending] {
      if (--*pending > 0) return;
      auto held = std::move(receiver->held_for_lanes);
      receiver->held_for_lanes.clear();
      for (auto& start : held) start();  // each checks its pass's lanes again
    });
  }
  for (const auto& [src, dst] : others) {
    ++r.outstanding_mirrors;
    start_collective(CollectiveOp::kSendRecv, {src, dst}, size, DataType::kBf16, [this, sender] { mirror_done(*sender); });
  }
}

void StepSimulation::launch_reduction(Rank& r, GroupKind kind, int64_t elements, std::function<void()> then) {
  const GradientReduction& g = r.program->gradients;
  ++r.outstanding_reductions;
  Rank* rank = &r;
  const DataType dtype = g.bytes_per_element == 4 ? DataType::kFp32 : DataType::kBf16;
  auto reduced = [this, rank, then = std::move(then)] {
    if (then) then();
    --rank->outstanding_reductions;
    if (rank->outstanding_reductions == 0 && rank->wait == WaitKind::kReductions) resume(*rank);
  };
  if (kind == GroupKind::kDataShard && g.replicate_shards > 0) {
    // Hybrid sharding: the bucket's shard is all-reduced across the replicas once its
    // reduce-scatter in the shard group is done (its own stream, as FSDP2's all-reduce stream).
    const int64_t shard = (elements + g.replicate_shards - 1) / g.replicate_shards;
    issue_collective(r, kind, g.op, Bytes::of(elements) * g.bytes_per_element, dtype, "grad_reduce",
                     [this, rank, shard, dtype, reduced, bytes = g.bytes_per_element] {
                       issue_collective(*rank, GroupKind::kDataReplicate, CollectiveOp::kAllReduce,
                                        Bytes::of(shard) * bytes, dtype, "grad_all_reduce_replicas", reduced);
                     });
    return;
  }
  issue_collective(r, kind, g.op, Bytes::of(elements) * g.bytes_per_element, dtype, "grad_reduce", reduced);
}

namespace {
// Dense groups first, then the expert data-parallel group (finish_grad_sync's order).
constexpr std::array kGradientGroups{GroupKind::kData, GroupKind::kDataContext, GroupKind::kDataShard,
                                     GroupKind::kExpertData};
}  // namespace

void StepSimulation::flush_gradients(Rank& r) {
  if (!r.program->gradients.overlap) {
    flush_gradients_in_turn(r, 0);
    return;
  }
  // Bucket by bucket: what the backward pass left (less than a bucket), or a stage's whole
  // gradients held back by the pipeline alignment, issued together as start_grad_sync issues
  // every bucket group.
  const int64_t bucket = r.program->gradients.bucket_elements;
  for (GroupKind kind : kGradientGroups) {
    int64_t& pending = r.pending_gradients[index_of(kind)];
    while (pending > 0) {
      const int64_t elements = std::min(pending, bucket);
      launch_reduction(r, kind, elements);
      pending -= elements;
    }
  }
}

void StepSimulation::flush_gradients_in_turn(Rank& r, size_t from) {
  for (size_t i = from; i < kGradientGroups.size(); ++i) {
    int64_t& pending = r.pending_gradients[index_of(kGradientGroups[i])];
    if (pending <= 0) continue;
    const int64_t elements = pending;
    pending = 0;
    Rank* rank = &r;
    launch_reduction(r, kGradientGroups[i], elements, [this, rank, i] { flush_gradients_in_turn(*rank, i + 1); });
    return;
  }
}

bool StepSimulation::buckets_in_backward(const Rank& r) const {
  const GradientReduction& g = r.program->gradients;
  if (!g.overlap) return false;
  if (!g.pipeline_aligned || g.every_microbatch) return true;
  return layout_.schedule == PipelineSchedule::kOneFOneB && r.stage == 0;
}

void StepSimulation::backward_pass_gradients(Rank& r, int done) {
  const GradientReduction& g = r.program->gradients;
  if (!g.overlap) return;  // finish_grad_sync reduces them after the passes (Phase::kFlushGradients)
  if (g.every_microbatch || !g.pipeline_aligned || layout_.schedule != PipelineSchedule::kInterleaved1F1B) {
    if (done == m_ || g.every_microbatch) flush_gradients(r);
    return;
  }
  // Interleaved and aligned: count down the passes after the chunk's last, then issue them.
  if (r.aligned_sync_in > 0 && --r.aligned_sync_in == 0) {
    r.aligned_sync_in = -1;
    flush_gradients(r);
  }
  if (done == m_) {
    if (r.aligned_sync_in >= 0) flush_gradients(r);  // an earlier chunk still due: not Megatron's order, kept exact
    r.aligned_sync_in = r.stage;
    if (r.aligned_sync_in == 0) {
      r.aligned_sync_in = -1;
      flush_gradients(r);
    }
  }
}

void StepSimulation::gradients_ready(Rank& r, GroupKind kind, int64_t elements) {
  const GradientReduction& g = r.program->gradients;
  int64_t& pending = r.pending_gradients[index_of(kind)];
  pending += elements;
  if (!buckets_in_backward(r)) return;
  while (pending >= g.bucket_elements) {
    launch_reduction(r, kind, g.bucket_elements);
    pending -= g.bucket_elements;
  }
}

}  // namespace clustersim::step_sim
