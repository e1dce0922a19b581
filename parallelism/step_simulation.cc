#include "parallelism/step_simulation.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/error.h"
#include "parallelism/step_simulation_engine.h"

namespace clustersim {

namespace step_sim {

StepSimulation::StepSimulation(const Cluster& cluster, const Layout& layout, const std::vector<StageProgram>& stages,
                               int microbatches, const StepSimulationOptions& options)
    : cluster_(cluster),
      layout_(layout),
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
  runner_ =
      std::make_unique<CollectiveRunner>(sim_, cluster, network_.get(), options.fidelity, options.collective_profile);
  analytical_runner_ =
      std::make_unique<CollectiveRunner>(sim_, cluster, nullptr, Fidelity::kAnalytical, options.collective_profile);
  for (int s = 0; s < layout.pp; ++s) {
    passes_.push_back(schedule_passes(layout.schedule, s, layout.pp, m_, v_));
  }
  simulated_index_.assign(static_cast<size_t>(layout.world_size()), -1);
  if (options.representative) {
    lines_ = representative_lines(cluster, layout, options.fidelity, options.representative_line);
  }
  for (int r = 0; r < layout.world_size(); ++r) {
    const RankCoord c = grid_.coord_of(r);
    if (options.representative && std::none_of(lines_.begin(), lines_.end(), [&](const RankCoord& line) {
          return c.tp == line.tp && c.cp == line.cp && c.dp == line.dp;
        })) {
      continue;
    }
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
    rank->forward_lanes.assign(static_cast<size_t>(m_ * v_), 0);
    rank->backward_lanes.assign(static_cast<size_t>(m_ * v_), 0);
    rank->forward_lanes_arrival.assign(static_cast<size_t>(m_ * v_), Time::zero());
    rank->backward_lanes_arrival.assign(static_cast<size_t>(m_ * v_), Time::zero());
    rank->backward_done.assign(static_cast<size_t>(v_), 0);
    rank->aligned_sync_in = -1;
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
  if (options.representative && options.fidelity == Fidelity::kFlow) tie_ranks_to_representatives();
}

StepResult StepSimulation::run() {
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

void StepSimulation::begin_wait(Rank& r, WaitKind kind) {
  r.wait = kind;
  r.wait_start = sim_.now();
}

void StepSimulation::end_wait(Rank& r) {
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

void StepSimulation::resume(Rank& r) {
  end_wait(r);
  advance(r);
}

void StepSimulation::record_wait(const Rank& r, const char* part, Time start, Time end) {
  if (options_.record_trace && end > start) waits_.push_back(TraceSpan{r.rank, r.rank, "wait", part, start, end});
}

void StepSimulation::record(const Rank& r, const std::string& stream, const std::string& name, Time start) {
  record_span(r, stream, name, start, sim_.now());
}

void StepSimulation::record_span(const Rank& r, const std::string& stream, const std::string& name, Time start,
                                 Time end) {
  if (!options_.record_trace) return;
  if (trace_.size() == kMaxTraceSpans) {
    throw InputError(fmt::format("--trace: the step has more than {} spans to record (about 150 bytes each); "
                                 "trace fewer ranks (simulation.representative: true simulates one rank per "
                                 "pipeline stage) or a smaller cluster",
                                 kMaxTraceSpans));
  }
  trace_.push_back(TraceSpan{r.rank, r.rank, stream, name, start, end});
}

void StepSimulation::respect_launch_queue(Rank& r) {
  const int64_t depth = options_.launch_queue_depth;
  if (depth <= 0) return;
  while (!r.queued.empty() && r.queued.front().first <= r.kernels_issued + 1 - depth) {
    r.host = std::max(r.host, r.queued.front().second);
    r.queued.pop_front();
  }
}

Time StepSimulation::issue_kernels(Rank& r, Time start, Duration gpu, const HostWork& host, const std::string& label) {
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

void StepSimulation::synchronise_host(Rank& r, Duration cost) {
  r.host = std::max(r.host, sim_.now()) + cost;
  r.queued.clear();  // every kernel issued so far has finished
}

void StepSimulation::wake_for_input(Rank& r) {
  if (r.wait == WaitKind::kInput) resume(r);
}

std::pair<int*, Time*> StepSimulation::pending_lanes(Rank& r) {
  const auto& passes = passes_[static_cast<size_t>(r.stage)];
  if (r.phase != Phase::kPasses || !r.pass_started || r.pass_index >= passes.size()) return {nullptr, nullptr};
  const PipelinePass& pass = passes[r.pass_index];
  const size_t slot = static_cast<size_t>(pass.chunk * m_ + pass.microbatch);
  if (pass.kind == PassKind::kForward) return {&r.forward_lanes[slot], &r.forward_lanes_arrival[slot]};
  return {&r.backward_lanes[slot], &r.backward_lanes_arrival[slot]};
}

bool StepSimulation::input_ready(const Rank& r, const PipelinePass& pass) const {
  const int vs = virtual_stage(r, pass.chunk);
  const size_t slot = static_cast<size_t>(pass.chunk * m_ + pass.microbatch);
  if (pass.kind == PassKind::kForward) return vs == 0 || r.forward_input[slot] != 0;
  return vs == last_virtual_stage() || r.backward_input[slot] != 0;
}

Duration StepSimulation::governed_from(Rank& r, Time start, Duration full, const PowerWork& power) {
  if (!r.governor) return full;
  r.governor->idle_for(start - r.governor_time);
  const Duration d = r.governor->run(full, power);
  r.governor_time = start + d;
  return d;
}

void StepSimulation::run_compute(Rank& r, const std::string& label, WorkKind work, Duration full,
                                 const PowerWork& power, const HostWork& host) {
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

void StepSimulation::advance(Rank& r) {
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
      r.pass_start = sim_.now();
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
                op.all_to_all_bytes, /*blocks=*/true);
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
          r.handle_reached = sim_.now();
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

void StepSimulation::finish_pass(Rank& r, const PipelinePass& pass, const ChunkProgram& chunk) {
  const int vs = virtual_stage(r, pass.chunk);
  const size_t slot_m = static_cast<size_t>(pass.microbatch);
  if (pass.kind == PassKind::kForward) {
    if (vs < last_virtual_stage()) {
      const int next_vs = vs + 1;
      const int target_stage = next_vs % layout_.pp;
      const size_t slot = static_cast<size_t>(next_vs / layout_.pp * m_) + slot_m;
      send_pipeline(r, target_stage, chunk.activation_bytes, true, slot, [this, slot](Rank& dest) {
        dest.forward_input[slot] = 1;
        wake_for_input(dest);
      });
    }
  } else {
    int& done = r.backward_done[static_cast<size_t>(pass.chunk)];
    ++done;
    backward_pass_gradients(r, done);
    if (vs > 0) {
      const int prev_vs = vs - 1;
      const int target_stage = prev_vs % layout_.pp;
      const size_t slot = static_cast<size_t>(prev_vs / layout_.pp * m_) + slot_m;
      send_pipeline(r, target_stage, chunk.gradient_bytes, false, slot, [this, slot](Rank& dest) {
        dest.backward_input[slot] = 1;
        wake_for_input(dest);
      });
    }
  }
  ++r.pass_index;
  r.pass_started = false;
}

void StepSimulation::finish_step(Rank& r) {
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
        r.reductions_done = sim_.now();
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
        r.phase = Phase::kAwaitMirrors;
        if (program.overlap_param_gather) break;
        // Synchronous, the dense gather before the expert one (Megatron-Core's distributed
        // optimizer without --overlap-param-gather: distrib_optimizer.py:3155-3197, async_op false
        // at param_and_grad_buffer.py:408).
        const Bytes dense = program.data_param_gather;
        const Bytes expert = program.expert_param_gather;
        if (dense.count() == 0 && expert.count() == 0) break;
        ++r.outstanding_reductions;
        auto done = [this, rank] {
          if (--rank->outstanding_reductions == 0) resume(*rank);
        };
        auto gather_expert = [this, rank, expert, done] {
          if (expert.count() == 0) {
            done();
            return;
          }
          issue_collective(*rank, GroupKind::kExpertData, CollectiveOp::kAllGather, expert, DataType::kBf16,
                           "param_all_gather", done);
        };
        if (dense.count() > 0) {
          issue_collective(r, program.data_group, CollectiveOp::kAllGather, dense, DataType::kBf16,
                           "param_all_gather", gather_expert);
        } else {
          gather_expert();
        }
        begin_wait(r, WaitKind::kReductions);
        return;
      }
      case Phase::kAwaitMirrors:
        r.phase = Phase::kDone;
        if (r.outstanding_mirrors > 0) {
          begin_wait(r, WaitKind::kMirrors);
          return;
        }
        break;
      case Phase::kDone:
        if (r.wait == WaitKind::kNone) r.breakdown.finish = sim_.now();
        return;
    }
  }
}

}  // namespace step_sim

StepResult simulate_step(const Cluster& cluster, const Layout& layout, const std::vector<StageProgram>& stages,
                         int microbatches, const StepSimulationOptions& options) {
  check_invariant(!stages.empty(), "simulate_step needs at least one stage program");
  step_sim::StepSimulation simulation(cluster, layout, stages, microbatches, options);
  return simulation.run();
}

}  // namespace clustersim
