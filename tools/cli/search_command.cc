#include "tools/cli/search_command.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unistd.h>

#include "collectives/collective_profile.h"
#include "core/error.h"
#include "core/excerpt.h"
#include "core/input_file.h"
#include "cost_models/calibration_profile.h"
#include "tools/common/output_file.h"
#include "tools/cli/run_command.h"
#include "tools/cli/progress_bar.h"
#include "tools/cli/run_report.h"
#include "tools/cli/shell_line.h"

namespace clustersim {

namespace {

double gb(int64_t bytes) { return static_cast<double>(bytes) * 1e-9; }

// The ranking's zero column: the ZeRO stage, and under hybrid sharding "/" and the shard group's
// data-parallel size ("3/8": ZeRO-3 sharded over 8 ranks, replicated across dp / 8 groups).
std::string zero_column(const Layout& l) {
  return l.hybrid_shard() ? fmt::format("{}/{}", l.zero_stage, l.shard_dp()) : fmt::format("{}", l.zero_stage);
}

std::string objective_text(SearchObjective o) {
  switch (o) {
    case SearchObjective::kTokensPerSecond: return "tokens/s (higher is better)";
    case SearchObjective::kStepTime: return "step time (lower is better)";
    case SearchObjective::kMfu: return "MFU (higher is better)";
    case SearchObjective::kCostPerToken: return "cost per token: GPUs used x step time / tokens (lower is better)";
    case SearchObjective::kTimeToTrain:
      return "time to train: the campaign's expected wall-clock time, failures and checkpoints included (lower is "
             "better)";
    case SearchObjective::kCampaignCost: return "cost: the campaign's expected GPU-hours (lower is better)";
    case SearchObjective::kEnergy: return "energy: the campaign's expected facility energy (lower is better)";
  }
  return "?";
}

// "8 · mb 2 · recompute full · batch 1536": the candidate for messages.
std::string describe_candidate(const LayoutCandidate& c) {
  const std::string stages =
      c.layout.stage_layers.empty() ? "" : fmt::format(" · stages [{}]", fmt::join(c.layout.stage_layers, " "));
  return fmt::format("{}{} · micro batch {} · recompute {} · global batch {}", describe_layout(c.layout), stages,
                     c.micro_batch, name_of(c.recompute), c.global_batch);
}

// "1, 2, 4, 8" or "1, 2, 3, ..., 1024 (40 values)".
template <typename T>
std::string value_list(const std::set<T>& values) {
  std::vector<std::string> text;
  for (const auto& v : values) text.push_back(fmt::format("{}", v));
  if (text.size() <= 10) return fmt::format("{}", fmt::join(text, ", "));
  return fmt::format("{}, {}, {}, ..., {} ({} values)", text[0], text[1], text[2], text.back(), text.size());
}

// The values each dimension took over the candidates.
std::string describe_space(const SearchResult& result) {
  std::set<int> tp, pp, dp, vpp, zero, dp_shard;
  std::set<int64_t> mb;
  std::set<std::string> recompute, schedule, sp, order;
  for (const auto& c : result.candidates) {
    tp.insert(c.layout.tp);
    pp.insert(c.layout.pp);
    if (c.layout.dp > 0) dp.insert(c.layout.dp);
    vpp.insert(c.layout.vpp);
    zero.insert(c.layout.zero_stage);
    dp_shard.insert(c.layout.dp_shard);
    mb.insert(c.micro_batch);
    recompute.insert(std::string(name_of(c.recompute)));
    schedule.insert(std::string(name_of(c.layout.schedule)));
    sp.insert(c.layout.sequence_parallel ? "on" : "off");
    order.insert(c.layout.order);
  }
  // dp_shard only where the search lists sizes other than full sharding.
  const std::string shards =
      dp_shard.size() > 1 || !dp_shard.contains(0) ? fmt::format(" · dp_shard {{{}}}", value_list(dp_shard)) : "";
  return fmt::format("tp {{{}}} · pp {{{}}} · dp {{{}}} · vpp {{{}}} · micro batch {{{}}} · recompute {{{}}} · zero {{{}}}{} · "
                     "sp {{{}}} · schedule {{{}}} · order {{{}}}",
                     value_list(tp), value_list(pp), dp.empty() ? std::string("none fits") : value_list(dp),
                     value_list(vpp), value_list(mb), value_list(recompute), value_list(zero), shards, value_list(sp),
                     value_list(schedule), value_list(order));
}

std::string set_line(const std::vector<std::string>& overrides) {
  std::vector<std::string> parts;
  for (const auto& o : overrides) parts.push_back(fmt::format("--set {}", shell_word(o)));
  return fmt::format("{}", fmt::join(parts, " "));
}

// The `--set` overrides that make `clustersim run` simulate `c` as the search did: the user's own
// overrides of the search (but those of the search: section), then the layout's, which win.
std::vector<std::string> overrides_for(const Scenario& scenario, const LayoutCandidate& c,
                                       const std::vector<std::string>& user_sets) {
  std::vector<std::string> o;
  for (const std::string& set : user_sets) {
    if (!set.starts_with("search.")) o.push_back(set);
  }
  for (std::string& layout : candidate_overrides(c, scenario.search->allow_idle_gpus)) o.push_back(std::move(layout));
  if (c.layout.stage_layers.empty() && !scenario.layout.stage_layers.empty()) o.push_back("parallelism.stage_layers=[]");
  if (scenario.layout.layers_per_virtual_stage > 0) o.push_back("parallelism.layers_per_virtual_stage=0");
  return o;
}

// The campaign quantity a cost or energy objective ranks by, as a column after the days.
std::string campaign_column_header(SearchObjective o) {
  if (o == SearchObjective::kCampaignCost) return fmt::format(" {:>10}", "GPU-hours");
  if (o == SearchObjective::kEnergy) return fmt::format(" {:>8}", "MWh");
  return "";
}
std::string campaign_column(SearchObjective o, const LayoutMetrics& m) {
  if (o == SearchObjective::kCampaignCost) return fmt::format(" {:>10.4g}", m.campaign_gpu_hours);
  if (o == SearchObjective::kEnergy) return fmt::format(" {:>8.4g}", m.campaign_energy_mwh);
  return "";
}

// "10, 20, 40": the re-ranked count after each round.
std::string rounds_text(const SearchResult& r) { return fmt::format("{}", fmt::join(r.rerank_rounds, ", ")); }

// How many layouts were re-ranked and why it stopped there, for the summary's re-ranking line.
std::string rerank_text(const SearchSpace& space, const SearchResult& r) {
  const size_t rounds = r.rerank_rounds.size();
  const size_t last = rounds > 0 ? r.rerank_rounds[rounds - 1] : 0;
  const size_t before = rounds > 1 ? r.rerank_rounds[rounds - 2] : 0;
  const int winner_screened = r.ranking.empty() ? 0 : r.ranking.front().screening_rank;
  const std::string winner = fmt::format("the winner ranked {} after screening", winner_screened);
  switch (r.rerank_stop) {
    case RerankStop::kStable:
      return fmt::format("auto: {} re-ranked ({}); stopped: the winner held when the re-ranked layouts doubled from {} "
                         "to {}; {}",
                         last, rounds_text(r), before, last, winner);
    case RerankStop::kWholeSpace:
      return fmt::format("auto: {} re-ranked ({}); stopped: every simulated layout re-ranked; {}", last, rounds_text(r),
                         winner);
    case RerankStop::kLimit:
      return fmt::format("auto: {} re-ranked ({}); stopped at search.rerank_max = {} before the winner held over a "
                         "doubling, so a better layout may rank lower after screening (raise search.rerank_max); {}",
                         last, rounds_text(r), space.rerank_max, winner);
    case RerankStop::kFixed:
      if (last == r.evaluated) {
        return fmt::format("search.rerank = {}: every simulated layout ({}) re-ranked; {}", space.rerank, last, winner);
      }
      return fmt::format("search.rerank = {}: the best {} re-ranked, not checked against more (search.rerank: auto "
                         "doubles them until the winner holds); {}",
                         space.rerank, last, winner);
    case RerankStop::kOff:
    case RerankStop::kNotNeeded: break;
  }
  return "";
}

void write_summary(const Scenario& s, const Cluster& cluster, const SearchResult& r, int top,
                   const std::vector<std::string>& user_sets, std::ostream& out) {
  const SearchSpace& space = *s.search;
  out << fmt::format("{}\n", s.name);
  const int gpus = cluster.gpu_count();
  const int nodes = cluster.node_count();
  out << fmt::format("  cluster     {} {} ({} {} of {}), {}\n", gpus, gpus == 1 ? "GPU" : "GPUs", nodes,
                     nodes == 1 ? "node" : "nodes", s.cluster.nodes.front().name, cluster.node_spec(0).gpu.name);
  out << fmt::format("  model       {} · {} layers · h {} · {} heads · seq {} · global batch {}{}\n", s.model.name,
                     s.model.layers, s.model.hidden, s.model.heads, s.training.seq_len, s.training.global_batch,
                     space.global_batch == GlobalBatchRule::kMaximum ? " at most" : "");
  out << fmt::format("  space       {}\n", describe_space(r));
  out << fmt::format("  constraints {}{}{}{}\n", space.tp_within_node ? "tp within a node" : "tp may span nodes",
                     space.allow_idle_gpus ? " · idle GPUs allowed" : " · every GPU used",
                     space.memory_headroom.count() > 0
                         ? fmt::format(" · {:.2f} GB memory headroom", space.memory_headroom.to_gb())
                         : "",
                     space.uneven_stages ? " · uneven stages allowed" : "");
  out << fmt::format("  candidates  {}: {} simulated, {} rejected\n", r.candidates.size(), r.evaluated,
                     r.candidates.size() - r.evaluated);
  out << fmt::format("  objective   {}; ties broken by lower peak memory\n", objective_text(space.objective));
  if (r.reranked) {
    const auto flow = std::count_if(r.ranking.begin(), r.ranking.end(),
                                    [](const RankedLayout& l) { return l.metrics.fidelity == Fidelity::kFlow; });
    out << fmt::format("  simulation  screened at analytical fidelity with one rank per stage; the best {} "
                       "re-simulated as `clustersim run` would ({} at flow fidelity, {})\n",
                       r.reranked_layouts, flow,
                       s.simulation.representative ? "one rank per stage" : "every rank");
    out << fmt::format("  re-ranking  {}\n", rerank_text(space, r));
  } else if (r.evaluated == 0) {
    out << "  simulation  none (every candidate was rejected before simulation)\n";
  } else {
    out << fmt::format("  simulation  analytical fidelity with one rank per stage ({})\n",
                       resolve_fidelity(s.simulation, cluster.gpu_count()) == Fidelity::kAnalytical
                           ? "the scenario's fidelity for this cluster"
                           : "no layout was re-simulated");
  }
  out << "\n";

  const bool cost = space.objective == SearchObjective::kCostPerToken || space.gpu_hour_price > 0;
  const size_t shown = std::min(r.ranking.size(), static_cast<size_t>(top));
  if (shown == 0) {
    out << fmt::format("  no feasible layout: all {} candidates were rejected\n", r.candidates.size());
  } else {
    // Layouts that differ only in their rank order would read as one: the order gets a column then.
    std::set<std::string> shown_orders;
    for (size_t k = 0; k < shown; ++k) shown_orders.insert(r.candidates[r.ranking[k].index].layout.order);
    const bool show_order = shown_orders.size() > 1;
    out << fmt::format("  {:>4} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>4} {:<9} {:<16} {:>6} {:>9} {:>10} {:>6} "
                       "{:>7} {:>7} {:>8} {:>8} {:>7} {:>7}{}{} {:>6}\n",
                       "rank", "tp", "pp", "dp", "vpp", "mb", "sp", "zero", "recompute", "schedule", "batch",
                       "step s", "tokens/s", "MFU", "peak GB", "free GB", "compute", "exp.comm", "bubble", "optim.",
                       cost ? fmt::format(" {:>11}", space.gpu_hour_price > 0 ? "cost/Mtok" : "GPU-h/Mtok") : "",
                       s.campaign ? fmt::format(" {:>8}{}", "days", campaign_column_header(space.objective)) : "",
                       show_order ? fmt::format("{:>7}  order", "screen") : "screen");
    for (size_t k = 0; k < shown; ++k) {
      const RankedLayout& rl = r.ranking[k];
      const LayoutCandidate& c = r.candidates[rl.index];
      const LayoutMetrics& m = rl.metrics;
      const double gpu_hours_per_mtok = m.gpu_seconds_per_token * 1e6 / 3600;
      out << fmt::format("  {:>4} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>4} {:<9} {:<16} {:>6} {:>9.4f} {:>10.0f} "
                         "{:>5.1f}% {:>7.2f} {:>7.2f} {:>8.3f} {:>8.3f} {:>7.3f} {:>7.3f}{}{} {:>6}\n",
                         k + 1, c.layout.tp, c.layout.pp, c.layout.dp, c.layout.vpp, c.micro_batch,
                         c.layout.sequence_parallel ? "on" : "off", zero_column(c.layout), name_of(c.recompute),
                         name_of(c.layout.schedule), c.global_batch, m.step_time_s, m.tokens_per_s, 100 * m.mfu,
                         gb(m.peak_bytes), gb(m.capacity_bytes - m.peak_bytes), m.breakdown.compute.to_seconds(),
                         m.breakdown.exposed_comm.to_seconds(), m.breakdown.bubble.to_seconds(),
                         m.breakdown.optimizer.to_seconds(),
                         cost ? fmt::format(" {:>11.4f}", space.gpu_hour_price > 0
                                                              ? gpu_hours_per_mtok * space.gpu_hour_price
                                                              : gpu_hours_per_mtok)
                              : "",
                         s.campaign ? fmt::format(" {:>8.2f}{}", m.campaign_wall_s / 86'400.0,
                                                  campaign_column(space.objective, m))
                                    : "",
                         show_order ? fmt::format("{:>7}  {}", rl.screening_rank, c.layout.order)
                                    : fmt::format("{}", rl.screening_rank));
    }
    out << fmt::format("  (times in seconds, of the slowest rank; GB = 1e9 bytes;{} screen = rank after the screening "
                       "pass)\n",
                       s.campaign ? " days: the campaign's expected wall-clock days to train (closed form);" : "");
  }

  if (!r.rejected.empty()) {
    out << "\n  rejected\n";
    for (const auto& rej : r.rejected) {
      out << fmt::format("    {:<24} {:>8}  {}\n", name_of(rej.reason), rej.count, describe(rej.reason));
      const bool memory = rej.reason == RejectReason::kOutOfMemory || rej.reason == RejectReason::kMemoryHeadroom;
      out << fmt::format("    {:<24} {:>8}  {} {}: {}\n", "", "", memory ? "smallest peak:" : "e.g.",
                         describe_candidate(r.candidates[rej.example]), rej.message);
    }
  }

  if (shown == 0) {
    out << "\n  why: ";
    std::vector<std::string> why;
    for (const auto& rej : r.rejected) {
      why.push_back(fmt::format("{} {}", rej.count, describe(rej.reason)));
    }
    out << fmt::format("{}.\n", fmt::join(why, "; "));
    // Idle GPUs help where sizes decided; not where another rule (a bucket size, say) refused every layout.
    const bool sizes_rejected = std::any_of(r.rejected.begin(), r.rejected.end(), [](const auto& rej) {
      return rej.count > 0 && rej.reason != RejectReason::kLayoutRule && rej.reason != RejectReason::kSimulation;
    });
    if (!space.allow_idle_gpus && sizes_rejected) {
      // The tp·cp·pp products searched, and those that leave a whole data-parallel size.
      std::set<int64_t> products, dividing;
      for (const auto& c : r.candidates) {
        const std::optional<int64_t> product = size_product({c.layout.tp, c.layout.cp, c.layout.pp});
        if (!product) continue;  // beyond any cluster
        products.insert(*product);
        if (cluster.gpu_count() % *product == 0) dividing.insert(*product);
      }
      const std::string searched = products.empty() ? std::string() : fmt::format(" {{{}}}", value_list(products));
      out << fmt::format("  hint: every layout must use all {} GPUs (tp·cp·pp·dp = {}); {}search.allow_idle_gpus: "
                         "true lets layouts leave GPUs idle\n",
                         cluster.gpu_count(), cluster.gpu_count(),
                         dividing.empty() ? fmt::format("none of the searched tp·cp·pp products{} divides {}: "
                                                        "search tp, cp and pp values whose product does, or ",
                                                        searched, cluster.gpu_count())
                                          : std::string());
    }
    return;
  }
  const LayoutCandidate& best = r.candidates[r.ranking.front().index];
  out << fmt::format("\n  best layout: {}\n", describe_candidate(best));
  out << fmt::format("  clustersim run {} {}\n", s.source, set_line(overrides_for(s, best, user_sets)));
}

nlohmann::ordered_json layout_json(const LayoutCandidate& c, bool allow_idle_gpus) {
  return {{"tp", c.layout.tp},
          {"pp", c.layout.pp},
          {"dp", c.layout.dp},
          {"cp", c.layout.cp},
          {"vpp", c.layout.vpp},
          {"ep", c.layout.ep},
          {"etp", c.layout.etp},
          {"micro_batch", c.micro_batch},
          {"global_batch", c.global_batch},
          {"recompute", std::string(name_of(c.recompute))},
          {"zero", c.layout.zero_stage},
          {"dp_shard", c.layout.dp_shard},
          {"sequence_parallel", c.layout.sequence_parallel},
          {"schedule", std::string(name_of(c.layout.schedule))},
          {"order", c.layout.order},
          {"stage_layers", c.layout.stage_layers},
          {"allow_idle_gpus", allow_idle_gpus}};
}

}  // namespace

std::vector<std::string> candidate_overrides(const LayoutCandidate& c, bool allow_idle_gpus) {
  std::vector<std::string> o = {
      fmt::format("parallelism.tp={}", c.layout.tp),
      fmt::format("parallelism.pp={}", c.layout.pp),
      fmt::format("parallelism.dp={}", c.layout.dp),
      fmt::format("parallelism.vpp={}", c.layout.vpp),
      fmt::format("parallelism.schedule={}", name_of(c.layout.schedule)),
      fmt::format("parallelism.zero={}", c.layout.zero_stage),
      fmt::format("parallelism.dp_shard={}", c.layout.dp_shard),
      // Megatron's name for ZeRO >= 1, stated as the stage says (a file's true would raise a zero 0).
      fmt::format("parallelism.distributed_optimizer={}", c.layout.zero_stage >= 1),
      fmt::format("parallelism.sequence_parallel={}", c.layout.sequence_parallel),
      fmt::format("parallelism.order={}", c.layout.order),
      fmt::format("training.micro_batch={}", c.micro_batch),
      fmt::format("training.recompute={}", name_of(c.recompute)),
      fmt::format("training.global_batch={}", c.global_batch),
      fmt::format("simulation.allow_idle_gpus={}", allow_idle_gpus),
  };
  if (c.layout.cp != 1) o.insert(o.begin() + 3, fmt::format("parallelism.cp={}", c.layout.cp));
  // The expert partition, always: the search may rank an ep or etp other than the scenario's.
  o.insert(o.begin() + 4 + (c.layout.cp != 1 ? 1 : 0), fmt::format("parallelism.ep={}", c.layout.ep));
  o.insert(o.begin() + 5 + (c.layout.cp != 1 ? 1 : 0), fmt::format("parallelism.etp={}", c.layout.etp));
  // The scenario's options the search applies only where they can (expand_search_space), off here
  // where they cannot, so that `run` takes the layout as the search simulated it.
  if (c.layout.zero_stage == 0) o.push_back("parallelism.overlap_param_gather=false");
  if (c.layout.tp == 1 || !c.layout.sequence_parallel) o.push_back("parallelism.tp_comm_overlap=false");
  if (c.layout.zero_stage != 3) o.push_back("parallelism.zero3_bucket_elements=0");
  if (c.layout.zero_stage != 1) o.push_back("parallelism.grad_reduce_op=auto");  // the one op that applies
  if (!c.layout.stage_layers.empty()) {
    o.push_back(fmt::format("parallelism.stage_layers=[{}]", fmt::join(c.layout.stage_layers, ",")));
  }
  return o;
}

std::vector<std::string> overrides_from_search_json(const std::string& path, int rank, std::string* searched_scenario) {
  const std::string file_text = [&] {
    try {
      return read_input_file(path, "search JSON file");
    } catch (const InputError& e) {
      throw InputError(fmt::format("--layout-from {}", e.what()));
    }
  }();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(file_text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("--layout-from {}: not JSON ({})", path, excerpt(e.what(), 300)));
  }
  if (!j.is_object() || !j.contains("top") || !j["top"].is_array()) {
    throw InputError(fmt::format("--layout-from {}: not the output of `clustersim search --json` (no \"top\" list)",
                                 path));
  }
  if (searched_scenario != nullptr) {
    *searched_scenario = j.contains("scenario") && j["scenario"].is_string() ? j["scenario"].get<std::string>() : "";
  }
  const auto& top = j["top"];
  if (top.empty()) {
    throw InputError(fmt::format("--layout-from {}: the search ranked no layout (\"top\" is empty); its \"rejected\" "
                                 "counts say why",
                                 path));
  }
  if (rank < 1 || static_cast<size_t>(rank) > top.size()) {
    throw InputError(fmt::format("--rank {}: {} holds {} layouts; valid ranks: 1..{}", rank, path, top.size(),
                                 top.size()));
  }
  const std::string where = fmt::format("--layout-from {}: top[{}].layout", path, rank - 1);
  const nlohmann::json& l = top[static_cast<size_t>(rank - 1)].contains("layout")
                                ? top[static_cast<size_t>(rank - 1)]["layout"]
                                : throw InputError(fmt::format("{} is missing", where));
  if (!l.is_object()) throw InputError(fmt::format("{}: expected an object of layout fields, got {}", where, l.type_name()));
  // The fields layout_json() writes, and no others: a field this build does not know would be
  // ignored, and the layout run would not be the one meant.
  const nlohmann::ordered_json known = layout_json(LayoutCandidate{}, false);
  for (const auto& [key, value] : l.items()) {
    if (!known.contains(key)) {
      std::vector<std::string> names;
      for (const auto& [k, v] : known.items()) names.push_back(k);
      throw InputError(fmt::format("{}.{}: unknown field; a layout written by `clustersim search --json` has {}",
                                   where, key.substr(0, 60), fmt::join(names, ", ")));
    }
  }
  // A whole number in [1, max] (0 allowed for `zero`), as the search writes them.
  auto whole = [&](const char* key, int64_t low, int64_t high, std::optional<int64_t> fallback = std::nullopt) {
    if (!l.contains(key)) {
      if (fallback) return *fallback;
      throw InputError(fmt::format("{}.{} is missing", where, key));
    }
    const nlohmann::json& v = l[key];
    if (!v.is_number_integer() || v.get<int64_t>() < low || v.get<int64_t>() > high) {
      throw InputError(fmt::format("{}.{} = {}: expected a whole number in [{}, {}]", where, key, v.dump(), low, high));
    }
    return v.get<int64_t>();
  };
  auto text = [&](const char* key) {
    if (!l.contains(key) || !l[key].is_string()) {
      throw InputError(fmt::format("{}.{}: expected a string, got {}", where, key,
                                   l.contains(key) ? l[key].dump() : std::string("nothing")));
    }
    return l[key].get<std::string>();
  };
  auto flag = [&](const char* key, bool fallback, bool required) {
    if (!l.contains(key) && !required) return fallback;
    if (!l.contains(key) || !l[key].is_boolean()) {
      throw InputError(fmt::format("{}.{}: expected true or false, got {}", where, key,
                                   l.contains(key) ? l[key].dump() : std::string("nothing")));
    }
    return l[key].get<bool>();
  };
  auto located = [&](const char* key, auto parse) {
    try {
      return parse();
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}.{}: {}", where, key, e.what()));
    }
  };
  constexpr int64_t kMaxInt = INT32_MAX;
  LayoutCandidate c;
  c.layout.tp = static_cast<int>(whole("tp", 1, kMaxInt));
  c.layout.pp = static_cast<int>(whole("pp", 1, kMaxInt));
  c.layout.dp = static_cast<int>(whole("dp", 1, kMaxInt));
  c.layout.cp = static_cast<int>(whole("cp", 1, kMaxInt, 1));
  c.layout.vpp = static_cast<int>(whole("vpp", 1, kMaxInt));
  c.layout.ep = static_cast<int>(whole("ep", 1, kMaxInt, 1));    // absent in files of earlier builds: 1
  c.layout.etp = static_cast<int>(whole("etp", 1, kMaxInt, 1));
  c.micro_batch = whole("micro_batch", 1, INT64_MAX);
  c.global_batch = whole("global_batch", 1, INT64_MAX);
  c.recompute = located("recompute", [&] { return parse_recompute(text("recompute")); });
  c.layout.zero_stage = static_cast<int>(whole("zero", 0, 3));
  c.layout.dp_shard = static_cast<int>(whole("dp_shard", 0, kMaxInt, 0));  // absent in files of earlier builds: 0
  c.layout.sequence_parallel = flag("sequence_parallel", false, true);
  c.layout.schedule = located("schedule", [&] { return parse_pipeline_schedule(text("schedule")); });
  c.layout.order = text("order");
  if (l.contains("stage_layers")) {
    const nlohmann::json& stages = l["stage_layers"];
    if (!stages.is_array()) throw InputError(fmt::format("{}.stage_layers: expected a list of layer counts", where));
    for (const auto& n : stages) {
      if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxInt) {
        throw InputError(fmt::format("{}.stage_layers: {} is not a whole number of layers >= 1", where, n.dump()));
      }
      c.layout.stage_layers.push_back(n.get<int>());
    }
  }
  std::vector<std::string> o = candidate_overrides(c, flag("allow_idle_gpus", false, false));
  if (c.layout.stage_layers.empty()) o.push_back("parallelism.stage_layers=[]");
  return o;
}

nlohmann::ordered_json search_json(const Scenario& s, const SearchResult& r, int top,
                                   const std::vector<std::string>& user_sets) {
  const SearchSpace& space = *s.search;
  nlohmann::ordered_json j;
  j["scenario"] = s.name;
  j["objective"] = std::string(name_of(space.objective));
  j["candidates"] = r.candidates.size();
  j["evaluated"] = r.evaluated;
  // How many of the best screened layouts were taken at the scenario's fidelity, after each round,
  // and why it stopped (RerankStop's names).
  j["rerank"] = {{"layouts", r.reranked_layouts},
                 {"rounds", r.rerank_rounds},
                 {"stop", std::string(name_of(r.rerank_stop))},
                 {"max", space.rerank == kRerankAuto ? nlohmann::ordered_json(space.rerank_max) : nlohmann::ordered_json()}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  const size_t shown = std::min(r.ranking.size(), static_cast<size_t>(top));
  for (size_t k = 0; k < shown; ++k) {
    const RankedLayout& rl = r.ranking[k];
    const LayoutCandidate& c = r.candidates[rl.index];
    const LayoutMetrics& m = rl.metrics;
    nlohmann::ordered_json e;
    e["rank"] = k + 1;
    e["layout"] = layout_json(c, space.allow_idle_gpus);
    e["step_time_s"] = m.step_time_s;
    e["tokens_per_s"] = m.tokens_per_s;
    e["mfu"] = m.mfu;
    e["peak_bytes"] = m.peak_bytes;
    e["headroom_bytes"] = m.capacity_bytes - m.peak_bytes;
    e["gpus"] = m.gpus;
    e["gpu_seconds_per_token"] = m.gpu_seconds_per_token;
    e["breakdown_s"] = breakdown_seconds_json(m.breakdown);
    if (s.campaign) {
      e["campaign"] = {{"wall_days", m.campaign_wall_s / 86'400.0},
                       {"gpu_hours", m.campaign_gpu_hours},
                       {"energy_mwh", m.campaign_energy_mwh > 0 ? nlohmann::ordered_json(m.campaign_energy_mwh)
                                                                : nlohmann::ordered_json()}};
    }
    e["fidelity"] = std::string(name_of(m.fidelity));
    e["screening_rank"] = rl.screening_rank;
    e["set"] = set_line(overrides_for(s, c, user_sets));
    list.push_back(std::move(e));
  }
  j["top"] = std::move(list);
  nlohmann::ordered_json rejected = nlohmann::ordered_json::object();
  nlohmann::ordered_json examples = nlohmann::ordered_json::object();
  for (const auto& rej : r.rejected) {
    rejected[std::string(name_of(rej.reason))] = rej.count;
    examples[std::string(name_of(rej.reason))] =
        fmt::format("{}: {}", describe_candidate(r.candidates[rej.example]), rej.message);
  }
  j["rejected"] = std::move(rejected);
  j["rejected_examples"] = std::move(examples);
  return j;
}

void write_search_json(const Scenario& s, const SearchResult& r, int top, const std::vector<std::string>& user_sets,
                       std::ostream& out) {
  // A path from argv may not be UTF-8.
  out << search_json(s, r, top, user_sets).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void write_search_csv(const SearchResult& r, std::ostream& out) {
  // The screening's figures of every simulated layout; then whether it was among the re-ranked
  // layouts, its figures at the scenario's fidelity if so (empty if not), and why the re-ranking
  // stopped (the same in every row; RerankStop's names).
  out << "index,tp,pp,dp,cp,vpp,micro_batch,global_batch,recompute,zero,dp_shard,sequence_parallel,schedule,order,stage_layers,"
         "gpus,microbatches,step_time_s,tokens_per_s,mfu,hfu,gpu_seconds_per_token,peak_bytes,headroom_bytes,"
         "compute_s,exposed_comm_s,bubble_s,optimizer_s,other_s,fidelity,reranked,final_step_time_s,"
         "final_tokens_per_s,final_fidelity,rerank_stop\n";
  std::map<size_t, const LayoutMetrics*> reranked;
  for (size_t k = 0; k < r.ranking.size() && r.reranked_layouts > 0; ++k) {
    reranked[r.ranking[k].index] = &r.ranking[k].metrics;
  }
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateOutcome& o = r.outcomes[i];
    if (o.rejected) continue;
    const LayoutCandidate& c = r.candidates[i];
    const LayoutMetrics& m = o.metrics;
    const auto final_metrics = reranked.find(i);
    const std::string final_columns =
        final_metrics == reranked.end()
            ? std::string("false,,,")
            : fmt::format("true,{},{},{}", final_metrics->second->step_time_s, final_metrics->second->tokens_per_s,
                          name_of(final_metrics->second->fidelity));
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i,
                       c.layout.tp, c.layout.pp, c.layout.dp, c.layout.cp, c.layout.vpp, c.micro_batch,
                       c.global_batch, name_of(c.recompute), c.layout.zero_stage, c.layout.dp_shard,
                       c.layout.sequence_parallel,
                       name_of(c.layout.schedule), c.layout.order, fmt::join(c.layout.stage_layers, " "), m.gpus,
                       m.microbatches, m.step_time_s, m.tokens_per_s, m.mfu, m.hfu, m.gpu_seconds_per_token,
                       m.peak_bytes, m.capacity_bytes - m.peak_bytes, m.breakdown.compute.to_seconds(),
                       m.breakdown.exposed_comm.to_seconds(), m.breakdown.bubble.to_seconds(),
                       m.breakdown.optimizer.to_seconds(), m.breakdown.other.to_seconds(),
                       std::string(name_of(m.fidelity)),
                       final_columns, name_of(r.rerank_stop));
  }
}

SearchOutcome run_search(const SearchCommandOptions& options, SearchPartition& partition) {
  std::vector<Override> overrides;
  for (const auto& s : options.sets) overrides.push_back(parse_override(s));
  SearchOutcome outcome{prepare_scenario(options.scenario, overrides, LayoutCheck::kDeferToSearch)};
  const PreparedScenario& prepared = outcome.prepared;
  const Scenario& scenario = prepared.scenario;
  if (!scenario.search) {
    throw InputError(fmt::format("{}: no search: section; add one (e.g. search: {{tp: [4, 8], pp: [1, 2, 4]}}, see "
                                 "`clustersim help-config`) or use `clustersim run` for a fixed layout",
                                 options.scenario));
  }
  if (options.threads < 0 || options.threads > kMaxSearchThreads) {
    throw InputError(fmt::format("--threads {}: valid: 1..{} worker threads (0 = all cores)", options.threads,
                                 kMaxSearchThreads));
  }
  if (options.top && *options.top < 1) throw InputError(fmt::format("--top {}: must be >= 1", *options.top));

  SearchProblem problem = search_problem(prepared);
  if (scenario.jitter && partition.rank() == 0 && !options.quiet) {
    std::cerr << fmt::format("search: {}ignored: the search ranks steady steps; `clustersim run` of a layout with its "
                             "--set line applies the jitter\n",
                             scenario.jitter_where);
  }
  const int top = options.top.value_or(problem.space.top);
  outcome.top = top;
  problem.space.top = top;

  const bool root = partition.rank() == 0;
  // The CSV file is checked on every process (a process that failed alone would leave the others
  // waiting) and opened on rank 0, all before the search, so that a bad path fails at once.
  std::ofstream csv;
  if (!options.csv.empty()) {
    check_writable_output(options.csv, "--csv", "layouts.csv");
    if (root) {
      csv.open(options.csv);
      if (!csv) throw InputError(fmt::format("--csv {}: cannot open the file for writing", options.csv));
    }
  }
  ProgressBar bar("search", root && options.progress && !options.quiet ? ProgressBar::mode_for_stderr()
                                                                         : ProgressBar::Mode::kOff);
  SearchOptions search_options;
  search_options.threads = options.threads;
  search_options.partition = &partition;
  // A large space states its size once, as its screening begins (the bound and the count were
  // checked before expanding it: check_search_space_size).
  bool announced = !(root && options.progress && !options.quiet);
  search_options.progress = [&bar, &announced](std::string_view phase, size_t done, size_t total) {
    if (!announced && phase == "screen" && total >= kAnnouncedSearchCandidates) {
      announced = true;
      bar.finish();
      std::cerr << fmt::format("search: screening {} candidates at analytical fidelity\n",
                               total);
    }
    bar.update(phase, done, total);
  };
  const auto start = std::chrono::steady_clock::now();
  outcome.result = search_layouts(problem, search_options);
  outcome.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bar.finish();
  if (!options.csv.empty() && root) {
    write_search_csv(outcome.result, csv);
    check_written(csv, "--csv " + options.csv);
  }
  return outcome;
}

int search_command(const SearchCommandOptions& options, SearchPartition& partition, std::ostream& out) {
  const SearchOutcome outcome = run_search(options, partition);
  if (partition.rank() != 0) return 0;
  const SearchResult& result = outcome.result;
  const Scenario& scenario = outcome.prepared.scenario;
  if (!options.quiet) std::cerr << fmt::format("searched {} candidates ({} simulated) in {:.2f} s on {} process(es): {:.1f} simulated "
                           "layouts/s\n",
                           result.candidates.size(), result.evaluated, outcome.wall_s, partition.size(),
                           static_cast<double>(result.evaluated) / std::max(outcome.wall_s, 1e-9));
  if (options.json) {
    write_search_json(scenario, result, outcome.top, options.sets, out);
  } else {
    write_summary(scenario, outcome.prepared.cluster, result, outcome.top, options.sets, out);
  }
  return 0;
}

}  // namespace clustersim
