#include "parallelism/pipeline_schedule.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

namespace {

void check_arguments(int rank, int stages, int microbatches, int chunks) {
  if (stages < 1 || microbatches < 1 || chunks < 1) {
    throw InputError(fmt::format("pipeline schedule: stages ({}), microbatches ({}) and chunks ({}) must be >= 1",
                                 stages, microbatches, chunks));
  }
  if (rank < 0 || rank >= stages) {
    throw InputError(fmt::format("pipeline schedule: rank {} outside [0, {})", rank, stages));
  }
}

// Megatron-LM's mapping of the k-th chunk-pass of a rank to (microbatch, chunk) in the interleaved
// schedule: passes go through the chunks in groups of p microbatches; backwards visit chunks in
// reverse order.
PipelinePass interleaved_pass(PassKind kind, int k, int stages, int chunks) {
  const int group_size = stages * chunks;
  const int in_group = k % group_size;
  int chunk = in_group / stages;
  if (kind == PassKind::kBackward) chunk = chunks - 1 - chunk;
  const int microbatch = (k / group_size) * stages + in_group % stages;
  return PipelinePass{kind, microbatch, chunk};
}

}  // namespace

int warmup_passes(PipelineSchedule schedule, int rank, int stages, int microbatches, int chunks) {
  check_arguments(rank, stages, microbatches, chunks);
  switch (schedule) {
    // One stage has no pipeline: micro-batches run forward then backward, one at a time, whatever
    // the schedule (Megatron-LM's forward_backward_no_pipelining).
    case PipelineSchedule::kGpipe: return stages == 1 ? 0 : microbatches * chunks;
    case PipelineSchedule::kOneFOneB: return std::min(stages - rank - 1, microbatches);
    case PipelineSchedule::kInterleaved1F1B:
      return std::min((stages - rank - 1) * 2 + (chunks - 1) * stages, microbatches * chunks);
  }
  return 0;
}

std::vector<PipelinePass> schedule_passes(PipelineSchedule schedule, int rank, int stages, int microbatches,
                                          int chunks) {
  check_arguments(rank, stages, microbatches, chunks);
  const int total = microbatches * chunks;
  const int warmup = warmup_passes(schedule, rank, stages, microbatches, chunks);
  std::vector<PipelinePass> out;
  out.reserve(static_cast<size_t>(2 * total));
  auto forward = [&](int k) {
    if (schedule == PipelineSchedule::kInterleaved1F1B) return interleaved_pass(PassKind::kForward, k, stages, chunks);
    return PipelinePass{PassKind::kForward, k / chunks, k % chunks};
  };
  auto backward = [&](int k) {
    if (schedule == PipelineSchedule::kInterleaved1F1B) return interleaved_pass(PassKind::kBackward, k, stages, chunks);
    return PipelinePass{PassKind::kBackward, k / chunks, chunks - 1 - k % chunks};
  };
  if (schedule == PipelineSchedule::kInterleaved1F1B && microbatches % stages != 0) {
    throw InputError(fmt::format("interleaved-1f1b needs microbatches ({}) to be a multiple of stages ({})",
                                 microbatches, stages));
  }
  for (int k = 0; k < warmup; ++k) out.push_back(forward(k));
  const int steady = total - warmup;
  for (int k = 0; k < steady; ++k) {
    out.push_back(forward(k + warmup));
    out.push_back(backward(k));
  }
  for (int k = steady; k < total; ++k) out.push_back(backward(k));
  return out;
}

int peak_inflight_passes(PipelineSchedule schedule, int rank, int stages, int microbatches, int chunks) {
  int inflight = 0;
  int peak = 0;
  for (const auto& pass : schedule_passes(schedule, rank, stages, microbatches, chunks)) {
    inflight += pass.kind == PassKind::kForward ? 1 : -1;
    peak = std::max(peak, inflight);
  }
  return peak;
}

}  // namespace clustersim
