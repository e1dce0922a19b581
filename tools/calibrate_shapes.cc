#include "tools/calibrate_shapes.h"

#include <fmt/format.h>
#include <set>
#include <tuple>

#include "scenarios/scenario.h"
#include "workloads/transformer.h"

namespace clustersim {

void write_calibration_shapes(const std::vector<std::string>& scenarios, std::ostream& out) {
  std::set<std::tuple<int64_t, int64_t, int64_t, int>> seen;
  out << "# GEMM shapes (M N K dtype label) of:\n";
  for (const auto& path : scenarios) out << "#   " << path << "\n";
  for (const auto& path : scenarios) {
    const Scenario s = load_scenario(path);
    const Transformer t(s.model, s.training,
                        ShardSpec{s.layout.tp, s.layout.sequence_parallel, s.layout.cp});
    for (const auto* ops : {&t.layer_forward(), &t.layer_backward(), &t.head_forward(), &t.head_backward()}) {
      for (const Op& op : *ops) {
        if (op.cost != OpCost::kGemm || op.gemm.batch != 1) continue;
        const auto key = std::make_tuple(op.gemm.m, op.gemm.n, op.gemm.k, static_cast<int>(op.gemm.dtype));
        if (!seen.insert(key).second) continue;
        out << fmt::format("{} {} {} {} {}\n", op.gemm.m, op.gemm.n, op.gemm.k, name_of(op.gemm.dtype), op.name);
      }
    }
  }
}

}  // namespace clustersim
