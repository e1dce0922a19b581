// The context-parallel ring's program ops (parallelism/context_parallel_ring.h).

#include "parallelism/context_parallel_ring.h"

#include <memory>
#include <string>

#include "parallelism/program_ops.h"
#include "workloads/op_cost.h"

namespace clustersim {

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

}  // namespace clustersim
