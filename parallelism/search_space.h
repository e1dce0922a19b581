#pragma once

// The space of parallel layouts a layout search explores, and its expansion into candidates.
//
// A candidate is one Layout together with the training options that change with it (micro batch,
// global batch, activation recomputation). The space is the cross product of the value lists
// below. What is left out of the product, silently, is only what is not a layout at all or the same
// layout twice: vpp > 1 without the interleaved schedule, the interleaved schedule with vpp = 1 or
// pp = 1, sequence parallelism with tp = 1, selective recompute beside none with flash attention.
// Everything else is a candidate, and a candidate that breaks a rule is rejected later with a
// counted reason (layout_search.h).
//
// Absent lists mean (the search: section of a scenario, scenarios/scenario.h):
//   tp   every t that divides the attention heads, is at most the GPUs per node when tensor
//        parallelism must stay inside a node, and divides the GPU count unless idle GPUs are
//        allowed ("all factorizations of the GPU count");
//   pp   every p up to the layer count that divides the GPU count (unless idle GPUs are allowed)
//        and the layer count (unless uneven stages are allowed);
//   dp   derived: GPUs / (tp·cp·pp); with idle GPUs allowed, the largest dp that fits in the GPUs
//        and for which the global batch works out (see GlobalBatchRule);
//   vpp  every v that divides the layers of a stage;
//   schedule 1f1b and interleaved-1f1b;
//   cp, ep, etp, micro_batch, recompute, zero, sequence_parallel, order: the scenario's own value.
// Sequence parallelism needs tp > 1: tp 1 candidates run without it (as Megatron-LM turns it off at
// tp 1), once, whether or not false is among the sequence_parallel values.
// With flash attention (a fused kernel never stores the s×s scores) selective recomputation
// recomputes nothing: when none is among the recompute values, selective is left out as the same
// layout; searched alone, it stays (and runs as none would).
// With ep or etp lists a mixture-of-experts model's expert layers are re-partitioned per candidate;
// combinations where ep·etp does not divide tp·cp·dp or ep the experts are rejected by the layout
// rules (counted under layout_rule), as is tp > 1 without sequence parallelism for such a model.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "parallelism/layout.h"
#include "workloads/training_spec.h"

namespace clustersim {

// Default bound on a search's layouts (search.max_candidates), and the largest it may be raised to.
// A candidate takes about 0.5 KB while the space is held (LayoutCandidate with its Layout), and a
// valid one an analytical simulation of milliseconds to a second: 10^6 candidates are about 0.5 GB
// held; 10^8 is the most the key accepts (about 50 GB: beyond a 24 GiB machine on purpose, for
// larger hosts).
inline constexpr int64_t kDefaultMaxSearchCandidates = 1'000'000;
inline constexpr int64_t kMaxSearchCandidates = 100'000'000;

// What "best" means. Tokens/s, step time and MFU agree when every layout uses all GPUs and the
// same global batch; they differ when idle GPUs or a maximum global batch are allowed.
// Cost per token = GPUs used × step time / tokens per step (GPU-seconds per token; times a GPU-hour
// price when one is given).
// The last three need the scenario's campaign: (campaign/campaign.h), priced by its closed form
// (the exact expectation, no Monte-Carlo): the wall-clock time of the whole run, its GPU-hours (or
// cost with a price), and its energy (needs the power model).
enum class SearchObjective { kTokensPerSecond, kStepTime, kMfu, kCostPerToken, kTimeToTrain, kCampaignCost, kEnergy };

// "tokens_per_s", "step_time", "mfu", "cost_per_token", "time_to_train", "cost", "energy".
std::string_view name_of(SearchObjective objective);

// SearchSpace::rerank's value for search.rerank: auto.
inline constexpr int kRerankAuto = -1;
// The bound of search.rerank and search.rerank_max.
inline constexpr int kMaxSearchRerank = 1'000'000;
// search.rerank_max's default: the most layouts search.rerank: auto re-simulates. A choice, not a
// measurement: eight times the 20 that a fixed re-ranking simulated before auto (four doublings of
// the default top of 10), which keeps the worst case of a 64-GPU flow search within minutes.
inline constexpr int kDefaultRerankMax = 160;
// The first round of search.rerank: auto takes the best max(search.top, kAutoRerankFirst): half the
// 20 that the fixed re-ranking took by default, so that with its first doubling auto re-ranks at
// least as many layouts as the fixed default did, whatever the top.
inline constexpr int kAutoRerankFirst = 10;

// search.rerank's text: "auto" (kRerankAuto) or a whole number 0..kMaxSearchRerank. Throws
// InputError naming what is valid.
int parse_search_rerank(std::string_view text);
// Throws InputError naming the valid objectives.
SearchObjective parse_search_objective(std::string_view text);

// kFixed: every layout trains the scenario's global batch. kMaximum: the scenario's global batch is
// an upper bound; each layout uses the largest batch below it that micro_batch · dp (· pp for the
// interleaved schedule, Megatron-LM's requirement) divides.
enum class GlobalBatchRule { kFixed, kMaximum };

struct SearchSpace {
  std::vector<int> tp;  // empty: derived (see above)
  std::vector<int> pp;
  std::vector<int> dp;
  std::vector<int> cp;   // empty: the scenario's
  std::vector<int> ep;   // empty: the scenario's
  std::vector<int> etp;  // empty: the scenario's
  std::vector<int> vpp;
  std::vector<int64_t> micro_batch;  // empty: the scenario's
  std::vector<Recompute> recompute;
  std::vector<int> zero;
  // Hybrid-sharding group sizes (Layout::dp_shard; 0 = full sharding); empty: the scenario's. A
  // candidate whose size does not apply (ZeRO 0, or not a divisor of its dp below dp) is rejected.
  std::vector<int> dp_shard;
  std::vector<bool> sequence_parallel;
  std::vector<PipelineSchedule> schedule;  // empty: 1f1b and interleaved-1f1b
  std::vector<std::string> order;
  GlobalBatchRule global_batch = GlobalBatchRule::kFixed;
  bool allow_idle_gpus = false;
  // pp values that do not divide the layers get explicit stage_layers: every stage the same
  // multiple of vpp, the surplus taken vpp layers at a time from the first stage, then the last,
  // alternately (the first stage also holds the embedding and the last the LM head; Llama 3 removes
  // one layer from each, Dubey et al. 2024 §3.3.2).
  bool uneven_stages = false;

  SearchObjective objective = SearchObjective::kTokensPerSecond;
  double gpu_hour_price = 0;  // price of one GPU for one hour, for cost reports; 0 = not given
  // Constraints.
  Bytes memory_headroom;        // free memory every GPU must keep at its peak
  bool tp_within_node = true;   // every tensor-parallel group inside one node
  // Output.
  int top = 10;  // layouts reported
  // Best screened layouts re-simulated at the scenario's fidelity: kRerankAuto (layout_search.h,
  // "re-ranking": doubled from `top` until the winner holds, at most rerank_max), or that many
  // (at least `top`; 0 = none).
  int rerank = kRerankAuto;
  int rerank_max = kDefaultRerankMax;
  // auto's first round: the best max(top, rerank_first) (no YAML key; tests start lower).
  int rerank_first = kAutoRerankFirst;
  // Bound on the layouts the space may expand to (count_search_space), checked before expanding.
  int64_t max_candidates = kDefaultMaxSearchCandidates;
};

// One point of the space.
struct LayoutCandidate {
  Layout layout;                     // dp = 0 when no data-parallel size fits (rejected as world_size)
  int64_t micro_batch = 1;
  int64_t global_batch = 0;          // 0 when no batch <= the maximum fits (rejected as global_batch)
  Recompute recompute = Recompute::kNone;

  // The training spec `base` with this candidate's micro batch, global batch and recompute.
  TrainingSpec training(const TrainingSpec& base) const;
};

// What the expansion needs to know about the model and the cluster.
struct SearchContext {
  int gpus = 0;           // GPUs of the cluster
  int gpus_per_node = 0;  // 0: heterogeneous (tensor groups are then not checked against nodes)
  int layers = 0;
  int heads = 0;
};

// The candidates of `space` in a fixed order (tp, cp, pp, vpp, schedule, ep, etp, micro batch,
// recompute, zero, sequence parallel, order, dp, outermost first): the same on every process and
// thread. Layout fields the space does not vary (overlap options, bucket size, ...) come from `base`
// (tp_comm_overlap only where tp > 1 with sequence parallelism, zero3_bucket_elements only with ZeRO-3,
// grad_reduce_op only with the ZeRO stages it applies to, else auto; overlap_param_gather only with ZeRO >= 1);
// `base.stage_layers` is not used (stages are even, or uneven_stages). Throws InputError when no
// combination is a layout at all (an empty space), naming the lists to widen, and, before expanding,
// when the space holds more than space.max_candidates layouts (check_search_space_size).
std::vector<LayoutCandidate> expand_search_space(const SearchSpace& space, const Layout& base,
                                                 const TrainingSpec& base_training, const SearchContext& context);

// The number of candidates expand_search_space() returns for these arguments, counted without
// expanding them (list lengths multiplied, the left-out combinations subtracted): microseconds
// even for a space of 10^12 layouts. Saturates at 2^62.
uint64_t count_search_space(const SearchSpace& space, const Layout& base, const TrainingSpec& base_training,
                            const SearchContext& context);

// Memory a search holds per candidate of its space until it ends (the candidate, its screening
// outcome with the rejection message, and the indices of the phases). Measured, not tuned: Release
// build (g++ 12), `clustersim search scenarios/search/gpt3-1.3b-2-dgx-h100.yaml` with tp, pp, dp and
// cp each listing 1..32 (1,540,096 candidates, 104 valid) peaked at 757,384 KiB of resident memory
// (GNU time's %M), with 1..16 (126,976 candidates) at 69,156 KiB: (757,384 − 69,156) KiB / 1,413,120
// candidates = 498.7 bytes.
inline constexpr int64_t kSearchBytesPerCandidate = 499;

// The largest share of the machine's physical memory a search may plan to hold: the other half is
// left to the simulations of the valid candidates, the process and whatever else the machine runs.
inline constexpr double kSearchMemoryShare = 0.5;

// Throws InputError when `candidates` candidates (kSearchBytesPerCandidate each) would hold more
// than kSearchMemoryShare of `physical_memory_bytes`, naming the count, both sizes in GB and the lists
// to shorten. `physical_memory_bytes` 0: unknown, no check.
void check_search_memory(uint64_t candidates, uint64_t physical_memory_bytes);

// This machine's physical memory in bytes (sysconf: _SC_PHYS_PAGES × _SC_PAGE_SIZE); 0 if unknown.
uint64_t physical_memory_bytes();

// Throws InputError naming search.max_candidates, the count and the bound, when the space holds
// more than space.max_candidates layouts, and (check_search_memory) when it would not fit in half
// of this machine's memory. expand_search_space() calls it first.
void check_search_space_size(const SearchSpace& space, const Layout& base, const TrainingSpec& base_training,
                             const SearchContext& context);

// Checks the space itself, before any candidate: lists present but empty, values out of range,
// top below 1, rerank below 0 (other than auto), rerank_max below 1, a memory headroom not below `capacity` (impossible constraint). Throws
// InputError naming the search.* key, the value and what is valid.
void validate_search_space(const SearchSpace& space, Bytes capacity);

// True when every tensor-parallel group of `layout` lies inside one node of `gpus_per_node` GPUs
// (rank r on GPU r, GPUs numbered node-major; rank_grid.h): the tp ranks are `stride` apart in the
// rank order, so the blocks of stride · tp consecutive ranks must tile the nodes. Always true for
// tp = 1 or an unknown node size (0).
bool tensor_groups_within_nodes(const Layout& layout, int gpus_per_node);

// Layers per stage for pp stages of v chunks under the uneven rule above, or an empty vector when
// no such split exists (layers not a multiple of v, or a stage would be left without layers).
std::vector<int> uneven_stage_layers(int layers, int pp, int v);

}  // namespace clustersim
