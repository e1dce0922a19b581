#include "parallelism/search_space.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "core/error.h"

namespace clustersim {
namespace search_space_test {

int divisor_count(int n) {
  int c = 0;
  for (int d = 1; d <= n; ++d) c += n % d == 0 ? 1 : 0;
  return c;
}

TrainingSpec training(int64_t global_batch) {
  TrainingSpec t;
  t.seq_len = 2048;
  t.global_batch = global_batch;
  t.micro_batch = 1;
  return t;
}

// L6 of docs/cases/layouts.md: 5,128 GPUs, 105 layers, 128 heads.
SearchContext l6_context() { return SearchContext{.gpus = 5128, .gpus_per_node = 8, .layers = 105, .heads = 128}; }

TEST(UnevenStages, TakeTheSurplusFromTheFirstAndLastStageInStepsOfVpp) {
  // Llama 3 405B: 126 layers on 16 stages; with one chunk per stage the first and last stage hold one
  // layer less (Dubey et al. 2024 §3.3.2): ceil(126/16) = 8, surplus 8·16 − 126 = 2.
  std::vector<int> expected(16, 8);
  expected.front() = 7;
  expected.back() = 7;
  EXPECT_EQ(uneven_stage_layers(126, 16, 1), expected);
  // With two chunks per stage every stage needs an even count: the surplus 2 comes off the first.
  expected.assign(16, 8);
  expected.front() = 6;
  EXPECT_EQ(uneven_stage_layers(126, 16, 2), expected);
  EXPECT_EQ(uneven_stage_layers(30, 4, 1), (std::vector<int>{7, 8, 8, 7}));
  // 5 layers cannot be cut into chunks of 2; 3 layers cannot fill 4 stages.
  EXPECT_TRUE(uneven_stage_layers(5, 4, 2).empty());
  EXPECT_TRUE(uneven_stage_layers(3, 4, 1).empty());
  for (int pp : {3, 5, 7, 16, 32}) {
    const auto stages = uneven_stage_layers(126, pp, 1);
    ASSERT_FALSE(stages.empty()) << pp;
    EXPECT_EQ(std::accumulate(stages.begin(), stages.end(), 0), 126) << pp;
  }
}

TEST(SearchSpace, DerivedListsAreTheFactorizationsOfTheGpus) {
  // 16 GPUs in nodes of 8, 24 layers, 16 heads. tp: divisors of 16 heads <= 8 dividing 16 GPUs
  // = {1, 2, 4, 8}; pp: divisors of 24 layers dividing 16 = {1, 2, 4, 8}; dp = 16 / (tp · pp).
  const SearchContext context{.gpus = 16, .gpus_per_node = 8, .layers = 24, .heads = 16};
  const auto candidates = expand_search_space(SearchSpace{}, Layout{}, training(32), context);
  std::set<int> tps, pps;
  size_t expected = 0;
  const size_t tp_values = 4;
  for (int pp : {1, 2, 4, 8}) {
    // vpp = 1 with 1F1B, and every other divisor of 24/pp with the interleaved schedule (pp > 1).
    expected += tp_values * static_cast<size_t>(1 + (pp > 1 ? divisor_count(24 / pp) - 1 : 0));
  }
  EXPECT_EQ(candidates.size(), expected);
  for (const auto& c : candidates) {
    tps.insert(c.layout.tp);
    pps.insert(c.layout.pp);
    const int model_parallel = c.layout.tp * c.layout.pp;
    EXPECT_EQ(c.layout.dp, model_parallel <= 16 ? 16 / model_parallel : 0);
    EXPECT_EQ(c.layout.schedule == PipelineSchedule::kInterleaved1F1B, c.layout.vpp > 1);
    EXPECT_EQ(c.global_batch, 32);
    EXPECT_EQ(c.micro_batch, 1);
  }
  EXPECT_EQ(tps, (std::set<int>{1, 2, 4, 8}));
  EXPECT_EQ(pps, (std::set<int>{1, 2, 4, 8}));
}

TEST(SearchSpace, ListsMultiplyAndStructuralNonLayoutsAreLeftOut) {
  const SearchContext context{.gpus = 16, .gpus_per_node = 8, .layers = 24, .heads = 16};
  SearchSpace space;
  space.tp = {1, 2};
  space.pp = {2};
  space.vpp = {1, 3};
  space.micro_batch = {1, 2};
  space.recompute = {Recompute::kNone, Recompute::kFull};
  space.zero = {0, 1, 3};
  space.sequence_parallel = {false, true};
  space.schedule = {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kInterleaved1F1B};
  const auto candidates = expand_search_space(space, Layout{}, training(32), context);
  // (vpp, schedule) pairs that are layouts: (1, gpipe), (1, 1f1b), (3, interleaved) = 3;
  // sequence parallel: tp 1 only without it (1), tp 2 with and without (2).
  EXPECT_EQ(candidates.size(), static_cast<size_t>(3 * 2 * 2 * 3 * (1 + 2)));
}

// Megatron-LM turns sequence parallelism off at tp 1; the search keeps tp 1 (without it) when only
// sequence_parallel true is searched, instead of dropping it.
TEST(SearchSpace, TensorParallelOneRunsWithoutSequenceParallelism) {
  const SearchContext context{.gpus = 16, .gpus_per_node = 8, .layers = 24, .heads = 16};
  SearchSpace space;
  space.tp = {1, 2};
  space.pp = {1};
  space.sequence_parallel = {true};
  const auto candidates = expand_search_space(space, Layout{}, training(32), context);
  ASSERT_EQ(candidates.size(), 2U);
  for (const auto& c : candidates) EXPECT_EQ(c.layout.sequence_parallel, c.layout.tp > 1) << c.layout.tp;
}

// The base layout's overlap_param_gather applies to the candidates with a ZeRO stage, the only ones
// that gather parameters (the zero-0 candidates would otherwise be refused as a layout rule).
TEST(SearchSpace, ParameterGatherOverlapAppliesWhereParametersAreSharded) {
  const SearchContext context{.gpus = 8, .gpus_per_node = 8, .layers = 24, .heads = 16};
  SearchSpace space;
  space.tp = {1};
  space.pp = {1};
  space.zero = {0, 1, 3};
  Layout base;
  base.overlap_param_gather = true;
  const auto candidates = expand_search_space(space, base, training(32), context);
  ASSERT_EQ(candidates.size(), 3U);
  for (const auto& c : candidates) EXPECT_EQ(c.layout.overlap_param_gather, c.layout.zero_stage >= 1);
}

// With flash attention selective recomputation recomputes nothing (workloads/transformer.h), so
// it is the layout of recompute none: searched beside none it is left out; alone it stays. With
// naive attention the two differ and both are candidates.
TEST(SearchSpace, SelectiveRecomputeWithFlashAttentionIsTheLayoutOfNone) {
  const SearchContext context{.gpus = 16, .gpus_per_node = 8, .layers = 24, .heads = 16};
  SearchSpace space;
  space.tp = {2};
  space.pp = {1};
  space.recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  auto recomputes_of = [&](AttentionKernel attention) {
    TrainingSpec t = training(32);
    t.attention = attention;
    std::vector<Recompute> out;
    for (const auto& c : expand_search_space(space, Layout{}, t, context)) out.push_back(c.recompute);
    return out;
  };
  EXPECT_EQ(recomputes_of(AttentionKernel::kFlash), (std::vector<Recompute>{Recompute::kNone, Recompute::kFull}));
  EXPECT_EQ(recomputes_of(AttentionKernel::kNaive), space.recompute);
  space.recompute = {Recompute::kSelective, Recompute::kFull};
  EXPECT_EQ(recomputes_of(AttentionKernel::kFlash), space.recompute);
}

TEST(SearchSpace, IdleGpusTakeTheLargestDataParallelSizeForWhichTheBatchWorks) {
  SearchSpace space;
  space.tp = {8};
  space.pp = {35};
  space.vpp = {1};
  space.schedule = {PipelineSchedule::kOneFOneB};
  space.allow_idle_gpus = true;
  space.global_batch = GlobalBatchRule::kMaximum;
  // L6: floor(5128 / (8 · 35)) = 18 replicas, global batch 2520 = 140 · 18 (5,040 GPUs).
  auto c = expand_search_space(space, Layout{}, training(2520), l6_context());
  ASSERT_EQ(c.size(), 1U);
  EXPECT_EQ(c[0].layout.dp, 5128 / 280);
  EXPECT_EQ(c[0].global_batch, 2520);
  EXPECT_EQ(c[0].layout.world_size(), 5040);
  // A fixed batch of 2500 = 2²·5⁴: the largest dp <= 18 dividing it is 10.
  space.global_batch = GlobalBatchRule::kFixed;
  c = expand_search_space(space, Layout{}, training(2500), l6_context());
  ASSERT_EQ(c.size(), 1U);
  EXPECT_EQ(c[0].layout.dp, 10);
  // A maximum rounds down to a multiple of micro_batch · dp (· pp interleaved): 2000 → 111 · 18.
  space.global_batch = GlobalBatchRule::kMaximum;
  c = expand_search_space(space, Layout{}, training(2000), l6_context());
  EXPECT_EQ(c[0].global_batch, 2000 / 18 * 18);
  space.vpp = {3};
  space.schedule = {PipelineSchedule::kInterleaved1F1B};
  c = expand_search_space(space, Layout{}, training(2000), l6_context());
  EXPECT_EQ(c[0].global_batch, 2000 / (18 * 35) * (18 * 35));
}

TEST(SearchSpace, ExactGpuCountLeavesOnlyPipelineSizesDividingIt) {
  // L6 without idle GPUs: 5128 = 2³·641, so pp must divide both 5128 and the 105 layers: only 1.
  const auto c = expand_search_space(SearchSpace{}, Layout{}, training(2520), l6_context());
  for (const auto& x : c) {
    EXPECT_EQ(x.layout.pp, 1);
    EXPECT_LE(x.layout.tp, 8);
  }
}

TEST(SearchSpace, CountIsTheNumberOfCandidatesExpandedWithoutExpandingThem) {
  // Spaces that exercise each rule that leaves a combination out: derived lists, tp 1 without
  // sequence parallelism, selective beside none with flash attention, one schedule at pp 1,
  // vpp > 1 only interleaved, uneven stages, idle GPUs.
  const SearchContext context{.gpus = 64, .gpus_per_node = 8, .layers = 24, .heads = 32};
  std::vector<SearchSpace> spaces(5);
  spaces[1].sequence_parallel = {false, true};
  spaces[1].recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  spaces[1].zero = {0, 1, 3};
  spaces[1].micro_batch = {1, 2, 4};
  spaces[2].tp = {1, 2, 4};
  spaces[2].pp = {1, 3, 5};
  spaces[2].uneven_stages = true;
  spaces[2].schedule = {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kInterleaved1F1B};
  spaces[3].allow_idle_gpus = true;
  spaces[3].dp = {1, 2, 3};
  spaces[3].order = {"tp-cp-dp-pp", "tp-cp-pp-dp"};
  spaces[4].cp = {1, 2};
  spaces[4].ep = {1, 2, 4};
  spaces[4].vpp = {1, 2};
  for (const auto attention : {AttentionKernel::kFlash, AttentionKernel::kNaive}) {
    TrainingSpec t = training(64);
    t.attention = attention;
    for (size_t i = 0; i < spaces.size(); ++i) {
      const uint64_t expanded = expand_search_space(spaces[i], Layout{}, t, context).size();
      EXPECT_EQ(count_search_space(spaces[i], Layout{}, t, context), expanded) << "space " << i;
    }
  }
}

TEST(SearchSpace, ASpaceAboveItsBoundIsRefusedBeforeExpansionNamingTheKeyAndCount) {
  // tp, pp, dp and cp each listing 1 to 1,024: 1024^4 (about 1.1e12) layouts, which would take
  // hundreds of terabytes to hold.
  SearchSpace space;
  for (int v = 1; v <= 1024; ++v) {
    space.tp.push_back(v);
    space.pp.push_back(v);
    space.dp.push_back(v);
    space.cp.push_back(v);
  }
  space.vpp = {1};
  space.schedule = {PipelineSchedule::kOneFOneB};
  space.sequence_parallel = {true};
  const SearchContext context{.gpus = 1024, .gpus_per_node = 8, .layers = 1024, .heads = 1024};
  const uint64_t n = count_search_space(space, Layout{}, training(1024), context);
  EXPECT_EQ(n, uint64_t{1024} * 1024 * 1024 * 1024);
  try {
    expand_search_space(space, Layout{}, training(1024), context);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("search.max_candidates"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(n)), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(kDefaultMaxSearchCandidates)), std::string::npos) << message;
  }
  // The bound moves with the key: 8 values per list (8^4 = 4,096 layouts) pass a bound of 4,096 and
  // fail one of 4,095.
  for (auto* list : {&space.tp, &space.pp, &space.dp, &space.cp}) list->resize(8);
  space.max_candidates = 4096;
  EXPECT_EQ(expand_search_space(space, Layout{}, training(1024), context).size(), 4096u);
  space.max_candidates = 4095;
  EXPECT_THROW(expand_search_space(space, Layout{}, training(1024), context), InputError);
}

// A space that passes search.max_candidates is still refused when its candidates would hold more
// than half of the machine's memory (kSearchBytesPerCandidate each): 20 million candidates are
// 10.0 GB, above half of a 16 GiB machine and below half of a 128 GiB one.
TEST(SearchSpace, SpacesAboveHalfOfTheMachinesMemoryAreRefused) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  const uint64_t twenty_million = 20'000'000;
  EXPECT_NO_THROW(check_search_memory(twenty_million, 128 * kGiB));
  try {
    check_search_memory(twenty_million, 16 * kGiB);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("20000000 layouts"), std::string::npos) << message;
    EXPECT_NE(message.find("10.0 GB"), std::string::npos) << message;
    EXPECT_NE(message.find("17.2 GB"), std::string::npos) << message;
  }
  // The bound is exact: kSearchMemoryShare of the memory holds this many candidates and no more.
  const uint64_t memory = 24 * kGiB;
  const auto fits = static_cast<uint64_t>(kSearchMemoryShare * static_cast<double>(memory)) /
                    static_cast<uint64_t>(kSearchBytesPerCandidate);
  EXPECT_NO_THROW(check_search_memory(fits, memory));
  EXPECT_THROW(check_search_memory(fits + 1, memory), InputError);
  EXPECT_NO_THROW(check_search_memory(twenty_million, 0));  // unknown memory: not checked
  EXPECT_GT(physical_memory_bytes(), 0u);
}

TEST(SearchSpace, AnEmptySpaceIsAnInputError) {
  SearchSpace space;
  space.pp = {2};
  space.vpp = {2};
  space.schedule = {PipelineSchedule::kOneFOneB};  // vpp 2 needs interleaved-1f1b: nothing is a layout
  const SearchContext context{.gpus = 8, .gpus_per_node = 8, .layers = 8, .heads = 8};
  try {
    expand_search_space(space, Layout{}, training(8), context);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
}

TEST(SearchSpace, RerankIsAutoOrACount) {
  EXPECT_EQ(parse_search_rerank("auto"), kRerankAuto);
  EXPECT_EQ(parse_search_rerank("0"), 0);
  EXPECT_EQ(parse_search_rerank("40"), 40);
  EXPECT_EQ(parse_search_rerank(std::to_string(kMaxSearchRerank)), kMaxSearchRerank);
  for (const char* bad : {"", "Auto", "-1", "2.5", "1e3", "20 layouts", "1000001", "99999999999"}) {
    EXPECT_THROW(parse_search_rerank(bad), InputError) << bad;
  }
  try {
    parse_search_rerank("fast");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("auto or a whole number"), std::string::npos) << e.what();
  }
  SearchSpace s;
  EXPECT_EQ(s.rerank, kRerankAuto);  // the default
  EXPECT_NO_THROW(validate_search_space(s, Bytes::gigabytes(80)));
  s.rerank_max = 0;
  EXPECT_THROW(validate_search_space(s, Bytes::gigabytes(80)), InputError);
  s.rerank_max = kDefaultRerankMax;
  s.rerank = -2;  // neither auto nor a count
  EXPECT_THROW(validate_search_space(s, Bytes::gigabytes(80)), InputError);
}

TEST(SearchSpace, MalformedValuesAndImpossibleConstraintsNameTheirKey) {
  const Bytes capacity = Bytes::gigabytes(80);
  auto message = [&](const SearchSpace& s) {
    try {
      validate_search_space(s, capacity);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  SearchSpace s;
  EXPECT_EQ(message(s), "");
  s.memory_headroom = capacity;
  EXPECT_NE(message(s).find("search.memory_headroom"), std::string::npos);
  s = SearchSpace{};
  s.zero = {4};
  EXPECT_NE(message(s).find("search.zero"), std::string::npos);
  s = SearchSpace{};
  s.order = {"tp-dp"};
  EXPECT_NE(message(s).find("search.order"), std::string::npos);
  s = SearchSpace{};
  s.tp = {0};
  EXPECT_NE(message(s).find("search.tp"), std::string::npos);
  s = SearchSpace{};
  s.top = 0;
  EXPECT_NE(message(s).find("search.top"), std::string::npos);
}

TEST(SearchSpace, TensorGroupsStayInsideNodesOnlyWhenTheirBlocksTileTheNode) {
  Layout l{.tp = 8, .pp = 2, .dp = 4};
  EXPECT_TRUE(tensor_groups_within_nodes(l, 8));   // ranks 8k .. 8k+7
  EXPECT_FALSE(tensor_groups_within_nodes(l, 4));  // a block of 8 spans two nodes of 4
  l.order = "dp-tp-cp-pp";                         // tp ranks dp = 4 apart: blocks of 32
  EXPECT_FALSE(tensor_groups_within_nodes(l, 8));
  l = Layout{.tp = 4, .dp = 6};
  EXPECT_FALSE(tensor_groups_within_nodes(l, 6));  // the second block straddles GPUs 4..7
  EXPECT_TRUE(tensor_groups_within_nodes(Layout{.tp = 1}, 6));
  // Sizes inside tp whose product leaves int (it wrapped to a block of 0 GPUs: a division by zero).
  l = Layout{.tp = 2, .dp = 1 << 16, .cp = 1 << 16};
  l.order = "cp-dp-tp-pp";
  EXPECT_FALSE(tensor_groups_within_nodes(l, 8));
}

TEST(SearchObjective, NamesRoundTripAndUnknownNamesListTheValidOnes) {
  for (auto o : {SearchObjective::kTokensPerSecond, SearchObjective::kStepTime, SearchObjective::kMfu,
                 SearchObjective::kCostPerToken}) {
    EXPECT_EQ(parse_search_objective(name_of(o)), o);
  }
  try {
    parse_search_objective("speed");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tokens_per_s"), std::string::npos);
  }
}

}  // namespace search_space_test
}  // namespace clustersim
