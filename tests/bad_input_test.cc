// Reproducers of what fuzzing the loaders and a sweep of hand-written bad inputs found: each is
// refused as bad input (exit code 2) with a message that names the file, line and key or the flag.
// How long each takes and how much memory it uses is measured by scripts/bad-input-bench (timed
// tests would be flaky on a loaded machine).

#include <gtest/gtest.h>

#include "cli_process.h"
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace clustersim {
namespace bad_input_test {

using cli_test::Result;
using cli_test::run;

const std::string kSource = CLUSTERSIM_SOURCE_DIR;
std::string corpus(const std::string& harness, const std::string& name) {
  return kSource + "/tests/fuzz/corpus/" + harness + "/" + name;
}
std::string scenario(const std::string& name) { return kSource + "/scenarios/" + name; }

// A file of this test's own under the temporary directory.
std::string write_temp(const std::string& name, const std::string& bytes) {
  const auto path = std::filesystem::temp_directory_path() / ("clustersim_bad_input_" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

// Expects `args` refused with exit code 2 and every one of `parts` in the message.
void expect_refused(const std::string& args, std::initializer_list<std::string> parts) {
  const Result r = run(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  for (const std::string& part : parts) EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  // A few lines at most, whatever the input quoted.
  EXPECT_LT(r.output.size(), 1200u) << r.output.substr(0, 300);
}

TEST(BadInput, AStrayCommaIsASyntaxErrorAtItsLineNotAHang) {
  // yaml-cpp 0.7's LoadAll never returned on these and grew by about 200 MB per CPU-second.
  expect_refused("run " + corpus("scenario", "comma"), {"comma:1:1: YAML syntax error: unexpected ','"});
  expect_refused("run " + corpus("scenario", "comma-comment"), {"comma-comment:1:1:", "unexpected ','"});
  expect_refused("run " + corpus("scenario", "comment-comma"), {"comment-comma:2:1:", "unexpected ','"});
  expect_refused("run " + corpus("scenario", "comma-comment-text"), {"comma-comment-text:1:1:"});
  // The same through a node preset file named by cluster.node.
  const std::string node = write_temp("comma-node.yaml", ",");
  const std::string s =
      write_temp("comma-node-scenario.yaml", "cluster:\n  node: " + node + "\nmodel:\n  preset: llama3-8b\n");
  expect_refused("run " + s, {"comma-node-scenario.yaml:2:3: cluster.node:", node + ":1:1: YAML syntax error"});
}

TEST(BadInput, ABytesThatIsNotUtf8IsRefusedAtItsLineAndColumn) {
  const std::string file = corpus("scenario", "raw-0xff-in-string");
  expect_refused("run --json " + file, {"raw-0xff-in-string:1:14: byte 0xFF is not UTF-8"});
  expect_refused("search --json " + file, {"raw-0xff-in-string:1:14: byte 0xFF is not UTF-8"});
}

TEST(BadInput, ASearchSpaceAboveItsBoundIsRefusedBeforeItIsExpanded) {
  std::string list = "[1";
  for (int v = 2; v <= 1024; ++v) {
    list += ',';
    list += std::to_string(v);
  }
  list += ']';
  const std::string sets =
      " --set search.tp=" + list + " --set search.pp=" + list + " --set search.dp=" + list + " --set search.cp=" + list;
  expect_refused("search " + scenario("llama3-8b-dgx-h100.yaml") + sets,
                 {"1110249046016 layouts", "search.max_candidates = 1000000"});
}

// 90 values in each of tp, pp, dp and cp (72,900,000 layouts with the scenario's pipeline variants,
// below the most search.max_candidates allows) would hold about 36.4 GB (parallelism/search_space.h,
// kSearchBytesPerCandidate): refused before expanding on any machine with less than twice that memory.
TEST(BadInput, ASearchSpaceAboveHalfOfTheMachinesMemoryIsRefusedBeforeItIsExpanded) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (static_cast<double>(pages) * static_cast<double>(page_size) >= 2 * 36.4e9) {
    GTEST_SKIP() << "this machine has the memory for 10^8 candidates";
  }
  std::string list = "[1";
  for (int v = 2; v <= 90; ++v) list += "," + std::to_string(v);
  list += ']';
  const std::string sets = " --set search.max_candidates=100000000 --set search.tp=" + list +
                           " --set search.pp=" + list + " --set search.dp=" + list + " --set search.cp=" + list;
  expect_refused("search " + scenario("llama3-8b-dgx-h100.yaml") + sets,
                 {"72900000 layouts", "about 36.4 GB while the search runs", "search on a machine with more memory"});
}

// A preset or profile name longer than a file name may be (fuzzing: an unclosed quote swallowed the
// rest of the file into model.preset) was a std::filesystem exception, exit 1.
TEST(BadInput, NamesTooLongForAPathAreUnknownPresets) {
  const std::string name(300, 'x');
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set model.preset=" + name,
                 {"unknown model preset \"xxxx", "available: "});
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set cluster.node=" + name,
                 {"unknown node preset \"xxxx", "available: "});
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set calibration=" + name,
                 {"calibration profile name \"xxxx", "not found"});
  expect_refused("run " + corpus("scenario", "preset-name-too-long-for-a-path"), {"unknown model preset"});
}

// An output path that cannot be written is refused before the simulation, as search --csv is.
TEST(BadInput, AnUnwritableTracePathIsRefusedBeforeTheSimulation) {
  const std::string s = scenario("llama3-70b-8-dgx-h100.yaml");
  expect_refused("run " + s + " --trace /nonexistent-folder/t.json",
                 {"--trace /nonexistent-folder/t.json: the folder /nonexistent-folder does not exist"});
  const std::string folder = std::filesystem::temp_directory_path().string();
  expect_refused("run " + s + " --trace " + folder, {"--trace " + folder + ": is a directory", "/trace.json"});
}

TEST(BadInput, DevicesPipesAndDirectoriesAreRefusedBeforeReading) {
  expect_refused("run /dev/zero", {"/dev/zero: is a character device, not a regular file"});
  const std::string fifo = (std::filesystem::temp_directory_path() / "clustersim_bad_input_fifo").string();
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused("run " + fifo, {"is a named pipe"});
  std::filesystem::remove(fifo);
  const std::string s = write_temp("dir-calibration.yaml",
                                   "calibration: /tmp\ncluster:\n  node: dgx-h100\nmodel:\n"
                                   "  preset: llama3-8b\ntraining:\n  seq_len: 2048\n"
                                   "  global_batch: 8\n");
  expect_refused("run " + s, {"calibration", "directory"});
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --layout-from /dev/zero",
                 {"--layout-from /dev/zero"});
}

TEST(BadInput, FlowFidelityBeyondItsLimitsIsRefusedNamingTheFlag) {
  expect_refused("collective --op all_to_all --nodes 2048 --fidelity flow",
                 {"--fidelity flow", "268419072 transfers", "1024 GPUs"});
  expect_refused("collective --nodes 4096 --fidelity flow", {"--fidelity flow", "32768 GPUs", "16384"});
}

// collective --html checks its path before simulating and leaves no file behind on error.
TEST(BadInput, CollectiveHtmlPathIsCheckedFirst) {
  expect_refused("collective --nodes 2 -b 8 -e 1M --html /nonexistent-folder/c.html",
                 {"--html /nonexistent-folder/c.html"});
  const std::string page = (std::filesystem::temp_directory_path() / "clustersim-bad-op.html").string();
  std::filesystem::remove(page);
  expect_refused("collective --nodes 2 --op no_such_op --html " + page, {"--op"});
  EXPECT_FALSE(std::filesystem::exists(page));
  // A device is refused, not renamed over (it replaced /dev/full once); a folder where no file can
  // be created (access(2) says yes to root in /proc) is refused before the work.
  expect_refused("collective --nodes 2 -b 8 -e 1M --html /dev/full", {"--html /dev/full: not a regular file"});
  EXPECT_FALSE(std::filesystem::is_regular_file("/dev/full"));
  expect_refused("collective --nodes 2 -b 8 -e 1M --html /proc/clustersim-c.html",
                 {"--html /proc/clustersim-c.html: "});
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --trace /proc/clustersim-t.json",
                 {"--trace /proc/clustersim-t.json: "});
}

// A run estimated above simulation.max_events is refused before it starts, naming the file, the
// key and what moves it: Llama-3-405B on 16,384 H100 at flow fidelity with 10M-parameter gradient
// buckets (a quarter of Megatron's smallest) is about 2e9 events, most of them the data-parallel
// rings' flow transfers (parallelism/work_estimate.h); the refusal comes from the estimate, in well
// under a second.
TEST(BadInput, ARunBeyondItsEventBoundIsRefusedBeforeItStarts) {
  const auto start = std::chrono::steady_clock::now();
  expect_refused("run " + scenario("llama3-405b-16k-h100.yaml") +
                     " --set simulation.fidelity=flow --set parallelism.grad_bucket_elements=10000000",
                 {"llama3-405b-16k-h100.yaml: simulation.max_events: this run is estimated at",
                  "flow fidelity", "above the bound of 5e+08", "simulation.fidelity: analytical"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set simulation.max_events=1000",
                 {"simulation.max_events", "above the bound of 1e+03"});
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set simulation.max_events=-1",
                 {"simulation.max_events"});
}

// The pod keys of a three-tier fabric (topology/three_tier_fabric.h), refused at their line with
// what is valid: with a two-tier type, missing, a pod larger than the cluster, a ratio below 1, a
// pod type that is not a two-tier Clos.
TEST(BadInput, ThreeTierPodKeysNameTheirLineAndWhatIsValid) {
  auto scenario_with = [](const std::string& name, const std::string& fabric) {
    return write_temp(name, "cluster:\n  node: dgx-h100\n  nodes: 4\n  fabric:\n" + fabric +
                                "model:\n  preset: llama3-8b\n");
  };
  expect_refused("run " + scenario_with("core-two-tier.yaml", "    type: fat-tree\n    core_oversubscription: 7\n"),
                 {"core-two-tier.yaml:6:5: cluster.fabric.core_oversubscription:", "cluster.fabric.type is fat-tree",
                  "three-tier"});
  // A single switch has no leaves: their keys are refused, not ignored.
  expect_refused("run " + scenario_with("leaves-switch.yaml", "    type: single-switch\n    leaf_ports: 16\n"),
                 {"leaves-switch.yaml:6:5: cluster.fabric.leaf_ports:", "cluster.fabric.type is single-switch"});
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") +
                     " --set cluster.fabric.type=single-switch --set cluster.fabric.oversubscription=4",
                 {"--set cluster.fabric.oversubscription:", "single-switch"});
  expect_refused("run " + scenario_with("pods-rail.yaml", "    pod_nodes: 2\n"),
                 {"pods-rail.yaml:5:5: cluster.fabric.pod_nodes:", "cluster.fabric.type is rail-optimized"});
  expect_refused("run " + scenario_with("no-pods.yaml", "    type: three-tier\n"),
                 {"no-pods.yaml:5:5: cluster.fabric.type:", "needs cluster.fabric.pod_nodes", "1..4"});
  expect_refused("run " + scenario_with("big-pod.yaml", "    type: three-tier\n    pod_nodes: 8\n"),
                 {"big-pod.yaml:6:5: cluster.fabric.pod_nodes:", "the cluster has 4 nodes", "valid: 1..4"});
  expect_refused("run " + scenario_with("zero-pod.yaml", "    type: three-tier\n    pod_nodes: 0\n"),
                 {"zero-pod.yaml:6:5: cluster.fabric.pod_nodes: 0 is out of range", "[1, 16384]"});
  expect_refused("run " + scenario_with("core-half.yaml",
                                        "    type: three-tier\n    pod_nodes: 2\n    core_oversubscription: 0.5\n"),
                 {"core-half.yaml:7:5: cluster.fabric.core_oversubscription: 0.5 is out of range", "[1, 64]"});
  expect_refused("run " + scenario_with("pod-switch.yaml",
                                        "    type: three-tier\n    pod_nodes: 2\n    pod_type: single-switch\n"),
                 {"pod-switch.yaml:7:5: cluster.fabric.pod_type:", "fat-tree, rail-optimized"});
  // The same keys through --set: the key and what is valid, no file line.
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set cluster.fabric.core_oversubscription=7",
                 {"cluster.fabric.core_oversubscription", "three-tier"});
}

TEST(BadInput, ValuesThatOverflowNameTheirFileAndKey) {
  expect_refused("run " + corpus("scenario", "seq-len-overflow"),
                 {"seq-len-overflow: one step of this scenario", "training.seq_len 16777216", "int64 picoseconds"});
  expect_refused("run " + corpus("scenario", "switch-latency-1e18ps"),
                 {"switch-latency-1e18ps:6:5: cluster.fabric.switch_latency: \"1e18 ps\" is out of range", "1 s]"});
  const std::string nic = write_temp("nic-latency.yaml", "name: x\nbandwidth: \"400 Gb/s\"\nlatency: \"1000000 s\"\n");
  const std::string s =
      write_temp("nic-scenario.yaml", "cluster:\n  node: dgx-h100\n  nodes: 2\n  fabric:\n    nic: " + nic +
                                          "\nmodel:\n  preset: llama3-8b\n");
  expect_refused("run " + s, {"nic-scenario.yaml:5:5: cluster.fabric.nic:", "nic-latency.yaml:3:1: latency:"});
  // A NIC below 1 Gb/s: the bound help-config prints for the key is the one the loader applies.
  const std::string slow_nic = write_temp("nic-slow.yaml", "name: x\nbandwidth: \"0.5 Gb/s\"\nlatency: \"1 us\"\n");
  const std::string slow = write_temp("nic-slow-scenario.yaml", "cluster:\n  node: dgx-h100\n  nodes: 2\n  fabric:\n    nic: " +
                                                                   slow_nic + "\nmodel:\n  preset: llama3-8b\n");
  expect_refused("run " + slow, {"nic-slow.yaml:2:1: bandwidth:", "in [0.125 GB/s"});
  const Result help = run("help-config nic");
  EXPECT_NE(help.output.find("in [0.125 GB/s"), std::string::npos) << help.output;
  const std::string gpu = write_temp("tiny-peak.yaml",
                                     "name: x\ndense_peak:\n  bf16: \"1e-300 TFLOP/s\"\n"
                                     "hbm_capacity: \"80 GB\"\nhbm_bandwidth: \"3 TB/s\"\n");
  std::ifstream node_in(kSource + "/scenarios/hardware/nodes/dgx-h100.yaml");
  std::string node((std::istreambuf_iterator<char>(node_in)), std::istreambuf_iterator<char>());
  const auto at = node.find("gpu: ");
  ASSERT_NE(at, std::string::npos);
  node.replace(at, node.find('\n', at) - at, "gpu: " + gpu);
  const std::string node_file = write_temp("tiny-peak-node.yaml", node);
  const std::string s2 =
      write_temp("tiny-peak-scenario.yaml", "cluster:\n  node: " + node_file + "\nmodel:\n  preset: llama3-8b\n");
  expect_refused("run " + s2, {"tiny-peak.yaml:3:3: dense_peak.bf16: \"1e-300 TFLOP/s\" is out of range"});
}

TEST(BadInput, AnAlgorithmThatCannotRunTheOpIsRefusedEvenWhenEverySizeIsSkipped) {
  // -b 8 -e 8 on 8 GPUs: below one element per rank, so every size is skipped.
  expect_refused("collective --algo tree --op all_to_all", {"--algo: algorithm \"tree\" cannot run all_to_all"});
}

TEST(BadInput, NegativeMeasurementsInValidationCsvsAreRefusedAtTheirField) {
  const std::string collectives =
      write_temp("negative-time.csv",
                 "source,system,gpus,nodes,collective,algorithm,size_bytes,time_us,algbw_GBps,busbw_GBps,notes,"
                 "bw_definition\nx,DGX H100,16,2,all_reduce,NCCL default,8,-135.8,0.00,0.00,,\n");
  expect_refused("validate --collectives " + collectives, {"negative-time.csv:2: column time_us = \"-135.8\""});
  std::ifstream runs_in(kSource + "/docs/validation/published/training_runs.csv");
  std::string header, row;
  std::getline(runs_in, header);
  std::getline(runs_in, row);
  const auto metric = row.find(",achieved_tflops_per_gpu,137,");
  ASSERT_NE(metric, std::string::npos);
  row.replace(metric, std::string(",achieved_tflops_per_gpu,137,").size(), ",achieved_tflops_per_gpu,-137,");
  const std::string runs = write_temp("negative-metric.csv", header + "\n" + row + "\n");
  expect_refused("validate --runs " + runs, {"negative-metric.csv:2", "metric_value", "> 0"});
}

TEST(BadInput, ALayoutFromFieldThisBuildDoesNotKnowIsRefused) {
  expect_refused(
      "run " + scenario("llama3-8b-dgx-h100.yaml") + " --layout-from " + corpus("layout_json", "unknown-field"),
      {"top[0].layout.expert_parallel: unknown field"});
}

TEST(BadInput, MessagesNameTheKeyOrTheFlagAndStayShort) {
  expect_refused("run " + corpus("scenario", "fp8-on-a100"),
                 {"fp8-on-a100:9:3: training.precision: fp8: the cluster's GPU A100-SXM4-80GB has no dense fp8 peak"});
  std::ifstream mesh_in(kSource + "/scenarios/hardware/nodes/hybrid-cube-mesh-a100.yaml");
  std::string mesh((std::istreambuf_iterator<char>(mesh_in)), std::istreambuf_iterator<char>());
  const auto edge = mesh.find("gpu_b: 1,");
  ASSERT_NE(edge, std::string::npos);
  mesh.replace(edge, 9, "gpu_b: 99,");
  const std::string mesh_file = write_temp("mesh-99.yaml", mesh);
  const std::string s =
      write_temp("mesh-scenario.yaml", "cluster:\n  node: " + mesh_file + "\nmodel:\n  preset: llama3-8b\n");
  expect_refused("run " + s, {"mesh-99.yaml:", "mesh[0].gpu_b: GPU 99 is not in this node of 8 GPUs"});
  // Every collective flag that takes a value names itself when the value is bad.
  expect_refused("collective --op bogus", {"--op:"});
  expect_refused("collective --algo bogus", {"--algo:"});
  expect_refused("collective --proto bogus", {"--proto:"});
  expect_refused("collective -d bogus", {"-d/--datatype:"});
  expect_refused("collective --fabric bogus", {"--fabric"});
  expect_refused("collective -b 1X", {"-b/--minbytes:"});
  expect_refused("collective -e 1X", {"-e/--maxbytes:"});
  expect_refused("collective -i 1X", {"-i/--stepbytes:"});
  expect_refused("collective -b 64 -e 8", {"-b/--minbytes 64 B is larger than -e/--maxbytes 8 B"});
  // A CSV header of 100,000 columns: the message lists 20 of them.
  expect_refused("validate --runs " + corpus("validation_csv", "wide-header-100k-columns"),
                 {"(100000 columns in all)"});
}


// The command-line parser's own refusals read like the others: "error: clustersim COMMAND: ..." and
// where the valid arguments are listed.
TEST(BadInput, CommandLineParserMessagesNameTheCommandAndWhereTheValidOnesAre) {
  expect_refused("run /nonexistent-scenario.yaml",
                 {"error: clustersim run: scenario: File does not exist: /nonexistent-scenario.yaml",
                  "`clustersim run --help` lists its arguments"});
  expect_refused("collective --nodes abc", {"error: clustersim collective: Could not convert: --nodes = abc"});
  expect_refused("", {"error: A subcommand is required; give a command: run, search, report, collective"});
  expect_refused("help-config banana", {"error: clustersim help-config: kind: banana not in"});
  // A misspelt flag: the nearest one the command has.
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --sett training.seq_len=4096",
                 {"--sett: did you mean --set?", "`clustersim run --help` lists its arguments"});
  expect_refused("search " + scenario("llama3-8b-dgx-h100.yaml") + " --tpo=3", {"--tpo: did you mean --top?"});
}

// A campaign's bad input: each refused at the key it names, with what would be valid.
TEST(BadInput, CampaignInputIsRefusedAtItsKey) {
  std::ifstream in(scenario("llama3-8b-dgx-h100.yaml"));
  std::string base((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  base += "campaign:\n  relaunch_time: \"5 min\"\n";
  const std::string storage = " --set 'cluster.storage.bandwidth=100 GB/s'";
  const std::string file = write_temp("campaign.yaml", base);
  expect_refused("run " + file + storage, {"clustersim_bad_input_campaign.yaml:", "campaign: a campaign needs the run's length: training.tokens"});
  expect_refused("run " + file + " --set training.tokens=1e12", {"campaign: checkpoints need the storage", "cluster.storage.bandwidth"});
  const std::string ok = file + storage + " --set training.tokens=1e12";
  expect_refused("run " + ok + " --set training.steps=10", {"training.steps: give the run's length once"});
  expect_refused("run " + ok + " --set campaign.gpu_hour_price=-1", {"campaign.gpu_hour_price", "-1"});
  expect_refused("run " + ok + " --set campaign.failures.gpu=-5", {"campaign.failures.gpu", "-5"});
  expect_refused("run " + file + " --set training.tokens=1e12 --set 'cluster.storage.bandwidth=-1 TB/s'",
                 {"cluster.storage.bandwidth"});
  expect_refused("run " + ok + " --set campaign.spare_nodes=2", {"campaign.spare_nodes: spare nodes need campaign.repair_time"});
  expect_refused("run " + ok + " --set 'campaign.repair_time=3 h'", {"campaign.repair_time: a repair time is for campaign.spare_nodes"});
  expect_refused("run " + ok + " --set campaign.spare_nodes=-1 --set 'campaign.repair_time=3 h'", {"campaign.spare_nodes"});
  // Beyond int64 picoseconds: out of the key's range, not a message about int64.
  expect_refused("run " + ok + " --set 'campaign.relaunch_time=1e30 s'",
                 {"campaign.relaunch_time: \"1e30 s\" is out of range: expected in [0 s, 86400 s]"});
  expect_refused("run " + ok + " --set 'campaign.checkpoint.interval=1e7 s'",
                 {"campaign.checkpoint.interval: \"1e7 s\" is out of range"});
  expect_refused("run " + ok + " --set campaign.checkpoint.interval=soon",
                 {"campaign.checkpoint.interval: \"soon\" is not auto or a duration"});
  // Llama-3-8B's 8.0e9 parameters x 14 B at 1 GB/s: 112 s a write; an interval of 30 s is shorter.
  expect_refused("run " + file + " --set training.tokens=1e12 --set 'cluster.storage.bandwidth=1 GB/s' --set "
                 "'campaign.checkpoint.interval=30 s'",
                 {"campaign.checkpoint.interval: ", "is shorter than the checkpoint write"});
  const std::string no_relaunch = write_temp("campaign-no-relaunch.yaml", base.substr(0, base.find("  relaunch")) + "  seeds: 10\n");
  expect_refused("run " + no_relaunch + storage + " --set training.tokens=1e12",
                 {"missing required key \"campaign.relaunch_time\""});
  expect_refused("run " + scenario("llama3-8b-dgx-h100.yaml") + " --set training.tokens=1e12",
                 {"training.tokens: the run's length is for a campaign: add a campaign: section"});
}

// `clustersim report`: an --out that cannot be written is refused before the simulation, naming the
// flag and the path; a scenario that fails to load gives `run`'s message; a failed report leaves no
// file behind (the page is written to a temporary file renamed into place) and an existing one as it
// was.
TEST(BadInput, ReportRefusesAnUnwritableOutAndLeavesNoFileBehind) {
  const std::string good = scenario("gpt3-1.3b-single-h200.yaml");
  expect_refused("report " + good + " --out /nonexistent-folder/report.html",
                 {"--out /nonexistent-folder/report.html: the folder /nonexistent-folder does not exist"});
  expect_refused("report " + good + " --out /proc/clustersim-report.html", {"--out /proc/clustersim-report.html"});
  EXPECT_FALSE(std::filesystem::exists("/proc/clustersim-report.html"));
  const auto folder = std::filesystem::temp_directory_path() / "clustersim_bad_input_report";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  expect_refused("report " + good + " --out " + folder.string(), {"--out " + folder.string() + ": is a directory"});
  expect_refused("report " + good + " --out /dev/null", {"--out /dev/null: not a regular file"});
  expect_refused("report " + good + " --out ''", {"--out", "empty path"});
  expect_refused("report " + good + " --out " + good, {"that is the scenario file"});
  expect_refused("report " + good + " --out " + (folder / "r.html").string() + " --threads 2", {"--threads belongs to --search"});
  expect_refused("report " + good + " --search --out " + (folder / "r.html").string(), {"no search: section"});

  // A scenario that fails to load: exit 2 with the message `run` gives, the existing page untouched.
  const std::string bad = write_temp("report-bad-key.yaml", "model:\n  preset: llama3-8b\n  layres: 4\n");
  const std::string page = (folder / "page.html").string();
  std::ofstream(page) << "previous page";
  const Result from_report = run("report " + bad + " --out " + page);
  const Result from_run = run("run " + bad);
  EXPECT_EQ(from_report.exit_code, 2) << from_report.output;
  EXPECT_EQ(from_run.exit_code, 2);
  EXPECT_EQ(from_report.output, from_run.output);
  std::ifstream previous(page);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(previous), {}), "previous page");

  // A good report replaces the page and leaves nothing else in the folder.
  const Result ok = run("report " + good + " --out " + page);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("wrote " + page), std::string::npos) << ok.output;
  std::ifstream written(page);
  const std::string html(std::istreambuf_iterator<char>(written), {});
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>")) << html.substr(0, 100);
  EXPECT_TRUE(html.ends_with("</html>\n"));
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) files.push_back(entry.path().filename());
  EXPECT_EQ(files, std::vector<std::string>{"page.html"});
  std::filesystem::remove_all(folder);
}

}  // namespace bad_input_test
}  // namespace clustersim
