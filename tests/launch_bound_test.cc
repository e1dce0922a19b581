// The launch-bound reference steps on one H200 (scenarios/reference/h200-*-s*-b*.yaml): PyTorch
// eager training steps of 124–354 M-parameter models at 256–512 tokens, where the CPU thread that
// launches the kernels decides the step (the host thread of parallelism/step_simulation.h).
// Measured 2026-12-01 with tools/reference/train_step.py: median eager step over 30 steps
// (tools/data/h200-2026-12-01-power/run2/host.jsonl, `step` lines, eager_reference
// step_time_ms; README "Launch-bound training steps": they vary by ±30 % from step to step).

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "cli_process.h"

namespace clustersim {
namespace launch_bound_test {

using cli_test::Result;
using cli_test::run;

// eager_ms: eager_reference.step_time_ms; graph_ms: the same step captured whole with
// torch.cuda.graph (AdamW(fused=True, capturable=True)) and replayed back to back (`graph`
// step_time_ms, after the first replay; < 0.5 % step to step).
struct Reference {
  const char* config;
  double eager_ms;
  double graph_ms;
};

constexpr Reference kReferences[] = {
    {"gpt-125m-s256-b1", 21.126, 4.833},  {"gpt-125m-s512-b2", 24.070, 7.958},
    {"gpt-350m-s256-b1", 48.798, 10.689}, {"gpt-350m-s512-b2", 46.336, 16.295},
    {"llama-220m-s512-b1", 42.038, 8.762},
};

std::string reference_path(const Reference& ref) {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/reference/h200-" + ref.config + ".yaml";
}

struct Predicted {
  double step_ms = 0;
  double host_bound_ms = 0;
};

// `run --json` of the reference with `extra` arguments.
Predicted predict(const Reference& ref, const std::string& extra) {
  const Result r = run("run " + reference_path(ref) + extra + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return {};
  const nlohmann::json j = nlohmann::json::parse(r.output);
  return {j["step_time_s"].get<double>() * 1e3, j["breakdown_s"]["host_bound"].get<double>() * 1e3};
}

// The predicted step against the measured one: |error| below `bound`, printed.
void expect_within(const Reference& ref, const char* mode, double predicted_ms, double measured_ms, double bound) {
  const double error = predicted_ms / measured_ms - 1;
  EXPECT_LT(std::abs(error), bound) << ref.config << " (" << mode << "): " << predicted_ms << " ms against "
                                    << measured_ms << " ms";
  std::cout << ref.config << " (" << mode << "): predicted " << predicted_ms << " ms, measured " << measured_ms
            << " ms (" << 100 * error << " %)\n";
}

// The GPU waits for the host for most of each step, as measured (the power run's GPU ran at
// 120–270 W of 700 during them), and the predicted step stays within the error it reaches today
// (−10 % to +3 %: host costs measured per op in isolation, with the modules' calls, views and
// splits, normalisations as library calls, the autograd engine's kernel-free nodes of views and
// the larger host cost of elementwise ops with outputs of 1 MiB or more priced by their own
// measurements; the rest of the Python around the ops is not priced, and the measured steps
// themselves move by −12 … +16 % between days: tools/data/h200-2026-12-02-step-phases/README.md;
// gpt-350m-s256-b1, the farthest at −10 %, measured 43.0 ms there against 48.8 ms here). The op
// lists launch what a profiled step launches (PyTorch 2.11, one H200, 2026-12-02) but for cuBLAS's
// own memsets and split-K reductions: 1,606 launches against 1,609 for llama-220m-s512-b1, 678
// against 679 for gpt-125m-s256-b1. A change of the host model that moves the error shows here.
TEST(LaunchBound, ReferenceStepsAreHostBoundAndWithinTheirCommittedError) {
  for (const Reference& ref : kReferences) {
    const Predicted p = predict(ref, "");
    EXPECT_GT(p.host_bound_ms, 0.5 * p.step_ms) << ref.config;
    expect_within(ref, "eager", p.step_ms, ref.eager_ms, 0.11);
  }
}

// The same steps under training.cuda_graphs: step: one graph node's host cost per kernel, so the
// GPU no longer waits for the host, and the step is the GPU's work, within the error it reaches
// today (−6 % to −12 %; llama-220m-s512-b1 the farthest: its SDPA flash kernels at 512 tokens run
// 4.5x the time the predictor, sampled at 1,024 tokens and more, gives them, 0.57 ms of the step;
// tools/data/h200-2026-12-02-step-phases/README.md, section 3).
TEST(LaunchBound, GraphReplayedStepsAreTheGpusWork) {
  for (const Reference& ref : kReferences) {
    const Predicted p = predict(ref, " --set training.cuda_graphs=step");
    EXPECT_LT(p.host_bound_ms, 0.01 * p.step_ms) << ref.config;
    expect_within(ref, "graph", p.step_ms, ref.graph_ms, 0.13);
  }
}

// A value that cannot apply is refused at its line with what would apply.
TEST(LaunchBound, CudaGraphsThatCannotApplyExitWith2AtTheirLine) {
  const std::string eager = reference_path(kReferences[0]);
  const auto dir = std::filesystem::temp_directory_path();
  const std::string layers = (dir / "clustersim-cuda-graphs-layers.yaml").string();
  {
    std::ifstream in(eager);
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    const std::string key = "  framework: pytorch-eager\n";
    yaml.insert(yaml.find(key) + key.size(), "  cuda_graphs: layers\n");
    std::ofstream(layers) << yaml;
  }
  const Result a = run("run " + layers);
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.output.find(layers + ":"), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("training.cuda_graphs: layers captures Megatron's transformer layers"), std::string::npos)
      << a.output;
  EXPECT_NE(a.output.find("use step"), std::string::npos) << a.output;
  const Result b =
      run("run " + std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/gpt3-1.3b-single-h200.yaml --set training.cuda_graphs=step");
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.output.find("got framework megatron"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find("use layers or none"), std::string::npos) << b.output;
  const Result c = run("run " + eager + " --set training.cuda_graphs=all");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.output.find("none, layers, step"), std::string::npos) << c.output;
}

}  // namespace launch_bound_test
}  // namespace clustersim
