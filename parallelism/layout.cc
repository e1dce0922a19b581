#include "parallelism/layout.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/units.h"
#include "core/excerpt.h"

namespace clustersim {

std::string_view name_of(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kGpipe: return "gpipe";
    case PipelineSchedule::kOneFOneB: return "1f1b";
    case PipelineSchedule::kInterleaved1F1B: return "interleaved-1f1b";
  }
  return "?";
}

PipelineSchedule parse_pipeline_schedule(std::string_view text) {
  for (auto s : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kInterleaved1F1B}) {
    if (name_of(s) == text) return s;
  }
  throw InputError(fmt::format("unknown pipeline schedule \"{}\" (valid: gpipe, 1f1b, interleaved-1f1b)", excerpt(text)));
}

std::string_view name_of(GradReduceOp op) {
  switch (op) {
    case GradReduceOp::kAuto: return "auto";
    case GradReduceOp::kAllReduce: return "all_reduce";
    case GradReduceOp::kReduceScatter: return "reduce_scatter";
  }
  return "?";
}

GradReduceOp parse_grad_reduce_op(std::string_view text) {
  for (auto op : {GradReduceOp::kAuto, GradReduceOp::kAllReduce, GradReduceOp::kReduceScatter}) {
    if (name_of(op) == text) return op;
  }
  throw InputError(fmt::format("unknown gradient collective \"{}\" (valid: auto, all_reduce, reduce_scatter)", excerpt(text)));
}

int64_t parse_grad_bucket_elements(std::string_view text) {
  if (text == "auto") return 0;
  constexpr int64_t kMost = int64_t{1} << 62;
  int64_t value = 0;
  if (!parse_whole_number(text, value) || value < 1 || value > kMost) {
    throw InputError(fmt::format("\"{}\" is out of range or not a number: expected integer in [1, 2^62] or auto",
                                 excerpt(text, 60)));
  }
  return value;
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

namespace {

std::string list_text(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

// Divisors of n that are also accepted by `ok`, for suggestions.
template <typename Pred>
std::vector<int> valid_values(int n, Pred ok) {
  std::vector<int> out;
  for (int d : divisors(n)) {
    if (ok(d)) out.push_back(d);
  }
  return out;
}

void check_positive(int value, const char* name) {
  if (value < 1) {
    throw InputError(fmt::format("parallelism.{} = {}: must be >= 1", name, value))
        .about({fmt::format("parallelism.{}", name)});
  }
}

void validate_order(const std::string& order) {
  std::set<std::string> seen;
  std::stringstream ss(order);
  const std::set<std::string> known{"tp", "cp", "ep", "dp", "pp"};
  for (std::string part; std::getline(ss, part, '-');) {
    if (known.count(part) == 0 || !seen.insert(part).second) {
      throw InputError(
          fmt::format(
              "parallelism.order = \"{}\": expected a permutation of tp, cp, dp, pp (ep optional) joined by '-', "
              "innermost first, e.g. \"tp-cp-ep-dp-pp\"",
              excerpt(order)))
          .about({"parallelism.order"});
    }
  }
  for (const char* needed : {"tp", "cp", "dp", "pp"}) {
    if (seen.count(needed) == 0) {
      throw InputError(
          fmt::format("parallelism.order = \"{}\": missing \"{}\" (e.g. \"tp-cp-ep-dp-pp\")", excerpt(order), needed))
          .about({"parallelism.order"});
    }
  }
  // Megatron-Core (parallel_state.RankGenerator): "The ep and dp must be adjacent in order".
  if (seen.count("ep") != 0 && order.find("ep-dp") == std::string::npos && order.find("dp-ep") == std::string::npos) {
    throw InputError(
        fmt::format("parallelism.order = \"{}\": \"ep\" must be next to \"dp\" (expert parallelism "
                    "re-partitions the data-parallel ranks), e.g. \"tp-cp-ep-dp-pp\" or \"tp-cp-dp-ep-pp\"",
                    excerpt(order)))
        .about({"parallelism.order"});
  }
}

void validate_world(const Layout& l, const LayoutContext& c) {
  const std::optional<int64_t> world = size_product({l.tp, l.cp, l.pp, l.dp});
  if (world == c.gpus) return;
  if (world && c.allow_idle_gpus && *world < c.gpus) return;
  const std::optional<int64_t> model_parallel = size_product({l.tp, l.cp, l.pp});
  std::string hint;
  // Blamed first: dp where tp·cp·pp divides the GPUs, else the sizes among them that do not.
  std::vector<std::string> keys{"parallelism.dp"};
  if (model_parallel && c.gpus % *model_parallel == 0) {
    hint = fmt::format("; with tp={} cp={} pp={} use parallelism.dp = {}", l.tp, l.cp, l.pp, c.gpus / *model_parallel);
  } else if (model_parallel) {
    hint = fmt::format("; tp·cp·pp = {} does not divide {} GPU{}", *model_parallel, c.gpus, c.gpus == 1 ? "" : "s");
    // The sizes that do not divide the GPUs first, then the largest (whose product is too big).
    std::array<std::pair<int, const char*>, 3> sizes{{{l.tp, "parallelism.tp"}, {l.cp, "parallelism.cp"},
                                                      {l.pp, "parallelism.pp"}}};
    std::stable_sort(sizes.begin(), sizes.end(), [&c](const auto& a, const auto& b) {
      const bool a_divides = c.gpus % a.first == 0;
      const bool b_divides = c.gpus % b.first == 0;
      return a_divides != b_divides ? !a_divides : a.first > b.first;
    });
    keys.clear();
    for (const auto& size : sizes) keys.emplace_back(size.second);
    keys.emplace_back("parallelism.dp");
  }
  throw InputError(fmt::format("parallelism tp·cp·pp·dp = {}·{}·{}·{} = {} but the cluster has {} GPU{}{}", l.tp, l.cp,
                               l.pp, l.dp, world ? fmt::format("{}", *world) : std::string("more than 2^31"), c.gpus,
                               c.gpus == 1 ? "" : "s", hint))
      .about(std::move(keys));
}

void validate_heads(const Layout& l, const LayoutContext& c) {
  if (c.heads % l.tp != 0) {
    throw InputError(
        fmt::format("parallelism.tp = {}: the model's {} attention heads do not split evenly; valid tp: {}", l.tp,
                    c.heads, list_text(divisors(c.heads))))
        .about({"parallelism.tp"});
  }
  const int kv = c.kv_heads > 0 ? c.kv_heads : c.heads;
  // GQA: either each rank holds kv/tp whole KV heads, or each KV head is replicated tp/kv times.
  if (kv % l.tp != 0 && l.tp % kv != 0) {
    auto ok = [&](int t) { return c.heads % t == 0 && (kv % t == 0 || t % kv == 0); };
    std::vector<int> valid;
    for (int t = 1; t <= c.heads; ++t) {
      if (ok(t)) valid.push_back(t);
    }
    throw InputError(
        fmt::format("parallelism.tp = {} with {} KV heads: tp must divide the KV heads or be a multiple of them "
                    "(each KV head replicated tp/kv times); valid tp: {}",
                    l.tp, kv, list_text(valid)))
        .about({"parallelism.tp"});
  }
  if (c.ffn_hidden > 0 && c.ffn_hidden % l.tp != 0) {
    throw InputError(
        fmt::format("parallelism.tp = {}: model.ffn_hidden = {} does not split evenly; valid tp: {}", l.tp,
                    c.ffn_hidden,
                    list_text(valid_values(c.ffn_hidden, [&](int t) { return c.heads % t == 0 && t <= 64; }))))
        .about({"parallelism.tp", "model.ffn_hidden"});
  }
}

void validate_stages(const Layout& l, const LayoutContext& c) {
  if (!l.stage_layers.empty()) {
    if (static_cast<int>(l.stage_layers.size()) != l.pp) {
      throw InputError(
          fmt::format("parallelism.stage_layers has {} entries but pp = {}; give one layer count per stage",
                      l.stage_layers.size(), l.pp))
          .about({"parallelism.stage_layers"});
    }
    const int sum = std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), 0);
    for (int n : l.stage_layers) {
      if (n < 1)
        throw InputError("parallelism.stage_layers: every stage needs at least one layer")
            .about({"parallelism.stage_layers"});
    }
    if (sum != c.layers) {
      throw InputError(fmt::format("parallelism.stage_layers [{}] sums to {} but the model has {} layers",
                                   list_text(l.stage_layers), sum, c.layers))
          .about({"parallelism.stage_layers"});
    }
  } else if (c.layers % l.pp != 0) {
    auto valid = valid_values(c.layers, [](int) { return true; });
    throw InputError(
        fmt::format(
            "parallelism.pp = {}: {} layers do not split evenly into {} stages (would build {} layers); valid pp: {}; "
            "or give parallelism.stage_layers, a list of {} layer counts summing to {}",
            l.pp, c.layers, l.pp, c.layers / l.pp * l.pp, list_text(valid), l.pp, c.layers))
        .about({"parallelism.pp", "parallelism.stage_layers"});
  }
  const std::vector<int> stages = layers_per_stage(l, c.layers);
  if (l.layers_per_virtual_stage > 0) {
    // Megatron's --num-layers-per-virtual-pipeline-stage and --virtual-pipeline-model-parallel-size
    // say the same thing; both may be given only when they agree.
    if (l.vpp > 1 && stages.front() != l.vpp * l.layers_per_virtual_stage) {
      throw InputError(fmt::format("parallelism.layers_per_virtual_stage = {} cuts a stage of {} layers into {} "
                                   "chunks, but parallelism.vpp = "
                                   "{}; give one of the two (vpp {} agrees)",
                                   l.layers_per_virtual_stage, stages.front(),
                                   stages.front() / std::max(1, l.layers_per_virtual_stage), l.vpp,
                                   stages.front() / std::max(1, l.layers_per_virtual_stage)))
          .about({"parallelism.layers_per_virtual_stage", "parallelism.vpp"});
    }
    for (int n : stages) {
      if (n % l.layers_per_virtual_stage != 0) {
        throw InputError(fmt::format("parallelism.layers_per_virtual_stage = {}: a stage of {} layers cannot be cut "
                                     "into chunks of {} layers; "
                                     "valid values: {}",
                                     l.layers_per_virtual_stage, n, l.layers_per_virtual_stage,
                                     list_text(valid_values(n, [](int) { return true; }))))
            .about({"parallelism.layers_per_virtual_stage"});
      }
      if (n / l.layers_per_virtual_stage != stages.front() / l.layers_per_virtual_stage) {
        throw InputError(
            fmt::format(
                "parallelism.layers_per_virtual_stage = {} gives stages different chunk counts ({} vs {} layers); "
                "use vpp instead, which cuts every stage into the same number of chunks",
                l.layers_per_virtual_stage, stages.front(), n))
            .about({"parallelism.layers_per_virtual_stage"});
      }
    }
  } else if (l.vpp > 1) {
    for (int n : stages) {
      if (n % l.vpp != 0) {
        int g = 0;
        for (int s : stages) g = std::gcd(g, s);
        throw InputError(
            fmt::format(
                "parallelism.vpp = {}: a stage of {} layers cannot be split into {} model chunks; valid vpp: {}", l.vpp,
                n, l.vpp, list_text(divisors(g))))
            .about({"parallelism.vpp"});
      }
    }
  }
}

// "lower or upper", or only upper when lower is not a valid (positive) value.
std::string nearest_valid(int64_t lower, int64_t upper) {
  return lower > 0 ? fmt::format("{} or {}", lower, upper) : fmt::format("{}", upper);
}

void validate_batch(const Layout& l, const LayoutContext& c) {
  if (c.micro_batch < 1) throw InputError("training.micro_batch must be >= 1").about({"training.micro_batch"});
  if (c.global_batch < 1) throw InputError("training.global_batch must be >= 1").about({"training.global_batch"});
  const int64_t unit = c.micro_batch * l.dp;
  if (c.global_batch % unit != 0) {
    const int64_t lower = c.global_batch / unit * unit;
    const int64_t upper = lower + unit;
    const std::string suggestion = nearest_valid(lower, upper);
    throw InputError(
        fmt::format(
            "training.global_batch = {} is not a multiple of micro_batch · dp = {} · {} = {}; use {} (or change "
            "micro_batch or dp)",
            c.global_batch, c.micro_batch, l.dp, unit, suggestion))
        .about({"training.global_batch"});
  }
  const int64_t m = c.global_batch / unit;
  if (m > kMaxMicrobatchesPerPipeline) {
    throw InputError(
        fmt::format(
            "training.global_batch = {} gives global_batch / (micro_batch · dp) = {} microbatches per pipeline; the "
            "step simulation runs every microbatch and accepts at most {} (raise micro_batch or dp, or lower "
            "global_batch)",
            c.global_batch, m, kMaxMicrobatchesPerPipeline))
        .about({"training.global_batch"});
  }
}

void validate_schedule(const Layout& l, const LayoutContext& c) {
  const int v = virtual_stages(l, c.layers);
  const int64_t m = c.global_batch / (c.micro_batch * l.dp);
  if (l.schedule == PipelineSchedule::kInterleaved1F1B) {
    if (l.pp < 2) {
      throw InputError("parallelism.schedule = interleaved-1f1b needs pp >= 2; use 1f1b for pp = 1")
          .about({"parallelism.schedule"});
    }
    if (v < 2) {
      throw InputError(
          "parallelism.schedule = interleaved-1f1b needs vpp >= 2 (or layers_per_virtual_stage); use 1f1b for vpp = 1")
          .about({"parallelism.schedule"});
    }
    if (m % l.pp != 0) {
      throw InputError(
          fmt::format(
              "interleaved-1f1b needs the microbatches per pipeline (global_batch / (micro_batch · dp) = {}) to be a "
              "multiple of pp = {} (Megatron-LM requirement); nearest valid global_batch: {}",
              m, l.pp,
              nearest_valid(m / l.pp * l.pp * c.micro_batch * l.dp, (m / l.pp + 1) * l.pp * c.micro_batch * l.dp)))
          .about({"parallelism.schedule", "training.global_batch"});
    }
  } else if (v > 1) {
    throw InputError(
        fmt::format("parallelism.vpp = {} needs schedule: interleaved-1f1b (got {})", v, name_of(l.schedule)))
        .about({"parallelism.vpp"});
  }
}

void validate_experts_and_context(const Layout& l, const LayoutContext& c) {
  if (c.experts > 0) {
    if (c.experts % l.ep != 0) {
      throw InputError(fmt::format("parallelism.ep = {}: {} experts do not split evenly; valid ep: {}", l.ep, c.experts,
                                   list_text(divisors(c.experts))))
          .about({"parallelism.ep"});
    }
    const int dense = l.tp * l.cp * l.dp;
    if (dense % (l.ep * l.etp) != 0) {
      throw InputError(fmt::format("parallelism: ep · etp = {} · {} must divide tp · cp · dp = {} "
                                   "(expert-data-parallel size = {} / (ep · etp))",
                                   l.ep, l.etp, dense, dense))
          .about({"parallelism"});
    }
    if (c.moe_ffn_hidden > 0 && c.moe_ffn_hidden % l.etp != 0) {
      throw InputError(fmt::format("parallelism.etp = {}: model.moe.moe_ffn_hidden = {} does not split evenly; valid "
                                   "etp: {}",
                                   l.etp, c.moe_ffn_hidden, list_text(divisors(c.moe_ffn_hidden))))
          .about({"parallelism.etp", "model.moe.moe_ffn_hidden"});
    }
    if (l.tp > 1 && !l.sequence_parallel) {
      throw InputError(fmt::format("parallelism.tp = {} with mixture-of-experts layers needs sequence_parallel: true "
                                   "(Megatron-Core's MoE layer requires it with tensor parallelism)",
                                   l.tp))
          .about({"parallelism.tp"});
    }
  } else if (l.ep > 1 || l.etp > 1) {
    throw InputError(
        fmt::format("parallelism.ep = {}, etp = {}: the model has no experts; use ep = 1 and etp = 1", l.ep, l.etp))
        .about({"parallelism.ep"});
  }
  if (l.cp > 1 && c.seq_len % (2 * l.cp) != 0) {
    throw InputError(
        fmt::format("parallelism.cp = {}: training.seq_len = {} must be a multiple of 2·cp = {} for zig-zag "
                    "(load-balanced causal) "
                    "sharding; nearest valid: {}",
                    l.cp, c.seq_len, 2 * l.cp,
                    nearest_valid(c.seq_len / (2 * l.cp) * 2 * l.cp, (c.seq_len / (2 * l.cp) + 1) * 2 * l.cp)))
        .about({"parallelism.cp", "training.seq_len"});
  }
  if (l.cp > 1 && l.cp_comm == ContextParallelComm::kAllToAll) {
    const int kv = c.kv_heads > 0 ? c.kv_heads : c.heads;
    const int q_per_rank = c.heads / l.tp;
    const int kv_per_rank = kv >= l.tp ? kv / l.tp : 1;
    if (q_per_rank % l.cp != 0 || kv_per_rank % l.cp != 0) {
      throw InputError(
          fmt::format(
              "parallelism.cp = {} with cp_comm a2a (Ulysses) scatters heads over the context-parallel ranks, but each "
              "tensor-parallel rank holds {} query and {} KV heads; cp must divide both (or use cp_comm p2p)",
              l.cp, q_per_rank, kv_per_rank))
          .about({"parallelism.cp"});
    }
  }
}

}  // namespace

std::vector<int> layers_per_stage(const Layout& layout, int layers) {
  if (!layout.stage_layers.empty()) return layout.stage_layers;
  return std::vector<int>(static_cast<size_t>(layout.pp), layers / layout.pp);
}

std::vector<int> chunk_layers(const Layout& layout, int layers, int stage, int chunk) {
  const std::vector<int> stages = layers_per_stage(layout, layers);
  const int v = virtual_stages(layout, layers);
  const int target = chunk * layout.pp + stage;
  int first = 0;
  for (int vs = 0; vs < target; ++vs) first += stages[static_cast<size_t>(vs % layout.pp)] / v;
  std::vector<int> out(static_cast<size_t>(stages[static_cast<size_t>(stage)] / v));
  std::iota(out.begin(), out.end(), first);
  return out;
}

ShardSpec shard_spec(const Layout& layout) {
  ShardSpec s;
  s.tp = layout.tp;
  s.sequence_parallel = layout.sequence_parallel;
  s.cp = layout.cp;
  s.ep = layout.ep;
  s.etp = layout.etp;
  s.dispatcher = layout.moe_dispatcher;
  s.cp_comm = layout.cp_comm;
  return s;
}

int virtual_stages(const Layout& layout, int layers) {
  if (layout.layers_per_virtual_stage > 0) {
    return layers_per_stage(layout, layers).front() / layout.layers_per_virtual_stage;
  }
  return layout.vpp;
}

std::optional<int64_t> size_product(std::initializer_list<int> sizes) {
  constexpr int64_t kLimit = std::numeric_limits<int>::max();
  int64_t product = 1;
  for (int s : sizes) {
    product *= s;  // product <= 2^31 and s < 2^31: no overflow
    if (product > kLimit) return std::nullopt;
  }
  return product;
}

int64_t microbatches(const Layout& layout, int64_t global_batch, int64_t micro_batch) {
  return global_batch / (micro_batch * layout.dp);
}

void validate_layout(const Layout& l, const LayoutContext& c) {
  check_positive(l.tp, "tp");
  check_positive(l.pp, "pp");
  check_positive(l.dp, "dp");
  check_positive(l.cp, "cp");
  check_positive(l.ep, "ep");
  check_positive(l.etp, "etp");
  check_positive(l.vpp, "vpp");
  if (l.layers_per_virtual_stage < 0)
    throw InputError("parallelism.layers_per_virtual_stage must be >= 0")
        .about({"parallelism.layers_per_virtual_stage"});
  if (l.zero_stage < 0 || l.zero_stage > 3) {
    throw InputError(fmt::format("parallelism.zero = {}: valid ZeRO stages are 0, 1, 2, 3", l.zero_stage))
        .about({"parallelism.zero"});
  }
  if (l.sequence_parallel && l.tp == 1) {
    throw InputError("parallelism.sequence_parallel = true needs tp > 1 (it shards along the tensor-parallel group)")
        .about({"parallelism.sequence_parallel"});
  }
  if (l.tp_comm_overlap && (l.tp == 1 || !l.sequence_parallel)) {
    // Megatron-LM arguments.py: "Tensor parallel communication/GEMM overlap can happen only when
    // sequence parallelism is enabled".
    throw InputError(fmt::format("parallelism.tp_comm_overlap = true needs tp > 1 and sequence_parallel: true (got tp "
                                 "{}, sequence_parallel {}); Megatron overlaps the sequence-parallel all-gathers and "
                                 "reduce-scatters",
                                 l.tp, l.sequence_parallel))
        .about({"parallelism.tp_comm_overlap"});
  }
  if (l.overlap_param_gather && l.zero_stage == 0) {
    // Megatron-LM arguments.py: "--overlap-param-gather only supported with distributed optimizer"
    // (without it every rank holds whole parameters and there is no gather to overlap).
    throw InputError(
        "parallelism.overlap_param_gather = true needs sharded parameters to gather: set "
        "distributed_optimizer: true or zero: 1, 2 or 3, or leave overlap_param_gather false")
        .about({"parallelism.overlap_param_gather"});
  }
  if (l.zero3_bucket_elements < 0) {
    throw InputError(fmt::format("parallelism.zero3_bucket_elements = {}: must be >= 0 (0 = one gather per layer)",
                                 l.zero3_bucket_elements))
        .about({"parallelism.zero3_bucket_elements"});
  }
  if (l.zero3_bucket_elements > 0 && l.zero_stage != 3) {
    throw InputError(
        fmt::format("parallelism.zero3_bucket_elements = {} applies to ZeRO stage 3 only (parallelism.zero "
                    "= {}); set it to 0 or use zero: 3",
                    l.zero3_bucket_elements, l.zero_stage))
        .about({"parallelism.zero3_bucket_elements", "parallelism.zero"});
  }
  if (l.zero3_bucket_elements > 0 && c.experts > 0) {
    throw InputError(fmt::format("parallelism.zero3_bucket_elements = {}: bucketed ZeRO-3 gathers are not modelled for "
                                 "mixture-of-experts models ({} experts); use 0 (one gather per layer)",
                                 l.zero3_bucket_elements, c.experts))
        .about({"parallelism.zero3_bucket_elements"});
  }
  if (l.dp_shard < 0 || (l.dp_shard > 0 && l.dp % l.dp_shard != 0)) {
    throw InputError(fmt::format("parallelism.dp_shard = {}: must be 0 (shard over all {} data-parallel ranks) or a "
                                 "divisor of dp = {}: {}",
                                 l.dp_shard, l.dp, l.dp, fmt::join(divisors(l.dp), ", ")))
        .about({"parallelism.dp_shard"});
  }
  if (l.dp_shard > 0 && l.dp_shard < l.dp) {
    if (l.zero_stage == 0) {
      throw InputError(fmt::format("parallelism.dp_shard = {} shards the model state over groups of {} of the {} "
                                   "data-parallel ranks, but nothing is sharded without ZeRO: set zero: 1, 2 or 3 "
                                   "(or distributed_optimizer: true), or dp_shard: 0",
                                   l.dp_shard, l.dp_shard, l.dp))
          .about({"parallelism.dp_shard"});
    }
    if (c.experts > 0) {
      throw InputError(fmt::format("parallelism.dp_shard = {}: hybrid sharding is not modelled for mixture-of-experts "
                                   "models ({} experts); use dp_shard: 0 (full sharding)",
                                   l.dp_shard, c.experts))
          .about({"parallelism.dp_shard"});
    }
    if (l.grad_reduce_op == GradReduceOp::kAllReduce) {
      throw InputError(fmt::format("parallelism.dp_shard = {} reduce-scatters gradients inside each shard group: "
                                   "grad_reduce_op all_reduce does not apply; use auto or reduce_scatter",
                                   l.dp_shard))
          .about({"parallelism.dp_shard"});
    }
  }
  if (l.grad_reduce_op == GradReduceOp::kAllReduce && l.zero_stage > 1) {
    throw InputError(fmt::format("parallelism.grad_reduce_op = all_reduce keeps whole gradients on every rank, which "
                                 "ZeRO stage {} shards; use auto or reduce_scatter, or zero: 0 or 1",
                                 l.zero_stage))
        .about({"parallelism.grad_reduce_op"});
  }
  if (l.grad_reduce_op == GradReduceOp::kReduceScatter && l.zero_stage == 0) {
    throw InputError(
        "parallelism.grad_reduce_op = reduce_scatter leaves each rank a gradient shard, which needs a "
        "sharded optimizer (parallelism.zero >= 1 or distributed_optimizer: true); use auto or all_reduce")
        .about({"parallelism.grad_reduce_op", "parallelism.zero"});
  }
  validate_order(l.order);
  validate_world(l, c);
  validate_heads(l, c);
  validate_stages(l, c);
  validate_batch(l, c);
  validate_schedule(l, c);
  validate_experts_and_context(l, c);
}

}  // namespace clustersim
