// A campaign in `clustersim run` and `clustersim search` (campaign/campaign.h): the whole run's
// wall-clock time, interruptions, GPU-hours and cost, and the search objectives that rank by them.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_process.h"

namespace clustersim {
namespace campaign_cli_test {

using cli_test::Result;
using cli_test::run;

const std::string kSource = CLUSTERSIM_SOURCE_DIR;

// Llama-3-405B's pre-training on 16,384 H100 (the shipped scenario's campaign): the Monte-Carlo's
// mean against the closed forms, and the GPU-hours and cost of that mean. (The step at analytical
// fidelity: auto would simulate its flows, a minute on one core, and the campaign is what is checked.)
TEST(CampaignCli, Llama3PretrainingCampaignIsConsistent) {
  const Result r =
      run("run --json " + kSource + "/scenarios/llama3-405b-16k-h100.yaml --set simulation.fidelity=analytical");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  const nlohmann::json& c = j.at("campaign");
  const double step = j["step_time_s"].get<double>();
  const double work_days = c["steps"].get<double>() * step / 86'400;
  EXPECT_EQ(c["steps"].get<int64_t>(), 929'833);  // ceil(15.6e12 / (2,048 × 8,192))
  EXPECT_GT(c["wall_days"].get<double>(), work_days);
  EXPECT_LE(c["wall_days_p10"].get<double>(), c["wall_days"].get<double>());
  EXPECT_GE(c["wall_days_p90"].get<double>(), c["wall_days"].get<double>());
  EXPECT_NEAR(c["exact_wall_days"].get<double>() / c["wall_days"].get<double>(), 1, 0.01);
  EXPECT_NEAR(c["gpu_hours"].get<double>(), 16'384 * 24 * c["wall_days"].get<double>(), 1e-6 * c["gpu_hours"].get<double>());
  EXPECT_NEAR(c["cost"].get<double>(), 2.0 * c["gpu_hours"].get<double>(), 1e-6 * c["cost"].get<double>());
  EXPECT_NEAR(c["goodput"].get<double>(), work_days / c["wall_days"].get<double>(), 1e-9);
  // Llama 3's 419 interruptions in 54 days: 7.76 a day, on the same cluster.
  EXPECT_NEAR(c["interruptions"].get<double>() / c["wall_days"].get<double>(), 419.0 / 54, 0.05 * 419.0 / 54);
  // 405e9 parameters x 14 B (bf16 weights, fp32 master and moments) at 2 TB/s: about 2.8 s.
  EXPECT_NEAR(c["checkpoint_write_s"].get<double>(), 2.84, 0.05);
  EXPECT_TRUE(c["energy_mwh"].is_null());  // the power model is off
}

// The checkpoint as the layout shards it: on two nodes whose links are the bottleneck (storage at
// 1,000 TB/s), balanced data-parallel ranks take all bytes / (2 nodes x 8 x 50 GB/s); two pipeline
// stages, the first holding the embedding and the second the LM head besides their layers, take as
// long as the busier node, which is longer; the bytes are the same either way, within the copy of
// the tied embedding that Megatron keeps on both ends.
TEST(CampaignCli, CheckpointWriteFollowsTheLayoutsShards) {
  const auto path = std::filesystem::temp_directory_path() / "clustersim_campaign_shards.yaml";
  std::ofstream(path) << "name: shards\ncluster: {node: dgx-h100, nodes: 2, storage: {bandwidth: \"1000 TB/s\"}}\n"
                      << "model: {preset: gpt3-1.3b}\ntraining: {seq_len: 2048, global_batch: 64, steps: 1000}\n"
                      << "parallelism: {tp: 1, pp: 1, dp: 16}\ncampaign: {relaunch_time: \"5 min\"}\n";
  const auto campaign = [&](const std::string& sets) {
    const Result r = run("run --json " + path.string() + sets);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output).at("campaign");
  };
  const nlohmann::json dp = campaign("");
  const double node_links = 2 * 8 * 50e9;  // ConnectX-7 at 400 Gb/s
  EXPECT_NEAR(dp["checkpoint_write_s"].get<double>(), dp["checkpoint_bytes"].get<double>() / node_links, 1e-9);
  const nlohmann::json pp = campaign(" --set parallelism.pp=2 --set parallelism.dp=8");
  EXPECT_GT(pp["checkpoint_write_s"].get<double>(), pp["checkpoint_bytes"].get<double>() / node_links * 1.001);
  EXPECT_NEAR(pp["checkpoint_bytes"].get<double>() / dp["checkpoint_bytes"].get<double>(), 1.0, 0.1);
}

std::string search_scenario(const std::string& name, const std::string& extra) {
  std::ifstream in(kSource + "/scenarios/search/gpt3-1.3b-2-dgx-h100.yaml");
  std::stringstream text;
  text << in.rdbuf() << extra;
  const auto path = std::filesystem::temp_directory_path() / ("clustersim_campaign_search_" + name + ".yaml");
  std::ofstream(path) << text.str();
  return path.string();
}

// search.objective time_to_train ranks by the campaign's expected days, cost by its GPU-hours.
TEST(CampaignCli, SearchRanksByTheCampaign) {
  const std::string file = search_scenario(
      "ok", "campaign:\n  relaunch_time: \"10 min\"\n");
  const std::string sets = " --set training.tokens=3e11 --set 'cluster.storage.bandwidth=20 GB/s' --top 5 --json";
  for (const char* objective : {"time_to_train", "cost"}) {
    const Result r = run("search " + file + sets + " --set search.objective=" + objective);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // Standard error's summary line ("searched N candidates ...") shares the pipe: the JSON is the braces.
    const nlohmann::json j =
        nlohmann::json::parse(r.output.substr(r.output.find('{'), r.output.rfind('}') - r.output.find('{') + 1));
    ASSERT_GE(j["top"].size(), 2u);
    const char* key = std::string(objective) == "cost" ? "gpu_hours" : "wall_days";
    for (size_t k = 1; k < j["top"].size(); ++k) {
      EXPECT_LE(j["top"][k - 1]["campaign"][key].get<double>(), j["top"][k]["campaign"][key].get<double>()) << k;
    }
  }
  const Result none = run("search " + search_scenario("none", "") + " --set search.objective=time_to_train");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("search.objective: time_to_train ranks by the whole run: add a campaign: section"),
            std::string::npos)
      << none.output;
  // The energy objective needs the power model: refused where it is off, turned on under auto.
  const Result energy =
      run("search " + file + sets + " --set search.objective=energy --set simulation.power_model=false");
  EXPECT_EQ(energy.exit_code, 2);
  EXPECT_NE(energy.output.find("energy needs the power model"), std::string::npos) << energy.output;
  const Result energy_auto = run("search " + file + sets + " --set search.objective=energy");
  ASSERT_EQ(energy_auto.exit_code, 0) << energy_auto.output;
  const std::string& out = energy_auto.output;
  const nlohmann::json e = nlohmann::json::parse(out.substr(out.find('{'), out.rfind('}') - out.find('{') + 1));
  ASSERT_GE(e["top"].size(), 2u);
  for (size_t k = 1; k < e["top"].size(); ++k) {
    EXPECT_LE(e["top"][k - 1]["campaign"]["energy_mwh"].get<double>(), e["top"][k]["campaign"]["energy_mwh"].get<double>())
        << k;
  }
  // `run` ignores the search: section, its objective included.
  EXPECT_EQ(run("run " + file + " --set training.tokens=3e11 --set 'cluster.storage.bandwidth=20 GB/s' --set "
                "search.objective=energy")
                .exit_code,
            0);
}

// A search simulates every candidate with the scenario's stragglers, and its printed --set line,
// shell-quoted, runs the same step; jitter is left out with a note (a search ranks steady steps),
// and the ranking is that of the file without it.
TEST(CampaignCli, SearchHonoursStragglersAndIgnoresJitter) {
  const std::string file = search_scenario("straggler", "stragglers:\n  - {gpu: 0, speed: 0.5}\n");
  const Result r = run("search " + file + " --top 3 --json --set search.rerank=0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j =
      nlohmann::json::parse(r.output.substr(r.output.find('{'), r.output.rfind('}') - r.output.find('{') + 1));
  const nlohmann::json& best = j["top"][0];
  const Result again = run("run --json " + file + " " + best["set"].get<std::string>() +
                           " --set simulation.fidelity=analytical");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const nlohmann::json k = nlohmann::json::parse(again.output);
  EXPECT_EQ(k["step_time_s"].get<double>(), best["step_time_s"].get<double>());
  EXPECT_GT(k["stragglers"]["slowdown"].get<double>(), 1.0);
  const Result jitter = run("search " + search_scenario("jitter", "jitter: {cv: 0.03}\n") + " --top 3 --json --set search.rerank=0");
  ASSERT_EQ(jitter.exit_code, 0) << jitter.output;
  EXPECT_NE(jitter.output.find("jitter: ignored: the search ranks steady steps"), std::string::npos) << jitter.output;
  const Result steady = run("search " + search_scenario("steady", "") + " --top 3 --json --set search.rerank=0");
  ASSERT_EQ(steady.exit_code, 0) << steady.output;
  const auto top_of = [](const std::string& output) {
    return nlohmann::json::parse(output.substr(output.find('{'), output.rfind('}') - output.find('{') + 1))["top"];
  };
  EXPECT_EQ(top_of(jitter.output), top_of(steady.output));
}

}  // namespace campaign_cli_test
}  // namespace clustersim
