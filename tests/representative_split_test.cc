// Representative ranks split by tied component (parallelism/step_simulation.h,
// representative_lines) on a small fat tree, against every rank simulated: quick enough for every
// build, the sanitizers' included, where the 256-GPU comparisons (flow_aggregation_test.cc, label
// heavy) are not run.

#include <gtest/gtest.h>

#include <string>

#include "flow_step.h"

namespace clustersim {
namespace representative_split_test {

using Step = cli_test::FlowStep;

std::string scenario(const std::string& name) { return cli_test::shipped_scenario(name); }
Step step_of(const std::string& command) { return cli_test::flow_step_of(command); }

// 4 DGX H100 on a 4:1 fat tree of 16-port leaves (two leaves). Mixtral with pp 2 and ep 4 placed
// "dp-ep" (each expert group on both nodes of its stage): two tied components per stage, so 4
// simulated ranks with their tied mirrors and lanes. Llama-3-8B under ZeRO-3 (tp 2, pp 2, dp 8):
// one component per stage, its asynchronous gathers and reduce-scatters awaited with their tied
// mirrors, the other lanes' pipeline sends behind them. Measured: the same step as every rank
// (0.8710 s and 0.6470 s). Llama-3-8B at 32k tokens with tp 8 and cp 4 across the four nodes: one
// simulated rank, its four rings each at its own pace until they meet (+0.31 %; +2.0 % when the
// representative's ring paced them).
TEST(RepresentativeSplit, SmallFatTreeStepsMatchEveryRank) {
  const std::string fabric =
      " --set cluster.nodes=4 --set cluster.fabric.type=fat-tree --set cluster.fabric.leaf_ports=16"
      " --set cluster.fabric.oversubscription=4";
  struct Case {
    std::string command;
    int ranks;
  };
  for (const Case& c :
       {Case{"run " + scenario("mixtral-8x7b-64-h100.yaml") + fabric +
                 " --set parallelism.pp=2 --set parallelism.dp=8 --set parallelism.ep=4"
                 " --set parallelism.order=tp-cp-dp-ep-pp --set training.global_batch=32",
             4},
        Case{"run " + scenario("llama3-8b-dgx-h100.yaml") + fabric +
                 " --set parallelism.pp=2 --set parallelism.dp=8 --set parallelism.zero=3 --set training.global_batch=16",
             2},
        // A context-parallel ring across the nodes: its rings keep their own pace between the
        // tensor-parallel collectives where they meet (1 simulated rank).
        Case{"run " + scenario("llama3-8b-dgx-h100.yaml") + fabric +
                 " --set training.seq_len=32768 --set training.recompute=selective --set training.global_batch=4"
                 " --set parallelism.tp=8 --set parallelism.cp=4 --set parallelism.pp=1 --set parallelism.dp=1",
             1}}) {
    SCOPED_TRACE(c.command);
    const Step representative = step_of(c.command);
    const Step every = step_of(c.command + " --set simulation.representative=false");
    EXPECT_EQ(representative.simulated_ranks, c.ranks);
    EXPECT_EQ(every.simulated_ranks, 32);
    EXPECT_GT(representative.time_s, 0.0);
    EXPECT_NEAR(representative.time_s / every.time_s, 1.0, 0.01);
  }
}

}  // namespace representative_split_test
}  // namespace clustersim
