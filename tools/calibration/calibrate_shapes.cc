#include "tools/calibration/calibrate_shapes.h"

#include <fmt/format.h>
#include <set>
#include <tuple>

#include "scenarios/scenario.h"
#include "workloads/transformer.h"

namespace clustersim {

void write_calibration_shapes(const std::vector<std::string>& scenarios, std::ostream& out) {
  std::set<std::tuple<int64_t, int64_t, int64_t, int>> seen;
  out << "# GEMM shapes (M N K dtype label, cuBLAS column-major: M = output features, N = tokens) of:\n";
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
        // The calibrator times cuBLAS "TN" (M, N, K): A stored K x M, B stored K x N, D stored M x N,
        // column-major. A framework computing the row-major y[T, out] = x[T, in] W[out, in]^T calls
        // cuBLAS with M = out, N = T, K = in (PyTorch aten/src/ATen/native/cuda/Blas.cpp swaps the
        // operands for column-major cuBLAS), so the op's n is written as M and its m as N. The
        // gradient GEMMs are NN and NT calls of the same M, N, K; TN stands in for them.
        out << fmt::format("{} {} {} {} {}\n", op.gemm.n, op.gemm.m, op.gemm.k, name_of(op.gemm.dtype), op.name);
      }
    }
  }
}

}  // namespace clustersim
