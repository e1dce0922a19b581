#include "parallelism/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <set>

namespace clustersim {
namespace pipeline_schedule_test {

TEST(PipelineSchedule, L5InterleavedWarmupFollowsMegatronFormula) {
  const int p = 4, v = 2, m = 8;
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(warmup_passes(PipelineSchedule::kInterleaved1F1B, r, p, m, v), (p - r - 1) * 2 + (v - 1) * p);
  }
  // [10, 8, 6, 4] as in the case.
  EXPECT_EQ(warmup_passes(PipelineSchedule::kInterleaved1F1B, 0, p, m, v), 10);
  EXPECT_EQ(warmup_passes(PipelineSchedule::kInterleaved1F1B, 3, p, m, v), 4);
}

TEST(PipelineSchedule, L5PeakInflightIsTheInterleaveFactorTimesOneFOneB) {
  // First stage: 11 chunk-microbatches of 1/v of the stage = 11/2 stage-microbatches, against 4 for
  // 1F1B: 1 + (p − 1)/(p·v) = 1.375.
  const int p = 4, v = 2, m = 8;
  const int interleaved = peak_inflight_passes(PipelineSchedule::kInterleaved1F1B, 0, p, m, v);
  const int one_f_one_b = peak_inflight_passes(PipelineSchedule::kOneFOneB, 0, p, m, 1);
  EXPECT_EQ(interleaved, 11);
  EXPECT_EQ(one_f_one_b, p);
  EXPECT_DOUBLE_EQ(static_cast<double>(interleaved) / v / one_f_one_b, 1.0 + (p - 1.0) / (p * v));
  // p = 8, v = 3: the factor is 31/24 (peak counted in chunks of 1/3 stage).
  const int p8 = peak_inflight_passes(PipelineSchedule::kInterleaved1F1B, 0, 8, 24, 3);
  EXPECT_DOUBLE_EQ(static_cast<double>(p8) / 3 / 8, 31.0 / 24.0);
}

TEST(PipelineSchedule, EveryPassRunsOnceAndForwardPrecedesBackward) {
  for (auto s : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kInterleaved1F1B}) {
    const int p = 4, m = 8;
    const int v = s == PipelineSchedule::kInterleaved1F1B ? 2 : 1;
    for (int r = 0; r < p; ++r) {
      const auto passes = schedule_passes(s, r, p, m, v);
      ASSERT_EQ(passes.size(), static_cast<size_t>(2 * m * v));
      std::set<std::pair<int, int>> forwarded, backwarded;
      for (const auto& pass : passes) {
        const auto key = std::make_pair(pass.microbatch, pass.chunk);
        if (pass.kind == PassKind::kForward) {
          EXPECT_TRUE(forwarded.insert(key).second);
        } else {
          EXPECT_TRUE(forwarded.count(key)) << "backward before forward";
          EXPECT_TRUE(backwarded.insert(key).second);
        }
      }
      EXPECT_EQ(backwarded.size(), static_cast<size_t>(m * v));
    }
  }
}

TEST(PipelineSchedule, OneFOneBWarmupAndGpipe) {
  EXPECT_EQ(warmup_passes(PipelineSchedule::kOneFOneB, 0, 4, 8, 1), 3);
  EXPECT_EQ(warmup_passes(PipelineSchedule::kOneFOneB, 0, 8, 2, 1), 2);  // m < p: limited by m
  EXPECT_EQ(peak_inflight_passes(PipelineSchedule::kOneFOneB, 2, 4, 8, 1), 2);
  EXPECT_EQ(peak_inflight_passes(PipelineSchedule::kGpipe, 0, 4, 8, 1), 8);
}

}  // namespace pipeline_schedule_test
}  // namespace clustersim

namespace clustersim {
namespace pipeline_schedule_test {

// One stage has no pipeline: every schedule runs each micro-batch forward then backward, one at a
// time (Megatron-LM's forward_backward_no_pipelining), so GPipe holds one micro-batch, not m.
TEST(PipelineSchedule, OneStageRunsMicroBatchesOneAtATime) {
  for (PipelineSchedule schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
    EXPECT_EQ(warmup_passes(schedule, 0, 1, 8, 1), 0);
    EXPECT_EQ(peak_inflight_passes(schedule, 0, 1, 8, 1), 1);
    const std::vector<PipelinePass> passes = schedule_passes(schedule, 0, 1, 3, 1);
    ASSERT_EQ(passes.size(), 6u);
    for (size_t i = 0; i < passes.size(); ++i) {
      EXPECT_EQ(passes[i].kind, i % 2 == 0 ? PassKind::kForward : PassKind::kBackward) << i;
      EXPECT_EQ(passes[i].microbatch, static_cast<int>(i / 2)) << i;
    }
  }
  EXPECT_EQ(peak_inflight_passes(PipelineSchedule::kGpipe, 0, 2, 8, 1), 8);  // two stages: all m
}

}  // namespace pipeline_schedule_test
}  // namespace clustersim
