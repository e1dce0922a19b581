// Segments of a simulated step (parallelism/step_simulation_engine.h, StepSimulation::Segment):
// at analytical fidelity a run of compute ops and lone fixed-time collectives is found once per
// pass program and start op, and run as one event with the same times and breakdown.

#include <algorithm>
#include <cmath>

#include "parallelism/step_simulation_engine.h"

namespace clustersim::step_sim {

const StepSimulation::Segment& StepSimulation::segment(Rank& r, int chunk, bool forward, const PassProgram& ops,
                                                       size_t start) {
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

void StepSimulation::run_segment(Rank& r, const Segment& seg) {
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

}  // namespace clustersim::step_sim
