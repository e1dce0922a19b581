// Appending compute ops to a pass program (parallelism/program_ops.h).

#include "parallelism/program_ops.h"

namespace clustersim {

void push_compute(std::vector<ProgramOp>& out, std::string_view label, WorkKind work, Duration duration, double flops,
                  const PowerWork& power, const HostWork& host, bool merge) {
  if (merge && !out.empty() && out.back().kind == ProgramOp::Kind::kCompute && out.back().work == work) {
    out.back().host.then(host, duration);
    out.back().duration += duration;
    out.back().flops += flops;
    out.back().power += power;
    return;
  }
  out.push_back(ProgramOp::compute(std::string(label), work, duration, flops, power, host));
}

void append(std::vector<ProgramOp>& out, const std::vector<ProgramOp>& ops, bool merge) {
  for (const auto& op : ops) {
    if (op.kind == ProgramOp::Kind::kCompute) {
      push_compute(out, op.label, op.work, op.duration, op.flops, op.power, op.host, merge);
    } else {
      out.push_back(op);
    }
  }
}

}  // namespace clustersim
