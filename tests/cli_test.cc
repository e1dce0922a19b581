// The clustersim binary as users run it: exit codes, error messages naming file, line and key, and
// byte-identical output for the same input.

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace {

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Result run(const std::string& args) {
  const std::string command = std::string(CLUSTERSIM_BINARY) + " " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) r.output += buffer.data();
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string scenario(const std::string& name) { return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name; }

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("clustersim_cli_test_" + name);
  std::ofstream(path) << text;
  return path.string();
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
  r = run("run " + a100 + " --set model.layers=2147483648");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("[1, 10000]"), std::string::npos) << r.output;
  r = run("run " + a100 + " --set training.global_batch=4000000000");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("at most 65536"), std::string::npos) << r.output;
  r = run("run " + a100 + " --set cluster.node=/tmp");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is a directory"), std::string::npos) << r.output;
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

TEST(Cli, HelpConfigListsEveryKey) {
  const Result r = run("help-config");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* key : {"training.seq_len", "parallelism.tp", "cluster.fabric.type", "simulation.fidelity"}) {
    EXPECT_NE(r.output.find(key), std::string::npos) << key;
  }
}

}  // namespace
