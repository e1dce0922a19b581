#include "tools/validation/published_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/excerpt.h"
#include "parallelism/layout.h"
#include "parallelism/search_space.h"
#include "scenarios/scenario.h"
#include "tools/validation/conventions/conventions.h"
#include "tools/validation/csv_table.h"
#include "workloads/parameter_count.h"

namespace clustersim {
namespace {

constexpr std::string_view kWhat = "training measurements";

using conventions::ConventionContext;
using conventions::PublicationConventions;
using conventions::contains;
using conventions::conventions_for;
using conventions::conventions_of;
using conventions::lower;
using conventions::note_value;
using conventions::only_layer_metrics;

// The columns every measurement CSV has (docs/validation/published/training_runs.csv).
constexpr std::array<std::string_view, 29> kColumns = {
    "source",    "model",   "params_b",  "layers",     "hidden",      "ffn_hidden",       "heads",     "kv_heads",
    "vocab",     "seq_len", "global_batch", "micro_batch", "gpus",     "gpu_type",         "tp",        "pp",
    "dp",        "cp",      "ep",        "vpp",        "sequence_parallel", "recompute",   "precision", "zero_stage",
    "metric_name", "metric_value", "metric_unit", "notes", "config_id"};

struct RowReader {
  const CsvTable& table;
  std::map<std::string_view, size_t> index;

  explicit RowReader(const CsvTable& t) : table(t) {
    for (auto name : kColumns) index[name] = table.column(name);
  }
  const std::string& text(const CsvRecord& r, std::string_view column) const { return r.fields[index.at(column)]; }

  [[noreturn]] void bad(const CsvRecord& r, std::string_view column, std::string_view why) const {
    throw InputError(fmt::format("{}:{}: column {} = \"{}\": {}", table.path(), r.line, column, excerpt(text(r, column)), why));
  }
  std::optional<double> real(const CsvRecord& r, std::string_view column) const {
    const std::string& t = text(r, column);
    if (t.empty()) return std::nullopt;
    double value = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(value)) bad(r, column, "not a number");
    return value;
  }
  std::optional<int64_t> integer(const CsvRecord& r, std::string_view column) const {
    const auto value = real(r, column);
    if (!value) return std::nullopt;
    if (*value != std::floor(*value) || *value < 1) {
      bad(r, column, "expected a positive whole number (empty when the source does not give it)");
    }
    const auto [most, key] = column_bound(column);
    if (*value > static_cast<double>(most)) {
      bad(r, column, fmt::format("out of range; valid: 1..{} (as {} of a scenario)", most, key));
    }
    return static_cast<int64_t>(*value);
  }

  // The largest value of an integer column: the bound of the scenario key it becomes (and that key).
  static std::pair<int64_t, std::string> column_bound(std::string_view column) {
    if (column == "gpus") return {kMaxClusterGpus, "cluster GPUs"};
    static const std::map<std::string_view, std::string> kKeys = {
        {"layers", "model.layers"},     {"hidden", "model.hidden"},
        {"ffn_hidden", "model.ffn_hidden"}, {"heads", "model.heads"},
        {"kv_heads", "model.kv_heads"}, {"vocab", "model.vocab"},
        {"seq_len", "training.seq_len"}, {"global_batch", "training.global_batch"},
        {"micro_batch", "training.micro_batch"}, {"tp", "parallelism.tp"},
        {"pp", "parallelism.pp"},       {"dp", "parallelism.dp"},
        {"cp", "parallelism.cp"},       {"ep", "parallelism.ep"},
        {"vpp", "parallelism.vpp"}};
    const std::string& key = kKeys.at(column);
    const KeyDef* def = scenario_schema().find(key);
    check_invariant(def != nullptr && def->max.has_value(), "published runs: a column's scenario key has no bound");
    return {static_cast<int64_t>(*def->max), key};
  }
};

// An NVL72 rack (gb200-nvl72, gb300-nvl72) holds 72 GPUs; a job of a multiple of 64 GPUs over
// several racks is placed 64 per rack (16 of its 18 four-GPU compute trays).
constexpr int64_t kNvl72Gpus = 72;
constexpr int64_t kNvl72JobGpus = 64;

// ---- what every source's columns mean (the conventions of each publication: conventions/) ---------

std::optional<Recompute> parse_published_recompute(const std::string& text) {
  const std::string t = lower(text);
  if (t.empty()) return std::nullopt;
  if (t.starts_with("none") || t.starts_with("disabled")) return Recompute::kNone;
  if (t.starts_with("selective")) return Recompute::kSelective;
  if (t.starts_with("full") || t.starts_with("every_layer") || contains(t, "checkpoint")) return Recompute::kFull;
  return std::nullopt;
}

std::optional<DataType> parse_published_precision(const std::string& text) {
  const std::string t = lower(text);
  if (contains(t, "fp8")) return DataType::kFp8;
  if (contains(t, "bf16")) return DataType::kBf16;
  if (contains(t, "fp16") || contains(t, "16-bit")) return DataType::kFp16;
  return std::nullopt;
}

// ZeRO stage from "3 (FSDP FULL_SHARD)", "2 (FSDP SHARD_GRAD_OP)", "FSDP (FSDP=1)", "DDP (FSDP=0)", "1".
std::optional<int> parse_published_zero(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (text.starts_with("DDP")) return std::nullopt;  // plain DDP: the convention decides (distributed optimizer)
  if (contains(text, "FULL_SHARD") || text.starts_with("FSDP")) return 3;
  if (contains(text, "SHARD_GRAD_OP")) return 2;
  if (text.front() >= '0' && text.front() <= '3') return text.front() - '0';
  return std::nullopt;
}

}  // namespace

std::string publication_of(const std::string& source) {
  size_t end = source.size();
  for (std::string_view cut : {" (", " '"}) end = std::min(end, source.find(cut));
  std::string out = source.substr(0, end);
  while (!out.empty() && (out.back() == ',' || out.back() == ' ')) out.pop_back();
  return out;
}


std::string_view name_of(SourceConvention convention) { return conventions_for(convention).name(); }

SourceConvention convention_of(const std::string& source) { return conventions_of(source).id(); }

std::optional<std::string> node_preset_for(const std::string& gpu_type) {
  if (contains(gpu_type, "GB300")) return "gb300-nvl72";
  if (contains(gpu_type, "GB200")) return "gb200-nvl72";
  if (contains(gpu_type, "B200")) return "hgx-b200";
  if (contains(gpu_type, "H800")) return "hgx-h800";
  if (contains(gpu_type, "H200")) return "hgx-h200";
  if (contains(gpu_type, "H100")) return "dgx-h100";
  if (contains(gpu_type, "A100")) {
    if (contains(gpu_type, "40GB")) return "dgx-a100-40gb";
    if (contains(gpu_type, "Jean Zay")) return "jean-zay-a100";
    return "dgx-a100";
  }
  return std::nullopt;
}

std::vector<PublishedConfig> read_published_runs(const std::string& csv_path) {
  const CsvTable table = CsvTable::read(csv_path, kWhat);
  const RowReader rows(table);
  if (table.records().empty()) {
    throw InputError(fmt::format("{}: no data rows, only the header; give at least one measurement", csv_path));
  }
  std::vector<PublishedConfig> configs;
  std::map<std::string, size_t> index_of;
  for (const CsvRecord& r : table.records()) {
    const std::string& id = rows.text(r, "config_id");
    if (id.empty()) rows.bad(r, "config_id", "every row needs the id of its configuration");
    if (rows.text(r, "metric_name").empty()) rows.bad(r, "metric_name", "every row needs the metric it reports");
    const auto value = rows.real(r, "metric_value");
    if (!value) rows.bad(r, "metric_value", "every row needs the published value");
    // Every metric the CSV holds (throughput, FLOP/s, MFU, times, GPU-hours) is positive.
    if (!(*value > 0)) rows.bad(r, "metric_value", "a published throughput, time or utilisation is > 0");
    auto [it, inserted] = index_of.emplace(id, configs.size());
    if (inserted) {
      PublishedConfig c;
      c.config_id = id;
      c.line = r.line;
      c.source = rows.text(r, "source");
      c.model = rows.text(r, "model");
      c.gpu_type = rows.text(r, "gpu_type");
      c.recompute = rows.text(r, "recompute");
      c.precision = rows.text(r, "precision");
      c.zero_stage = rows.text(r, "zero_stage");
      c.sequence_parallel = rows.text(r, "sequence_parallel");
      c.notes = rows.text(r, "notes");
      c.params_b = rows.real(r, "params_b");
      c.layers = rows.integer(r, "layers");
      c.hidden = rows.integer(r, "hidden");
      c.ffn_hidden = rows.integer(r, "ffn_hidden");
      c.heads = rows.integer(r, "heads");
      c.kv_heads = rows.integer(r, "kv_heads");
      c.vocab = rows.integer(r, "vocab");
      c.seq_len = rows.integer(r, "seq_len");
      c.global_batch = rows.integer(r, "global_batch");
      c.micro_batch = rows.integer(r, "micro_batch");
      c.gpus = rows.integer(r, "gpus");
      c.tp = rows.integer(r, "tp");
      c.pp = rows.integer(r, "pp");
      c.dp = rows.integer(r, "dp");
      c.cp = rows.integer(r, "cp");
      c.ep = rows.integer(r, "ep");
      c.vpp = rows.integer(r, "vpp");
      configs.push_back(std::move(c));
    }
    configs[it->second].metrics.push_back(
        PublishedMetric{rows.text(r, "metric_name"), rows.text(r, "metric_unit"), *value, r.line});
  }
  return configs;
}

PublishedScenario build_published_scenario(const PublishedConfig& c, const HardwareCatalog& catalog) {
  const PublicationConventions& source = conventions_of(c.source);
  PublishedScenario out;
  out.convention = source.id();
  ConventionContext ctx{c, out, only_layer_metrics(c)};
  const bool layer_only = ctx.layer_only;

  // Features clustersim does not have come first: they explain the row however complete it is.
  const auto node = node_preset_for(c.gpu_type);
  if (node) {
    out.node = *node;
    source.note_node(ctx);
  } else if (const auto unnamed = c.gpu_type.empty() ? source.node_for_unnamed_gpu(ctx) : std::nullopt) {
    out.node = *unnamed;
  } else {
    out.missing = fmt::format("no node preset for GPU type \"{}\"", c.gpu_type.empty() ? "(not given)" : c.gpu_type);
    return out;
  }

  // Sequence and batch.
  int64_t seq_len = c.seq_len.value_or(0);
  if (!c.seq_len) seq_len = source.unstated_seq_len(ctx).value_or(0);
  if (seq_len == 0) {
    out.missing = "sequence length not given";
    return out;
  }
  int64_t tp = c.tp.value_or(1);
  int64_t pp = c.pp.value_or(1);
  if (!source.model_parallel(ctx, tp, pp)) return out;
  int64_t micro_batch = c.micro_batch.value_or(1);
  if (!c.micro_batch && !layer_only) ctx.assume("micro_batch = 1", source.unstated_micro_batch_reason());
  int64_t gpus = c.gpus.value_or(0);
  if (layer_only && !c.gpus) {
    gpus = tp;
    ctx.assume(fmt::format("{} GPUs of one node", tp), "Table 4 times one layer on the tensor-parallel group");
  }
  if (gpus == 0) {
    out.missing = "GPU count not given";
    return out;
  }
  const int64_t cp = c.cp.value_or(1);
  if (gpus % (tp * pp * cp) != 0) {
    out.missing = fmt::format("tp·pp·cp = {}·{}·{} does not divide {} GPUs", tp, pp, cp, gpus);
    return out;
  }
  const int64_t dp = c.dp.value_or(gpus / (tp * pp * cp));
  if (tp * pp * cp * dp != gpus) {
    throw InputError(fmt::format("config {} (line {}): tp·pp·cp·dp = {}·{}·{}·{} but gpus = {}", c.config_id, c.line,
                                 tp, pp, cp, dp, gpus));
  }
  int64_t global_batch = c.global_batch.value_or(0);
  if (!c.global_batch) {
    const auto unstated = source.unstated_global_batch(ctx, seq_len, micro_batch, dp);
    if (!unstated) {
      out.missing = "global batch not given";
      return out;
    }
    global_batch = *unstated;
  }

  const auto model = source.model(ctx, seq_len);
  if (!model) return out;
  out.scenario.model = *model;

  // Training options.
  TrainingSpec& t = out.scenario.training;
  t.seq_len = seq_len;
  t.global_batch = global_batch;
  t.micro_batch = micro_batch;
  if (const auto dtype = parse_published_precision(c.precision)) {
    t.compute_dtype = *dtype;
    source.note_precision(ctx, *dtype);
  } else {
    t.compute_dtype = source.unstated_precision(ctx);
  }
  const DataType params_dtype = t.compute_dtype == DataType::kFp16 ? DataType::kFp16 : DataType::kBf16;
  t.precision = PrecisionPolicy::megatron_mixed(params_dtype);
  source.mixed_precision(ctx, t);
  const auto recompute = parse_published_recompute(c.recompute);
  t.recompute = recompute ? *recompute : source.unstated_recompute(ctx);
  t.attention = source.naive_attention(ctx) ? AttentionKernel::kNaive : AttentionKernel::kFlash;
  source.kernels(ctx, t);
  t.hidden_dropout = source.dropout();
  t.attention_dropout = source.dropout();

  // Layout.
  Layout& l = out.scenario.layout;
  l.tp = static_cast<int>(tp);
  l.pp = static_cast<int>(pp);
  l.cp = static_cast<int>(cp);
  l.dp = static_cast<int>(dp);
  l.ep = static_cast<int>(c.ep.value_or(1));
  if (out.scenario.model.moe.enabled()) l.order = "tp-cp-ep-dp-pp";
  if (contains(c.model, "DeepSeek-V3") && l.ep > 1) {
    // DeepSeek's own run: DeepEP's node-limited dispatch (§3.2.2: each token to at most 4 nodes over
    // InfiniBand, forwarded over NVLink; FP8 dispatch, BF16 combine, §3.3.2).
    l.moe_dispatcher = MoeDispatcher::kDeepEp;
    ctx.assume("moe_dispatcher = deepep",
               "the report's all-to-all kernels: a token crosses InfiniBand once per node (at most 4, the routing's "
               "node limit) and NVLink to its experts; dispatched in FP8, combined in BF16");
  }
  if (c.sequence_parallel == "yes" && tp > 1) {
    l.sequence_parallel = true;
  } else if (c.sequence_parallel == "yes") {
    ctx.assume("sequence_parallel = false", "published as on, but it shards nothing at tp = 1");
  } else if (c.sequence_parallel.empty() && tp > 1) {
    l.sequence_parallel = source.unstated_sequence_parallel(ctx);
  }
  if (l.sequence_parallel) source.tp_comm_overlap(ctx, l);
  if (const auto zero = parse_published_zero(c.zero_stage)) {
    l.zero_stage = *zero;
  } else {
    source.unstated_zero(ctx, l);
  }
  source.gradient_reduction(ctx, l, t, params_dtype);

  const int64_t microbatches_per_pipeline = global_batch / std::max<int64_t>(1, micro_batch * dp);
  if (c.vpp && *c.vpp > 1) {
    l.vpp = static_cast<int>(*c.vpp);
  } else if (!c.vpp && pp > 1) {
    l.vpp = source.unstated_vpp(ctx, out.scenario.model.layers, l.pp, microbatches_per_pipeline);
  }
  l.schedule = l.vpp > 1 ? PipelineSchedule::kInterleaved1F1B : PipelineSchedule::kOneFOneB;
  const int64_t layers = out.scenario.model.layers;
  if (pp > 1 && layers % pp != 0 && l.vpp == 1) {
    // The source's framework split the layers unevenly (Megatron-LM would refuse); the split is not
    // published: the first layers % pp stages take one layer more.
    for (int64_t stage = 0; stage < pp; ++stage) {
      l.stage_layers.push_back(static_cast<int>(layers / pp + (stage < layers % pp ? 1 : 0)));
    }
    ctx.assume(fmt::format("{} layers over {} stages: {} with {} and {} with {}", layers, pp, layers % pp,
                           layers / pp + 1, pp - layers % pp, layers / pp),
               "uneven split not published");
  } else if (pp > 1 && layers % pp != 0) {
    // Megatron-Core splits such models with the embedding and the loss counted as pipeline layers
    // (account_for_embedding/loss_in_pipeline_split), which gives some model chunks one layer less;
    // here every chunk of a stage holds the same number of layers. Of the chunk counts up to the
    // published one, the split with the shortest estimated 1F1B time, largest stage × (m + (p − 1)/v),
    // stands in (the surplus taken from the first and last stages, search_space.h).
    const int64_t m = global_batch / std::max<int64_t>(1, micro_batch * dp);
    double best_time = 0;
    std::vector<int> best;
    int best_v = 0;
    for (int v = l.vpp; v >= 1; --v) {
      const std::vector<int> split = uneven_stage_layers(static_cast<int>(layers), static_cast<int>(pp), v);
      if (split.empty() || (v > 1 && m % pp != 0)) continue;
      const double largest = *std::max_element(split.begin(), split.end());
      const double time = largest * (static_cast<double>(m) + static_cast<double>(pp - 1) / v);
      if (best.empty() || time < best_time) {
        best_time = time;
        best = split;
        best_v = v;
      }
    }
    if (!best.empty()) {
      std::string text;
      for (int n : best) text += (text.empty() ? "" : ", ") + std::to_string(n);
      ctx.assume(fmt::format("vpp = {}, stage_layers = [{}]", best_v, text),
                 fmt::format("{} layers do not split into {} stages of {} equal chunks; the published split (embedding "
                             "and loss counted as layers) is not expressible",
                             layers, pp, l.vpp));
      l.vpp = best_v;
      l.stage_layers = best;
      l.schedule = best_v > 1 ? PipelineSchedule::kInterleaved1F1B : PipelineSchedule::kOneFOneB;
    }
  }

  // Cluster.
  NodeSpec node_spec = catalog.node(out.node);
  int64_t per_node = node_spec.gpus;
  ClusterSpec& cluster = out.scenario.cluster;
  if (gpus < per_node) cluster.gpus_per_node = static_cast<int>(gpus);
  if (gpus > per_node && gpus % per_node != 0 && node_spec.gpus == kNvl72Gpus && gpus % kNvl72JobGpus == 0) {
    per_node = kNvl72JobGpus;
    cluster.gpus_per_node = static_cast<int>(per_node);
    ctx.assume(fmt::format("{} of the 72 GPUs of each NVL72 rack ({} racks)", per_node, gpus / per_node),
               "a power-of-two job fills 16 of a rack's 18 compute trays; the source does not say");
  }
  out.nodes = static_cast<int>((gpus + per_node - 1) / per_node);
  if (gpus > per_node && gpus % per_node != 0) {
    out.missing = fmt::format("{} GPUs do not fill whole {}-GPU nodes", gpus, per_node);
    return out;
  }
  cluster.nodes.assign(static_cast<size_t>(out.nodes), node_spec);
  cluster.fabric.type = FabricType::kRailOptimized;
  cluster.fabric.switch_latency = Duration::nanoseconds(300);  // the scenario schema's default
  cluster.fabric.leaf_ports = 32;

  out.scenario.name = c.config_id;
  out.scenario.source = c.source;
  out.scenario.simulation.fidelity = FidelityChoice::kAnalytical;
  out.scenario.simulation.representative = true;

  // Parameters as the source counts them.
  if (const auto n = note_value(c.notes, "NumParams=")) {
    out.parameters = std::stod(*n);
  } else {
    out.parameters = static_cast<double>(count_parameters(out.scenario.model).total());
  }

  // What the simulator would reject.
  try {
    out.scenario.model.validate();
    t.validate(out.scenario.model);
    LayoutContext context;
    context.layers = static_cast<int>(out.scenario.model.layers);
    context.heads = static_cast<int>(out.scenario.model.heads);
    context.kv_heads = static_cast<int>(out.scenario.model.kv_head_count());
    context.ffn_hidden = static_cast<int>(out.scenario.model.ffn_hidden);
    context.experts = static_cast<int>(out.scenario.model.moe.num_experts);
    context.moe_ffn_hidden = static_cast<int>(out.scenario.model.moe.moe_ffn_hidden);
    context.gpus = static_cast<int>(gpus);
    context.gpus_per_node = static_cast<int>(std::min(gpus, per_node));
    context.global_batch = global_batch;
    context.micro_batch = micro_batch;
    context.seq_len = seq_len;
    validate_layout(l, context);
  } catch (const InputError& e) {
    out.missing = fmt::format("rejected by clustersim: {}", e.what());
  }
  return out;
}

}  // namespace clustersim
