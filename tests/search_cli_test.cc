// `clustersim search` as users run it: the same output for any thread count and under
// `mpirun -np 2`, the winner taken back by `clustersim run --layout-from`, exit codes and messages.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

namespace search_cli_test {

struct Result {
  int exit_code = -1;
  std::string out;  // standard output only
  std::string err;  // standard error
};

// A file name of this process: ctest runs the tests of this file as parallel processes.
std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("clustersim_search_cli_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// Removes this process's temp() files when its tests end.
class RemoveTempFiles : public ::testing::Environment {
 public:
  void TearDown() override {
    const std::string prefix = "clustersim_search_cli_" + std::to_string(getpid()) + "_";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
      if (e.path().filename().string().starts_with(prefix)) std::filesystem::remove_all(e.path(), ec);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveTempFiles =
    ::testing::AddGlobalTestEnvironment(new RemoveTempFiles);

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `prefix clustersim args`, standard error to a file.
Result run(const std::string& args, const std::string& prefix = "") {
  static int calls = 0;
  const std::string err = temp("stderr_" + std::to_string(++calls));
  const std::string command = prefix + std::string(CLUSTERSIM_BINARY) + " " + args + " 2>" + err;
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) r.out += buffer.data();
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read(err);
  return r;
}

std::string scenario(const std::string& name) { return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name; }

const std::string kSmall = scenario("search/gpt3-1.3b-2-dgx-h100.yaml");
// A search whose flow winner ranks 17th after screening (tests/search_scenarios_test.cc,
// TheDoublingFindsAFlowWinnerThatTheScreeningRanksLow): search.rerank: auto takes several rounds.
const std::string kRerankRounds = scenario("search/sc21-gpt-1.7b.yaml") +
                                  " --set training.global_batch=64 --set cluster.fabric.type=fat-tree"
                                  " --set cluster.fabric.oversubscription=16 --set cluster.fabric.leaf_ports=16"
                                  " --set search.top=1";

TEST(SearchCli, OutputIsByteIdenticalForAnyThreadCount) {
  const Result one = run("search " + kSmall + " --threads 1 --csv " + temp("t1.csv"));
  const Result many = run("search " + kSmall + " --csv " + temp("tn.csv"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(many.exit_code, 0) << many.err;
  EXPECT_EQ(one.out, many.out);
  EXPECT_EQ(read(temp("t1.csv")), read(temp("tn.csv")));
  const Result one_json = run("search " + kSmall + " --threads 1 --json");
  const Result three_json = run("search " + kSmall + " --threads 3 --json");
  EXPECT_EQ(one_json.out, three_json.out);
  EXPECT_NE(one.out.find("rank"), std::string::npos);
  // Standard error is not a terminal here: no progress bar, only the closing line.
  EXPECT_EQ(one.err.find("ETA"), std::string::npos);
  EXPECT_NE(one.err.find("simulated layouts/s"), std::string::npos);
}

TEST(SearchCli, MpirunWithTwoProcessesGivesTheSameOutput) {
  const std::string mpirun = CLUSTERSIM_MPIRUN;
  if (mpirun.empty() || !std::filesystem::exists(mpirun)) GTEST_SKIP() << "mpirun not found";
  if (!CLUSTERSIM_SEARCH_MPI) GTEST_SKIP() << "clustersim built without MPI";
  // OpenMPI refuses to run as root unless told; CI containers run as root.
  const std::string prefix =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + mpirun + " -np 2 --oversubscribe ";
  const Result single = run("search " + kSmall + " --json --csv " + temp("single.csv"));
  const Result mpi = run("search " + kSmall + " --json --csv " + temp("mpi.csv"), prefix);
  ASSERT_EQ(mpi.exit_code, 0) << mpi.err;
  EXPECT_EQ(single.out, mpi.out);
  EXPECT_EQ(read(temp("single.csv")), read(temp("mpi.csv")));
  EXPECT_NE(mpi.err.find("on 2 process(es)"), std::string::npos) << mpi.err;
  const Result table = run("search " + kSmall, prefix);
  EXPECT_EQ(table.out, run("search " + kSmall).out);
  // Re-ranking rounds whose winner changes: every process takes the same rounds.
  const Result rounds = run("search " + kRerankRounds + " --json", prefix);
  ASSERT_EQ(rounds.exit_code, 0) << rounds.err;
  EXPECT_EQ(rounds.out, run("search " + kRerankRounds + " --json").out);
  EXPECT_GT(nlohmann::json::parse(rounds.out)["rerank"]["rounds"].size(), 2U);
}

// The summary's re-ranking line as it opens for `layouts` layouts re-ranked by auto.
std::string fmt_line(size_t layouts) { return "  re-ranking  auto: " + std::to_string(layouts) + " re-ranked"; }

// How many layouts were re-ranked and why it stopped, said alike by the text, --json and --csv.
TEST(SearchCli, OutputsSayHowManyWereRerankedAndWhy) {
  const Result json = run("search " + kRerankRounds + " --json --csv " + temp("rerank.csv"));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  const auto& rerank = j["rerank"];
  EXPECT_EQ(rerank["stop"], "stable");
  EXPECT_EQ(rerank["max"].get<int>(), 160);
  const std::vector<size_t> rounds = rerank["rounds"].get<std::vector<size_t>>();
  ASSERT_GE(rounds.size(), 2U);
  EXPECT_EQ(rounds.front(), 10U);  // max(top 1, 10)
  for (size_t k = 1; k < rounds.size(); ++k) EXPECT_EQ(rounds[k], 2 * rounds[k - 1]);
  const size_t layouts = rerank["layouts"].get<size_t>();
  EXPECT_EQ(layouts, rounds.back());
  EXPECT_GT(j["top"][0]["screening_rank"].get<int>(), 10);

  // CSV: one row per simulated layout; `layouts` of them re-ranked, the best of those the winner.
  std::istringstream csv(read(temp("rerank.csv")));
  std::string line;
  std::getline(csv, line);
  std::vector<std::string> header;
  {
    std::istringstream h(line);
    for (std::string cell; std::getline(h, cell, ',');) header.push_back(cell);
  }
  const auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  ASSERT_LT(column("rerank_stop"), header.size());
  size_t rows = 0, reranked = 0;
  double best_final = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    std::istringstream l(line);
    for (std::string cell; std::getline(l, cell, ',');) cells.push_back(cell);
    if (line.back() == ',') cells.emplace_back();
    ASSERT_EQ(cells.size(), header.size()) << line;
    ++rows;
    EXPECT_EQ(cells[column("rerank_stop")], "stable");
    if (cells[column("reranked")] == "true") {
      ++reranked;
      EXPECT_EQ(cells[column("final_fidelity")], "flow");
      best_final = std::max(best_final, std::stod(cells[column("final_tokens_per_s")]));
    } else {
      EXPECT_EQ(cells[column("final_tokens_per_s")], "");
    }
  }
  EXPECT_EQ(rows, j["evaluated"].get<size_t>());
  EXPECT_EQ(reranked, layouts);
  EXPECT_EQ(best_final, j["top"][0]["tokens_per_s"].get<double>());

  const Result text = run("search " + kRerankRounds);
  EXPECT_NE(text.out.find(fmt_line(layouts)), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("stopped: the winner held"), std::string::npos) << text.out;

  const Result fixed = run("search " + kRerankRounds + " --json --set search.rerank=10");
  const auto f = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(f["rerank"]["stop"], "fixed");
  EXPECT_EQ(f["rerank"]["layouts"].get<size_t>(), 10U);
  EXPECT_TRUE(f["rerank"]["max"].is_null());
  EXPECT_LE(f["top"][0]["screening_rank"].get<int>(), 10);  // the first round alone misses the flow winner
}

TEST(SearchCli, RunTakesTheLayoutBackFromTheSearchResult) {
  const Result search = run("search " + kSmall + " --json");
  ASSERT_EQ(search.exit_code, 0) << search.err;
  std::ofstream(temp("results.json")) << search.out;
  const auto results = nlohmann::json::parse(search.out);
  ASSERT_GE(results["top"].size(), 2U);
  for (int rank : {1, 2}) {
    const auto& top = results["top"][static_cast<size_t>(rank - 1)];
    const Result r = run("run " + kSmall + " --json --reproducible --layout-from " + temp("results.json") +
                         " --rank " + std::to_string(rank));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;  // the search was of this scenario
    const auto j = nlohmann::json::parse(r.out);
    // The same layout simulated by run at the fidelity run chooses: the same step and memory.
    EXPECT_EQ(j["step_time_s"].get<double>(), top["step_time_s"].get<double>());
    EXPECT_EQ(j["memory"]["peak_bytes"].get<int64_t>(), top["peak_bytes"].get<int64_t>());
    EXPECT_EQ(j["layout"]["tp"], top["layout"]["tp"]);
    EXPECT_EQ(j["layout"]["pp"], top["layout"]["pp"]);
    EXPECT_EQ(j["layout"]["dp"], top["layout"]["dp"]);
    EXPECT_EQ(j["layout"]["micro_batch"], top["layout"]["micro_batch"]);
    EXPECT_TRUE(j["memory"]["fits"].get<bool>());
    // The printed `--set` line does the same.
    const Result by_set = run("run " + kSmall + " --json --reproducible " + top["set"].get<std::string>());
    ASSERT_EQ(by_set.exit_code, 0) << by_set.err;
    EXPECT_EQ(nlohmann::json::parse(by_set.out)["step_time_s"].get<double>(), top["step_time_s"].get<double>());
  }
  // Results of a search of another scenario still apply, with a warning that names both.
  const Result other = run("run " + kSmall + " --json --set name=renamed --layout-from " + temp("results.json"));
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.err.find("warning: --layout-from holds a search of scenario"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("\"renamed\""), std::string::npos) << other.err;
  const Result missing = run("run " + kSmall + " --layout-from " + temp("results.json") + " --rank 99");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--rank 99"), std::string::npos) << missing.err;
  std::ofstream(temp("empty.json")) << R"({"scenario": "x", "top": []})";
  const Result empty = run("run " + kSmall + " --layout-from " + temp("empty.json"));
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("the search ranked no layout"), std::string::npos) << empty.err;
  // Hand-edited values are refused at their JSON path, not truncated or wrapped.
  for (const auto& [key, value, message] :
       {std::tuple<std::string, nlohmann::json, std::string>{"tp", 1e30, "top[0].layout.tp = 1e+30: expected a whole"},
        {"tp", 1.5, "top[0].layout.tp = 1.5: expected a whole number"},
        {"recompute", "maybe", "top[0].layout.recompute: unknown recompute \"maybe\""},
        {"sequence_parallel", 3, "top[0].layout.sequence_parallel: expected true or false"}}) {
    auto edited = results;
    edited["top"][0]["layout"][key] = value;
    std::ofstream(temp("edited.json")) << edited.dump();
    const Result r = run("run " + kSmall + " --layout-from " + temp("edited.json"));
    EXPECT_EQ(r.exit_code, 2) << key;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

// The printed `--set` line carries the search's own overrides (not those of search:), so that run
// simulates what the search ranked.
TEST(SearchCli, TheSetLineKeepsTheSearchsOwnOverrides) {
  const Result search = run("search " + kSmall + " --json --set training.seq_len=1024 --set search.top=1");
  ASSERT_EQ(search.exit_code, 0) << search.err;
  const auto best = nlohmann::json::parse(search.out)["top"][0];
  const std::string set = best["set"].get<std::string>();
  EXPECT_NE(set.find("--set training.seq_len=1024"), std::string::npos) << set;
  EXPECT_EQ(set.find("search.top"), std::string::npos) << set;
  const Result by_set = run("run " + kSmall + " --json --reproducible " + set);
  ASSERT_EQ(by_set.exit_code, 0) << by_set.err;
  EXPECT_EQ(nlohmann::json::parse(by_set.out)["step_time_s"].get<double>(), best["step_time_s"].get<double>());
}

// Options the search applies only where a layout can take them (here the parameter-gather overlap,
// which needs a ZeRO stage) come back off in the zero-0 layouts' --set lines and --layout-from, so
// `run` reproduces every ranked layout instead of refusing it.
TEST(SearchCli, EveryRankedLayoutRunsWithTheScenariosOwnOptions) {
  const std::string file = temp("opg.yaml");
  std::ofstream(file) << read(kSmall) << "parallelism:\n  overlap_param_gather: true\n";
  const Result search = run("search " + file + " --json --set search.top=6");
  ASSERT_EQ(search.exit_code, 0) << search.err;
  std::ofstream(temp("opg.json")) << search.out;
  const auto top = nlohmann::json::parse(search.out)["top"];
  ASSERT_GE(top.size(), 4u);
  int zero0 = 0;
  for (size_t k = 0; k < top.size(); ++k) {
    zero0 += top[k]["layout"]["zero"].get<int>() == 0;
    const Result by_set = run("run " + file + " --json --reproducible " + top[k]["set"].get<std::string>());
    ASSERT_EQ(by_set.exit_code, 0) << k << ": " << by_set.err;
    const double step = top[k]["step_time_s"].get<double>();
    EXPECT_EQ(nlohmann::json::parse(by_set.out)["step_time_s"].get<double>(), step) << k;
    const Result by_file =
        run("run " + file + " --json --reproducible --layout-from " + temp("opg.json") + " --rank " + std::to_string(k + 1));
    ASSERT_EQ(by_file.exit_code, 0) << k << ": " << by_file.err;
    EXPECT_EQ(nlohmann::json::parse(by_file.out)["step_time_s"].get<double>(), step) << k;
  }
  EXPECT_GE(zero0, 1);
}

// A search over the expert-parallel size ranks layouts whose ep differs from the scenario's (here
// 1): the printed --set line and --layout-from carry it, so `run` simulates the ranked layout.
TEST(SearchCli, RankedExpertParallelLayoutsRunAsRanked) {
  const std::string file = temp("moe-ep.yaml");
  std::ofstream(file) << read(scenario("search/mixtral-8x7b-64-h100.yaml"));
  const std::string narrow = " --set search.tp=[1] --set search.pp=[2] --set search.cp=[1] --set search.vpp=[4]"
                             " --set search.micro_batch=[1] --set search.recompute=[none]"
                             " --set search.sequence_parallel=[false] --set search.ep=[4,8] --set search.top=2"
                             " --set search.rerank=0 --set simulation.fidelity=analytical";
  const Result search = run("search " + file + " --json" + narrow);
  ASSERT_EQ(search.exit_code, 0) << search.err;
  std::ofstream(temp("moe-ep.json")) << search.out;
  const auto top = nlohmann::json::parse(search.out)["top"];
  ASSERT_GE(top.size(), 1u);
  for (size_t k = 0; k < top.size(); ++k) {
    EXPECT_GT(top[k]["layout"]["ep"].get<int>(), 1) << k;
    const std::string set = top[k]["set"].get<std::string>();
    EXPECT_NE(set.find("parallelism.ep=" + std::to_string(top[k]["layout"]["ep"].get<int>())), std::string::npos)
        << set;
    const double step = top[k]["step_time_s"].get<double>();
    const std::string analytical = " --set simulation.fidelity=analytical";
    const Result by_set = run("run " + file + " --json --reproducible " + set + analytical);
    ASSERT_EQ(by_set.exit_code, 0) << k << ": " << by_set.err;
    EXPECT_EQ(nlohmann::json::parse(by_set.out)["step_time_s"].get<double>(), step) << k;
    const Result by_file = run("run " + file + " --json --reproducible --layout-from " + temp("moe-ep.json") +
                               " --rank " + std::to_string(k + 1) + analytical);
    ASSERT_EQ(by_file.exit_code, 0) << k << ": " << by_file.err;
    EXPECT_EQ(nlohmann::json::parse(by_file.out)["step_time_s"].get<double>(), step) << k;
  }
}

TEST(SearchCli, MalformedInputExitsWith2AndNamesTheKey) {
  Result r = run("search " + kSmall + " --set 'search.tp=[]'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("search.tp"), std::string::npos) << r.err;
  // The space's rules that need the cluster are placed at their key too.
  r = run("search " + kSmall + " --set 'search.memory_headroom=\"100 GB\"'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--set search.memory_headroom = 100.00 GB leaves no memory"),
            std::string::npos)
      << r.err;
  r = run("search " + kSmall + " --set 'search.memory_headroom=100 GB'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("search.memory_headroom"), std::string::npos) << r.err;
  r = run("search " + kSmall + " --set search.memory_headroom=4");  // a bare number for a size
  EXPECT_EQ(r.exit_code, 2);
  r = run("search " + kSmall + " --set 'search.order=[tp-dp]'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("search.order"), std::string::npos) << r.err;
  r = run("search " + kSmall + " --set search.rerank=fast");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("search.rerank"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is not auto or a whole number of layouts in [0, 1000000]"), std::string::npos) << r.err;
  r = run("search " + kSmall + " --set search.rerank=-3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("search.rerank"), std::string::npos) << r.err;
  r = run("search " + kSmall + " --set search.rerank_max=0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("search.rerank_max"), std::string::npos) << r.err;
  r = run("search " + scenario("llama3-8b-dgx-h100.yaml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no search: section"), std::string::npos) << r.err;
  // vpp 2 needs the interleaved schedule: no (vpp, schedule) pair is a layout.
  r = run("search " + kSmall + " --set 'search.vpp=[2]' --set 'search.schedule=[1f1b]'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("search space is empty"), std::string::npos) << r.err;
}

// --top 0 given explicitly and a --csv path that cannot be written fail before the search runs
// (no "searched N candidates" line on standard error).
TEST(SearchCli, BadTopAndCsvFailBeforeTheSearch) {
  Result r = run("search " + kSmall + " --top 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--top 0"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("searched"), std::string::npos) << r.err;
  const std::string folder = temp("csv_folder");
  std::filesystem::create_directories(folder);
  for (const std::string& path : {folder, folder + "/missing/all.csv"}) {
    r = run("search " + kSmall + " --csv " + path);
    EXPECT_EQ(r.exit_code, 2) << path;
    EXPECT_NE(r.err.find("--csv " + path), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("searched"), std::string::npos) << r.err;
  }
  r = run("search " + kSmall + " --csv ''");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  std::filesystem::remove_all(folder);
}

// When a rule of the file (a bucket size too small for every layout) refuses every candidate, the
// example names it and no idle-GPU hint misleads.
TEST(SearchCli, ASearchRefusedByAFileRuleNamesItWithoutTheIdleGpuHint) {
  const Result r = run("search " + kSmall +
                       " --set parallelism.grad_bucket_elements=1000 --set search.tp=[1,2] --set search.pp=[1,2]");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no feasible layout"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parallelism.grad_bucket_elements"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("allow_idle_gpus"), std::string::npos) << r.out;
}

TEST(SearchCli, AWellFormedSearchThatFindsNothingExitsWith0AndSaysWhy) {
  // docs/cases/layouts.md L6: 5,128 GPUs, Turing-NLG 530B, every GPU used.
  const Result r = run("search " + scenario("search/turing-nlg-530b-5128-a100.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no feasible layout"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("out_of_memory"), std::string::npos);
  EXPECT_NE(r.out.find("smallest peak"), std::string::npos);
  EXPECT_NE(r.out.find("allow_idle_gpus"), std::string::npos);
  EXPECT_EQ(r.out.find("best layout"), std::string::npos);
  const Result json = run("search " + scenario("search/turing-nlg-530b-5128-a100.yaml") + " --json");
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_TRUE(j["top"].empty());
  EXPECT_EQ(j["evaluated"].get<int>(), 0);
  EXPECT_GT(j["rejected"]["out_of_memory"].get<int>(), 0);
}

}  // namespace search_cli_test
