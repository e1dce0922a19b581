#pragma once

// The simulation of one training step behind simulate_step() (parallelism/step_simulation.h): the
// class StepSimulation, whose parts are defined in three files by concept:
//   step_simulation.cc  the ranks running their programs in pipeline order on the compute stream,
//                       the host thread, the waits of the time breakdown and the step's phases;
//   comm_streams.cc     the communication streams of the process groups, the collectives on
//                       them (rendezvous, mirrored groups), pipeline sends and gradient buckets;
//   step_segments.cc    runs of ops executed as one event at analytical fidelity (Segment).
// Internal to parallelism/.

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/simulator.h"
#include "network/flow_network.h"
#include "parallelism/pipeline_schedule.h"
#include "parallelism/step_simulation.h"

namespace clustersim::step_sim {

inline constexpr size_t kGroupKinds = kGroupKindCount;

inline size_t index_of(GroupKind kind) { return static_cast<size_t>(kind); }

using Matrix = std::shared_ptr<const std::vector<int64_t>>;

enum class WaitKind { kNone, kInput, kCollective, kHandle, kReductions, kHost, kMirrors };

enum class Phase {
  kPasses,
  kFlushGradients,
  kAwaitReductions,
  kAfterReductions,
  kEmbeddingReduce,
  kOptimizer,
  kParamGather,
  kAwaitMirrors,
  kDone
};

class StepSimulation {
 public:
  StepSimulation(const Cluster& cluster, const Layout& layout, const std::vector<StageProgram>& stages,
                 int microbatches, const StepSimulationOptions& options);

  StepResult run();

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

  struct MirrorGroup;

  // An asynchronous call's pace: its issuer computed `compute` beside its previous call (that call's
  // start to its handle wait), went on at the later of the call's end and that compute's end, and
  // issued this one `after` that.
  struct AsyncPace {
    Duration compute;
    Duration after;
  };
  // A call of a context-parallel ring that the tied mirror groups make on their own (MirrorGroup::
  // plan): when their previous call has completed and its pace has passed, as each of their ranks
  // would, not when r makes its own (a group ahead of r keeps its lead until they meet).
  struct PlannedCall {
    AsyncPace pace;
    CollectiveOp op;
    Bytes size;
    DataType dtype;
    Matrix matrix;
  };
  using CallPlan = std::vector<PlannedCall>;
  // An issued call of a kind whose mirrors follow a plan: one of the calls an earlier call's plan
  // holds (its mirrors make their own), or the first, with the plan of those after it (may be null).
  struct ChainCall {
    bool in_chain = false;
    std::shared_ptr<const CallPlan> plan;
  };

  // A collective of a tying kind that its issuer does not block on, and its tied mirrors, which
  // started when it was issued: `done` runs when the last of them has completed.
  struct AwaitedCall {
    int remaining = 0;
    std::function<void()> done;
    void finish_one() {
      if (--remaining == 0 && done) done();
    }
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
    // Representative flow fidelity: per input slot (as forward_input), the tied lanes' payloads of
    // that input still on their way (send_pipeline) and when the last of them arrived (zero once
    // its lag has been met), and the collectives of tied kinds held until the current pass's have
    // arrived.
    std::vector<int> forward_lanes;
    std::vector<int> backward_lanes;
    std::vector<Time> forward_lanes_arrival;
    std::vector<Time> backward_lanes_arrival;
    std::vector<std::function<void()>> held_for_lanes;
    Time pass_start;  // when the current pass started
    // Representative flow fidelity: its tied mirror groups (MirrorGroup::set), and its collectives
    // held until those have caught up (hold_for_tied_mirrors).
    std::vector<MirrorGroup*> tied_mirrors;
    std::vector<std::function<void()>> held_for_mirrors;
    std::optional<Time> tied_arrival;  // when the collective held for them was reached
    Time handle_reached;               // when its compute stream last reached a wait for a handle
    std::array<std::deque<std::shared_ptr<AwaitedCall>>, kGroupKinds> awaited;  // issued, not yet started
    std::array<std::deque<ChainCall>, kGroupKinds> chains;  // issued ring calls, not yet started
    std::array<size_t, kGroupKinds> chain_left{};            // calls of the current plan still to issue
    std::optional<Time> reductions_done;  // when it had waited for its gradient reductions
    Time last_untied_done;                // when its last collective of an untied kind completed
    std::vector<int> backward_done;    // backward passes finished per chunk
    // GradientReduction::pipeline_aligned, interleaved: backward passes still to finish before the
    // pending buckets are issued (-1: none due).
    int aligned_sync_in = -1;
    std::vector<char> handles;         // async collectives of the current pass: 1 = done
    int waiting_handle = -1;
    std::array<int64_t, kGroupKinds> pending_gradients{};
    int outstanding_reductions = 0;
    int outstanding_mirrors = 0;  // collectives of untied mirrored groups still running (start_mirrored)
    std::array<int, kGroupKinds> collective_sequence{};
    std::array<int, kGroupKinds> issue_sequence{};  // collectives issued per kind (issue_untied_mirrors)
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

  const std::vector<int>& group(Rank& r, GroupKind kind);

  int simulated_members(const std::vector<int>& members) const;

  void begin_wait(Rank& r, WaitKind kind);

  void end_wait(Rank& r);

  void resume(Rank& r);

  // A wait of r's compute stream, counted in the RankBreakdown part `part` (StepResult::waits).
  void record_wait(const Rank& r, const char* part, Time start, Time end);

  void record(const Rank& r, const std::string& stream, const std::string& name, Time start);

  void record_span(const Rank& r, const std::string& stream, const std::string& name, Time start, Time end);

  // Holds r's host thread until the launch queue has room for its next kernel: kernel j is issued
  // only after kernel j − launch_queue_depth has finished (every kernel of an op counted as ending
  // with the op).
  void respect_launch_queue(Rank& r);

  // Issues a run of kernels (GPU time `gpu` from `start`, the stream's free time) from r's host
  // thread and returns when the run ends: max(start + gpu, host + span) (HostWork). The host
  // thread moves on by `host.issue`; the host span is traced.
  Time issue_kernels(Rank& r, Time start, Duration gpu, const HostWork& host, const std::string& label);

  // A device-to-host synchronisation reached by the compute stream now: the host thread waits for
  // it, then spends `cost`.
  void synchronise_host(Rank& r, Duration cost);

  // Queues a collective of `r`'s group `kind` on r's stream of that group; `done` runs when it
  // completes. It starts when the stream has finished every earlier collective of the group.
  // `blocks`: r's compute stream waits for it (not a handle or a gradient bucket).
  void issue_collective(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype, const std::string& label,
                        std::function<void()> done, const Matrix& matrix = nullptr, bool blocks = false);

  // Runs `start` (a collective's start) now if `stream` is free, else after the ones queued there
  // (release runs the next).
  void enqueue(CommStream& stream, std::function<void()> start);

  // The stream of `kind` finished its collective: start the next queued one, if any.
  void release_stream(Rank& r, GroupKind kind);
  void release(CommStream& stream);

  bool streams_idle(const Rank& r, const std::array<int, kGroupKinds>& used) const;

  // Starts a collective at the head of r's stream. In full simulation the collective starts when
  // every member has reached its matching call (per-group sequence).
  void start_on_stream(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype, const std::string& label,
                       const std::function<void()>& done, const Matrix& matrix, bool blocks);

  // True when every member is in one node whose GPUs share an NVSwitch. Such a collective cannot
  // contend with collectives of other groups (each GPU has its own NVSwitch ports, and groups of
  // other nodes use other links), and its flow-level time equals the closed form on an idle node
  // (collectives tests: within 1e-5), so it is priced analytically even at flow fidelity.
  bool inside_nvswitch_node(const std::vector<int>& members) const;

  void start_collective(CollectiveOp op, const std::vector<int>& members, Bytes size, DataType dtype,
                        std::function<void()> done, const Matrix& matrix = nullptr);

  // group_ties_ranks for this layout: the members of kind's groups move in step inside the passes.
  bool ties_ranks(GroupKind kind) const { return group_ties_ranks(kind, layout_); }

  // Whether the tied mirrors of a collective of `kind` (`blocks`: r's compute stream waits for it)
  // meet r as a blocking collective's do (at r's next collective of another tying kind, with their
  // lag) rather than being awaited with it: blocking ones, and the context-parallel ring's
  // exchanges, whose handle each step waits for right after its compute
  // (parallelism/context_parallel_ring.cc), so that a rank's ring moves at its own pace until it
  // meets the others at a tensor-parallel collective. ZeRO-3's gathers, waited for a layer later
  // than they are issued, are awaited.
  static bool met_as_blocking(GroupKind kind, bool blocks) { return blocks || kind == GroupKind::kContext; }

  // Whether a collective of `members` runs with the mirrors of its symmetric groups: representative
  // flow fidelity, and not priced in closed form inside an NVSwitch node.
  bool mirrored(const std::vector<int>& members) const;

  struct Mirrors;
  // A group of other ranks that a representative rank stands for, with the stream its members
  // would run the group's collectives on: one at a time, in the order issued.
  struct MirrorGroup {
    std::vector<int> members;
    CommStream stream;
    Time last_end;          // when its previous collective completed
    Time last_start;        // when its previous collective started
    Rank* owner = nullptr;  // the representative rank whose outstanding mirrors count it
    // Tied groups (Mirrors::tied): the simulated group's Mirrors, the kind, and the collectives
    // completed.
    Mirrors* set = nullptr;
    GroupKind kind = GroupKind::kTensor;
    int completed = 0;
    // The calls it makes on its own after the current one (PlannedCall), the next of them.
    std::shared_ptr<const CallPlan> plan;
    size_t plan_next = 0;
  };
  // The groups of kind `kind` without a simulated member that one simulated group stands for (flow
  // fidelity): `tied`, those of a kind that ties ranks and holding a rank tied to the group's
  // simulated member (tied_to_), which run at their own pace between the collectives of other tied
  // kinds, where the tied ranks meet (hold_for_tied_mirrors); `others`, every other group of its
  // stage without a simulated member (given to the stage's first simulated group), which run at
  // their own pace on their own streams. Both count among their owner's outstanding mirrors.
  struct Mirrors {
    std::vector<MirrorGroup> tied;
    std::vector<MirrorGroup> others;
    Rank* owner = nullptr;         // the group's first simulated member
    std::optional<Time> rep_done;  // when the simulated group's previous collective completed
    std::optional<Time> rep_start;  // when it started
    bool rep_async = false;         // that collective did not block its issuer's compute (a handle)
    int rep_completed = 0;         // the simulated group's collectives completed
  };
  // The Mirrors of r's group of `kind`; the first call for a stage sorts out all its groups.
  Mirrors& mirrored_groups(Rank& r, GroupKind kind);

  // r's collective of group `kind` (its simulated members have all reached it) and the same
  // collective of every group it stands for, as flows: r's starts now and `done` runs when it has
  // completed; each mirror starts on its group's stream (start_mirror) and counts among r's
  // outstanding mirrors until it completes: r's step ends when they have all completed, at the
  // pace of the slowest group it stands for.
  // A collective of a tying kind that does not block r's compute stream (a handle): its tied
  // ranks' compute does not wait for it either, so r's `done` waits for the tied mirrors' too.
  // `released` (if any) runs when r's own collective has completed (its stream is free then).
  void start_mirrored(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype, std::function<void()> done,
                      const Matrix& matrix, bool blocks, std::function<void()> released = {});

  // Starts a collective on mirror group g's stream `gap` after g's previous one completed (r's
  // time between its own two calls of a tying kind; zero for others) or now, whichever is later,
  // queued behind the one running there; its completion counts off one of its owner's
  // outstanding mirrors (mirror_done). A tied group ahead of r starts with r: a lead is not kept.
  // `not_before`: nor before then.
  // `pace` (an asynchronous call met as a blocking one): instead of `gap` after g's previous
  // collective ended, `pace.after` after the later of that end and `pace.compute` after its start.
  void start_mirror(MirrorGroup& g, Duration gap, CollectiveOp op, Bytes size, DataType dtype, const Matrix& matrix,
                    Time not_before = Time::zero(), std::optional<AsyncPace> pace = std::nullopt);

  // A collective of an untied kind of `members` completed now: member_done_, and each simulated
  // member's last_untied_done.
  void untied_done(const std::vector<int>& members) {
    for (int m : members) {
      member_done_[static_cast<size_t>(m)] = sim_.now();
      if (const int i = simulated_index_[static_cast<size_t>(m)]; i >= 0) ranks_[static_cast<size_t>(i)]->last_untied_done = sim_.now();
    }
  }

  // r issues a collective of a tying kind that it does not block on (a ZeRO-3 gather or gradient
  // reduce-scatter; representative flow fidelity): its tied mirrors start now on their streams, as
  // their ranks issue it now, and r's call completes when they and its own have (start_mirrored).
  void issue_awaited_mirrors(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype,
                             const Matrix& matrix);

  // Starts a collective of tied mirror group g on its stream, after the group's earlier ones; `done`
  // runs when it completes (its representative waits for it: not an outstanding mirror).
  void start_awaited_mirror(MirrorGroup& g, CollectiveOp op, Bytes size, DataType dtype, const Matrix& matrix,
                            std::function<void()> done);

  // r issues a collective of a kind that does not tie ranks (representative flow fidelity): once
  // every simulated member of its group has issued it, the mirrors its group stands for (`others`)
  // start on their streams, each after its own previous collective: their ranks issue it at the
  // same time, and need not wait for r's group, whose stream may still be busy. After r waited for
  // its gradient reductions, its ranks have waited for their own: a mirror starts r's time since
  // its own last collective after its members' last collective completed, once the running
  // mirrors holding its members have completed (start_after_members).
  void issue_untied_mirrors(Rank& r, GroupKind kind, CollectiveOp op, Bytes size, DataType dtype,
                            const Matrix& matrix);
  // Untied mirror group g's call after the gradient reductions: once no untied mirror holding one
  // of its members is running, `gap` after its members' last collective completed (deferred in
  // after_untied_ until then).
  void start_after_members(MirrorGroup& g, Duration gap, CollectiveOp op, Bytes size, DataType dtype,
                           const Matrix& matrix);

  // Before r's collective of tying kind `kind`: its tied ranks meet there, so it waits until the
  // current pass's tied lanes have delivered their payloads and r's tied mirrors of the other kinds
  // have completed the collectives r completed, and then by the largest lag behind r: of a lane's
  // arrival behind r's pass start (first meeting of the pass), of a mirror's last completion
  // behind r's (the time those ranks spend after it is r's). They are in step with r afterwards. Returns true when `retry` (the collective's start) has
  // been held or scheduled, false when it can start now.
  bool hold_for_tied_mirrors(Rank& r, GroupKind kind, const std::function<void()>& retry);

  // One of r's outstanding mirrors completed: r resumes if it was waiting for the last one.
  void mirror_done(Rank& r);

  // Sends a pipeline payload from r to the rank holding virtual stage `target_vs` for the same
  // (tp, cp, dp) coordinates; `arrive` runs at the receiver when the data is there.
  // `forward`, `slot`: the receiver's input the payload is (forward_input or backward_input slot).
  void send_pipeline(Rank& r, int target_stage, Bytes size, bool forward, size_t slot,
                     std::function<void(Rank&)> arrive);

  // The pipeline lanes (tp, cp, dp; pp = 0) whose sends r's sends stand for: `tied`, those tied to r
  // (tied_to_), `others` the lanes tied to no simulated rank, for the stage's first. Cached.
  struct Lanes {
    std::vector<RankCoord> tied;
    std::vector<RankCoord> others;
  };
  const Lanes& lanes_of(const Rank& r);

  // Fills tied_to_ (representative flow fidelity).
  void tie_ranks_to_representatives();

  // The count of tied lanes' payloads still on their way for r's current pass (Rank::forward_lanes)
  // and when the last arrived, or nulls outside a started pass.
  std::pair<int*, Time*> pending_lanes(Rank& r);

  // How far the tied rank `src` of r's stage lags behind r: the largest lag of the tied mirror
  // groups holding it that have completed what r's have (zero when none lags).
  Duration lag_of(const Rank& r, int src) const;

  // The asynchronous calls of `kind` that follow the one r has just issued (the op before
  // r.op_index of its current pass) each after the previous one's handle wait, with only compute
  // between (a context-parallel ring's exchanges), and their pace from the program's compute
  // durations (full clock, the host ahead), in `dtype`; null when none does.
  std::shared_ptr<const CallPlan> plan_chain(const Rank& r, GroupKind kind, DataType dtype) const;
  // Records r's issued call of `kind` in r.chains (see ChainCall).
  void note_chain(Rank& r, GroupKind kind, DataType dtype);

  // How far tied mirror group g (having completed what r's group has) lags behind r where they go
  // on: the end of its last collective against r's, or for an asynchronous one the later of that
  // end and the compute r did beside it (its start to r's last handle wait), for each. Seconds,
  // negative when g is ahead.
  Duration tied_lag(const Rank& r, const MirrorGroup& g) const;

  void wake_for_input(Rank& r);

  int virtual_stage(const Rank& r, int chunk) const { return chunk * layout_.pp + r.stage; }
  int last_virtual_stage() const { return layout_.pp * v_ - 1; }

  bool input_ready(const Rank& r, const PipelinePass& pass) const;

  // Issues one gradient bucket of `elements` on the group's stream; `then` (if any) runs when it
  // is reduced, before the rank's count of outstanding reductions drops.
  void launch_reduction(Rank& r, GroupKind kind, int64_t elements, std::function<void()> then = {});

  // Issues every group's pending gradients. With overlap all at once (each on its own stream, as
  // the backward reached them); without, one after another, dense groups before the expert group,
  // as Megatron-Core's finish_grad_sync runs them synchronously (docs/design.md, "Megatron-Core's
  // communication": distributed_data_parallel.py:668-678, param_and_grad_buffer.py:805-809).
  void flush_gradients(Rank& r);
  void flush_gradients_in_turn(Rank& r, size_t from);

  void gradients_ready(Rank& r, GroupKind kind, int64_t elements);

  // Whether r issues its buckets bucket by bucket during its last backward pass (overlap, and not
  // held back by GradientReduction::pipeline_aligned).
  bool buckets_in_backward(const Rank& r) const;
  // A backward pass of r's chunk finished (`done` of m for that chunk): issue the buckets the
  // overlap or the pipeline alignment makes due.
  void backward_pass_gradients(Rank& r, int done);

  // The time `full` (full-clock compute with power work `power`) takes under r's governor, from
  // now; the compute stream was idle since the governor's last run. Without a power model: `full`.
  Duration governed(Rank& r, Duration full, const PowerWork& power) { return governed_from(r, sim_.now(), full, power); }
  Duration governed_from(Rank& r, Time start, Duration full, const PowerWork& power);

  // Runs a compute op of full-clock time `full`: it starts once the host thread has issued it
  // (the wait is host_bound), then runs under the governor.
  void run_compute(Rank& r, const std::string& label, WorkKind work, Duration full, const PowerWork& power,
                   const HostWork& host);

  // The segment of `ops` that starts at op `start` for rank r (end == start when op `start` cannot
  // be part of one).
  const Segment& segment(Rank& r, int chunk, bool forward, const PassProgram& ops, size_t start);

  // Under a power model the segment's compute runs as one mix, before its collectives (whose time
  // counts as idle power): the segment's order within is lost, not its total. The host thread
  // issues its pieces in order (the GPU waiting for it is host_bound); under a power model the
  // governor's stretch is added after them.
  void run_segment(Rank& r, const Segment& seg);

  // Runs r's program until it has to wait. Called at start and whenever a wait ends.
  void advance(Rank& r);

  void finish_pass(Rank& r, const PipelinePass& pass, const ChunkProgram& chunk);

  // After the last pass: remaining gradient buckets, wait for reductions, optimizer, parameter
  // all-gather (ZeRO >= 1), done.
  void finish_step(Rank& r);

  const Cluster& cluster_;
  const Layout& layout_;
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
  std::map<std::tuple<int, int, int>, int> issued_;  // issue_untied_mirrors: simulated members that issued
  std::vector<RankCoord> lines_;  // representative_lines (representative only)
  // Representative flow fidelity: per rank, the simulated rank whose closure under the tying kinds'
  // groups holds it (itself for a simulated rank), -1 for none.
  std::vector<int> tied_to_;
  std::map<int, Lanes> lanes_;  // by simulated rank
  // Representative flow fidelity: per rank, when the last collective of an untied kind holding it
  // completed and the untied mirrors holding it started and not completed; per stage, the starts
  // deferred until their members' mirrors have completed (start_after_members).
  std::vector<Time> member_done_;
  std::vector<int> member_running_;
  std::vector<std::vector<std::function<void()>>> after_untied_;
  std::map<std::pair<int, int>, Mirrors> mirror_groups_;  // by (kind, its group's first member)
  std::vector<TraceSpan> trace_;
  std::vector<TraceSpan> waits_;
};

}  // namespace clustersim::step_sim
