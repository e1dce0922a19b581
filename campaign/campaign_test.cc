#include "campaign/campaign.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>

#include "core/error.h"

namespace clustersim {
namespace campaign_test {

constexpr double kHour = 3600.0;

// One GPU in one node whose failures give the job an MTBF of `mtbf_h` hours; a checkpoint of
// `write_s` seconds (1 GB over `1/write_s` GB/s), read back as fast; steps of one second.
CampaignInputs inputs(double write_s) {
  CampaignInputs in;
  in.step_time_s = 1.0;
  in.tokens_per_step = 1e6;
  in.gpus = 1;
  in.nodes = 1;
  in.nics = 0;
  in.checkpoint_bytes = 1e9;
  in.storage_write_bytes_per_s = 1e9 / write_s;
  in.storage_read_bytes_per_s = 1e9 / write_s;
  return in;
}

CampaignSpec spec(double work_h, double mtbf_h, double relaunch_s) {
  CampaignSpec s;
  s.steps = static_cast<int64_t>(work_h * kHour);  // steps of 1 s
  s.failures = FailureRates{};
  s.failures.gpu = 1e9 / mtbf_h;  // FIT of the one GPU: the job's MTBF
  s.relaunch_s = relaunch_s;
  s.seeds = 1000;
  s.seed = 7;
  return s;
}

TEST(Campaign, DefaultRatesGiveLlama3sInterruptionsOnItsCluster) {
  const FailureRates f = llama3_failure_rates();
  const double per_hour = 1e-9 * (16384 * (f.gpu + f.software) + 2048 * f.host + 16384 * (f.nic + f.network));
  EXPECT_NEAR(per_hour * 54 * 24, 419.0, 1e-9);  // 419 unexpected interruptions in 54 days
  EXPECT_NEAR(f.gpu * 16384 * 54 * 24 * 1e-9, 268.0, 1e-9);
}

// Young (1974): τ* = √(2 δ M); the simulated campaign picks it (to a whole step), and the exact
// expected wall time is lowest there among its neighbours.
TEST(Campaign, OptimumIntervalIsYoungs) {
  EXPECT_DOUBLE_EQ(young_interval(30, 10 * kHour), std::sqrt(2.0 * 30 * 10 * kHour));
  CampaignSpec s = spec(1000, 10, 240);
  s.seeds = 10;
  const CampaignResult r = simulate_campaign(s, inputs(30));
  EXPECT_TRUE(r.interval_is_optimum);
  EXPECT_NEAR(r.checkpoint_interval_s / std::sqrt(2.0 * 30 * 10 * kHour), 1.0, 0.01);
  const double at = exact_wall_time(r.work_s, r.checkpoint_interval_s, 30, r.restart_s, r.mtbf_s);
  for (double scale : {0.7, 0.85, 1.2, 1.4}) {
    EXPECT_LT(at, exact_wall_time(r.work_s, scale * r.checkpoint_interval_s, 30, r.restart_s, r.mtbf_s)) << scale;
  }
  EXPECT_THROW(young_interval(0, kHour), InputError);
}

// Where the first-order model's assumptions hold (checkpoint and restart short against the
// interval, the interval short against the MTBF), the Monte-Carlo mean of 1,000 seeds agrees with
// it within 2 %, and with the exact expectation within 1 %.
TEST(Campaign, MonteCarloMeanIsTheFirstOrderModelWhereItHolds) {
  const CampaignResult r = simulate_campaign(spec(1000, 10, 240), inputs(30));
  std::cout << "Monte-Carlo " << r.wall_s / kHour << " h, first order " << r.first_order_wall_s / kHour << " h, exact "
            << r.exact_wall_s / kHour << " h, " << r.interruptions << " failures, " << r.events << " events\n";
  EXPECT_EQ(r.seeds, 1000);
  EXPECT_NEAR(r.wall_s / r.first_order_wall_s, 1.0, 0.02);
  EXPECT_NEAR(r.wall_s / r.exact_wall_s, 1.0, 0.01);
  EXPECT_NEAR(r.interruptions, r.wall_s / r.mtbf_s, 0.02 * r.interruptions);  // Poisson: wall / M
  EXPECT_LT(r.wall_s_p10, r.wall_s);
  EXPECT_GT(r.wall_s_p90, r.wall_s);
  EXPECT_NEAR(r.goodput, r.work_s / r.wall_s, 1e-12);
  EXPECT_GT(r.goodput, 0.9);
}

// A checkpoint of 2 h and a restart of 1 h against a 10 h MTBF: the first-order model is far off
// (it is linear in what is exponential), the Monte-Carlo still follows the exact expectation.
TEST(Campaign, MonteCarloDepartsFromTheFirstOrderModelWhereItDoesNot) {
  const CampaignResult r = simulate_campaign(spec(1000, 10, 1800), inputs(2 * kHour));
  std::cout << "Monte-Carlo " << r.wall_s / kHour << " h, first order " << r.first_order_wall_s / kHour << " h, exact "
            << r.exact_wall_s / kHour << " h, interval " << r.checkpoint_interval_s / kHour << " h\n";
  EXPECT_NEAR(r.restart_s, 1800 + 2 * kHour, 1e-9);
  EXPECT_NEAR(r.wall_s / r.exact_wall_s, 1.0, 0.02);
  EXPECT_GT(std::abs(r.wall_s / r.first_order_wall_s - 1.0), 0.05);
}

TEST(Campaign, WithoutFailuresTheRunIsItsWorkAndItsCheckpoints) {
  CampaignSpec s = spec(100, 10, 60);
  s.failures = FailureRates{};
  s.checkpoint_interval_s = 1000;
  const CampaignResult r = simulate_campaign(s, inputs(20));
  EXPECT_EQ(r.checkpoint_interval_steps, 1000);
  EXPECT_DOUBLE_EQ(r.wall_s, 360000.0 + 359 * 20.0);  // 360 segments, a checkpoint after all but the last
  EXPECT_DOUBLE_EQ(r.wall_s_p10, r.wall_s_p90);
  EXPECT_EQ(r.interruptions, 0);
  s.checkpoint_interval_s.reset();
  EXPECT_DOUBLE_EQ(simulate_campaign(s, inputs(20)).wall_s, 360000.0);  // auto: no checkpoint needed
}

// An asynchronous save stops the training only for the copy to host memory; it is the write,
// though, that makes the checkpoint count, so a failure soon after loses the segment before.
TEST(Campaign, AsynchronousSaveWaitsOnlyForTheCopy) {
  CampaignSpec s = spec(1000, 10, 240);
  s.checkpoint_interval_s = 1200;
  CampaignInputs in = inputs(300);
  in.async_copy_s = 5;
  const CampaignResult sync = simulate_campaign(s, in);
  s.async_save = true;
  const CampaignResult async = simulate_campaign(s, in);
  EXPECT_DOUBLE_EQ(async.checkpoint_wait_s, 5);
  EXPECT_DOUBLE_EQ(sync.checkpoint_wait_s, 300);
  EXPECT_LT(async.wall_s, sync.wall_s);
  // Against a save that both waited 5 s and counted at once (the exact form at c = 5 s), the
  // background write costs the work of the failures that fall inside it.
  EXPECT_GT(async.wall_s, exact_wall_time(async.work_s, 1200, 5, async.restart_s, async.mtbf_s));
  s.failures = FailureRates{};
  EXPECT_DOUBLE_EQ(simulate_campaign(s, in).wall_s, 3.6e6 + 2999 * 5.0);
}

// Spare nodes: with plenty the run is the run with a spare always at hand; with none, every node
// lost waits out its repair (each failure's wait at most its repair time, overlapping repairs
// sharing one wait).
TEST(Campaign, WithoutSpareNodesTheRunWaitsForRepairs) {
  CampaignSpec s = spec(200, 10, 240);
  const CampaignResult always = simulate_campaign(s, inputs(30));
  s.spare_nodes = 1000;
  s.repair_s = kHour;
  const CampaignResult plenty = simulate_campaign(s, inputs(30));
  EXPECT_NEAR(plenty.wall_s / always.wall_s, 1.0, 0.01);
  EXPECT_EQ(plenty.spare_wait_s, 0);
  s.spare_nodes = 0;
  s.repair_s = 5 * kHour;
  const CampaignResult none = simulate_campaign(s, inputs(30));
  EXPECT_GT(none.spare_wait_s, 0.5 * none.interruptions * s.repair_s);
  EXPECT_LE(none.spare_wait_s, none.interruptions * s.repair_s);
  // Without the waits the run is the run with spares: failures while it waits cost it nothing more.
  EXPECT_NEAR((none.wall_s - none.spare_wait_s) / always.wall_s, 1.0, 0.02);
  EXPECT_GT(none.wall_s, always.wall_s + 0.5 * always.interruptions * s.repair_s);
}

TEST(Campaign, SameSeedSameRunOtherSeedOtherRun) {
  CampaignSpec s = spec(200, 10, 240);
  s.seeds = 20;
  const CampaignResult a = simulate_campaign(s, inputs(30));
  const CampaignResult b = simulate_campaign(s, inputs(30));
  EXPECT_EQ(a.wall_s, b.wall_s);
  EXPECT_EQ(a.events, b.events);
  s.seed = 8;
  EXPECT_NE(simulate_campaign(s, inputs(30)).wall_s, a.wall_s);
}

TEST(Campaign, CostEnergyAndGpuHoursFollowTheMeanRun) {
  CampaignSpec s = spec(100, 10, 240);
  s.gpu_hour_price = 2.5;
  CampaignInputs in = inputs(30);
  in.gpus = 8;
  s.failures.gpu /= 8;  // the same job MTBF over 8 GPUs
  in.training_power_w = 8000;
  in.waiting_power_w = 2000;
  in.pue = 1.2;
  const CampaignResult r = simulate_campaign(s, in);
  EXPECT_NEAR(r.gpu_hours, 8 * r.wall_s / kHour, 1e-9);
  EXPECT_NEAR(r.cost, 2.5 * r.gpu_hours, 1e-9);
  ASSERT_TRUE(r.energy_mwh.has_value());
  // Between all of the wall time at the waiting power and all of it at the training power.
  EXPECT_GT(*r.energy_mwh, 1.2 * 2000 * r.wall_s / 3.6e9);
  EXPECT_LT(*r.energy_mwh, 1.2 * 8000 * r.wall_s / 3.6e9);
  EXPECT_GT(*r.energy_mwh, 1.2 * 8000 * r.work_s / 3.6e9);  // the work, and the work redone
  in.training_power_w = 0;
  EXPECT_FALSE(simulate_campaign(s, in).energy_mwh.has_value());
}

TEST(Campaign, RefusesWhatCannotRun) {
  CampaignSpec s = spec(100, 10, 240);
  s.interval_where = "f.yaml:3:5: campaign.checkpoint.interval: ";
  s.campaign_where = "f.yaml:1:1: campaign: ";
  s.checkpoint_interval_s = 100;
  try {
    simulate_campaign(s, inputs(300));
    FAIL() << "an interval shorter than the write ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("f.yaml:3:5: campaign.checkpoint.interval: 100.0 s (100 steps of 1.000 s) "
                                         "is shorter than the checkpoint write (300.0 s"),
              std::string::npos)
        << e.what();
  }
  s.checkpoint_interval_s = 0.5;
  EXPECT_THROW(simulate_campaign(s, inputs(0.1)), InputError);  // shorter than one step
  s.checkpoint_interval_s.reset();
  s.steps.reset();
  EXPECT_THROW(simulate_campaign(s, inputs(30)), InputError);  // neither tokens nor steps
  // A failure every 6 minutes against a 2 h checkpoint: no progress.
  CampaignSpec hopeless = spec(100, 0.1, 240);
  hopeless.campaign_where = "f.yaml:1:1: campaign: ";
  try {
    simulate_campaign(hopeless, inputs(2 * kHour));
    FAIL() << "a campaign without progress ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the run would not finish"), std::string::npos) << e.what();
  }
}

// The progress callback sees every seeded run once, in order, and the result is the one without it.
TEST(Campaign, ProgressCountsEverySeededRun) {
  CampaignSpec s = spec(1000, 10, 240);
  s.seeds = 200;
  std::vector<int> done;
  const CampaignResult with = simulate_campaign(s, inputs(30), [&](int d, int total) {
    EXPECT_EQ(total, 200);
    done.push_back(d);
  });
  ASSERT_EQ(done.size(), 200u);
  for (size_t i = 0; i < done.size(); ++i) EXPECT_EQ(done[i], static_cast<int>(i) + 1);
  const CampaignResult without = simulate_campaign(s, inputs(30));
  EXPECT_EQ(with.wall_s, without.wall_s);
  EXPECT_EQ(with.events, without.events);
}

}  // namespace campaign_test
}  // namespace clustersim
