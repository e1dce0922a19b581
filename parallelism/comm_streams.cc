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

// The kinds whose groups tie ranks (group_ties_ranks).
std::vector<GroupKind> tying_kinds(const Layout& layout) {
  std::vector<GroupKind> kinds;
  for (int k = 0; k < kGroupKindCount; ++k) {
    if (group_ties_ranks(static_cast<GroupKind>(k), layout)) kinds.push_back(static_cast<GroupKind>(k));
  }
  return kinds;
}

// Marks `from`'s closure under the groups of `kinds` with `label` in `mark` (-1: unmarked; marked
// ranks are not entered again).
void mark_closure(const RankGrid& grid, const std::vector<GroupKind>& kinds, int from, int label,
                  std::vector<int>& mark) {
  std::vector<int> frontier{from};
  mark[static_cast<size_t>(from)] = label;
  while (!frontier.empty()) {
    const int x = frontier.back();
    frontier.pop_back();
    for (GroupKind kind : kinds) {
      for (int m : grid.group_of(kind, x)) {
        if (mark[static_cast<size_t>(m)] >= 0) continue;
        mark[static_cast<size_t>(m)] = label;
        frontier.push_back(m);
      }
    }
  }
}

}  // namespace

void StepSimulation::tie_ranks_to_representatives() {
  tied_to_.assign(static_cast<size_t>(layout_.world_size()), -1);
  member_done_.assign(static_cast<size_t>(layout_.world_size()), Time::zero());
  member_running_.assign(static_cast<size_t>(layout_.world_size()), 0);
  after_untied_.assign(static_cast<size_t>(layout_.pp), {});
  const std::vector<GroupKind> kinds = tying_kinds(layout_);
  for (const auto& r : ranks_) {
    check_invariant(tied_to_[static_cast<size_t>(r->rank)] < 0, "representative_lines: two simulated ranks tied");
    mark_closure(grid_, kinds, r->rank, r->rank, tied_to_);
  }
}

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
                                      const std::string& label, std::function<void()> done, const Matrix& matrix,
                                      bool blocks) {
  if (options_.representative && options_.fidelity == Fidelity::kFlow && size.count() > 0) {
    if (!ties_ranks(kind)) {
      issue_untied_mirrors(r, kind, op, size, dtype, matrix);
    } else if (!met_as_blocking(kind, blocks)) {
      issue_awaited_mirrors(r, kind, op, size, dtype, matrix);
    } else if (!blocks) {
      note_chain(r, kind, dtype);
    }
  }
  Rank* rank = &r;
  enqueue(r.streams[index_of(kind)], [this, rank, kind, op, size, dtype, label, done = std::move(done), matrix, blocks] {
    start_on_stream(*rank, kind, op, size, dtype, label, done, matrix, blocks);
  });
}

void StepSimulation::enqueue(CommStream& stream, std::function<void()> start) {
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
                                     const Matrix& matrix, bool blocks) {
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
    Rank* held = &r;
    if (hold_for_tied_mirrors(r, kind, [this, held, kind, op, size, dtype, label, done, matrix, blocks] {
          start_on_stream(*held, kind, op, size, dtype, label, done, matrix, blocks);
        })) {
      return;
    }
  }
  const int sequence = r.collective_sequence[index_of(kind)]++;
  if (needed == 1) {
    if (mirrored(members)) {
      // r's stream is free when its own collective has completed, whatever its mirrors do.
      auto released = [this, rank, kind, label, issued] {
        record(*rank, stream_of(kind), label, issued);
        release_stream(*rank, kind);
      };
      start_mirrored(r, kind, op, size, dtype, done, matrix, blocks, std::move(released));
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
  auto all_done = [callbacks = std::move(callbacks)] {
    for (const auto& c : callbacks) c();
  };
  if (mirrored(members)) {
    start_mirrored(r, kind, op, size, dtype, std::move(all_done), matrix, blocks);
  } else {
    start_collective(op, members, size, dtype, std::move(all_done), matrix);
  }
}

bool StepSimulation::mirrored(const std::vector<int>& members) const {
  return options_.representative && options_.fidelity == Fidelity::kFlow && !inside_nvswitch_node(members);
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

StepSimulation::Mirrors& StepSimulation::mirrored_groups(Rank& r, GroupKind kind) {
  const auto key = std::make_pair(static_cast<int>(kind), group(r, kind).front());
  if (auto it = mirror_groups_.find(key); it != mirror_groups_.end()) return it->second;
  // Every group of the kind in r's stage: those with a simulated member get their Mirrors, the
  // others go to the simulated group they are tied to, or else to the stage's first one.
  const bool ties = ties_ranks(kind);
  const size_t world = static_cast<size_t>(layout_.world_size());
  std::vector<char> seen(world, 0);
  Mirrors* first = nullptr;
  std::vector<MirrorGroup> untied;
  for (int other = 0; other < layout_.world_size(); ++other) {
    if (seen[static_cast<size_t>(other)] || grid_.coord_of(other).pp != r.stage) continue;
    std::vector<int> members = grid_.group_of(kind, other);
    int simulated = -1;
    int tied_rep = -1;
    for (int m : members) {
      seen[static_cast<size_t>(m)] = 1;
      if (simulated < 0 && simulated_index_[static_cast<size_t>(m)] >= 0) simulated = m;
      if (ties && tied_rep < 0) tied_rep = tied_to_[static_cast<size_t>(m)];
    }
    if (simulated >= 0) {
      Mirrors& own = mirror_groups_[std::make_pair(static_cast<int>(kind), members.front())];
      own.owner = ranks_[static_cast<size_t>(simulated_index_[static_cast<size_t>(simulated)])].get();
      if (first == nullptr) first = &own;
      continue;
    }
    MirrorGroup g{std::move(members), {}, Time::zero(), Time::zero(), nullptr};
    if (tied_rep < 0) {
      untied.push_back(std::move(g));
      continue;
    }
    Rank& rep = *ranks_[static_cast<size_t>(simulated_index_[static_cast<size_t>(tied_rep)])];
    g.owner = &rep;
    mirror_groups_[std::make_pair(static_cast<int>(kind), group(rep, kind).front())].tied.push_back(std::move(g));
  }
  check_invariant(first != nullptr, "mirrored_groups: a stage without a simulated group");
  for (MirrorGroup& g : untied) {
    g.owner = first->owner;
    first->others.push_back(std::move(g));
  }
  // The tied groups' vectors are complete: register them with their owners.
  for (int other = 0; other < layout_.world_size(); ++other) {
    if (simulated_index_[static_cast<size_t>(other)] < 0 || grid_.coord_of(other).pp != r.stage) continue;
    auto it = mirror_groups_.find(std::make_pair(static_cast<int>(kind), grid_.group_of(kind, other).front()));
    if (it == mirror_groups_.end() || it->second.owner->rank != other) continue;
    for (MirrorGroup& g : it->second.tied) {
      g.set = &it->second;
      g.kind = kind;
      g.owner->tied_mirrors.push_back(&g);
    }
  }
  return mirror_groups_.at(key);
}

void StepSimulation::start_mirrored(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype,
                                    std::function<void()> done, const Matrix& matrix, bool blocks,
                                    std::function<void()> released) {
  Mirrors& mirrors = mirrored_groups(r, kind);
  // Of a kind that ties ranks: what r did between its previous collective of this kind and this
  // one (compute that waited for the previous one): a group lagging behind r does the same before
  // its own next call. Other kinds' calls do not hold up the compute that issues them, so a
  // lagging group's next call starts when its previous one ends.
  const Duration gap =
      mirrors.rep_done && ties_ranks(kind) ? sim_.now() - *mirrors.rep_done : Duration::zero();
  // An asynchronous call met as a blocking one (a ring step): its issuer computed beside its
  // previous one until it reached that one's handle, went on at the later of that call's end and
  // the handle, and issued this one after that; a group's call follows the same pace.
  std::optional<AsyncPace> pace;
  if (!blocks && mirrors.rep_start && mirrors.rep_done && ties_ranks(kind) && r.handle_reached >= *mirrors.rep_start) {
    const Time later = std::max(r.handle_reached, *mirrors.rep_done);
    pace = AsyncPace{r.handle_reached - *mirrors.rep_start, sim_.now() > later ? sim_.now() - later : Duration::zero()};
  }
  ChainCall chain;
  if (!blocks && ties_ranks(kind) && met_as_blocking(kind, blocks)) {
    for (int m : group(r, kind)) {
      const int index = simulated_index_[static_cast<size_t>(m)];
      if (index < 0) continue;
      auto& calls = ranks_[static_cast<size_t>(index)]->chains[index_of(kind)];
      check_invariant(!calls.empty(), "start_mirrored: a ring call that was not noted");
      if (m == r.rank) chain = calls.front();
      calls.pop_front();
    }
  }
  mirrors.rep_start = sim_.now();
  mirrors.rep_async = !blocks;
  Mirrors* m = &mirrors;
  const bool await_tied = !met_as_blocking(kind, blocks) && !mirrors.tied.empty();
  const std::vector<int>* members = ties_ranks(kind) ? nullptr : &group(r, kind);
  // A call whose tied mirrors started when it was issued (issue_awaited_mirrors): its completion
  // waits for theirs.
  std::shared_ptr<AwaitedCall> awaited;
  auto& queue = r.awaited[index_of(kind)];
  if (await_tied && !queue.empty()) {
    awaited = std::move(queue.front());
    queue.pop_front();
    awaited->done = std::move(done);
  }
  auto all_done = awaited ? std::function<void()>([awaited] { awaited->finish_one(); })
                          : last_of(1 + (await_tied ? mirrors.tied.size() : 0), std::move(done));
  start_collective(
      op, group(r, kind), size, dtype,
      [this, m, members, all_done, await_tied, released = std::move(released)] {
        m->rep_done = sim_.now();
        if (!await_tied) ++m->rep_completed;  // collectives r waits for with its tied mirrors' are not met later
        if (members != nullptr) untied_done(*members);
        if (released) released();
        all_done();
      },
      matrix);
  if (await_tied && !awaited) {
    for (MirrorGroup& g : mirrors.tied) start_awaited_mirror(g, op, size, dtype, matrix, all_done);
  }
  if (chain.in_chain) return;  // its mirrors make it on their own
  for (auto* list : {&mirrors.tied, &mirrors.others}) {
    if ((list == &mirrors.tied && await_tied) || (list == &mirrors.others && !ties_ranks(kind))) continue;
    for (MirrorGroup& g : *list) {
      ++g.owner->outstanding_mirrors;
      g.plan = chain.plan;
      g.plan_next = 0;
      start_mirror(g, gap, op, size, dtype, matrix, Time::zero(), pace);
    }
  }
}

void StepSimulation::issue_awaited_mirrors(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype,
                                           const Matrix& matrix) {
  const std::vector<int>& members = group(r, kind);
  if (members.size() == 1 || !mirrored(members) || simulated_members(members) != 1) return;
  Mirrors& mirrors = mirrored_groups(r, kind);
  if (mirrors.tied.empty()) return;
  auto call = std::make_shared<AwaitedCall>();
  call->remaining = static_cast<int>(mirrors.tied.size()) + 1;
  r.awaited[index_of(kind)].push_back(call);
  for (MirrorGroup& g : mirrors.tied) start_awaited_mirror(g, op, size, dtype, matrix, [call] { call->finish_one(); });
}

void StepSimulation::start_awaited_mirror(MirrorGroup& g, CollectiveOp op, Bytes size, DataType dtype,
                                          const Matrix& matrix, std::function<void()> done) {
  MirrorGroup* tied = &g;
  enqueue(g.stream, [this, tied, op, size, dtype, matrix, done = std::move(done)] {
    start_collective(
        op, tied->members, size, dtype,
        [this, tied, done] {
          tied->last_end = sim_.now();
          release(tied->stream);
          done();
        },
        matrix);
  });
}

void StepSimulation::issue_untied_mirrors(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype,
                                          const Matrix& matrix) {
  const std::vector<int>& members = group(r, kind);
  if (members.size() == 1 || !mirrored(members)) return;
  const int needed = simulated_members(members);
  const int sequence = r.issue_sequence[index_of(kind)]++;
  if (needed > 1) {
    const auto key = std::make_tuple(static_cast<int>(kind), members.front(), sequence);
    if (++issued_[key] < needed) return;
    issued_.erase(key);
  }
  Mirrors* mirrors = &mirrored_groups(r, kind);
  if (!r.reductions_done) {
    for (MirrorGroup& g : mirrors->others) {
      ++g.owner->outstanding_mirrors;
      start_mirror(g, Duration::zero(), op, size, dtype, matrix);
    }
    return;
  }
  // After its gradient reductions (the optimizer step's parameter gathers): r's ranks each waited
  // for their own collectives and then ran what r ran since its last one completed, so a group
  // starts that long after the last collective of any of its members has completed, once the
  // mirrors running now on any of its members (their reductions and gathers) have completed.
  const Duration gap = sim_.now() - r.last_untied_done;
  for (MirrorGroup& g : mirrors->others) start_after_members(g, gap, op, size, dtype, matrix);
}

void StepSimulation::start_after_members(MirrorGroup& g, Duration gap, CollectiveOp op, Bytes size, DataType dtype,
                                         const Matrix& matrix) {
  for (int m : g.members) {
    if (member_running_[static_cast<size_t>(m)] == 0) continue;
    MirrorGroup* group = &g;
    after_untied_[static_cast<size_t>(g.owner->stage)].push_back([this, group, gap, op, size, dtype, matrix] {
      start_after_members(*group, gap, op, size, dtype, matrix);
    });
    return;
  }
  Time ready = Time::zero();
  for (int m : g.members) ready = std::max(ready, member_done_[static_cast<size_t>(m)]);
  ++g.owner->outstanding_mirrors;
  start_mirror(g, Duration::zero(), op, size, dtype, matrix, ready + gap);
}

bool StepSimulation::hold_for_tied_mirrors(Rank& r, GroupKind kind, const std::function<void()>& retry) {
  if (!r.tied_arrival) r.tied_arrival = sim_.now();
  auto [pending, arrival] = pending_lanes(r);
  if (pending != nullptr && *pending > 0) {
    r.held_for_lanes.push_back(retry);
    return true;
  }
  Duration lag = Duration::zero();
  for (MirrorGroup* g : r.tied_mirrors) {
    if (g->kind == kind || g->completed > g->set->rep_completed) continue;  // its own kind, or ahead of r
    if (g->completed < g->set->rep_completed) {
      r.held_for_mirrors.push_back(retry);
      return true;
    }
    if (g->completed > 0) lag = std::max(lag, tied_lag(r, *g));
  }
  if (arrival != nullptr) {
    lag = std::max(lag, *arrival - r.pass_start);
    *arrival = Time::zero();
  }
  // In step from here: neither a lag nor a lead carries past the meeting.
  for (MirrorGroup* g : r.tied_mirrors) {
    if (g->kind != kind && g->completed == g->set->rep_completed && g->completed > 0) {
      g->last_end = *g->set->rep_done;
      if (g->set->rep_start) g->last_start = *g->set->rep_start;
    }
  }
  const Time meet = *r.tied_arrival + lag;
  r.tied_arrival.reset();
  if (meet <= sim_.now()) return false;
  sim_.schedule_at(meet, retry);
  return true;
}

Duration StepSimulation::lag_of(const Rank& r, int src) const {
  Duration lag = Duration::zero();
  for (const MirrorGroup* g : r.tied_mirrors) {
    if (g->completed == 0 || g->completed != g->set->rep_completed) continue;
    if (std::find(g->members.begin(), g->members.end(), src) == g->members.end()) continue;
    lag = std::max(lag, tied_lag(r, *g));
  }
  return lag;
}

void StepSimulation::note_chain(Rank& r, GroupKind kind, DataType dtype) {
  const std::vector<int>& members = group(r, kind);
  if (members.size() == 1 || !mirrored(members)) return;
  const size_t k = index_of(kind);
  if (r.chain_left[k] > 0) {
    --r.chain_left[k];
    r.chains[k].push_back(ChainCall{true, nullptr});
    return;
  }
  auto plan = plan_chain(r, kind, dtype);
  r.chain_left[k] = plan ? plan->size() : 0;
  r.chains[k].push_back(ChainCall{false, std::move(plan)});
}

std::shared_ptr<const StepSimulation::CallPlan> StepSimulation::plan_chain(const Rank& r, GroupKind kind, DataType dtype) const {
  const auto& passes = passes_[static_cast<size_t>(r.stage)];
  if (r.phase != Phase::kPasses || !r.pass_started || r.pass_index >= passes.size() || r.op_index == 0) return nullptr;
  const PipelinePass& pass = passes[r.pass_index];
  const ChunkProgram& chunk = r.program->chunks[static_cast<size_t>(pass.chunk)];
  const std::vector<ProgramOp>& ops = (pass.kind == PassKind::kForward ? chunk.forward : chunk.backward).ops;
  size_t i = r.op_index;
  const ProgramOp& issued = ops[i - 1];
  if (issued.kind != ProgramOp::Kind::kCollective || issued.group != kind || issued.handle < 0) return nullptr;
  int handle = issued.handle;
  auto plan = std::make_shared<CallPlan>();
  // Compute ops and gradient-ready marks pass; anything else ends the plan.
  auto passes_by = [](const ProgramOp& op) {
    return op.kind == ProgramOp::Kind::kCompute || op.kind == ProgramOp::Kind::kGradientsReady;
  };
  auto time_of = [](const ProgramOp& op) {
    return op.kind == ProgramOp::Kind::kCompute ? op.duration : Duration::zero();
  };
  while (true) {
    Duration compute = Duration::zero();
    for (; i < ops.size() && passes_by(ops[i]); ++i) compute += time_of(ops[i]);
    if (i == ops.size() || ops[i].kind != ProgramOp::Kind::kWait || ops[i].handle != handle) break;
    Duration after = Duration::zero();
    for (++i; i < ops.size() && passes_by(ops[i]); ++i) after += time_of(ops[i]);
    if (i == ops.size()) break;
    const ProgramOp& next = ops[i++];
    if (next.kind != ProgramOp::Kind::kCollective || next.group != kind || next.handle < 0) break;
    plan->push_back(PlannedCall{AsyncPace{compute, after}, next.op, next.size, dtype, next.all_to_all_bytes});
    handle = next.handle;
  }
  if (plan->empty()) return nullptr;
  return plan;
}

Duration StepSimulation::tied_lag(const Rank& r, const MirrorGroup& g) const {
  const Mirrors& set = *g.set;
  if (!set.rep_async || !set.rep_start || r.handle_reached < *set.rep_start) return g.last_end - *set.rep_done;
  // An asynchronous call: r computed beside it until it reached its handle, and so did g's ranks
  // beside theirs; each went on at the later of its call's end and that compute's end.
  const Duration compute = r.handle_reached - *set.rep_start;
  return std::max(g.last_end, g.last_start + compute) - std::max(*set.rep_done, r.handle_reached);
}

void StepSimulation::mirror_done(Rank& r) {
  if (--r.outstanding_mirrors == 0 && r.wait == WaitKind::kMirrors) resume(r);
}

void StepSimulation::start_mirror(MirrorGroup& g, Duration gap, CollectiveOp op, Bytes size, DataType dtype,
                                  const Matrix& matrix, Time not_before, std::optional<AsyncPace> pace) {
  MirrorGroup* group = &g;
  const size_t stage = static_cast<size_t>(g.owner->stage);
  if (g.set == nullptr) {
    for (int m : g.members) ++member_running_[static_cast<size_t>(m)];
  }
  auto start = [this, group, op, size, dtype, matrix, stage] {
    group->last_start = sim_.now();
    start_collective(
        op, group->members, size, dtype,
        [this, group, stage] {
          group->last_end = sim_.now();
          Rank& owner = *group->owner;
          if (group->set == nullptr) {
            untied_done(group->members);
            for (int m : group->members) --member_running_[static_cast<size_t>(m)];
            if (!after_untied_[stage].empty()) {
              auto deferred = std::move(after_untied_[stage]);
              after_untied_[stage].clear();
              for (auto& f : deferred) f();  // each checks its members again
            }
          }
          if (group->set != nullptr) {
            ++group->completed;
            auto held = std::move(owner.held_for_mirrors);
            owner.held_for_mirrors.clear();
            for (auto& retry : held) retry();  // each checks the tied mirrors again
          }
          // Its next call of a plan counts before this one is counted off (r may be waiting for
          // its mirrors), and starts once the stream is free.
          const PlannedCall* next = nullptr;
          if (group->plan && group->plan_next < group->plan->size()) {
            next = &(*group->plan)[group->plan_next++];
            ++owner.outstanding_mirrors;
          }
          mirror_done(owner);
          release(group->stream);
          if (next != nullptr) {
            start_mirror(*group, next->pace.after, next->op, next->size, next->dtype, next->matrix,
                         group->last_start + next->pace.compute + next->pace.after);
          }
        },
        matrix);
  };
  if (g.stream.busy) {
    g.stream.waiting.push_back([this, group, gap, pace, start] {
      const Time ready = pace ? std::max(sim_.now(), group->last_start + pace->compute) + pace->after : sim_.now() + gap;
      if (ready > sim_.now()) {
        sim_.schedule_at(ready, start);
      } else {
        start();
      }
    });
    return;
  }
  g.stream.busy = true;
  const Time ready =
      std::max(pace ? std::max(g.last_end, g.last_start + pace->compute) + pace->after : g.last_end + gap, not_before);
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
  // would, for the lanes tied to it (tied_to_) to have delivered theirs (start_on_stream);
  // the other lanes' sends run beside it, counted as outstanding mirrors.
  const Lanes& lanes = lanes_of(r);
  start_collective(CollectiveOp::kSendRecv, {r.rank, dest_rank}, size, DataType::kBf16, std::move(delivered));
  int* pending = &(forward ? receiver->forward_lanes : receiver->backward_lanes)[slot];
  Time* arrival = &(forward ? receiver->forward_lanes_arrival : receiver->backward_lanes_arrival)[slot];
  *pending += static_cast<int>(lanes.tied.size());
  auto rank_at = [this](RankCoord lane, int stage) {
    lane.pp = stage;
    return grid_.rank_of(lane);
  };
  for (const RankCoord& lane : lanes.tied) {
    const int src = rank_at(lane, r.stage);
    const int dst = rank_at(lane, target_stage);
    // A lane whose rank lags behind r sends that much later (its pass ends later).
    auto send = [this, src, dst, size, receiver, pending, arrival] {
      start_collective(CollectiveOp::kSendRecv, {src, dst}, size, DataType::kBf16, [this, receiver, pending, arrival] {
        *arrival = std::max(*arrival, sim_.now());
        if (--*pending > 0) return;
        auto held = std::move(receiver->held_for_lanes);
        receiver->held_for_lanes.clear();
        for (auto& start : held) start();  // each checks its pass's lanes again
      });
    };
    const Duration lag = lag_of(r, src);
    if (lag > Duration::zero()) {
      sim_.schedule_after(lag, send);
    } else {
      send();
    }
  }
  for (const RankCoord& lane : lanes.others) {
    const int src = rank_at(lane, r.stage);
    const int dst = rank_at(lane, target_stage);
    ++r.outstanding_mirrors;
    start_collective(CollectiveOp::kSendRecv, {src, dst}, size, DataType::kBf16, [this, sender] { mirror_done(*sender); });
  }
}

const StepSimulation::Lanes& StepSimulation::lanes_of(const Rank& r) {
  auto [it, inserted] = lanes_.try_emplace(r.rank);
  if (!inserted) return it->second;
  // Lanes tied to r (in its closure) are r's; lanes tied to no simulated rank are the first simulated
  // rank's of the stage (with several lines every lane is tied to one: representative_lines).
  const RankCoord& line = lines_.front();
  const bool first = r.coord.tp == line.tp && r.coord.cp == line.cp && r.coord.dp == line.dp;
  for (int t = 0; t < layout_.tp; ++t) {
    for (int c = 0; c < layout_.cp; ++c) {
      for (int d = 0; d < layout_.dp; ++d) {
        const RankCoord lane{t, c, d, 0};
        const int src = grid_.rank_of(RankCoord{t, c, d, r.stage});
        if (simulated_index_[static_cast<size_t>(src)] >= 0) continue;  // sends its own
        const int rep = tied_to_[static_cast<size_t>(src)];
        if (rep == r.rank) {
          it->second.tied.push_back(lane);
        } else if (rep < 0 && first) {
          it->second.others.push_back(lane);
        }
      }
    }
  }
  return it->second;
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

namespace clustersim {

bool group_ties_ranks(GroupKind kind, const Layout& layout) {
  switch (kind) {
    case GroupKind::kTensor:
    case GroupKind::kContext:
    case GroupKind::kExpert:
    case GroupKind::kExpertTensor: return true;
    case GroupKind::kData:
    case GroupKind::kDataContext:
    case GroupKind::kDataShard: return layout.zero_stage >= 3;
    case GroupKind::kPipeline:
    case GroupKind::kExpertData:
    case GroupKind::kEmbedding:
    case GroupKind::kDataReplicate: return false;
  }
  return false;
}

namespace {

// Whether the groups of `kinds` that hold stage 0's ranks have members on more than one node.
bool groups_cross_nodes(const Cluster& cluster, const Layout& layout, const RankGrid& grid,
                        const std::vector<GroupKind>& kinds) {
  for (int r = 0; r < layout.world_size(); ++r) {
    if (grid.coord_of(r).pp != 0) continue;
    for (GroupKind kind : kinds) {
      const std::vector<int> members = grid.group_of(kind, r);
      if (members.front() != r) continue;  // each group once
      const int node = cluster.node_of(r);
      if (std::any_of(members.begin(), members.end(), [&](int m) { return cluster.node_of(m) != node; })) return true;
    }
  }
  return false;
}

// Whether `rank`'s transfers to the members of its untied groups on other nodes that use the same
// node-local NIC (pipeline sends; data-parallel and embedding rings, which NCCL lays out NIC to
// NIC) have more than one equal-cost route (ECMP) on a fat tree (or a three-tier fabric): then the
// same transfer of two parts of a stage takes different routes through shared leaf uplinks. Not
// on a rail-optimised fabric, where each part's transfers keep to their own rail's leaves and meet
// only at the spines: there one rank per stage gave the every-rank step within 0.02 % on 2,048
// H100 (Llama-3-405B, tp 8 pp 16 dp 16, 4 groups of leaves), at half the wall time of the split.
bool routes_can_differ(const Cluster& cluster, const RankGrid& grid, int rank) {
  if (cluster.spec().fabric.type == FabricType::kRailOptimized) return false;
  for (GroupKind kind : {GroupKind::kPipeline, GroupKind::kData, GroupKind::kDataContext, GroupKind::kExpertData,
                         GroupKind::kDataShard, GroupKind::kDataReplicate, GroupKind::kEmbedding}) {
    for (int m : grid.group_of(kind, rank)) {
      if (cluster.node_of(m) == cluster.node_of(rank) || cluster.nic_of(m) != cluster.nic_of(rank)) continue;
      if (cluster.equal_cost_paths(rank, m) > 1) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<RankCoord> representative_lines(const Cluster& cluster, const Layout& layout, Fidelity fidelity,
                                            const RankCoord& line) {
  const RankCoord own{line.tp, line.cp, line.dp, 0};
  if (fidelity != Fidelity::kFlow) return {own};
  const RankGrid grid(layout);
  const std::vector<GroupKind> kinds = step_sim::tying_kinds(layout);
  if (!groups_cross_nodes(cluster, layout, grid, kinds) && !routes_can_differ(cluster, grid, grid.rank_of(own))) {
    return {own};
  }
  std::vector<int> component(static_cast<size_t>(layout.world_size()), -1);
  std::vector<RankCoord> lines{own};
  step_sim::mark_closure(grid, kinds, grid.rank_of(own), 0, component);
  for (int r = 0; r < layout.world_size(); ++r) {
    const RankCoord c = grid.coord_of(r);
    if (c.pp != 0 || component[static_cast<size_t>(r)] >= 0) continue;
    step_sim::mark_closure(grid, kinds, r, static_cast<int>(lines.size()), component);
    lines.push_back(RankCoord{c.tp, c.cp, c.dp, 0});
  }
  if (lines.size() * static_cast<size_t>(layout.pp) > static_cast<size_t>(kMaxSplitRepresentativeRanks)) return {own};
  return lines;
}

}  // namespace clustersim
