// The clustersim binary as users run it: exit codes, error messages naming file, line and key, and
// byte-identical output for the same input.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_process.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <sys/wait.h>

namespace clustersim {
namespace cli_test {

using cli_test::Result;
using cli_test::run;

std::string scenario(const std::string& name) { return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name; }

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("clustersim_cli_test_" + name);
  std::ofstream(path) << text;
  return path.string();
}

// Runs `command` and expects it refused as bad input (exit 2) with `message` in its output.
void expect_refused(const std::string& command, const std::string& message) {
  const Result r = run(command);
  EXPECT_EQ(r.exit_code, 2) << command << ": " << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << command << ": " << r.output;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Cli, RunPrintsTheSummary) {
  const Result r = run("run " + scenario("gpt3-1.3b-single-h200.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("MFU"), std::string::npos);
  EXPECT_NE(r.output.find("FLOP convention"), std::string::npos);
  // One GPU on one node, in the singular.
  EXPECT_NE(r.output.find("1 GPU (1 node of "), std::string::npos) << r.output;
}

// fidelity auto beyond its size caps runs at flow fidelity where the flow estimate is within
// simulation.auto_flow_seconds, the same step as fidelity flow, and says why; 0 s leaves the caps
// alone to decide (analytical), as does a budget below the estimate.
TEST(Cli, AutoFidelityRunsFlowBeyondItsCapsWithinItsBudget) {
  const std::string base = "run " + scenario("search/gpt3-1.3b-2-dgx-h100.yaml") + " --set simulation.flow_max_gpus=8";
  const auto json_of = [](const std::string& command) {
    const Result r = run(command + " --json");
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.output;
    return nlohmann::json::parse(r.output);
  };
  const nlohmann::json within = json_of(base);
  EXPECT_EQ(within["sim"]["fidelity"], "flow");
  const double estimate = within["sim"]["auto_flow_estimate_s"].get<double>();
  EXPECT_GT(estimate, 0.0);
  EXPECT_LT(estimate, 10.0);
  const nlohmann::json flow = json_of(base + " --set simulation.fidelity=flow");
  EXPECT_EQ(within["step_time_s"], flow["step_time_s"]);
  EXPECT_FALSE(flow["sim"].contains("auto_flow_estimate_s"));
  EXPECT_EQ(flow["sim"]["fidelity_reason"], "set by simulation.fidelity");
  const nlohmann::json off = json_of(base + " --set simulation.auto_flow_seconds=0s");
  EXPECT_EQ(off["sim"]["fidelity"], "analytical");
  EXPECT_EQ(off["sim"]["fidelity_reason"], "auto: 16 GPUs > simulation.flow_max_gpus 8, and "
                                           "simulation.auto_flow_seconds 0 s: no flow estimate weighed");
  EXPECT_EQ(off["step_time_s"], json_of(base + " --set simulation.fidelity=analytical")["step_time_s"]);
  const nlohmann::json above = json_of(base + " --set \"simulation.auto_flow_seconds=1 ms\"");
  EXPECT_EQ(above["sim"]["fidelity"], "analytical");
  EXPECT_EQ(above["sim"]["auto_flow_estimate_s"].get<double>(), estimate);
  const Result text = run(base + " --set \"simulation.auto_flow_seconds=1 ms\"");
  EXPECT_NE(text.output.find("analytical fidelity (auto: 16 GPUs > simulation.flow_max_gpus 8, and the flow estimate, "
                             "about 1 s, above simulation.auto_flow_seconds 0.001 s)"),
            std::string::npos)
      << text.output;
}

// How a mixture-of-experts layer runs its experts is shown in the routing line and the JSON layout.
TEST(Cli, MoeExpertsAreShown) {
  const std::string moe = "run " + scenario("mixtral-8x7b-64-h100.yaml");
  Result r = run(moe + " --set training.moe_experts=sequential");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("experts one at a time (moe_experts sequential: SequentialMLP)"), std::string::npos)
      << r.output;
  r = run(moe + " --json");
  EXPECT_EQ(nlohmann::json::parse(r.output)["layout"]["moe_experts"], "grouped");
}

// --quiet leaves standard error empty (no progress, no closing "searched ..." line): with --json
// the combined output is the JSON document alone. Without it the closing line is there.
TEST(Cli, QuietSearchWritesNothingButItsResult) {
  const std::string search = "search " + std::string(CLUSTERSIM_SOURCE_DIR) +
                             "/scenarios/search/gpt3-1.3b-2-dgx-h100.yaml --json --threads 1";
  const Result quiet = run(search + " --quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_TRUE(nlohmann::json::accept(quiet.output)) << quiet.output.substr(0, 400);
  const Result loud = run(search);
  EXPECT_NE(loud.output.find("searched "), std::string::npos);
}

// --json's memory per stage: the columns add up to the total, `other` to its three parts, and under
// FSDP the gathered and cast weights are their own column.
TEST(Cli, MemoryColumnsAddUp) {
  const Result r = run("run " + scenario("fsdp-hybrid-1.8b-16-a100-gcp.yaml") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  for (const auto& st : j["memory"]["per_stage"]) {
    const int64_t other = st["logits_bytes"].get<int64_t>() + st["comm_buffers_bytes"].get<int64_t>() +
                          st["runtime_bytes"].get<int64_t>();
    EXPECT_EQ(other, st["other_bytes"].get<int64_t>());
    EXPECT_EQ(st["params_bytes"].get<int64_t>() + st["param_copies_bytes"].get<int64_t>() +
                  st["grads_bytes"].get<int64_t>() + st["optimizer_bytes"].get<int64_t>() +
                  st["activations_bytes"].get<int64_t>() + other,
              st["total_bytes"].get<int64_t>());
    EXPECT_GT(st["param_copies_bytes"].get<int64_t>(), 0);
    EXPECT_GT(st["logits_bytes"].get<int64_t>(), 0);
  }
}

// FSDP (ZeRO 3, no tp or pp) left at the default framework gets a note naming pytorch-eager; saying
// the framework, either one, drops it.
TEST(Cli, FsdpUnderTheDefaultFrameworkIsNoted) {
  const std::string fsdp = "run " + scenario("llama3-8b-dgx-h100.yaml") +
                           " --set parallelism.tp=1 --set parallelism.dp=8 --set parallelism.sequence_parallel=false "
                           "--set parallelism.zero=3";
  const Result noted = run(fsdp);
  EXPECT_EQ(noted.exit_code, 0) << noted.output;
  EXPECT_NE(noted.output.find("note: training.framework is megatron, the default"), std::string::npos)
      << noted.output;
  EXPECT_NE(noted.output.find("set training.framework: pytorch-eager"), std::string::npos) << noted.output;
  const Result json = run(fsdp + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const nlohmann::json notes = nlohmann::json::parse(json.output)["notes"];
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].get<std::string>().find("pytorch-eager"), std::string::npos);
  for (const char* framework : {"megatron", "pytorch-eager"}) {
    const Result given = run(fsdp + " --set training.framework=" + framework);
    EXPECT_EQ(given.exit_code, 0) << given.output;
    EXPECT_EQ(given.output.find("note: training.framework"), std::string::npos) << framework;
  }
  EXPECT_EQ(run("run " + scenario("llama3-8b-dgx-h100.yaml")).output.find("note: training.framework"),
            std::string::npos);
}

// Every rank simulated (64 here): the text report shows the busiest rank of each pipeline stage, not
// 64 lines (16,384 at full scale); --json keeps every rank.
TEST(Cli, EveryRankSimulatedPrintsTheBusiestRankOfEachStage) {
  const std::string args = "run " + scenario("llama3-70b-8-dgx-h100.yaml") +
                           " --set simulation.representative=false --set simulation.fidelity=analytical";
  const Result r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto table = r.output.find("per simulated rank (seconds): the busiest of each stage, of 64 simulated ranks");
  ASSERT_NE(table, std::string::npos) << r.output;
  const auto end = r.output.find("\n\n", table);
  const std::string rows = r.output.substr(table, end - table);
  const auto lines = std::count(rows.begin(), rows.end(), '\n');
  EXPECT_EQ(lines, 1 + 4) << rows;  // the column header and pp = 4 stages
  const Result json = run(args + " --json");
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(json.output)["ranks"].size(), 64u);
}

TEST(Cli, SameInputGivesByteIdenticalJsonAndTrace) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string t1 = (dir / "clustersim_trace_1.json").string();
  const std::string t2 = (dir / "clustersim_trace_2.json").string();
  const std::string args = "run " + scenario("llama3-8b-dgx-h100.yaml") + " --json --reproducible --set training.global_batch=8";
  const Result a = run(args + " --trace " + t1);
  const Result b = run(args + " --trace " + t2);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(a.output, b.output);
  const std::string trace = read(t1);
  EXPECT_GT(trace.size(), 1000U);
  EXPECT_EQ(trace, read(t2));
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(a.output.find("\"step_time_s\""), std::string::npos);
}

TEST(Cli, BadInputExitsWithCode2AndNamesTheLocation) {
  const std::string bad = write_temp("bad.yaml",
                                     "name: bad\ncluster: {node: dgx-h100}\nmodel: {preset: llama3-8b}\n"
                                     "training:\n  seq_len: 4096\n  global_batch: 8\n  micro_bach: 1\n");
  const Result r = run("run " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(":7:3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("micro_bach"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean \"micro_batch\""), std::string::npos) << r.output;
}

// A calibration profile replaces a GPU's rates: one measured on another GPU model is refused, and
// sizes that would exhaust int64 or memory are out of range (scenarios/scenario.cc, layout.h).
TEST(Cli, ForeignProfilesAndHugeValuesExitWith2) {
  const std::string a100 = scenario("gpt3-1.3b-single-h200.yaml") + " --set cluster.node=dgx-a100";
  Result r = run("run " + a100 + " --set calibration=h200-2026-11-29");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("measured on \"NVIDIA H200\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("A100-SXM4-80GB"), std::string::npos) << r.output;
  r = run("run " + scenario("gpt3-1.3b-single-h200.yaml") + " --set calibration=h200-2026-11-29");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_refused("run " + a100 + " --set model.layers=2147483648", "[1, 10000]");
  expect_refused("run " + a100 + " --set training.global_batch=4000000000", "at most 65536");
  const std::string mixed = write_temp("mixed.yaml",
                                       "cluster:\n  node_groups:\n    - {node: dgx-h100}\n    - {node: dgx-a100}\n"
                                       "model: {preset: llama3-8b}\ntraining: {seq_len: 4096, global_batch: 16}\n"
                                       "parallelism: {tp: 8}\n");
  expect_refused("run " + mixed, "mixed.yaml:4:8: cluster.node_groups[1].node");
  expect_refused("run " + a100 + " --set cluster.node=/tmp", "is a directory");
  // More GPUs per node than the node has: blamed on gpus_per_node, with the valid range.
  const std::string crowded = write_temp("crowded.yaml",
                                         "cluster:\n  node: dgx-h100\n  nodes: 1\n  gpus_per_node: 9\n"
                                         "model: {preset: llama3-8b}\ntraining: {seq_len: 4096, global_batch: 16}\n"
                                         "parallelism: {tp: 8}\n");
  r = run("run " + crowded);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("crowded.yaml:4:3: cluster.gpus_per_node"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("valid: 1 to 8"), std::string::npos) << r.output;
  // The same in a node group: the group's key, with its list and index, named once.
  const std::string crowded_group =
      write_temp("crowded_group.yaml",
                 "cluster:\n  node_groups:\n    - {node: dgx-h100}\n    - {node: dgx-h100, gpus_per_node: 9}\n"
                 "model: {preset: llama3-8b}\ntraining: {seq_len: 4096, global_batch: 16}\nparallelism: {tp: 8}\n");
  expect_refused("run " + crowded_group,
                 "crowded_group.yaml:4:24: cluster.node_groups[1].gpus_per_node = 9 but node \"dgx-h100\" has 8 GPUs "
                 "(valid: 1 to 8, 0 = all)");
  // pytorch-eager layouts it does not cover are blamed on training.framework / params_dtype.
  const std::string eager = write_temp("eager.yaml",
                                       "cluster: {node: dgx-h100, nodes: 1}\n"
                                       "model: {preset: llama3-8b}\n"
                                       "training: {seq_len: 4096, global_batch: 16, micro_batch: 2, params_dtype: bf16,\n"
                                       "           master_weights: true, framework: pytorch-eager, hidden_dropout: 0,\n"
                                       "           attention_dropout: 0}\n"
                                       "parallelism: {dp: 8, zero: 3}\n");
  r = run("run " + eager);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_refused("run " + eager + " --set parallelism.zero=0", "eager.yaml:3:61: training.params_dtype");
  // pytorch-eager's defaults are train_step.py's (fp32 parameters, no master copy, no dropout):
  // pipeline stages or tensor parallelism run without setting them.
  const std::string eager_pp = write_temp("eager_pp.yaml",
                                          "cluster: {node: hgx-h200, nodes: 1, gpus_per_node: 2}\n"
                                          "model: {preset: gpt3-1.3b}\n"
                                          "training: {seq_len: 2048, global_batch: 8, micro_batch: 2, framework: "
                                          "pytorch-eager}\n"
                                          "parallelism: {pp: 2, schedule: gpipe}\n");
  r = run("run " + eager_pp + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // ... and with the tokenizer's vocabulary unpadded (50,257 for GPT-3): Megatron's padding to 50,304
  // makes the step different.
  const Result padded = run("run " + eager_pp + " --json --set model.make_vocab_size_divisible_by=128");
  EXPECT_EQ(padded.exit_code, 0) << padded.output;
  EXPECT_NE(r.output, padded.output);
  r = run("run " + eager_pp + " --set parallelism.pp=1 --set parallelism.tp=2 --set training.global_batch=2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_refused("run " + eager_pp + " --set parallelism.pp=1 --set parallelism.tp=2 --set training.global_batch=2 "
                 "--set parallelism.sequence_parallel=true",
                 "sequence_parallel on");
  expect_refused("run " + eager + " --set parallelism.tp=2 --set parallelism.dp=4", "eager.yaml:4:34: training.framework");
  // A bucket size that would make millions of buckets is refused at once, not simulated for hours.
  // At load, with the key's place and the least valid size for this model and layout.
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set parallelism.grad_bucket_elements=1",
                 "error: --set parallelism.grad_bucket_elements: 1 makes");
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set parallelism.grad_bucket_elements=1",
                 "(valid: at least ");
  // ZeRO-3 gathers once per bucket and micro-batch: refused before the programs are built (this ran
  // without end before).
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") +
                     " --set parallelism.zero=3 --set parallelism.zero3_bucket_elements=1",
                 "each gathered in each of the 32 micro-batches; at most 8192");
}

// Hardware files that describe no real GPU or node are refused with their file:line.
TEST(Cli, ImpossibleHardwareIsRefusedWithItsLine) {
  // A GPU file with `hbm` as its memory lines, on a two-GPU PCIe node.
  auto gpu_node = [](const std::string& name, const std::string& hbm) {
    const std::string gpu = write_temp(name + "_gpu.yaml", "name: " + name + "\ndense_peak: {bf16: \"100 TFLOP/s\"}\n" +
                                                               hbm + "nvlink_links: 0\nsm_count: 10\nsupports_nvls: false\n");
    return write_temp(name + "_node.yaml",
                      "name: " + name + "-node\ngpu: " + gpu + "\ngpus: 2\nintra: pcie\nnic: cx7-400g\nnics: 1\n");
  };
  // Runs a small model on one node of `node` and expects exit 2 at `where`.
  auto refused_at = [](const std::string& node, const std::string& where) {
    expect_refused("run " + write_temp("hw.yaml", "cluster: {node: " + node +
                                                      ", nodes: 1}\nmodel: {preset: gpt3-125m}\n"
                                                      "training: {seq_len: 1024, global_batch: 4}\n"),
                   where);
  };
  refused_at(gpu_node("tiny", "hbm_capacity: \"0 GB\"\nhbm_bandwidth: \"1 TB/s\"\n"), "tiny_gpu.yaml:3:1: hbm_capacity");
  refused_at(gpu_node("slow", "hbm_capacity: \"80 GB\"\nhbm_bandwidth: \"1 B/s\"\n"), "slow_gpu.yaml:4:1: hbm_bandwidth");
  refused_at(write_temp("mesh_node.yaml", "name: mesh-node\ngpu: h100-sxm5-80gb\ngpus: 4\n"
                                          "intra: nvlink-mesh\nnic: cx7-400g\nnics: 1\n"),
             "mesh_node.yaml:4:1: intra");
  const std::string nic = write_temp("slow_nic.yaml", "name: slow\nbandwidth: \"1 b/s\"\nlatency: \"600 ns\"\n");
  refused_at(write_temp("nic_node.yaml", "name: nic-node\ngpu: h100-sxm5-80gb\ngpus: 2\nintra: pcie\nnic: " + nic +
                                         "\nnics: 1\n"),
             "slow_nic.yaml:2:1: bandwidth");
  // Power: an idle power at or above the limit, a negative limit, a bare number; a PUE below 1.
  const std::string hbm = "hbm_capacity: \"80 GB\"\nhbm_bandwidth: \"1 TB/s\"\n";
  refused_at(gpu_node("hot", hbm + "power_limit: \"700 W\"\nidle_power: \"800 W\"\n"), "hot_gpu.yaml:6:1: idle_power");
  refused_at(gpu_node("neg", hbm + "power_limit: \"-700 W\"\n"), "neg_gpu.yaml:5:1: power_limit");
  refused_at(gpu_node("bare", hbm + "power_limit: 700\n"), "bare_gpu.yaml:5:1: power_limit");
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set cluster.pue=0.5", "cluster.pue");
}

// simulation.power_model prints the GPUs' power and energy, and --json has them; off, neither.
TEST(Cli, ThePowerModelReportsEnergy) {
  const Result on = run("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set simulation.power_model=true");
  EXPECT_EQ(on.exit_code, 0) << on.output;
  EXPECT_NE(on.output.find("  GPU power           "), std::string::npos) << on.output;
  EXPECT_NE(on.output.find("  energy per step     "), std::string::npos) << on.output;
  const Result json = run("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set simulation.power_model=true --json");
  for (const char* key : {"\"energy\"", "\"gpu_avg_power_w\"", "\"joules_per_step\"", "\"cluster_joules_per_step\"",
                          "\"joules_per_token\"", "\"pue\""}) {
    EXPECT_NE(json.output.find(key), std::string::npos) << key;
  }
  const Result off = run("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set simulation.power_model=false --json");
  EXPECT_EQ(off.output.find("\"energy\""), std::string::npos);
}

// simulation.power_model: auto runs the governor where the calibration profile measured the GPU's
// power (the H200 reference steps), and says why not elsewhere (an H100 without a profile).
TEST(Cli, ThePowerModelIsOnWhereTheProfileMeasuredThePower) {
  const std::string reference = std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/reference/h200-gpt-350m.yaml";
  const Result measured = run("run " + reference);
  EXPECT_EQ(measured.exit_code, 0) << measured.output;
  EXPECT_NE(measured.output.find("  GPU power           "), std::string::npos) << measured.output;
  EXPECT_EQ(measured.output.find("not modelled"), std::string::npos) << measured.output;
  const Result off = run("run " + reference + " --set simulation.power_model=false");
  EXPECT_NE(off.output.find("  GPU power           not modelled (simulation.power_model: false)"), std::string::npos)
      << off.output;
  const Result unmeasured = run("run " + scenario("llama3-8b-dgx-h100.yaml"));
  EXPECT_NE(unmeasured.output.find("  GPU power           not modelled (simulation.power_model: auto, and no "
                                   "calibration profile with power measurements of this GPU"),
            std::string::npos)
      << unmeasured.output;
  expect_refused("run " + reference + " --set simulation.power_model=sometimes", "simulation.power_model");
}

TEST(Cli, MixtureOfExpertsRunsSayHowFarPublishedRunsAre) {
  const Result r = run("run " + scenario("mixtral-8x7b-64-h100.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("are 1.0-3.6x slower than clustersim predicts"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  routing    balanced · top 2 of 8 experts"), std::string::npos) << r.output;
  const Result skewed = run("run " + scenario("mixtral-8x7b-64-h100.yaml") +
                            " --set training.moe_routing.skew=1.5 --set training.moe_routing.capacity_factor=1.25");
  EXPECT_NE(skewed.output.find("skew 1.5 (busiest expert / mean) · capacity factor 1.25"), std::string::npos)
      << skewed.output;
  EXPECT_EQ(run("run " + scenario("llama3-8b-dgx-h100.yaml")).output.find("mixture of experts"), std::string::npos);
}

TEST(Cli, TheTraceDoesNotOverwriteTheScenario) {
  const std::string path = write_temp("self_trace.yaml", read(scenario("llama3-8b-dgx-h100.yaml")));
  expect_refused("run " + path + " --trace " + path, "that is the scenario file");
  EXPECT_EQ(read(path), read(scenario("llama3-8b-dgx-h100.yaml")));
}

TEST(Cli, NumbersBeyondADoubleAreOutOfRangeNotNonNumbers) {
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set training.hidden_dropout=1e400",
                 "training.hidden_dropout: 1e400 is out of range of a double");
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set 'cluster.fabric.switch_latency=\"1e400 ns\"'",
                 "the number is out of range of a double");
}

TEST(Cli, AMissingModelIsNamedAsSuch) {
  expect_refused("run " + write_temp("nomodel.yaml", "cluster: {node: dgx-h100, nodes: 1}\n"
                                                     "training: {seq_len: 1024, global_batch: 8}\n"),
                 "nomodel.yaml: model: missing section; give model.preset");
  expect_refused("run " + write_temp("partmodel.yaml", "cluster: {node: dgx-h100, nodes: 1}\nmodel: {hidden: 1024}\n"
                                                       "training: {seq_len: 1024, global_batch: 8}\n"),
                 "partmodel.yaml:2:1: model: no preset and no layers");
}

TEST(Cli, CrossKeyErrorsNameTheKeyTheFileGives) {
  // The preset gives kv_heads 8; the file's heads line is what to change.
  expect_refused("run " + write_temp("heads.yaml", "cluster: {node: dgx-h100, nodes: 1}\n"
                                                   "model:\n  preset: llama3-8b\n  heads: 30\n"
                                                   "training: {seq_len: 4096, global_batch: 8}\n"),
                 "heads.yaml:4:3: model.heads: model.kv_heads = 8 must divide model.heads = 30");
  // deepep with skewed routing is refused at load time, at the dispatcher's line.
  expect_refused("run " + write_temp("deepep_skew.yaml",
                                     "cluster: {node: dgx-h100, nodes: 1}\nmodel: {preset: mixtral-8x7b}\n"
                                     "training: {seq_len: 4096, global_batch: 8, moe_routing: {skew: 1.5}}\n"
                                     "parallelism:\n  ep: 8\n  moe_dispatcher: deepep\n"),
                 "deepep_skew.yaml:6:3: parallelism.moe_dispatcher deepep is modelled for balanced routing only");
  expect_refused("run " + scenario("gpt3-1.3b-single-h200.yaml") + " --set training.fused_norm=false",
                 "--set training.fused_norm: false prices an RMSNorm");
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") +
                     " --set parallelism.pp=2 --set parallelism.dp=2 --set parallelism.schedule=interleaved-1f1b"
                     " --set parallelism.layers_per_virtual_stage=4 --set parallelism.vpp=2",
                 "cuts a stage of 16 layers into 4 chunks, but parallelism.vpp = 2; give one of the two (vpp 4 agrees)");
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") +
                     " --set training.attention=naive --set training.flash_kernel=flash-v1",
                 "training.flash_kernel = flash-v1 needs training.attention: flash (got naive)");
}

TEST(Cli, InvalidValuesAndLayoutsExitWith2) {
  const std::string base = "run " + scenario("llama3-8b-dgx-h100.yaml");
  for (const char* set : {"parallelism.tp=3", "cluster.node=dgx-h1000", "training.seq_len=-4",
                          "cluster.fabric.switch_latency=300", "training.global_batch=7", "model.preset=nope"}) {
    const Result r = run(base + " --set " + set);
    EXPECT_EQ(r.exit_code, 2) << set << ": " << r.output;
    EXPECT_NE(r.output.find("error:"), std::string::npos) << set << ": " << r.output;
  }
  EXPECT_EQ(run("run /nonexistent.yaml").exit_code, 2);
  EXPECT_EQ(run("frobnicate").exit_code, 2);
}

TEST(Cli, UnknownCommandNamesTheValidOnes) {
  const Result r = run("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  const std::string valid = "run, search, report, collective, calibrate, validate, help-config";
  EXPECT_NE(r.output.find("unknown command frobnicate; valid: " + valid), std::string::npos) << r.output;
  // Every name listed is a command.
  std::stringstream names(valid);
  for (std::string name; std::getline(names, name, ',');) {
    name.erase(0, name.find_first_not_of(' '));
    EXPECT_EQ(run(name + " --help").exit_code, 0) << name;
  }
}

TEST(Cli, RunFlagsThatCannotWorkExitWith2) {
  const std::string base = "run " + scenario("gpt3-1.3b-single-h200.yaml");
  Result r = run(base + " --rank 1");  // without --layout-from
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--layout-from"), std::string::npos) << r.output;
  expect_refused(base + " --trace ''", "--trace");
}

// A scenario file with a second YAML document: yaml-cpp would read the first one only.
// Output that cannot be written (a full device) is an error, not a success with an empty file.
TEST(Cli, FailedWritesExitWith2) {
  if (!std::ifstream("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  const std::string s = scenario("gpt3-1.3b-single-h200.yaml");
  expect_refused("run " + s + " --trace /dev/full", "--trace /dev/full: writing failed");
  EXPECT_EQ(run("run " + s + " > /dev/full").exit_code, 2);  // its message goes to /dev/full as well
  expect_refused("validate --calibration h200-2026-11-29 --out /dev/full", "--out /dev/full: writing failed");
}

TEST(Cli, SecondYamlDocumentExitsWith2AndNamesItsLine) {
  const std::string first = read(scenario("gpt3-1.3b-single-h200.yaml"));
  const std::string path = write_temp("two_documents.yaml", first + "---\nname: second\n");
  const auto marker_line = 1 + std::count(first.begin(), first.end(), '\n');
  const Result r = run("run " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ":" + std::to_string(marker_line) + ": a second YAML document"), std::string::npos)
      << r.output;
}

// A trace of every rank of a large cluster is refused once it passes kMaxTraceSpans (it exhausted the
// memory before).
TEST(Cli, TracesBeyondTheSpanLimitExitWith2) {
  expect_refused("run " + scenario("deepseek-v3-2048-h800.yaml") +
                     " --set simulation.representative=false --trace /dev/null",
                 "--trace: the step has more than 4000000 spans to record");
}

TEST(Cli, CollectiveStepsByTheIncrementWhenOnlyItIsGiven) {
  const Result r = run("collective -b 8 -e 64 -i 8");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\n          56 "), std::string::npos) << r.output;  // 8, 16, ..., 64
  expect_refused("collective -b 8 -e 64 -f 2 -i 8", "-f 2 and -i 8: give one");
}

TEST(Cli, CollectiveSweepsOfMoreThanTenThousandSizesExitWith2) {
  expect_refused("collective -f 0 -i 8 -e 1G", "makes more than 10000 sizes");
  EXPECT_EQ(run("collective -f 0 -i 1K -b 1K -e 8M --json").exit_code, 0);  // 8,192 sizes
}

TEST(Cli, ValidateRefusesFlagsOfAnotherKind) {
  const std::string collectives = "validate --collectives " + std::string(CLUSTERSIM_SOURCE_DIR) +
                                  "/docs/validation/published/collectives.csv";
  expect_refused(collectives + " --gpu h100-sxm5-80gb", "--gpu belongs to --calibration PROFILE");
  expect_refused(collectives + " --training-out /tmp/clustersim_cli_test_t.md", "--training-out belongs to --runs");
}

TEST(Cli, CollectiveMinimumSizeZeroExitsWith2) {
  const Result r = run("collective -b 0 -e 1M");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("-b"), std::string::npos) << r.output;
}

// --nodes has the range of a scenario's cluster.nodes, and fails before building anything.
TEST(Cli, CollectiveNodesBeyondTheScenarioLimitExitWith2) {
  const Result r = run("collective --nodes 100000");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--nodes 100000 is out of range; valid: 1..16384"), std::string::npos) << r.output;
}

// Clusters above 2^18 GPUs (kMaxSimulatedGpus) are refused before their topology is built: 16,384
// NVL72 racks ran for over 15 minutes and used 18 GB. The message names the file and key.
TEST(Cli, ClustersAboveTheGpuLimitExitWith2BeforeBuilding) {
  expect_refused("collective --node gb200-nvl72 --nodes 16384 -b 1G -e 1G",
                 "--nodes 16384 of 72 GPUs make 1179648 GPUs, above the 262144 clustersim simulates");
  expect_refused("run " + scenario("gpt-oss-120b-64-gb200.yaml") +
                     " --set cluster.nodes=16384 --set parallelism.dp=1048576 --set training.global_batch=1048576",
                 "cluster.gpus_per_node: 1048576 GPUs (16384 nodes of 64 GPUs) exceed the 262144 GPUs clustersim "
                 "simulates");
  expect_refused("collective --node gb200-nvl72 --nodes 4000 --gpus-per-node 66 -b 1G -e 1G",
                 "--nodes 4000 of 66 GPUs make 264000 GPUs");
}

// --fabric takes cluster.fabric.type's names; the fabric flags are in the help.
TEST(Cli, CollectiveFabricTakesTheScenarioNames) {
  Result r = run("collective --fabric single-switch --nodes 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("single-switch fabric"), std::string::npos) << r.output;
  expect_refused("collective --fabric torus", "valid: rail-optimized, fat-tree, single-switch, three-tier");
  expect_refused("collective --oversubscription 0.5", "--oversubscription");
  r = run("collective --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text : {"rail-optimized | fat-tree | single-switch", "--oversubscription", "--leaf-ports"}) {
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  }
}

// --fabric three-tier: pods of --pod-nodes joined by a core tier. With a non-blocking core it is the
// two-tier fat tree of its pods' leaves (the same time to the printed digit); a 4:1 core slows an
// all-reduce whose rings cross the pods.
TEST(Cli, CollectiveRunsOnAThreeTierFabric) {
  auto time_us = [](const std::string& flags) {
    const Result r = run("collective --nodes 8 -b 256M -e 256M " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::stringstream rows(r.output);
    std::string line, last;
    while (std::getline(rows, line)) {
      if (!line.empty() && line[0] != '#') last = line;
    }
    std::stringstream fields(last);
    std::string field;
    for (int i = 0; i < 6 && fields >> field;) ++i;  // size count type redop root time
    return std::stod(field);
  };
  const double fat_tree = time_us("--fabric fat-tree");
  EXPECT_DOUBLE_EQ(time_us("--fabric three-tier --pod-nodes 4"), fat_tree);
  EXPECT_GT(time_us("--fabric three-tier --pod-nodes 4 --core-oversubscription 4"), 2 * fat_tree);
  expect_refused("collective --fabric three-tier --nodes 8", "--fabric three-tier needs --pod-nodes");
  expect_refused("collective --fabric three-tier --nodes 8 --pod-nodes 9", "--pod-nodes 9 is not valid");
  expect_refused("collective --fabric fat-tree --nodes 8 --pod-nodes 4", "--pod-nodes applies to --fabric three-tier");
  expect_refused("collective --fabric three-tier --nodes 8 --pod-nodes 4 --core-oversubscription 0.5",
                 "--core-oversubscription 0.5 is out of range");
}

// The data types the help lists are exactly those -d accepts: each one runs, and the error for a
// bad one lists the same names.
TEST(Cli, CollectiveHelpListsTheAcceptedDataTypes) {
  const Result help = run("collective --help");
  const std::string marker = "-d,--datatype";
  const size_t line_start = help.output.find(marker);
  ASSERT_NE(line_start, std::string::npos) << help.output;
  const std::string line = help.output.substr(line_start, help.output.find('\n', line_start) - line_start);
  const Result bad = run("collective -d int8");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  const size_t valid = bad.output.find("valid: ");
  ASSERT_NE(valid, std::string::npos) << bad.output;
  std::stringstream names(bad.output.substr(valid + 7, bad.output.find(')', valid) - valid - 7));
  int listed = 0;
  for (std::string name; std::getline(names, name, ',');) {
    name.erase(0, name.find_first_not_of(' '));
    EXPECT_NE(line.find(name), std::string::npos) << name << " missing from: " << line;
    EXPECT_EQ(run("collective -d " + name).exit_code, 0) << name;
    ++listed;
  }
  EXPECT_EQ(listed, 1 + std::count(line.begin(), line.end(), '|')) << line;
}

TEST(Cli, ValidateTakesOneKindAndRejectsEmptyFiles) {
  const std::string runs = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/published/training_runs.csv";
  const std::string collectives = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/published/collectives.csv";
  Result r = run("validate --runs " + runs + " --collectives " + collectives);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("excludes"), std::string::npos) << r.output;
  r = run("validate --collectives " + collectives + " --calibration h200-2026-11-29");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // --json is for --runs only; the other kinds write Markdown.
  expect_refused("validate --collectives " + collectives + " --json", "--json is available with --runs only");
  expect_refused("validate --calibration h200-2026-11-29 --json", "--json is available with --runs only");
  // The header of the shipped file, no rows.
  const std::string header = read(runs).substr(0, read(runs).find('\n') + 1);
  const std::string empty = write_temp("empty_runs.csv", header);
  expect_refused("validate --runs " + empty, "no data rows");
  // The exit codes, 3 included, are in the help.
  r = run("validate --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("Exit codes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3 --calibration"), std::string::npos) << r.output;
}

// help-config names the shipped presets: every file of scenarios/models/ and scenarios/hardware/.
TEST(Cli, HelpConfigListsTheShippedPresets) {
  const std::filesystem::path root = std::filesystem::path(CLUSTERSIM_SOURCE_DIR) / "scenarios";
  const Result all = run("help-config");
  ASSERT_EQ(all.exit_code, 0);
  for (const char* folder : {"models", "hardware/nodes", "hardware/gpus", "hardware/nics"}) {
    int presets = 0;
    for (const auto& entry : std::filesystem::directory_iterator(root / folder)) {
      if (entry.path().extension() != ".yaml") continue;
      ++presets;
      std::string name = " ";  // a listed name follows a space
      name += entry.path().stem().string();
      EXPECT_NE(all.output.find(name), std::string::npos) << entry.path();
    }
    EXPECT_GT(presets, 0) << folder;
  }
  const Result nodes = run("help-config node");
  ASSERT_EQ(nodes.exit_code, 0);
  EXPECT_NE(nodes.output.find("Node presets"), std::string::npos) << nodes.output;
  EXPECT_EQ(nodes.output.find("Model presets"), std::string::npos) << nodes.output;
}

// The copy of a shipped scenario with `from` replaced by `to` (once), written to a temporary file.
std::string edited_scenario(const std::string& name, const std::string& from, const std::string& to,
                            const std::string& file) {
  std::string text = read(scenario(name));
  const size_t at = text.find(from);
  if (at == std::string::npos) return "";
  text.replace(at, from.size(), to);
  return write_temp(file, text);
}

// Line (1-based) of the first occurrence of `text` in the file at `path`.
int line_of(const std::string& path, const std::string& text) {
  const std::string content = read(path);
  const size_t at = content.find(text);
  return at == std::string::npos ? 0 : 1 + static_cast<int>(std::count(content.begin(), content.begin() + at, '\n'));
}

// A quoted scalar is a string in YAML: "1" is not the number 1.
TEST(Cli, QuotedNumbersInAScenarioExitWith2) {
  const std::string path = edited_scenario("gpt3-1.3b-single-h200.yaml", "nodes: 1", "nodes: \"1\"", "quoted.yaml");
  ASSERT_FALSE(path.empty());
  Result r = run("run " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string where = path + ":" + std::to_string(line_of(path, "nodes:")) + ":3: cluster.nodes: ";
  EXPECT_NE(r.output.find(where + "expected integer in [1, 16384], got the quoted string \"1\""), std::string::npos)
      << r.output;
  expect_refused("run " + scenario("gpt3-1.3b-single-h200.yaml") + " --set 'training.seq_len=\"2048\"'", "--set training.seq_len: expected integer");
}

// With flash attention selective recomputation recomputes nothing: a search lists it once, as
// none, and run still takes it.
TEST(Cli, SearchWithFlashAttentionListsSelectiveRecomputeOnce) {
  const std::string search = "search " + scenario("search/gpt3-1.3b-2-dgx-h100.yaml") + " --json --no-progress";
  const Result none = run(search + " --set search.recompute=[none]");
  const Result both = run(search + " --set search.recompute=[none,selective]");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  ASSERT_EQ(both.exit_code, 0) << both.output;
  const auto candidates = [](const std::string& json) {
    const size_t at = json.find("\"candidates\":");
    return at == std::string::npos ? std::string() : json.substr(at, json.find(',', at) - at);
  };
  EXPECT_FALSE(candidates(none.output).empty()) << none.output;
  EXPECT_EQ(candidates(both.output), candidates(none.output));
  EXPECT_EQ(both.output.find("\"selective\""), std::string::npos) << both.output;
  const Result naive = run(search + " --set search.recompute=[none,selective] --set training.attention=naive");
  ASSERT_EQ(naive.exit_code, 0) << naive.output;
  EXPECT_NE(candidates(naive.output), candidates(none.output));
  const Result selective = run("run " + scenario("gpt3-1.3b-single-h200.yaml") + " --set training.recompute=selective");
  EXPECT_EQ(selective.exit_code, 0) << selective.output;
}

// A NUL byte is binary data: the CSV and YAML readers name the file and line.
TEST(Cli, BinaryDataInInputFilesExitsWith2) {
  const std::string published = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/published/";
  for (const char* kind : {"collectives", "runs"}) {
    const std::string csv = read(published + (std::string(kind) == "runs" ? "training_runs.csv" : "collectives.csv"));
    const std::string header = csv.substr(0, csv.find('\n') + 1);
    const std::string path = write_temp(std::string("nul_") + kind + ".csv", header + "a" + '\0' + "b\n");
    const Result r = run(std::string("validate --") + kind + " " + path);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(path + ":2: binary data (a NUL byte) at line 2; expected a text CSV file"),
              std::string::npos)
        << r.output;
  }
  const std::string raw = write_temp("nul_raw.csv", std::string("# format: 1\n# kind: gemm\n") + '\0' + "\n");
  Result r = run("calibrate fit " + raw + " --out " + write_temp("nul_profile.json", ""));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(raw + ":3: binary data (a NUL byte) at line 3"), std::string::npos) << r.output;
  const std::string yaml = write_temp("nul.yaml", read(scenario("gpt3-1.3b-single-h200.yaml")) + '\0');
  r = run("run " + yaml);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(yaml + ":"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("binary data (a NUL byte)"), std::string::npos) << r.output;
}

// --nodes and --ranks of an nccl-tests log have the ranges of a scenario's cluster (as collective
// --nodes), for calibrate fit and validate --calibration alike.
TEST(Cli, NcclTestsLogNodeAndRankCountsAreBounded) {
  const std::string log =
      std::string(CLUSTERSIM_SOURCE_DIR) + "/tools/data/published/nccl_tests_a3mega_h100x16_all_reduce.log";
  const std::string out = write_temp("bounded_profile.json", "");
  const std::vector<std::string> commands = {"calibrate fit --out " + out + " --nccl-tests-log " + log,
                                             "validate --calibration h200-2026-11-29 --nccl-tests-log " + log};
  for (const std::string& command : commands) {
    Result r = run(command + " --ranks 16 --nodes 100000");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--nodes 100000 (for --nccl-tests-log " + log + ") is out of range; valid: 1..16384"),
              std::string::npos)
        << r.output;
    r = run(command + " --ranks 16 --nodes 17");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--ranks 16 (for --nccl-tests-log " + log + ") is out of range for --nodes 17"),
              std::string::npos)
        << r.output;
  }
}

// A CSV that is not a raw-sample file is named as such (not "format 'missing'").
TEST(Cli, CalibrateFitNamesAFileThatIsNotARawSampleFile) {
  const std::string csv = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/published/gemm.csv";
  const Result r = run("calibrate fit " + csv + " --out " + write_temp("not_raw_profile.json", ""));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(csv + ": not a clustersim-calibrate raw-sample file: no `# format: 1` line"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("missing"), std::string::npos) << r.output;
}

// Sizes beyond the int range were cut to int (tp 4294967297 ran as tp 1); huge expert counts ran
// out of memory. Each is out of the key's range now.
TEST(Cli, HugeSizesAreOutOfRangeNotTruncated) {
  const std::string base = "run " + scenario("gpt3-1.3b-single-h200.yaml");
  for (const char* set : {"parallelism.tp=4294967297", "parallelism.pp=4294967297", "parallelism.dp=4294967297",
                          "parallelism.layers_per_virtual_stage=4294967297", "parallelism.stage_layers=[4294967320]",
                          "simulation.flow_max_gpus=4294967295", "model.moe.num_experts=4294967304",
                          "model.head_dim=9223372036854775807", "training.global_batch=9223372036854775807"}) {
    const Result r = run(base + " --set '" + set + "'");
    EXPECT_EQ(r.exit_code, 2) << set << ": " << r.output;
    EXPECT_NE(r.output.find("is out of range: expected"), std::string::npos) << set << ": " << r.output;
  }
  const std::string search = "search " + scenario("search/gpt3-1.3b-2-dgx-h100.yaml") + " --no-progress";
  for (const char* set : {"search.tp=[99999999999]", "search.tp=[3000000000]", "search.top=4294967297"}) {
    const Result r = run(search + " --set '" + set + "'");
    EXPECT_EQ(r.exit_code, 2) << set << ": " << r.output;
    EXPECT_NE(r.output.find("is out of range: expected"), std::string::npos) << set << ": " << r.output;
  }
  const Result r = run("run " + scenario("mixtral-8x7b-64-h100.yaml") + " --set model.moe.num_experts=4294967304");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("model.moe.num_experts"), std::string::npos) << r.output;
}

// Values each in range whose step runs beyond int64 picoseconds (years) say so, not only "time +
// duration overflows int64".
TEST(Cli, SizesBeyondInt64SaySo) {
  const Result r = run("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set training.seq_len=16777216");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("overflows int64; training.seq_len 16777216"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a size or time this input leads to is beyond what clustersim represents"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("llama3-8b-dgx-h100.yaml: one step of this scenario"), std::string::npos) << r.output;
}

// A value listed twice in a search list searched (and ranked) every layout with it twice.
TEST(Cli, SearchListsWithARepeatedValueExitWith2) {
  const std::string search = "search " + scenario("search/gpt3-1.3b-2-dgx-h100.yaml") + " --no-progress";
  Result r = run(search + " --set 'search.tp=[2,2]'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--set search.tp: 2 is listed twice; list each value once"), std::string::npos)
      << r.output;
  expect_refused(search + " --set 'search.recompute=[none,full,none]'", "search.recompute: none is listed twice");
}

// Starting 100,000 threads failed as an internal error; --threads has a range.
TEST(Cli, SearchThreadsOutOfRangeExitWith2) {
  const std::string search = "search " + scenario("search/gpt3-1.3b-2-dgx-h100.yaml") + " --no-progress";
  for (const char* threads : {"100000", "-3"}) {
    const Result r = run(search + " --threads " + threads);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(std::string("--threads ") + threads + ": valid: 1..1024 worker threads (0 = all cores)"),
              std::string::npos)
        << r.output;
  }
}

// A --set that replaces a section is named when the section then lacks a required key.
TEST(Cli, MissingKeyAfterASetNamesTheSet) {
  const Result r = run("run " + scenario("gpt3-1.3b-single-h200.yaml") + " --set 'training={}'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("error: --set training: missing key \"training.seq_len\""), std::string::npos) << r.output;
}

// calibration: names a profile by name or path; an unknown one or a directory is located.
TEST(Cli, UnknownCalibrationProfileNamesTheScenarioLine) {
  const std::string name = "gpt3-1.3b-single-h200.yaml";
  const std::string path = write_temp("calibration.yaml", read(scenario(name)) + "calibration: nope\n");
  const int line = line_of(path, "calibration:");
  Result r = run("run " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string where = path + ":" + std::to_string(line) + ":1: calibration: ";
  EXPECT_NE(r.output.find(where + "calibration profile name \"nope\" not found"), std::string::npos) << r.output;
  r = run("run " + scenario(name) + " --set calibration=/tmp");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--set calibration: calibration profile path \"/tmp\" is a directory"),
            std::string::npos)
      << r.output;
}

TEST(Cli, HelpConfigListsEveryKey) {
  const Result r = run("help-config");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* key : {"training.seq_len", "parallelism.tp", "cluster.fabric.type", "simulation.fidelity"}) {
    EXPECT_NE(r.output.find(key), std::string::npos) << key;
  }
}

}  // namespace cli_test
}  // namespace clustersim
