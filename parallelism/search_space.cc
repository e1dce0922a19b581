#include "parallelism/search_space.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <utility>

#include <unistd.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {

std::string_view name_of(SearchObjective objective) {
  switch (objective) {
    case SearchObjective::kTokensPerSecond: return "tokens_per_s";
    case SearchObjective::kStepTime: return "step_time";
    case SearchObjective::kMfu: return "mfu";
    case SearchObjective::kCostPerToken: return "cost_per_token";
    case SearchObjective::kTimeToTrain: return "time_to_train";
    case SearchObjective::kCampaignCost: return "cost";
    case SearchObjective::kEnergy: return "energy";
  }
  return "?";
}

SearchObjective parse_search_objective(std::string_view text) {
  for (auto o : {SearchObjective::kTokensPerSecond, SearchObjective::kStepTime, SearchObjective::kMfu,
                 SearchObjective::kCostPerToken, SearchObjective::kTimeToTrain, SearchObjective::kCampaignCost,
                 SearchObjective::kEnergy}) {
    if (name_of(o) == text) return o;
  }
  throw InputError(fmt::format("unknown search objective \"{}\" (valid: tokens_per_s, step_time, mfu, cost_per_token, "
                               "time_to_train, cost, energy)",
                               text));
}

int parse_search_rerank(std::string_view text) {
  if (text == "auto") return kRerankAuto;
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 0 || value > kMaxSearchRerank) {
    throw InputError(fmt::format("\"{}\" is not auto or a whole number of layouts in [0, {}] (0: none re-simulated)",
                                 excerpt(text, 60), kMaxSearchRerank));
  }
  return value;
}

TrainingSpec LayoutCandidate::training(const TrainingSpec& base) const {
  TrainingSpec t = base;
  t.micro_batch = micro_batch;
  t.global_batch = global_batch;
  t.recompute = recompute;
  return t;
}

std::vector<int> uneven_stage_layers(int layers, int pp, int v) {
  if (pp < 1 || v < 1 || layers % v != 0) return {};
  // Every stage the same multiple of v, at least layers / pp.
  const int per_stage = (layers + pp - 1) / pp;
  const int rounded = (per_stage + v - 1) / v * v;
  std::vector<int> out(static_cast<size_t>(pp), rounded);
  int surplus = rounded * pp - layers;  // a multiple of v
  bool first = true;
  while (surplus > 0) {
    int& stage = first || pp == 1 ? out.front() : out.back();
    if (stage - v < v) return {};
    stage -= v;
    surplus -= v;
    first = !first;
  }
  return out;
}

namespace {

void require_at_least_one(const std::vector<int>& values, const char* key) {
  for (int v : values) {
    if (v < 1) {
      throw InputError(fmt::format("search.{} contains {}: values must be >= 1", key, v))
          .about({fmt::format("search.{}", key)});
    }
  }
}

// The position of "tp" in the dense rank order and the product of the sizes inside it (capped
// above the int range, where no node is that large).
int64_t tensor_stride(const Layout& l) {
  constexpr int64_t kCap = int64_t{1} << 32;
  int64_t stride = 1;
  size_t start = 0;
  const std::string& order = l.order;
  while (start <= order.size()) {
    const size_t end = std::min(order.find('-', start), order.size());
    const std::string part = order.substr(start, end - start);
    if (part == "tp") return stride;
    if (part == "cp") stride = std::min(stride * l.cp, kCap);
    if (part == "dp") stride = std::min(stride * l.dp, kCap);
    if (part == "pp") stride = std::min(stride * l.pp, kCap);
    start = end + 1;
  }
  return stride;
}

}  // namespace

void validate_search_space(const SearchSpace& space, Bytes capacity) {
  require_at_least_one(space.tp, "tp");
  require_at_least_one(space.pp, "pp");
  require_at_least_one(space.dp, "dp");
  require_at_least_one(space.vpp, "vpp");
  require_at_least_one(space.cp, "cp");
  require_at_least_one(space.ep, "ep");
  require_at_least_one(space.etp, "etp");
  for (int64_t b : space.micro_batch) {
    if (b < 1)
      throw InputError(fmt::format("search.micro_batch contains {}: values must be >= 1", b))
          .about({"search.micro_batch"});
  }
  for (int z : space.zero) {
    if (z < 0 || z > 3)
      throw InputError(fmt::format("search.zero contains {}: valid ZeRO stages are 0, 1, 2, 3", z))
          .about({"search.zero"});
  }
  for (int k : space.dp_shard) {
    if (k < 0)
      throw InputError(fmt::format("search.dp_shard contains {}: values must be >= 0 (0 = full sharding)", k))
          .about({"search.dp_shard"});
  }
  for (const std::string& order : space.order) {
    // The order rule of validate_layout(), on a layout that passes every other rule.
    LayoutContext trivial;
    trivial.layers = trivial.heads = trivial.kv_heads = trivial.gpus = 1;
    trivial.global_batch = trivial.micro_batch = 1;
    trivial.seq_len = 2;
    Layout probe;
    probe.order = order;
    try {
      validate_layout(probe, trivial);
    } catch (const InputError& e) {
      throw InputError(fmt::format("search.order: {}", e.what())).about({"search.order"});
    }
  }
  if (space.top < 1) throw InputError(fmt::format("search.top = {}: must be >= 1", space.top)).about({"search.top"});
  if (space.rerank < 0 && space.rerank != kRerankAuto) {
    throw InputError(fmt::format("search.rerank = {}: must be auto or >= 0", space.rerank)).about({"search.rerank"});
  }
  if (space.rerank_first < 1) {
    throw InputError(fmt::format("the first re-ranking round of {} layouts: must be >= 1", space.rerank_first));
  }
  if (space.rerank_max < 1) {
    throw InputError(fmt::format("search.rerank_max = {}: must be >= 1", space.rerank_max))
        .about({"search.rerank_max"});
  }
  if (space.gpu_hour_price < 0) {
    throw InputError(fmt::format("search.gpu_hour_price = {}: must be >= 0", space.gpu_hour_price))
        .about({"search.gpu_hour_price"});
  }
  if (space.memory_headroom.count() < 0 || space.memory_headroom >= capacity) {
    throw InputError(
        fmt::format(
            "search.memory_headroom = {:.2f} GB leaves no memory on a {:.2f} GB GPU: no layout can satisfy it; use a "
            "headroom below the GPU capacity (e.g. \"4 GiB\")",
            space.memory_headroom.to_gb(), capacity.to_gb()))
        .about({"search.memory_headroom"});
  }
}

bool tensor_groups_within_nodes(const Layout& layout, int gpus_per_node) {
  if (layout.tp == 1 || gpus_per_node <= 0) return true;
  const int64_t block = tensor_stride(layout) * layout.tp;
  return block <= gpus_per_node && gpus_per_node % block == 0;
}

namespace {

// The value lists of a space with its absent lists derived (search_space.h), and the rules that
// leave a combination out as "not a layout" or "the same layout twice". Expansion and counting
// both read them, so the count is exactly the number of candidates expanded.
struct SpaceLists {
  std::vector<int> tps, pps, cps, eps, etps, zeros, dp_shards, dps;
  std::vector<PipelineSchedule> schedules;
  std::vector<int64_t> micro_batches;
  std::vector<Recompute> recomputes;
  std::vector<bool> sps;
  std::vector<std::string> orders;
  bool flash = false;
  bool has_recompute_none = false;
  bool has_sp_off = false;

  // With a fused attention kernel selective recomputation has nothing to re-run (the s×s scores
  // are never stored; workloads/transformer.h): the same layout as none.
  bool recompute_kept(Recompute r) const { return !(r == Recompute::kSelective && flash && has_recompute_none); }
  // Megatron-LM turns sequence parallelism off at tp 1 (megatron/training/arguments.py): tp 1 runs
  // without it, once, whatever the sp values searched.
  bool sp_kept(bool searched_sp, int tp) const { return !(searched_sp && tp == 1 && has_sp_off); }
};

SpaceLists lists_of(const SearchSpace& space, const Layout& base, const TrainingSpec& base_training,
                    const SearchContext& context) {
  const int gpus = context.gpus;
  const bool idle = space.allow_idle_gpus;
  SpaceLists l;
  l.tps = space.tp;
  if (l.tps.empty()) {
    for (int t = 1; t <= std::min(gpus, context.heads); ++t) {
      if (context.heads % t != 0) continue;
      if (space.tp_within_node && context.gpus_per_node > 0 && t > context.gpus_per_node) continue;
      if (!idle && gpus % t != 0) continue;
      l.tps.push_back(t);
    }
  }
  l.pps = space.pp;
  if (l.pps.empty()) {
    for (int p = 1; p <= std::min(gpus, context.layers); ++p) {
      if (!space.uneven_stages && context.layers % p != 0) continue;
      if (!idle && gpus % p != 0) continue;
      l.pps.push_back(p);
    }
  }
  l.schedules = space.schedule.empty() ? std::vector<PipelineSchedule>{PipelineSchedule::kOneFOneB,
                                                                       PipelineSchedule::kInterleaved1F1B}
                                       : space.schedule;
  l.micro_batches = space.micro_batch.empty() ? std::vector<int64_t>{base_training.micro_batch} : space.micro_batch;
  l.recomputes = space.recompute.empty() ? std::vector<Recompute>{base_training.recompute} : space.recompute;
  l.zeros = space.zero.empty() ? std::vector<int>{base.zero_stage} : space.zero;
  l.dp_shards = space.dp_shard.empty() ? std::vector<int>{base.dp_shard} : space.dp_shard;
  l.sps = space.sequence_parallel.empty() ? std::vector<bool>{base.sequence_parallel} : space.sequence_parallel;
  l.orders = space.order.empty() ? std::vector<std::string>{base.order} : space.order;
  l.cps = space.cp.empty() ? std::vector<int>{base.cp} : space.cp;
  l.eps = space.ep.empty() ? std::vector<int>{base.ep} : space.ep;
  l.etps = space.etp.empty() ? std::vector<int>{base.etp} : space.etp;
  l.dps = space.dp;  // empty: one derived value per combination
  l.flash = base_training.attention == AttentionKernel::kFlash;
  l.has_recompute_none = std::find(l.recomputes.begin(), l.recomputes.end(), Recompute::kNone) != l.recomputes.end();
  l.has_sp_off = std::find(l.sps.begin(), l.sps.end(), false) != l.sps.end();
  return l;
}

// The (vpp, schedule) pairs that make a layout with pp stages, in expansion order.
std::vector<std::pair<int, PipelineSchedule>> stage_variants(const SearchSpace& space, const SpaceLists& l, int layers,
                                                            int pp) {
  const bool uneven = space.uneven_stages && layers % pp != 0;
  std::vector<int> vpps = space.vpp;
  if (vpps.empty()) {
    if (uneven) {
      for (int v = 1; v <= (layers + pp - 1) / pp; ++v) {
        if (!uneven_stage_layers(layers, pp, v).empty()) vpps.push_back(v);
      }
    } else {
      vpps = layers % pp == 0 ? divisors(layers / pp) : std::vector<int>{1};
    }
  }
  // One stage has no pipeline, so its schedules are one layout: keep the first non-interleaved one listed.
  const auto first_flat = std::find_if(l.schedules.begin(), l.schedules.end(),
                                       [](PipelineSchedule x) { return x != PipelineSchedule::kInterleaved1F1B; });
  std::vector<std::pair<int, PipelineSchedule>> out;
  for (int v : vpps) {
    for (PipelineSchedule schedule : l.schedules) {
      const bool interleaved = schedule == PipelineSchedule::kInterleaved1F1B;
      if (interleaved != (v > 1) || (interleaved && pp == 1)) continue;  // not a layout
      if (pp == 1 && schedule != *first_flat) continue;
      out.emplace_back(v, schedule);
    }
  }
  return out;
}

// Multiplies, saturating at 2^62 (far above any bound a search may be given).
uint64_t saturating_product(uint64_t a, uint64_t b) {
  constexpr uint64_t kCap = uint64_t{1} << 62;
  if (a == 0 || b == 0) return 0;
  return a > kCap / b ? kCap : a * b;
}

uint64_t count_of(const SearchSpace& space, const SpaceLists& l, int layers) {
  // tp and the sequence-parallel values interact (sp_kept); the pipeline variants depend on pp
  // alone; every other list multiplies.
  uint64_t tp_sp = 0;
  for (int tp : l.tps) {
    for (bool sp : l.sps) tp_sp += l.sp_kept(sp, tp) ? 1 : 0;
  }
  uint64_t stages = 0;
  for (int pp : l.pps) stages += stage_variants(space, l, layers, pp).size();
  const auto kept_recomputes = static_cast<uint64_t>(
      std::count_if(l.recomputes.begin(), l.recomputes.end(), [&](Recompute r) { return l.recompute_kept(r); }));
  uint64_t n = saturating_product(tp_sp, stages);
  for (size_t size : {l.cps.size(), l.eps.size(), l.etps.size(), l.micro_batches.size(), l.zeros.size(),
                      l.dp_shards.size(), l.orders.size(), l.dps.empty() ? size_t{1} : l.dps.size()}) {
    n = saturating_product(n, size);
  }
  return saturating_product(n, kept_recomputes);
}

}  // namespace

uint64_t count_search_space(const SearchSpace& space, const Layout& base, const TrainingSpec& base_training,
                            const SearchContext& context) {
  check_invariant(context.gpus > 0 && context.layers > 0 && context.heads > 0, "count_search_space: empty context");
  return count_of(space, lists_of(space, base, base_training, context), context.layers);
}

void check_search_memory(uint64_t candidates, uint64_t physical_memory_bytes) {
  if (physical_memory_bytes == 0) return;
  const double needed = static_cast<double>(candidates) * static_cast<double>(kSearchBytesPerCandidate);
  const double allowed = kSearchMemoryShare * static_cast<double>(physical_memory_bytes);
  if (needed <= allowed) return;
  throw InputError(fmt::format(
      "the search space holds {} layouts, about {:.1f} GB while the search runs ({} bytes each), more than half of "
      "this machine's {:.1f} GB of memory; shorten the search lists (tp, pp, dp, cp, vpp, micro_batch, ...) or "
      "search on a machine with more memory",
      candidates, needed * 1e-9, kSearchBytesPerCandidate, static_cast<double>(physical_memory_bytes) * 1e-9));
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

void check_search_space_size(const SearchSpace& space, const Layout& base, const TrainingSpec& base_training,
                             const SearchContext& context) {
  const uint64_t n = count_search_space(space, base, base_training, context);
  if (n <= static_cast<uint64_t>(space.max_candidates)) {
    check_search_memory(n, physical_memory_bytes());
    return;
  }
  throw InputError(
      fmt::format("the search space holds {}{} layouts, above search.max_candidates = {} (each takes memory, and the "
                  "valid ones "
                  "a simulation); shorten the search lists (tp, pp, dp, cp, vpp, micro_batch, ...) or raise "
                  "search.max_candidates (at most {})",
                  n >= (uint64_t{1} << 62) ? "more than " : "", n, space.max_candidates, kMaxSearchCandidates))
      .about({"search.max_candidates"});
}

std::vector<LayoutCandidate> expand_search_space(const SearchSpace& space, const Layout& base,
                                                 const TrainingSpec& base_training, const SearchContext& context) {
  check_invariant(context.gpus > 0 && context.layers > 0 && context.heads > 0, "expand_search_space: empty context");
  check_search_space_size(space, base, base_training, context);
  const int gpus = context.gpus;
  const int layers = context.layers;
  const bool idle = space.allow_idle_gpus;
  const SpaceLists l = lists_of(space, base, base_training, context);
  const int64_t batch = base_training.global_batch;

  // Largest global batch <= the maximum that `unit` divides (0 if none).
  auto batch_for = [&](int64_t unit) -> int64_t {
    if (space.global_batch == GlobalBatchRule::kFixed) return batch;
    return batch / unit * unit;
  };
  // The data-parallel sizes of a (tp, pp, micro batch, schedule) combination.
  auto dps_for = [&](int tp, int cp, int pp, int64_t mb, bool interleaved) -> std::vector<int> {
    if (!l.dps.empty()) return l.dps;
    const int64_t model_parallel = size_product({tp, cp, pp}).value_or(int64_t{gpus} + 1);
    if (!idle) return {gpus % model_parallel == 0 ? static_cast<int>(gpus / model_parallel) : 0};
    const int most = static_cast<int>(gpus / model_parallel);
    if (most == 0 || space.global_batch == GlobalBatchRule::kMaximum) return {most};
    for (int d = most; d >= 1; --d) {
      const int64_t unit = mb * d;
      if (batch % unit != 0) continue;
      if (interleaved && (batch / unit) % pp != 0) continue;
      return {d};
    }
    return {most};  // no dp makes the batch work: rejected for the batch with the largest dp
  };

  std::vector<LayoutCandidate> out;
  for (int tp : l.tps) {
    for (int cp : l.cps) {
      for (int pp : l.pps) {
        const bool uneven = space.uneven_stages && layers % pp != 0;
        for (const auto& [v, schedule] : stage_variants(space, l, layers, pp)) {
          const bool interleaved = schedule == PipelineSchedule::kInterleaved1F1B;
          for (int ep : l.eps) {
            for (int etp : l.etps) {
              for (int64_t mb : l.micro_batches) {
                for (Recompute recompute : l.recomputes) {
                  if (!l.recompute_kept(recompute)) continue;
                  for (int zero : l.zeros) {
                    for (bool searched_sp : l.sps) {
                      if (!l.sp_kept(searched_sp, tp)) continue;  // the sp = false variant stands for it
                      const bool sp = searched_sp && tp > 1;
                      for (const std::string& order : l.orders) {
                        for (int dp : dps_for(tp, cp, pp, mb, interleaved)) {
                         for (int dp_shard : l.dp_shards) {
                          LayoutCandidate c;
                          c.layout = base;
                          c.layout.tp = tp;
                          c.layout.cp = cp;
                          c.layout.pp = pp;
                          c.layout.dp = dp;
                          c.layout.ep = ep;
                          c.layout.etp = etp;
                          c.layout.vpp = v;
                          c.layout.layers_per_virtual_stage = 0;
                          c.layout.stage_layers = uneven ? uneven_stage_layers(layers, pp, v) : std::vector<int>{};
                          c.layout.schedule = schedule;
                          c.layout.zero_stage = zero;
                          c.layout.dp_shard = dp_shard;
                          c.layout.sequence_parallel = sp;
                          // The base layout's overlap and ZeRO-3 gather choices apply where they can.
                          c.layout.tp_comm_overlap = base.tp_comm_overlap && tp > 1 && sp;
                          c.layout.zero3_bucket_elements = zero == 3 ? base.zero3_bucket_elements : 0;
                          c.layout.overlap_param_gather = base.overlap_param_gather && zero >= 1;
                          const bool op_applies =
                              base.grad_reduce_op == GradReduceOp::kAllReduce ? zero <= 1
                              : base.grad_reduce_op == GradReduceOp::kReduceScatter ? zero >= 1
                                                                                    : true;
                          c.layout.grad_reduce_op = op_applies ? base.grad_reduce_op : GradReduceOp::kAuto;
                          c.layout.order = order;
                          c.micro_batch = mb;
                          c.recompute = recompute;
                          c.global_batch = dp > 0 ? batch_for(mb * dp * (interleaved ? pp : 1)) : batch;
                          out.push_back(std::move(c));
                         }
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  if (out.empty()) {
    throw InputError(
        fmt::format(
            "the search space is empty: no combination of tp [{}], pp [{}], vpp and schedule is a layout (vpp > 1 "
            "needs "
            "schedule interleaved-1f1b and pp > 1; vpp = 1 needs 1f1b or gpipe; sequence_parallel needs tp > 1); widen "
            "search.tp, search.pp, search.vpp or search.schedule",
            fmt::join(l.tps, ", "), fmt::join(l.pps, ", ")))
        .about({"search.tp", "search.pp", "search.vpp", "search.schedule"});
  }
  return out;
}

}  // namespace clustersim
