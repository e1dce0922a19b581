#include "parallelism/step_simulation.h"

#include <algorithm>
#include <array>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <cmath>
#include <memory>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "engine/simulator.h"
#include "network/flow_network.h"
#include "parallelism/pipeline_schedule.h"

namespace clustersim {

namespace {

constexpr size_t kGroupKinds = kGroupKindCount;

size_t index_of(GroupKind kind) { return static_cast<size_t>(kind); }

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

using Matrix = std::shared_ptr<const std::vector<int64_t>>;

enum class WaitKind { kNone, kInput, kCollective, kHandle, kReductions, kHost };

enum class Phase {
  kPasses,
  kFlushGradients,
  kAwaitReductions,
  kAfterReductions,
  kEmbeddingReduce,
  kOptimizer,
  kParamGather,
  kDone
};

class StepSimulation {
 public:
  StepSimulation(const Cluster& cluster, const Layout& layout, const std::vector<StageProgram>& stages,
                 int microbatches, const StepSimulationOptions& options)
      : cluster_(cluster),
        layout_(layout),
        stages_(stages),
        grid_(layout),
        m_(microbatches),
        v_(static_cast<int>(stages.front().chunks.size())),
        options_(options) {
    if (layout.world_size() > cluster.gpu_count()) {
      throw InputError(fmt::format("the layout needs {} GPUs but the cluster has {}", layout.world_size(),
                                   cluster.gpu_count()));
    }
    check_invariant(static_cast<int>(stages.size()) == layout.pp, "simulate_step: one program per stage");
    for (const auto& s : stages) {
      check_invariant(static_cast<int>(s.chunks.size()) == v_, "simulate_step: every stage has v chunks");
    }
    // Analytical fidelity prices a collective that starts alone as a fixed delay, so a run of
    // compute ops and such collectives is one event (see Segment). Traces keep every op.
    fuse_ = options.fidelity == Fidelity::kAnalytical && !options.record_trace;
    if (options.fidelity == Fidelity::kFlow) network_ = std::make_unique<FlowNetwork>(sim_, cluster);
    runner_ = std::make_unique<CollectiveRunner>(sim_, cluster, network_.get(), options.fidelity,
                                                 options.collective_profile);
    analytical_runner_ = std::make_unique<CollectiveRunner>(sim_, cluster, nullptr, Fidelity::kAnalytical,
                                                            options.collective_profile);
    for (int s = 0; s < layout.pp; ++s) {
      passes_.push_back(schedule_passes(layout.schedule, s, layout.pp, m_, v_));
    }
    simulated_index_.assign(static_cast<size_t>(layout.world_size()), -1);
    for (int r = 0; r < layout.world_size(); ++r) {
      const RankCoord c = grid_.coord_of(r);
      const RankCoord& line = options.representative_line;
      if (options.representative && (c.tp != line.tp || c.cp != line.cp || c.dp != line.dp)) continue;
      simulated_index_[static_cast<size_t>(r)] = static_cast<int>(ranks_.size());
      auto rank = std::make_unique<Rank>();
      rank->rank = r;
      rank->coord = c;
      rank->stage = c.pp;
      rank->program = &stages[static_cast<size_t>(c.pp)];
      if (static_cast<size_t>(r) < options.rank_programs.size() && options.rank_programs[static_cast<size_t>(r)]) {
        rank->program = options.rank_programs[static_cast<size_t>(r)];
      }
      rank->forward_input.assign(static_cast<size_t>(m_ * v_), 0);
      rank->backward_input.assign(static_cast<size_t>(m_ * v_), 0);
      rank->backward_done.assign(static_cast<size_t>(v_), 0);
      rank->breakdown.rank = r;
      rank->breakdown.gpu = r;
      rank->breakdown.stage = c.pp;
      if (options.power != nullptr) {
        const size_t i = ranks_.size();
        rank->governor.emplace(*options.power, i < options.initial_power_w.size()
                                                   ? std::optional<double>(options.initial_power_w[i])
                                                   : std::nullopt);
      }
      ranks_.push_back(std::move(rank));
    }
  }

  StepResult run() {
    for (auto& r : ranks_) {
      Rank* rank = r.get();
      sim_.schedule_at(Time::zero(), [this, rank] { advance(*rank); });
    }
    if (options_.progress) {
      sim_.run(kProgressIntervalEvents, [this] { options_.progress(sim_.events_executed()); });
    } else {
      sim_.run();
    }
    StepResult result;
    Time end = Time::zero();
    for (size_t i = 0; i < ranks_.size(); ++i) {
      const Rank& r = *ranks_[i];
      if (r.phase != Phase::kDone) {
        throw InternalError(fmt::format("step simulation deadlocked: rank {} (stage {}) stopped at pass {} of {}",
                                        r.rank, r.stage, r.pass_index, passes_[static_cast<size_t>(r.stage)].size()));
      }
      if (r.breakdown.finish > end) {
        end = r.breakdown.finish;
        result.critical = i;
      }
    }
    result.step_time = end - Time::zero();
    for (auto& r : ranks_) {
      r->breakdown.idle = end - r->breakdown.finish;
      if (r->governor) {
        r->governor->idle_for(end - r->governor_time);
        r->breakdown.energy_joules = r->governor->energy_joules();
        r->breakdown.final_power_w = r->governor->average_w();
        r->breakdown.clock_bound_full = r->governor->clock_bound_full();
        r->breakdown.clock_bound_actual = r->governor->clock_bound_actual();
      }
      result.ranks.push_back(r->breakdown);
    }
    result.events = sim_.events_executed();
    result.fingerprint = sim_.fingerprint();
    result.trace = std::move(trace_);
    result.waits = std::move(waits_);
    return result;
  }

 private:
  // A run of ops from `start` up to (not including) `end` that the rank executes back to back
  // with no interaction with other ranks: compute ops and blocking collectives that start at once
  // and take a fixed time (analytical fidelity, no other member simulated). Executing it as one
  // event gives the same times and breakdown as executing its ops one by one.
  struct Segment {
    bool computed = false;
    size_t end = 0;
    Duration total;
    Duration compute;
    Duration recompute;
    Duration optimizer;
    Duration comm;
    PowerWork power;                           // of the compute ops
    std::array<int, kGroupKinds> sequences{};  // collectives issued per group kind
    // The segment's GPU work and host side, in order: runs of kernels and fixed-time collectives
    // (one HostWork each), separated by synchronisations.
    struct Piece {
      Duration gpu;
      HostWork host;
      bool sync = false;  // a kSync op: host.issue is its host cost
    };
    std::vector<Piece> pieces;
    void add(Duration gpu, const HostWork& host) {
      if (pieces.empty() || pieces.back().sync) {
        pieces.push_back(Piece{gpu, host, false});
        return;
      }
      pieces.back().host.then(host, gpu);
      pieces.back().gpu += gpu;
    }
  };

  // A rank's communication stream of one process group: NCCL runs the operations of one
  // communicator in issue order, one at a time, so a collective starts only after the previous one
  // on the same group has finished (NCCL user guide, "Communicators" / CUDA stream semantics).
  struct CommStream {
    bool busy = false;
    std::deque<std::function<void()>> waiting;
  };

  struct Rank {
    int rank = 0;
    RankCoord coord;
    int stage = 0;
    const StageProgram* program = nullptr;  // its stage's, or a straggler's own
    size_t pass_index = 0;
    size_t op_index = 0;
    bool pass_started = false;
    Phase phase = Phase::kPasses;
    size_t optimizer_launch = 0;  // the next of StageProgram::optimizer_launches to run
    std::vector<char> forward_input;   // [chunk·m + microbatch]
    std::vector<char> backward_input;
    std::vector<int> backward_done;    // backward passes finished per chunk
    std::vector<char> handles;         // async collectives of the current pass: 1 = done
    int waiting_handle = -1;
    std::array<int64_t, kGroupKinds> pending_gradients{};
    int outstanding_reductions = 0;
    std::array<int, kGroupKinds> collective_sequence{};
    std::array<std::vector<int>, kGroupKinds> groups;  // cached group_of()
    std::array<CommStream, kGroupKinds> streams;       // one per process group
    std::vector<std::vector<Segment>> segments;        // [chunk·2 + forward][start op], filled lazily
    WaitKind wait = WaitKind::kNone;
    Time wait_start;
    RankBreakdown breakdown;
    std::optional<PowerGovernor> governor;  // with a power model
    Time governor_time;                     // the governor has been run up to here
    // The host thread (see RankBreakdown): it has issued every op before the current one by
    // `host`; `queued` holds (index of an op's last kernel, the op's end) of issued kernels that
    // may still hold the launch queue.
    Time host;
    int64_t kernels_issued = 0;
    std::deque<std::pair<int64_t, Time>> queued;
    bool collective_issued = false;  // the current collective's NCCL call has been issued
  };

  struct Rendezvous {
    int arrived = 0;
    std::vector<std::function<void()>> on_complete;
  };

  const std::vector<int>& group(Rank& r, GroupKind kind) {
    auto& g = r.groups[index_of(kind)];
    if (g.empty()) g = grid_.group_of(kind, r.rank);
    return g;
  }

  int simulated_members(const std::vector<int>& members) const {
    int n = 0;
    for (int m : members) n += simulated_index_[static_cast<size_t>(m)] >= 0 ? 1 : 0;
    return n;
  }

  void begin_wait(Rank& r, WaitKind kind) {
    r.wait = kind;
    r.wait_start = sim_.now();
  }

  void end_wait(Rank& r) {
    const Duration waited = sim_.now() - r.wait_start;
    if (r.wait != WaitKind::kNone) {
      record_wait(r, r.wait == WaitKind::kInput ? "bubble" : r.wait == WaitKind::kHost ? "host_bound" : "exposed_comm",
                  r.wait_start, sim_.now());
    }
    if (r.wait == WaitKind::kInput) {
      r.breakdown.bubble += waited;
    } else if (r.wait == WaitKind::kHost) {
      r.breakdown.host_bound += waited;
    } else if (r.wait != WaitKind::kNone) {
      r.breakdown.exposed_comm += waited;
    }
    r.wait = WaitKind::kNone;
  }

  void resume(Rank& r) {
    end_wait(r);
    advance(r);
  }

  // A wait of r's compute stream, counted in the RankBreakdown part `part` (StepResult::waits).
  void record_wait(const Rank& r, const char* part, Time start, Time end) {
    if (options_.record_trace && end > start) waits_.push_back(TraceSpan{r.rank, r.rank, "wait", part, start, end});
  }

  void record(const Rank& r, const std::string& stream, const std::string& name, Time start) {
    record_span(r, stream, name, start, sim_.now());
  }

  void record_span(const Rank& r, const std::string& stream, const std::string& name, Time start, Time end) {
    if (!options_.record_trace) return;
    if (trace_.size() == kMaxTraceSpans) {
      throw InputError(fmt::format("--trace: the step has more than {} spans to record (about 150 bytes each); "
                                   "trace fewer ranks (simulation.representative: true simulates one rank per "
                                   "pipeline stage) or a smaller cluster",
                                   kMaxTraceSpans));
    }
    trace_.push_back(TraceSpan{r.rank, r.rank, stream, name, start, end});
  }

  // Holds r's host thread until the launch queue has room for its next kernel: kernel j is issued
  // only after kernel j − launch_queue_depth has finished (every kernel of an op counted as ending
  // with the op).
  void respect_launch_queue(Rank& r) {
    const int64_t depth = options_.launch_queue_depth;
    if (depth <= 0) return;
    while (!r.queued.empty() && r.queued.front().first <= r.kernels_issued + 1 - depth) {
      r.host = std::max(r.host, r.queued.front().second);
      r.queued.pop_front();
    }
  }

  // Issues a run of kernels (GPU time `gpu` from `start`, the stream's free time) from r's host
  // thread and returns when the run ends: max(start + gpu, host + span) (HostWork). The host
  // thread moves on by `host.issue`; the host span is traced.
  Time issue_kernels(Rank& r, Time start, Duration gpu, const HostWork& host, const std::string& label) {
    respect_launch_queue(r);
    const Time host_start = r.host;
    const Time end = std::max(start + gpu, r.host + host.span);
    r.host += host.issue;
    if (host.kernels > 0) {
      r.kernels_issued += host.kernels;
      if (options_.launch_queue_depth > 0) r.queued.emplace_back(r.kernels_issued, end);
    }
    if (host.issue > Duration::zero()) record_span(r, "host", label, host_start, r.host);
    return end;
  }

  // A device-to-host synchronisation reached by the compute stream now: the host thread waits for
  // it, then spends `cost`.
  void synchronise_host(Rank& r, Duration cost) {
    r.host = std::max(r.host, sim_.now()) + cost;
    r.queued.clear();  // every kernel issued so far has finished
  }

  // Queues a collective of `r`'s group `kind` on r's stream of that group; `done` runs when it
  // completes. It starts when the stream has finished every earlier collective of the group.
  void issue_collective(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype, const std::string& label,
                        std::function<void()> done, const Matrix& matrix = nullptr) {
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

  // The stream of `kind` finished its collective: start the next queued one, if any.
  void release_stream(Rank& r, GroupKind kind) {
    CommStream& stream = r.streams[index_of(kind)];
    if (stream.waiting.empty()) {
      stream.busy = false;
      return;
    }
    auto next = std::move(stream.waiting.front());
    stream.waiting.pop_front();
    next();
  }

  bool streams_idle(const Rank& r, const std::array<int, kGroupKinds>& used) const {
    for (size_t k = 0; k < kGroupKinds; ++k) {
      if (used[k] > 0 && r.streams[k].busy) return false;
    }
    return true;
  }

  // Starts a collective at the head of r's stream. In full simulation the collective starts when
  // every member has reached its matching call (per-group sequence).
  void start_on_stream(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype, const std::string& label,
                       const std::function<void()>& done, const Matrix& matrix) {
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
    const int sequence = r.collective_sequence[index_of(kind)]++;
    const int needed = simulated_members(members);
    if (needed == 1) {
      start_collective(op, members, size, dtype, std::move(finish), matrix);
      if (options_.representative && options_.fidelity == Fidelity::kFlow && !inside_nvswitch_node(members)) {
        start_mirrors(r, kind, op, size, dtype, matrix);
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

  // True when every member is in one node whose GPUs share an NVSwitch. Such a collective cannot
  // contend with collectives of other groups (each GPU has its own NVSwitch ports, and groups of
  // other nodes use other links), and its flow-level time equals the closed form on an idle node
  // (collectives tests: within 1e-5), so it is priced analytically even at flow fidelity.
  bool inside_nvswitch_node(const std::vector<int>& members) const {
    const int node = cluster_.node_of(members.front());
    if (cluster_.node_spec(node).intra != IntraNodeFabric::kNvSwitch) return false;
    for (int m : members) {
      if (cluster_.node_of(m) != node) return false;
    }
    return true;
  }

  void start_collective(CollectiveOp op, const std::vector<int>& members, Bytes size, DataType dtype,
                        std::function<void()> done, const Matrix& matrix = nullptr) {
    CollectiveRequest request;
    request.op = op;
    request.group.assign(members.begin(), members.end());  // rank r runs on GPU r
    request.size = size;
    request.dtype = dtype;
    if (matrix) request.all_to_all_bytes = *matrix;
    CollectiveRunner& runner = inside_nvswitch_node(members) ? *analytical_runner_ : *runner_;
    runner.start(request, std::move(done));
  }

  // The collectives of the groups of kind `kind` in r's stage that r stands for (flow fidelity).
  void start_mirrors(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype, const Matrix& matrix) {
    auto& cache = mirror_groups_[std::make_pair(r.stage, static_cast<int>(kind))];
    if (cache.empty()) {
      const std::vector<int>& own = group(r, kind);
      std::vector<char> seen(static_cast<size_t>(layout_.world_size()), 0);
      for (int m : own) seen[static_cast<size_t>(m)] = 1;
      for (int other = 0; other < layout_.world_size(); ++other) {
        if (seen[static_cast<size_t>(other)] || grid_.coord_of(other).pp != r.stage) continue;
        std::vector<int> g = grid_.group_of(kind, other);
        for (int m : g) seen[static_cast<size_t>(m)] = 1;
        cache.push_back(std::move(g));
      }
      if (cache.empty()) cache.push_back({});  // marks "computed, none"
    }
    for (const auto& g : cache) {
      if (!g.empty()) start_collective(op, g, size, dtype, [] {}, matrix);
    }
  }

  // Sends a pipeline payload from r to the rank holding virtual stage `target_vs` for the same
  // (tp, cp, dp) coordinates; `arrive` runs at the receiver when the data is there.
  void send_pipeline(Rank& r, int target_stage, Bytes size, std::function<void(Rank&)> arrive) {
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
    start_collective(CollectiveOp::kSendRecv, {r.rank, dest_rank}, size, DataType::kBf16, std::move(delivered));
    if (options_.representative && options_.fidelity == Fidelity::kFlow && !inside_nvswitch_node({r.rank, dest_rank})) {
      for (int t = 0; t < layout_.tp; ++t) {
        for (int c = 0; c < layout_.cp; ++c) {
          for (int d = 0; d < layout_.dp; ++d) {
            if (t == r.coord.tp && c == r.coord.cp && d == r.coord.dp) continue;
            const int src = grid_.rank_of(RankCoord{t, c, d, r.stage});
            const int dst = grid_.rank_of(RankCoord{t, c, d, target_stage});
            start_collective(CollectiveOp::kSendRecv, {src, dst}, size, DataType::kBf16, [] {});
          }
        }
      }
    }
  }

  void wake_for_input(Rank& r) {
    if (r.wait == WaitKind::kInput) resume(r);
  }

  int virtual_stage(const Rank& r, int chunk) const { return chunk * layout_.pp + r.stage; }
  int last_virtual_stage() const { return layout_.pp * v_ - 1; }

  bool input_ready(const Rank& r, const PipelinePass& pass) const {
    const int vs = virtual_stage(r, pass.chunk);
    const size_t slot = static_cast<size_t>(pass.chunk * m_ + pass.microbatch);
    if (pass.kind == PassKind::kForward) return vs == 0 || r.forward_input[slot] != 0;
    return vs == last_virtual_stage() || r.backward_input[slot] != 0;
  }

  void launch_reduction(Rank& r, GroupKind kind, int64_t elements) {
    const GradientReduction& g = r.program->gradients;
    ++r.outstanding_reductions;
    Rank* rank = &r;
    const DataType dtype = g.bytes_per_element == 4 ? DataType::kFp32 : DataType::kBf16;
    auto reduced = [this, rank] {
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

  void flush_gradients(Rank& r) {
    for (GroupKind kind : {GroupKind::kData, GroupKind::kDataContext, GroupKind::kDataShard, GroupKind::kExpertData}) {
      int64_t& pending = r.pending_gradients[index_of(kind)];
      if (pending > 0) launch_reduction(r, kind, pending);
      pending = 0;
    }
  }

  void gradients_ready(Rank& r, GroupKind kind, int64_t elements) {
    const GradientReduction& g = r.program->gradients;
    int64_t& pending = r.pending_gradients[index_of(kind)];
    pending += elements;
    if (!g.overlap) return;
    while (pending >= g.bucket_elements) {
      launch_reduction(r, kind, g.bucket_elements);
      pending -= g.bucket_elements;
    }
  }

  // The time `full` (full-clock compute with power work `power`) takes under r's governor, from
  // now; the compute stream was idle since the governor's last run. Without a power model: `full`.
  Duration governed(Rank& r, Duration full, const PowerWork& power) { return governed_from(r, sim_.now(), full, power); }
  Duration governed_from(Rank& r, Time start, Duration full, const PowerWork& power) {
    if (!r.governor) return full;
    r.governor->idle_for(start - r.governor_time);
    const Duration d = r.governor->run(full, power);
    r.governor_time = start + d;
    return d;
  }

  // Runs a compute op of full-clock time `full`: it starts once the host thread has issued it
  // (the wait is host_bound), then runs under the governor.
  void run_compute(Rank& r, const std::string& label, WorkKind work, Duration full, const PowerWork& power,
                   const HostWork& host) {
    const Duration waited = (issue_kernels(r, sim_.now(), full, host, label) - sim_.now()) - full;
    r.breakdown.host_bound += waited;
    const Time issued = sim_.now() + waited;
    record_wait(r, "host_bound", sim_.now(), issued);
    const Duration duration = r.governor ? governed_from(r, issued, full, power) : full;
    const Time start = issued;
    Rank* rank = &r;
    sim_.schedule_at(issued + duration, [this, rank, label, work, duration, start] {
      if (work == WorkKind::kOptimizer) {
        rank->breakdown.optimizer += duration;
      } else {
        rank->breakdown.compute += duration;
        if (work == WorkKind::kRecompute) rank->breakdown.recompute += duration;
      }
      record(*rank, "compute", label, start);
      advance(*rank);
    });
  }

  // The segment of `ops` that starts at op `start` for rank r (end == start when op `start` cannot
  // be part of one).
  const Segment& segment(Rank& r, int chunk, bool forward, const PassProgram& ops, size_t start) {
    auto& tables = r.segments;
    const size_t key = static_cast<size_t>(chunk) * 2 + (forward ? 1 : 0);
    if (tables.size() <= key) tables.resize(key + 1);
    auto& table = tables[key];
    if (table.size() < ops.ops.size()) table.resize(ops.ops.size());
    Segment& seg = table[start];
    if (seg.computed) return seg;
    size_t i = start;
    for (; i < ops.ops.size(); ++i) {
      const ProgramOp& op = ops.ops[i];
      if (op.kind == ProgramOp::Kind::kSync) {
        seg.pieces.push_back(Segment::Piece{Duration::zero(), op.host, true});
        continue;
      }
      if (op.kind == ProgramOp::Kind::kCompute) {
        seg.add(op.duration, op.host);
        seg.total += op.duration;
        seg.power += op.power;
        if (op.work == WorkKind::kOptimizer) {
          seg.optimizer += op.duration;
        } else {
          seg.compute += op.duration;
          if (op.work == WorkKind::kRecompute) seg.recompute += op.duration;
        }
        continue;
      }
      if (op.kind != ProgramOp::Kind::kCollective || op.handle >= 0) break;
      const std::vector<int>& members = group(r, op.group);
      if (members.size() == 1 || op.size.count() == 0) {  // completes at once, as issue_collective does
        seg.add(Duration::zero(), HostWork{op.host.issue, op.host.issue, 0});
        continue;
      }
      if (simulated_members(members) != 1) break;                 // needs a rendezvous
      CollectiveRequest request;
      request.op = op.op;
      request.group.assign(members.begin(), members.end());
      request.size = op.size;
      request.dtype = DataType::kBf16;
      if (op.all_to_all_bytes) request.all_to_all_bytes = *op.all_to_all_bytes;
      const Duration d = runner_->estimate(request);
      seg.add(d, HostWork{op.host.issue, op.host.issue + d, 0});
      seg.total += d;
      seg.comm += d;
      ++seg.sequences[index_of(op.group)];
    }
    seg.end = i;
    seg.computed = true;
    return seg;
  }

  // Under a power model the segment's compute runs as one mix, before its collectives (whose time
  // counts as idle power): the segment's order within is lost, not its total. The host thread
  // issues its pieces in order (the GPU waiting for it is host_bound); under a power model the
  // governor's stretch is added after them.
  void run_segment(Rank& r, const Segment& seg) {
    for (size_t k = 0; k < kGroupKinds; ++k) r.collective_sequence[k] += seg.sequences[k];
    Rank* rank = &r;
    Duration compute = seg.compute;
    Duration recompute = seg.recompute;
    Duration optimizer = seg.optimizer;
    Time gpu = sim_.now();
    for (const Segment::Piece& piece : seg.pieces) {
      if (piece.sync) {
        r.host = std::max(r.host, gpu) + piece.host.issue;
        r.queued.clear();
        continue;
      }
      gpu = issue_kernels(r, gpu, piece.gpu, piece.host, "segment");
    }
    const Duration host_wait = (gpu - sim_.now()) - seg.total;
    r.breakdown.host_bound += host_wait;
    record_wait(r, "host_bound", sim_.now(), sim_.now() + host_wait);
    Duration total = seg.total + host_wait;
    if (r.governor) {
      const Duration full = seg.compute + seg.optimizer;
      const Duration actual = governed(r, full, seg.power);
      if (actual != full && full > Duration::zero()) {
        const double stretch = static_cast<double>(actual.ps()) / static_cast<double>(full.ps());
        compute = Duration::picoseconds(std::llround(static_cast<double>(seg.compute.ps()) * stretch));
        recompute = std::min(compute, Duration::picoseconds(std::llround(static_cast<double>(seg.recompute.ps()) * stretch)));
        optimizer = actual - compute;
        total = actual + seg.comm + host_wait;
      }
    }
    sim_.schedule_after(total, [this, rank, compute, recompute, optimizer, comm = seg.comm] {
      rank->breakdown.compute += compute;
      rank->breakdown.recompute += recompute;
      rank->breakdown.optimizer += optimizer;
      rank->breakdown.exposed_comm += comm;
      advance(*rank);
    });
  }

  // Runs r's program until it has to wait. Called at start and whenever a wait ends.
  void advance(Rank& r) {
    const auto& passes = passes_[static_cast<size_t>(r.stage)];
    const StageProgram& program = *r.program;
    while (r.phase == Phase::kPasses) {
      if (r.pass_index == passes.size()) {
        r.phase = Phase::kFlushGradients;
        break;
      }
      const PipelinePass& pass = passes[r.pass_index];
      const ChunkProgram& chunk = program.chunks[static_cast<size_t>(pass.chunk)];
      const bool forward = pass.kind == PassKind::kForward;
      const PassProgram& ops = forward ? chunk.forward : chunk.backward;
      if (!r.pass_started) {
        if (!input_ready(r, pass)) {
          begin_wait(r, WaitKind::kInput);
          return;
        }
        r.pass_started = true;
        r.op_index = 0;
        r.handles.assign(r.handles.size(), 0);
      }
      while (r.op_index < ops.ops.size()) {
        if (fuse_ && !r.collective_issued) {
          const Segment& seg = segment(r, pass.chunk, forward, ops, r.op_index);
          if (seg.end > r.op_index && streams_idle(r, seg.sequences)) {
            r.op_index = seg.end;
            run_segment(r, seg);
            return;
          }
        }
        const ProgramOp& op = ops.ops[r.op_index++];
        switch (op.kind) {
          case ProgramOp::Kind::kCompute:
            run_compute(r, op.label, op.work, op.duration, op.power, op.host);
            return;
          case ProgramOp::Kind::kSync:
            synchronise_host(r, op.host.issue);
            break;
          case ProgramOp::Kind::kCollective: {
            Rank* rank = &r;
            // The NCCL call is made by the host thread: the collective starts once the compute
            // stream and the call have both got here.
            if (!r.collective_issued) {
              respect_launch_queue(r);
              r.host += op.host.issue;
              r.collective_issued = true;
            }
            if (r.host > sim_.now()) {
              --r.op_index;
              begin_wait(r, WaitKind::kHost);
              sim_.schedule_at(r.host, [this, rank] { resume(*rank); });
              return;
            }
            r.collective_issued = false;
            if (op.handle < 0) {
              begin_wait(r, WaitKind::kCollective);
              issue_collective(
                  r, op.group, op.op, op.size, DataType::kBf16, op.label, [this, rank] { resume(*rank); },
                  op.all_to_all_bytes);
              return;
            }
            const size_t h = static_cast<size_t>(op.handle);
            if (r.handles.size() <= h) r.handles.resize(h + 1, 0);
            r.handles[h] = 0;
            issue_collective(
                r, op.group, op.op, op.size, DataType::kBf16, op.label,
                [this, rank, h] {
                  rank->handles[h] = 1;
                  if (rank->wait == WaitKind::kHandle && rank->waiting_handle == static_cast<int>(h)) resume(*rank);
                },
                op.all_to_all_bytes);
            break;
          }
          case ProgramOp::Kind::kWait: {
            const size_t h = static_cast<size_t>(op.handle);
            check_invariant(h < r.handles.size(), "wait for a collective that was never started");
            if (r.handles[h] == 0) {
              r.waiting_handle = op.handle;
              begin_wait(r, WaitKind::kHandle);
              return;
            }
            break;
          }
          case ProgramOp::Kind::kGradientsReady:
            // Gradients are final in the chunk's last backward pass (they accumulate before), or
            // reduced after every backward pass (GradientReduction::every_microbatch).
            if (!forward &&
                (r.program->gradients.every_microbatch || r.backward_done[static_cast<size_t>(pass.chunk)] == m_ - 1)) {
              gradients_ready(r, op.group, op.elements);
            }
            break;
        }
      }
      finish_pass(r, pass, chunk);
    }
    finish_step(r);
  }

  void finish_pass(Rank& r, const PipelinePass& pass, const ChunkProgram& chunk) {
    const int vs = virtual_stage(r, pass.chunk);
    const size_t slot_m = static_cast<size_t>(pass.microbatch);
    if (pass.kind == PassKind::kForward) {
      if (vs < last_virtual_stage()) {
        const int next_vs = vs + 1;
        const int target_stage = next_vs % layout_.pp;
        const size_t slot = static_cast<size_t>(next_vs / layout_.pp * m_) + slot_m;
        send_pipeline(r, target_stage, chunk.activation_bytes, [this, slot](Rank& dest) {
          dest.forward_input[slot] = 1;
          wake_for_input(dest);
        });
      }
    } else {
      int& done = r.backward_done[static_cast<size_t>(pass.chunk)];
      ++done;
      if ((done == m_ || r.program->gradients.every_microbatch) && r.program->gradients.overlap) flush_gradients(r);
      if (vs > 0) {
        const int prev_vs = vs - 1;
        const int target_stage = prev_vs % layout_.pp;
        const size_t slot = static_cast<size_t>(prev_vs / layout_.pp * m_) + slot_m;
        send_pipeline(r, target_stage, chunk.gradient_bytes, [this, slot](Rank& dest) {
          dest.backward_input[slot] = 1;
          wake_for_input(dest);
        });
      }
    }
    ++r.pass_index;
    r.pass_started = false;
  }

  // After the last pass: remaining gradient buckets, wait for reductions, optimizer, parameter
  // all-gather (ZeRO >= 1), done.
  void finish_step(Rank& r) {
    const StageProgram& program = *r.program;
    Rank* rank = &r;
    while (true) {
      switch (r.phase) {
        case Phase::kPasses: return;
        case Phase::kFlushGradients:
          flush_gradients(r);
          r.phase = Phase::kAwaitReductions;
          break;
        case Phase::kAwaitReductions:
          if (r.outstanding_reductions > 0) {
            begin_wait(r, WaitKind::kReductions);
            return;
          }
          r.phase = Phase::kAfterReductions;
          break;
        case Phase::kAfterReductions:
          r.phase = Phase::kEmbeddingReduce;
          if (program.after_reductions > Duration::zero()) {
            run_compute(r, "ddp.bucket_to_grad", WorkKind::kBackward, program.after_reductions,
                        program.after_reductions_power, program.after_reductions_host);
            return;
          }
          break;
        case Phase::kEmbeddingReduce:
          r.phase = Phase::kOptimizer;
          if (program.embedding_grad_reduce.count() > 0) {
            ++r.outstanding_reductions;
            issue_collective(r, GroupKind::kEmbedding, CollectiveOp::kAllReduce, program.embedding_grad_reduce,
                             DataType::kFp32, "embedding_grad_all_reduce", [this, rank] {
                               if (--rank->outstanding_reductions == 0) resume(*rank);
                             });
            begin_wait(r, WaitKind::kReductions);
            return;
          }
          break;
        case Phase::kOptimizer: {
          const std::vector<OptimizerLaunch>& launches = program.optimizer_launches;
          if (r.optimizer_launch == 0 && program.optimizer_sync > Duration::zero()) {
            synchronise_host(r, program.optimizer_sync);
          }
          if (!launches.empty()) {  // launch by launch, each its own compute op
            if (r.optimizer_launch < launches.size()) {
              const OptimizerLaunch& launch = launches[r.optimizer_launch++];
              run_compute(r, launch.label, WorkKind::kOptimizer, launch.duration, launch.power, launch.host);
              return;
            }
            r.optimizer_launch = 0;
            r.phase = Phase::kParamGather;
            break;
          }
          r.phase = Phase::kParamGather;
          if (program.optimizer > Duration::zero()) {
            run_compute(r, "optimizer", WorkKind::kOptimizer, program.optimizer, program.optimizer_power,
                        program.optimizer_host);
            return;
          }
          break;
        }
        case Phase::kParamGather: {
          r.phase = Phase::kDone;
          if (program.overlap_param_gather) break;
          int gathers = 0;
          for (auto [kind, size] : {std::pair{program.data_group, program.data_param_gather},
                                    std::pair{GroupKind::kExpertData, program.expert_param_gather}}) {
            if (size.count() == 0) continue;
            ++gathers;
            ++r.outstanding_reductions;
            issue_collective(r, kind, CollectiveOp::kAllGather, size, DataType::kBf16, "param_all_gather",
                             [this, rank] {
                               if (--rank->outstanding_reductions == 0) resume(*rank);
                             });
          }
          if (gathers > 0) {
            begin_wait(r, WaitKind::kReductions);
            return;
          }
          break;
        }
        case Phase::kDone:
          if (r.wait == WaitKind::kNone) r.breakdown.finish = sim_.now();
          return;
      }
    }
  }

  const Cluster& cluster_;
  const Layout& layout_;
  const std::vector<StageProgram>& stages_;
  RankGrid grid_;
  int m_;
  int v_;
  const StepSimulationOptions& options_;  // simulate_step's, which outlives the simulation
  bool fuse_ = false;
  Simulator sim_;
  std::unique_ptr<FlowNetwork> network_;
  std::unique_ptr<CollectiveRunner> runner_;
  std::unique_ptr<CollectiveRunner> analytical_runner_;
  std::vector<std::vector<PipelinePass>> passes_;
  std::vector<int> simulated_index_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::map<std::tuple<int, int, int>, Rendezvous> rendezvous_;
  std::map<std::pair<int, int>, std::vector<std::vector<int>>> mirror_groups_;
  std::vector<TraceSpan> trace_;
  std::vector<TraceSpan> waits_;
};

}  // namespace

StepResult simulate_step(const Cluster& cluster, const Layout& layout, const std::vector<StageProgram>& stages,
                         int microbatches, const StepSimulationOptions& options) {
  check_invariant(!stages.empty(), "simulate_step needs at least one stage program");
  StepSimulation simulation(cluster, layout, stages, microbatches, options);
  return simulation.run();
}

}  // namespace clustersim
