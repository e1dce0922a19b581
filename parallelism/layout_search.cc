#include "parallelism/layout_search.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <exception>
#include <fmt/format.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "parallelism/program_builder.h"
#include "parallelism/validate_run.h"
#include "workloads/shard_spec.h"
#include "workloads/transformer.h"

namespace clustersim {

std::string_view name_of(RejectReason reason) {
  switch (reason) {
    case RejectReason::kWorldSize: return "world_size";
    case RejectReason::kTensorSplit: return "tp_split";
    case RejectReason::kStageSplit: return "pp_split";
    case RejectReason::kGlobalBatch: return "global_batch";
    case RejectReason::kInterleavedMicrobatches: return "interleaved_microbatches";
    case RejectReason::kLayoutRule: return "layout_rule";
    case RejectReason::kTensorAcrossNodes: return "tp_across_nodes";
    case RejectReason::kOutOfMemory: return "out_of_memory";
    case RejectReason::kMemoryHeadroom: return "memory_headroom";
    case RejectReason::kSimulation: return "simulation";
  }
  return "?";
}

std::string_view describe(RejectReason reason) {
  switch (reason) {
    case RejectReason::kWorldSize: return "tp·cp·pp·dp does not match the GPU count";
    case RejectReason::kTensorSplit: return "attention heads, KV heads or ffn_hidden not divisible by tp";
    case RejectReason::kStageSplit: return "layers do not split evenly into pp stages of vpp chunks";
    case RejectReason::kGlobalBatch: return "global batch not a multiple of micro_batch · dp";
    case RejectReason::kInterleavedMicrobatches: return "interleaved 1F1B needs microbatches per pipeline % pp = 0";
    case RejectReason::kLayoutRule: return "another layout rule";
    case RejectReason::kTensorAcrossNodes: return "a tensor-parallel group would span nodes (search.tp_within_node)";
    case RejectReason::kOutOfMemory: return "peak memory above the GPU capacity";
    case RejectReason::kMemoryHeadroom: return "fits, but not with search.memory_headroom free";
    case RejectReason::kSimulation: return "rejected by the simulation";
  }
  return "?";
}

std::string_view name_of(RerankStop stop) {
  switch (stop) {
    case RerankStop::kNotNeeded: return "not_needed";
    case RerankStop::kOff: return "off";
    case RerankStop::kFixed: return "fixed";
    case RerankStop::kStable: return "stable";
    case RerankStop::kWholeSpace: return "all";
    case RerankStop::kLimit: return "limit";
  }
  return "?";
}

std::string_view describe(RerankStop stop) {
  switch (stop) {
    case RerankStop::kNotNeeded: return "every layout's fidelity is the screening's: nothing to re-simulate";
    case RerankStop::kOff: return "re-ranking off (search.rerank: 0)";
    case RerankStop::kFixed: return "a fixed count (search.rerank), not checked against more";
    case RerankStop::kStable: return "the winner held when the re-ranked layouts doubled";
    case RerankStop::kWholeSpace: return "every simulated layout re-ranked";
    case RerankStop::kLimit: return "search.rerank_max reached before the winner held over a doubling";
  }
  return "?";
}

namespace {

// Which rule of validate_layout() (in its order) or TrainingSpec::validate() `c` breaks, given that
// one of them threw.
RejectReason classify_rule(const LayoutCandidate& c, const LayoutContext& ctx) {
  const Layout& l = c.layout;
  if (l.dp < 1) return RejectReason::kWorldSize;
  if (l.tp < 1 || l.pp < 1 || l.cp < 1 || l.vpp < 1) return RejectReason::kLayoutRule;
  const std::optional<int64_t> world = size_product({l.tp, l.cp, l.pp, l.dp});
  if (!world || (*world != ctx.gpus && !(ctx.allow_idle_gpus && *world < ctx.gpus))) return RejectReason::kWorldSize;
  const int kv = ctx.kv_heads > 0 ? ctx.kv_heads : ctx.heads;
  if (ctx.heads % l.tp != 0 || (kv % l.tp != 0 && l.tp % kv != 0) ||
      (ctx.ffn_hidden > 0 && ctx.ffn_hidden % l.tp != 0)) {
    return RejectReason::kTensorSplit;
  }
  if (l.stage_layers.empty() ? ctx.layers % l.pp != 0 : static_cast<int>(l.stage_layers.size()) != l.pp) {
    return RejectReason::kStageSplit;
  }
  for (int n : layers_per_stage(l, ctx.layers)) {
    if (n % l.vpp != 0) return RejectReason::kStageSplit;
  }
  if (c.global_batch < 1 || c.micro_batch < 1 || c.global_batch % (c.micro_batch * l.dp) != 0) {
    return RejectReason::kGlobalBatch;
  }
  if (l.schedule == PipelineSchedule::kInterleaved1F1B && (c.global_batch / (c.micro_batch * l.dp)) % l.pp != 0) {
    return RejectReason::kInterleavedMicrobatches;
  }
  return RejectReason::kLayoutRule;
}

double gb(int64_t bytes) { return static_cast<double>(bytes) * 1e-9; }

// Runs fn(i) for every i in `indices` on `threads` workers; progress after each. Exceptions are
// rethrown after all workers stop, the one of the lowest position first.
template <typename Fn>
void run_parallel(const std::vector<size_t>& indices, int threads, std::string_view phase, const SearchOptions& options,
                  Fn&& fn) {
  const size_t n = indices.size();
  if (n == 0) return;
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  size_t done = 0;
  std::vector<std::exception_ptr> errors(n);
  auto worker = [&] {
    while (true) {
      const size_t k = next.fetch_add(1);
      if (k >= n) return;
      try {
        fn(indices[k]);
      } catch (...) {
        errors[k] = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      if (options.progress) options.progress(phase, done, n);
    }
  };
  const size_t workers = std::min(static_cast<size_t>(std::max(threads, 1)), n);
  if (workers == 1) {
    worker();
  } else {
    boost::asio::thread_pool pool(workers);
    for (size_t w = 0; w < workers; ++w) boost::asio::post(pool, worker);
    pool.join();
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

nlohmann::json metrics_to_json(const LayoutMetrics& m) {
  const TimeBreakdown& b = m.breakdown;
  return nlohmann::json::array({m.step_time_s, m.tokens_per_s, m.mfu, m.hfu, m.gpu_seconds_per_token, m.gpus,
                                m.microbatches, m.peak_bytes, m.peak_stage, m.capacity_bytes, b.compute.ps(),
                                b.exposed_comm.ps(), b.bubble.ps(), b.optimizer.ps(), b.other.ps(),
                                m.fidelity == Fidelity::kFlow, m.representative, m.events, b.host_bound.ps(), m.campaign_wall_s, m.campaign_gpu_hours,
                                m.campaign_energy_mwh});
}

LayoutMetrics metrics_from_json(const nlohmann::json& j) {
  LayoutMetrics m;
  m.step_time_s = j.at(0).get<double>();
  m.tokens_per_s = j.at(1).get<double>();
  m.mfu = j.at(2).get<double>();
  m.hfu = j.at(3).get<double>();
  m.gpu_seconds_per_token = j.at(4).get<double>();
  m.gpus = j.at(5).get<int>();
  m.microbatches = j.at(6).get<int>();
  m.peak_bytes = j.at(7).get<int64_t>();
  m.peak_stage = j.at(8).get<int>();
  m.capacity_bytes = j.at(9).get<int64_t>();
  m.breakdown.compute = Duration::picoseconds(j.at(10).get<int64_t>());
  m.breakdown.exposed_comm = Duration::picoseconds(j.at(11).get<int64_t>());
  m.breakdown.bubble = Duration::picoseconds(j.at(12).get<int64_t>());
  m.breakdown.optimizer = Duration::picoseconds(j.at(13).get<int64_t>());
  m.breakdown.other = Duration::picoseconds(j.at(14).get<int64_t>());
  m.fidelity = j.at(15).get<bool>() ? Fidelity::kFlow : Fidelity::kAnalytical;
  m.representative = j.at(16).get<bool>();
  m.events = j.at(17).get<uint64_t>();
  m.breakdown.host_bound = Duration::picoseconds(j.at(18).get<int64_t>());
  m.campaign_wall_s = j.at(19).get<double>();
  m.campaign_gpu_hours = j.at(20).get<double>();
  m.campaign_energy_mwh = j.at(21).get<double>();
  return m;
}

// The candidates of this process: i % size == rank.
std::vector<size_t> my_share(const std::vector<size_t>& all, const SearchPartition& partition) {
  std::vector<size_t> out;
  for (size_t k = 0; k < all.size(); ++k) {
    if (static_cast<int>(k % static_cast<size_t>(partition.size())) == partition.rank()) out.push_back(all[k]);
  }
  return out;
}

// Exchanges the outcomes each process computed for its share; afterwards every process holds all.
void gather_outcomes(SearchPartition& partition, const std::vector<size_t>& mine, std::vector<CandidateOutcome>& all) {
  if (partition.size() == 1) return;
  nlohmann::json j = nlohmann::json::array();
  for (size_t i : mine) {
    const CandidateOutcome& o = all[i];
    j.push_back({i, o.rejected ? static_cast<int>(*o.rejected) : -1, o.message, metrics_to_json(o.metrics)});
  }
  const std::vector<uint8_t> bytes = nlohmann::json::to_cbor(j);
  for (const std::string& part : partition.all_gather(std::string(bytes.begin(), bytes.end()))) {
    for (const auto& e : nlohmann::json::from_cbor(part)) {
      const size_t i = e.at(0).get<size_t>();
      check_invariant(i < all.size(), "gathered outcome of a candidate outside the space");
      CandidateOutcome o;
      const int reason = e.at(1).get<int>();
      if (reason >= 0) o.rejected = static_cast<RejectReason>(reason);
      o.message = e.at(2).get<std::string>();
      o.metrics = metrics_from_json(e.at(3));
      all[i] = std::move(o);
    }
  }
}

void check_uniform_gpus(const Cluster& cluster) {
  const GpuSpec& gpu = cluster.node_spec(0).gpu;
  for (int n = 1; n < cluster.node_count(); ++n) {
    if (cluster.node_spec(n).gpu.name != gpu.name) {
      throw InputError(fmt::format("cluster: node {} has {} GPUs but node 0 has {}; a layout search needs one GPU "
                                   "model throughout",
                                   n, cluster.node_spec(n).gpu.name, gpu.name));
    }
  }
}

}  // namespace

LayoutMetrics evaluate_candidate(const SearchProblem& problem, const LayoutCandidate& candidate, Fidelity fidelity,
                                 bool representative) {
  TrainingSimulationOptions o;
  o.fidelity = fidelity;
  o.representative = representative;
  o.allow_idle_gpus = problem.space.allow_idle_gpus;
  o.compute_profile = problem.compute_profile;
  o.collective_profile = problem.collective_profile;
  o.compute_cost = problem.compute_cost.get();
  o.power_model = problem.power_model;
  o.stragglers = problem.stragglers;
  o.straggler_baseline = false;  // the ranking needs the step with them only
  const TrainingSpec training = candidate.training(problem.training);
  const TrainingReport r = simulate_training(*problem.cluster, problem.model, training, candidate.layout, o);
  LayoutMetrics m;
  m.step_time_s = r.step_time_s;
  m.tokens_per_s = r.tokens_per_s;
  m.mfu = r.mfu;
  m.hfu = r.hfu;
  m.gpus = r.gpus;
  m.gpu_seconds_per_token =
      r.step_time_s * r.gpus / static_cast<double>(training.global_batch * training.seq_len);
  m.microbatches = r.microbatches;
  m.peak_bytes = r.peak_memory.count();
  m.peak_stage = r.peak_stage;
  m.capacity_bytes = r.capacity.count();
  m.breakdown = r.breakdown;
  m.fidelity = fidelity;
  m.representative = representative;
  m.events = r.step.events;
  if (problem.campaign) problem.campaign(candidate.layout, r, m);
  return m;
}

CandidateOutcome screen_candidate(const SearchProblem& problem, const LayoutCandidate& candidate) {
  CandidateOutcome out;
  const Cluster& cluster = *problem.cluster;
  const LayoutContext context = layout_context(problem.model, candidate.training(problem.training), cluster,
                                               problem.space.allow_idle_gpus);
  const TrainingSpec training = candidate.training(problem.training);
  // 1. Rules.
  try {
    if (candidate.layout.dp < 1) {
      const Layout& l = candidate.layout;
      const int64_t model_parallel = static_cast<int64_t>(l.tp) * l.cp * l.pp;
      throw InputError(fmt::format("tp·cp·pp = {}·{}·{} = {} {} the cluster's {} GPUs: no data-parallel size fits",
                                   l.tp, l.cp, l.pp, model_parallel,
                                   model_parallel > context.gpus ? "exceeds" : "does not divide", context.gpus));
    }
    if (candidate.global_batch < 1) {
      throw InputError(fmt::format("no global batch up to {} is a multiple of micro_batch · dp{} = {}",
                                   problem.training.global_batch,
                                   candidate.layout.schedule == PipelineSchedule::kInterleaved1F1B ? " · pp" : "",
                                   candidate.micro_batch * candidate.layout.dp *
                                       (candidate.layout.schedule == PipelineSchedule::kInterleaved1F1B
                                            ? candidate.layout.pp
                                            : 1)));
    }
    // Nodes: the GPU model is checked once for the space, DeepEP's groups where a candidate is simulated.
    validate_run(problem.model, training, candidate.layout,
                 ClusterContext{cluster, problem.space.allow_idle_gpus, /*check_nodes=*/false});
    const std::vector<int>& shards = problem.space.dp_shard;
    if (candidate.layout.dp_shard >= candidate.layout.dp && candidate.layout.dp_shard > 0 &&
        std::find(shards.begin(), shards.end(), 0) != shards.end()) {
      // dp_shard = dp is full sharding: the dp_shard 0 candidate searched beside it is the same layout.
      throw InputError(fmt::format("dp_shard = {} with dp = {} is full sharding, the layout of dp_shard 0",
                                   candidate.layout.dp_shard, candidate.layout.dp));
    }
  } catch (const InputError& e) {
    out.rejected = classify_rule(candidate, context);
    out.message = e.what();
    return out;
  }
  // 2. Constraints.
  if (problem.space.tp_within_node && !tensor_groups_within_nodes(candidate.layout, context.gpus_per_node)) {
    out.rejected = RejectReason::kTensorAcrossNodes;
    out.message = fmt::format("tp = {} with order {} puts tensor-parallel ranks on different nodes of {} GPUs",
                              candidate.layout.tp, candidate.layout.order, context.gpus_per_node);
    return out;
  }
  // 3. Memory, without simulating.
  const Bytes capacity = cluster.node_spec(0).gpu.hbm_capacity;
  try {
    const Layout& l = candidate.layout;
    const Transformer transformer(problem.model, training, shard_spec(l));
    Bytes peak;
    int peak_stage = 0;
    for (const StageMemory& stage : stage_memory(transformer, l)) {
      if (stage.memory.total() > peak) {
        peak = stage.memory.total();
        peak_stage = stage.stage;
      }
    }
    out.metrics.peak_bytes = peak.count();
    out.metrics.peak_stage = peak_stage;
    out.metrics.capacity_bytes = capacity.count();
    if (peak > capacity) {
      out.rejected = RejectReason::kOutOfMemory;
      out.message = fmt::format("stage {} needs {:.2f} GB, the GPU has {:.2f} GB", peak_stage, gb(peak.count()),
                                gb(capacity.count()));
      return out;
    }
    if (peak + problem.space.memory_headroom > capacity) {
      out.rejected = RejectReason::kMemoryHeadroom;
      out.message = fmt::format("stage {} needs {:.2f} GB, leaving {:.2f} GB of the {:.2f} GB headroom", peak_stage,
                                gb(peak.count()), gb((capacity - peak).count()),
                                gb(problem.space.memory_headroom.count()));
      return out;
    }
  } catch (const InputError& e) {
    out.rejected = RejectReason::kLayoutRule;
    out.message = e.what();
    return out;
  }
  // 4. Screening simulation.
  try {
    out.metrics = evaluate_candidate(problem, candidate, Fidelity::kAnalytical, true);
  } catch (const InputError& e) {
    out.rejected = RejectReason::kSimulation;
    out.message = e.what();
  }
  return out;
}

double objective_score(SearchObjective objective, const LayoutMetrics& m) {
  switch (objective) {
    case SearchObjective::kTokensPerSecond: return m.tokens_per_s;
    case SearchObjective::kStepTime: return -m.step_time_s;
    case SearchObjective::kMfu: return m.mfu;
    case SearchObjective::kCostPerToken: return -m.gpu_seconds_per_token;
    case SearchObjective::kTimeToTrain: return -m.campaign_wall_s;
    case SearchObjective::kCampaignCost: return -m.campaign_gpu_hours;
    case SearchObjective::kEnergy: return -m.campaign_energy_mwh;
  }
  return 0;
}

bool ranks_before(SearchObjective objective, const LayoutMetrics& a, size_t a_index, const LayoutMetrics& b,
                  size_t b_index) {
  const double sa = objective_score(objective, a);
  const double sb = objective_score(objective, b);
  if (sa != sb) return sa > sb;
  if (a.peak_bytes != b.peak_bytes) return a.peak_bytes < b.peak_bytes;
  return a_index < b_index;
}

SearchResult search_layouts(const SearchProblem& given, const SearchOptions& options) {
  check_invariant(given.cluster != nullptr, "search_layouts: no cluster");
  const Cluster& cluster = *given.cluster;
  check_uniform_gpus(cluster);
  SearchProblem problem = given;
  if (!problem.compute_cost) {
    auto cost = std::make_shared<ComputeCostModel>(cluster.node_spec(0).gpu, problem.compute_profile);
    // As simulate_training runs it: full-clock kernel times under the governor (no copy per candidate).
    if (problem.power_model && cost->power_model() != nullptr) cost->set_power_governed(true);
    problem.compute_cost = std::move(cost);
  }
  problem.model.validate();
  const SearchSpace& space = problem.space;
  validate_search_space(space, cluster.node_spec(0).gpu.hbm_capacity);

  const LayoutContext scenario_context = layout_context(problem.model, problem.training, cluster, space.allow_idle_gpus);
  SearchContext context;
  context.gpus = scenario_context.gpus;
  context.gpus_per_node = scenario_context.gpus_per_node;
  context.layers = scenario_context.layers;
  context.heads = scenario_context.heads;

  SearchResult result;
  result.candidates = expand_search_space(space, problem.base, problem.training, context);
  result.outcomes.resize(result.candidates.size());

  SingleProcess single;
  SearchPartition& partition = options.partition != nullptr ? *options.partition : single;
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));

  // Screening.
  std::vector<size_t> all(result.candidates.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::vector<size_t> mine = my_share(all, partition);
  run_parallel(mine, threads, "screen", options, [&](size_t i) {
    result.outcomes[i] = screen_candidate(problem, result.candidates[i]);
  });
  gather_outcomes(partition, mine, result.outcomes);

  // Rejections: counts and one example each.
  std::vector<RejectionSummary> summaries(kRejectReasons);
  std::vector<size_t> evaluated;
  for (size_t i = 0; i < result.outcomes.size(); ++i) {
    const CandidateOutcome& o = result.outcomes[i];
    if (!o.rejected) {
      evaluated.push_back(i);
      continue;
    }
    RejectionSummary& s = summaries[static_cast<size_t>(*o.rejected)];
    const bool memory = *o.rejected == RejectReason::kOutOfMemory || *o.rejected == RejectReason::kMemoryHeadroom;
    if (s.count == 0 || (memory && o.metrics.peak_bytes < result.outcomes[s.example].metrics.peak_bytes)) {
      s.example = i;
      s.message = o.message;
    }
    s.reason = *o.rejected;
    ++s.count;
  }
  for (const auto& s : summaries) {
    if (s.count > 0) result.rejected.push_back(s);
  }
  result.evaluated = evaluated.size();

  // Screening order.
  auto screened_before = [&](size_t a, size_t b) {
    return ranks_before(space.objective, result.outcomes[a].metrics, a, result.outcomes[b].metrics, b);
  };
  std::sort(evaluated.begin(), evaluated.end(), screened_before);

  // Re-ranking at the scenario's fidelity, for the layouts where it differs from the screening, of
  // the best `taken` screened layouts. final_outcomes[k] are positions in `evaluated`: a space of
  // millions of candidates holds their outcomes once.
  const size_t n = evaluated.size();
  const size_t top = std::min(n, static_cast<size_t>(std::max(space.top, 1)));
  auto needs_rerank = [&](size_t i) {
    return problem.fidelity(result.candidates[i].layout) != Fidelity::kAnalytical || !problem.representative;
  };
  std::vector<CandidateOutcome> final_outcomes;
  size_t taken = 0;
  // Takes positions [taken, upto) of the screening order, re-simulating those that need it.
  auto take = [&](size_t upto) {
    final_outcomes.resize(upto);
    std::vector<size_t> again;
    for (size_t k = taken; k < upto; ++k) {
      final_outcomes[k] = result.outcomes[evaluated[k]];
      if (needs_rerank(evaluated[k])) again.push_back(k);
    }
    const std::vector<size_t> share = my_share(again, partition);
    const std::string phase = fmt::format("rerank {}-{}", taken + 1, upto);  // screening positions, 1-based
    run_parallel(share, threads, phase, options, [&](size_t k) {
      const LayoutCandidate& c = result.candidates[evaluated[k]];
      final_outcomes[k].metrics = evaluate_candidate(problem, c, problem.fidelity(c.layout), problem.representative);
    });
    gather_outcomes(partition, share, final_outcomes);
    if (!again.empty()) result.reranked = true;
    taken = upto;
    result.rerank_rounds.push_back(upto);
  };
  // The position of the best of the taken layouts at their final fidelity.
  auto winner = [&] {
    size_t best = 0;
    for (size_t k = 1; k < taken; ++k) {
      if (ranks_before(space.objective, final_outcomes[k].metrics, evaluated[k], final_outcomes[best].metrics,
                       evaluated[best])) {
        best = k;
      }
    }
    return best;
  };
  const bool any = space.rerank != 0 && std::any_of(evaluated.begin(), evaluated.end(), needs_rerank);
  if (!any) {
    result.rerank_stop = space.rerank == 0 ? RerankStop::kOff : RerankStop::kNotNeeded;
    const size_t keep = space.rerank > 0 ? std::min(n, static_cast<size_t>(std::max(space.top, space.rerank))) : top;
    final_outcomes.resize(keep);
    for (size_t k = 0; k < keep; ++k) final_outcomes[k] = result.outcomes[evaluated[k]];
    taken = keep;
  } else if (space.rerank > 0) {
    result.rerank_stop = RerankStop::kFixed;
    take(std::min(n, static_cast<size_t>(std::max(space.top, space.rerank))));
  } else {
    // auto: double until the winner holds. Every process takes the same steps: the winner is
    // decided on outcomes that gather_outcomes() made identical everywhere.
    const size_t limit = std::min(n, static_cast<size_t>(std::max(space.top, space.rerank_max)));
    take(std::min(limit, std::max(top, static_cast<size_t>(space.rerank_first))));
    size_t champion = winner();
    while (true) {
      if (taken == n) {
        result.rerank_stop = RerankStop::kWholeSpace;
        break;
      }
      if (taken >= limit) {
        result.rerank_stop = RerankStop::kLimit;
        break;
      }
      const size_t before = taken;
      take(std::min(2 * before, limit));
      const size_t doubled_champion = winner();
      if (taken == n) {
        result.rerank_stop = RerankStop::kWholeSpace;
        break;
      }
      if (doubled_champion == champion && taken == 2 * before) {
        result.rerank_stop = RerankStop::kStable;
        break;
      }
      champion = doubled_champion;
    }
  }
  if (result.rerank_stop != RerankStop::kOff && result.rerank_stop != RerankStop::kNotNeeded) {
    result.reranked_layouts = taken;
  }
  for (size_t k = 0; k < taken; ++k) {
    RankedLayout r;
    r.index = evaluated[k];
    r.metrics = final_outcomes[k].metrics;
    r.screening = result.outcomes[evaluated[k]].metrics;
    r.screening_rank = static_cast<int>(k + 1);
    result.ranking.push_back(r);
  }
  std::sort(result.ranking.begin(), result.ranking.end(), [&](const RankedLayout& a, const RankedLayout& b) {
    return ranks_before(space.objective, a.metrics, a.index, b.metrics, b.index);
  });
  return result;
}

std::vector<size_t> ranked_order(const SearchResult& result, SearchObjective objective) {
  std::vector<size_t> out;
  std::vector<char> placed(result.candidates.size(), 0);
  for (const RankedLayout& r : result.ranking) {
    out.push_back(r.index);
    placed[r.index] = 1;
  }
  std::vector<size_t> rest;
  for (size_t i = 0; i < result.outcomes.size(); ++i) {
    if (!result.outcomes[i].rejected && placed[i] == 0) rest.push_back(i);
  }
  std::sort(rest.begin(), rest.end(), [&](size_t a, size_t b) {
    return ranks_before(objective, result.outcomes[a].metrics, a, result.outcomes[b].metrics, b);
  });
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace clustersim
