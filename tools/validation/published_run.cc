#include "tools/validation/published_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/excerpt.h"
#include "parallelism/layout.h"
#include "parallelism/search_space.h"
#include "scenarios/scenario.h"
#include "tools/validation/csv_table.h"
#include "workloads/parameter_count.h"

namespace clustersim {
namespace {

constexpr std::string_view kWhat = "training measurements";

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

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

// ---- conventions ---------------------------------------------------------------------------------

// LLaMA-1 shapes (Touvron et al. 2023, Table 2: layers, d_model, heads; ffn from the released
// params.json: multiple_of 256 over 8/3·d). Hagemann et al.'s sweep files name only "Llama 13B".
struct LlamaShape {
  std::string_view name;
  int64_t layers, hidden, heads, ffn;
};
constexpr std::array<LlamaShape, 4> kLlama1 = {{{"Llama 7B", 32, 4096, 32, 11008},
                                                {"Llama 13B", 40, 5120, 40, 13824},
                                                {"Llama 30B", 60, 6656, 52, 17920},
                                                {"Llama 65B", 80, 8192, 64, 22016}}};

// Megatron-Bridge model names → shipped model presets (same architecture: Llama 3.1 405B is
// Llama 3 405B with a longer RoPE context; the mixture-of-experts presets follow the released
// configs that Megatron-Bridge's providers copy).
const std::map<std::string, std::string>& bridge_presets() {
  static const std::map<std::string, std::string> presets = {
      {"LLAMA3_8B", "llama3-8b"},    {"LLAMA3_70B", "llama3-70b"},       {"LLAMA3.1_405B", "llama3-405b"},
      {"DeepSeekV3", "deepseek-v3"}, {"Qwen3_30B_a3B", "qwen3-30b-a3b"}, {"Qwen3_235B_a22B", "qwen3-235b-a22b"},
      {"GPT OSS 120B", "gpt-oss-120b"}};
  return presets;
}

// Hagemann et al.: the global batch holds 4,194,304 tokens (2048 × 2k or 512 × 8k sequences) and the
// vocabulary 128,000 tokens. Neither is in the data files; both are inferred from them: MFU × step
// time × GPUs × 312 TFLOP/s divided by PaLM's 6N + 12·L·h·s per token is constant within every file
// and equals 4,194,304 tokens to within 1 % (2 % in the 32-GPU file) for Llama 13B, 30B and 65B at
// 2k and 8k when N counts an untied 128,000-token embedding and LM head (with LLaMA's 32,000 tokens
// it is off by 6-8 %; tools/validation/published_run_test.cc checks every row).
// An NVL72 rack (gb200-nvl72, gb300-nvl72) holds 72 GPUs; a job of a multiple of 64 GPUs over
// several racks is placed 64 per rack (16 of its 18 four-GPU compute trays).
constexpr int64_t kNvl72Gpus = 72;
constexpr int64_t kNvl72JobGpus = 64;
constexpr int64_t kHagemannBatchTokens = 4'194'304;
constexpr int64_t kHagemannVocab = 128'000;

struct Context {
  const PublishedConfig& config;
  PublishedScenario& out;
  void assume(std::string field, std::string why) {
    out.assumed.push_back(fmt::format("{} ({})", std::move(field), std::move(why)));
  }
};

bool only_layer_metrics(const PublishedConfig& c) {
  return !c.metrics.empty() &&
         std::all_of(c.metrics.begin(), c.metrics.end(), [](const auto& m) { return m.name.starts_with("layer_"); });
}

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

std::optional<std::string> note_value(const std::string& notes, std::string_view key) {
  const size_t at = notes.find(key);
  if (at == std::string::npos) return std::nullopt;
  size_t end = notes.find(';', at);
  if (end == std::string::npos) end = notes.size();
  return notes.substr(at + key.size(), end - at - key.size());
}

// GPT as Megatron-LM builds it: GeLU MLP, LayerNorm, learned positions, tied embeddings, biases.
ModelSpec gpt_model(const PublishedConfig& c, int64_t seq_len) {
  ModelSpec m;
  m.name = c.model;
  m.layers = *c.layers;
  m.hidden = *c.hidden;
  m.heads = *c.heads;
  m.ffn_hidden = c.ffn_hidden.value_or(4 * m.hidden);
  m.vocab = c.vocab.value_or(0);
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.position_embedding = PositionEmbedding::kLearned;
  m.max_position_embeddings = seq_len;
  m.tied_embeddings = true;
  m.linear_bias = true;
  return m;
}

// Llama: SwiGLU, RMSNorm, RoPE, untied LM head, no biases.
ModelSpec llama_model(std::string name, int64_t layers, int64_t hidden, int64_t heads, int64_t ffn, int64_t vocab) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.position_embedding = PositionEmbedding::kRope;
  m.tied_embeddings = false;
  m.linear_bias = false;
  return m;
}

// The model of `c`, or an empty optional with out.missing set.
std::optional<ModelSpec> resolve_model(Context& ctx, int64_t seq_len) {
  const PublishedConfig& c = ctx.config;
  PublishedScenario& out = ctx.out;
  switch (out.convention) {
    case SourceConvention::kMegatronBridge: {
      const auto it = bridge_presets().find(c.model);
      if (it == bridge_presets().end()) break;
      ModelSpec m = load_model_preset(it->second);
      m.name = c.model;
      ctx.assume(fmt::format("model = preset {}", it->second), "the performance summary names only the model");
      if (it->second == "deepseek-v3") {
        out.flop_mtp_layers = 1;
        ctx.assume("one multi-token-prediction layer in the FLOP count, not simulated",
                   "the published TFLOP/s per token matches Megatron-Bridge's formula with mtp_num_layers = 1");
      }
      if (it->second == "gpt-oss-120b") {
        out.flop_ungated_mlp = true;
        ctx.assume("the FLOP count prices the experts' MLP as ungated (2 matrices, not SwiGLU's 3) and every layer's "
                   "attention over the whole sequence",
                   "223 TFLOP/s per 8,213 tokens/s (B200, s 4,096) and 488 per 15,876 (GB200, s 8,192) are 27.15 and "
                   "30.74 GFLOP per token: Megatron-Bridge's formula with glu = 1, not 1.5 (34.3 and 37.9)");
      }
      return m;
    }
    case SourceConvention::kHagemann: {
      for (const auto& shape : kLlama1) {
        if (c.model != shape.name) continue;
        ctx.assume(fmt::format("layers {}, hidden {}, heads {}, ffn {}", shape.layers, shape.hidden, shape.heads,
                               shape.ffn),
                   "LLaMA-1 shapes, Touvron et al. 2023 Table 2; the data files name only the model");
        ctx.assume(fmt::format("vocab = {}", kHagemannVocab),
                   "inferred: PaLM FLOPs per step from the files' MFU are constant only with a 128,000-token "
                   "untied vocabulary");
        ModelSpec m = llama_model(c.model, shape.layers, shape.hidden, shape.heads, shape.ffn, kHagemannVocab);
        m.make_vocab_size_divisible_by = 1;
        return m;
      }
      break;
    }
    case SourceConvention::kLlmFoundry: {
      if (!c.layers || !c.hidden || !c.heads || !c.vocab) break;
      // MPT (llm-foundry mpt-*.yaml): GeLU MLP of 4h, LayerNorm, ALiBi, tied embeddings, no biases,
      // no dropout.
      ModelSpec m = gpt_model(c, seq_len);
      m.position_embedding = PositionEmbedding::kAlibi;
      m.max_position_embeddings = 0;
      m.linear_bias = false;
      m.make_vocab_size_divisible_by = 1;
      return m;
    }
    case SourceConvention::kBigScience: {
      if (!c.layers || !c.hidden || !c.heads || !c.vocab) break;
      // BLOOM: GPT layers with ALiBi.
      ModelSpec m = gpt_model(c, seq_len);
      m.position_embedding = PositionEmbedding::kAlibi;
      m.max_position_embeddings = 0;
      return m;
    }
    default: break;
  }
  if (contains(c.model, "DeepSeek-V3")) {
    // The report gives the architecture in words (notes: 1 shared + 256 routed experts of 2048,
    // top-8, first 3 layers dense, MLA ranks) but not the vocabulary; the preset holds the released
    // config.
    ModelSpec m = load_model_preset("deepseek-v3");
    m.name = c.model;
    ctx.assume("model = preset deepseek-v3", "the released config.json the report describes; vocabulary 129,280");
    return m;
  }
  if (!c.layers || !c.hidden || !c.heads) {
    out.missing = fmt::format("model \"{}\": dimensions (layers, hidden, heads) not given and no preset known", c.model);
    return std::nullopt;
  }
  const bool llama = contains(lower(c.model), "llama");
  if (!c.vocab) {
    if (out.convention != SourceConvention::kKorthikanti || !only_layer_metrics(c)) {
      out.missing = fmt::format("model \"{}\": vocabulary not given", c.model);
      return std::nullopt;
    }
  }
  if (llama) {
    ModelSpec m = llama_model(c.model, *c.layers, *c.hidden, *c.heads, c.ffn_hidden.value_or(0), c.vocab.value_or(0));
    if (!c.ffn_hidden) {
      out.missing = fmt::format("model \"{}\": ffn_hidden not given", c.model);
      return std::nullopt;
    }
    if (c.kv_heads) m.kv_heads = *c.kv_heads;
    return m;
  }
  ModelSpec m = gpt_model(c, seq_len);
  if (c.kv_heads) m.kv_heads = *c.kv_heads;
  if (!c.ffn_hidden) ctx.assume(fmt::format("ffn_hidden = 4h = {}", m.ffn_hidden), "GPT");
  if (!c.vocab) {
    m.vocab = 51200;  // only Table 4's single-layer rows get here (checked above)
    ctx.assume("vocab = 51200", "the vocabulary of Table 5's 22B run; a single layer does not use it");
  }
  return m;
}

// Smallest number of model chunks v ≥ 2 that divides the layers of a stage while the microbatches
// remain a multiple of pp (Megatron-LM's condition for the interleaved schedule); 1 if none.
int smallest_interleaving(int64_t layers, int pp, int64_t microbatches) {
  if (pp <= 1 || layers % pp != 0 || microbatches % pp != 0) return 1;
  const int64_t per_stage = layers / pp;
  for (int64_t v = 2; v <= per_stage; ++v) {
    if (per_stage % v == 0) return static_cast<int>(v);
  }
  return 1;
}

}  // namespace

std::string publication_of(const std::string& source) {
  size_t end = source.size();
  for (std::string_view cut : {" (", " '"}) end = std::min(end, source.find(cut));
  std::string out = source.substr(0, end);
  while (!out.empty() && (out.back() == ',' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string_view name_of(SourceConvention convention) {
  switch (convention) {
    case SourceConvention::kSc21: return "Narayanan et al. 2021 (SC21)";
    case SourceConvention::kKorthikanti: return "Korthikanti et al. 2022";
    case SourceConvention::kMegatronReadme: return "Megatron-LM README";
    case SourceConvention::kMegatronBridge: return "Megatron-Bridge";
    case SourceConvention::kLlmFoundry: return "llm-foundry";
    case SourceConvention::kHagemann: return "Hagemann et al. 2023";
    case SourceConvention::kBigScience: return "BigScience BLOOM";
    case SourceConvention::kGeneric: return "generic";
  }
  return "generic";
}

SourceConvention convention_of(const std::string& source) {
  if (contains(source, "SC21") || contains(source, "2104.04473")) return SourceConvention::kSc21;
  if (contains(source, "Korthikanti") || contains(source, "2205.05198")) return SourceConvention::kKorthikanti;
  if (contains(source, "Megatron-Bridge")) return SourceConvention::kMegatronBridge;
  if (contains(source, "Megatron-LM README")) return SourceConvention::kMegatronReadme;
  if (contains(source, "llm-foundry")) return SourceConvention::kLlmFoundry;
  if (contains(source, "Hagemann") || contains(source, "2311.05610")) return SourceConvention::kHagemann;
  if (contains(source, "BigScience")) return SourceConvention::kBigScience;
  return SourceConvention::kGeneric;
}

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
  PublishedScenario out;
  out.convention = convention_of(c.source);
  Context ctx{c, out};
  const SourceConvention conv = out.convention;
  const bool layer_only = only_layer_metrics(c);

  // Features clustersim does not have come first: they explain the row however complete it is.
  const auto node = node_preset_for(c.gpu_type);
  if (node) {
    out.node = *node;
    if (conv == SourceConvention::kLlmFoundry && contains(c.gpu_type, "H100")) {
      ctx.assume("fabric = 8 × 400 Gb/s per node (dgx-h100)", "the H100 tables do not state the interconnect");
    }
  } else if (c.gpu_type.empty() && conv == SourceConvention::kHagemann) {
    out.node = "dgx-a100";
    ctx.assume("GPU = A100-SXM4-80GB in DGX A100 nodes (8 × 200 Gb/s HDR)",
               "not in the data files; their TFLOP/s-to-MFU ratio implies a 312 TFLOP/s peak");
  } else {
    out.missing = fmt::format("no node preset for GPU type \"{}\"", c.gpu_type.empty() ? "(not given)" : c.gpu_type);
    return out;
  }

  // Sequence and batch.
  int64_t seq_len = c.seq_len.value_or(0);
  if (!c.seq_len && conv == SourceConvention::kHagemann) {
    seq_len = contains(c.source, "8k") ? 8192 : 2048;
    ctx.assume(fmt::format("seq_len = {}", seq_len), "from the data file's name (\"8k\"; 2k otherwise)");
  }
  if (seq_len == 0) {
    out.missing = "sequence length not given";
    return out;
  }
  int64_t tp = c.tp.value_or(1);
  int64_t pp = c.pp.value_or(1);
  if ((!c.tp || !c.pp) && conv == SourceConvention::kSc21 && !c.gpus) {
    out.missing = "GPU count and parallel layout not given";
    return out;
  }
  if (!c.tp && !c.pp && conv == SourceConvention::kSc21 && c.zero_stage.empty()) {
    // Table 2's PTD-P rows give the model-parallel size only: 96 for GPT-3 175B, 280 for 530B.
    if (c.layers != 96 && c.layers != 105) {
      out.missing = "tensor × pipeline split not given";
      return out;
    }
    tp = 8;
    pp = c.layers == 96 ? 12 : 35;
    ctx.assume(fmt::format("tp = 8, pp = {}", pp),
               "Table 2 gives the model-parallel size tp·pp only; tensor parallelism within a DGX node (§3.3), "
               "pp = 35 as Table 1's 530B run");
  } else if (conv == SourceConvention::kMegatronReadme && (!c.tp || !c.pp)) {
    tp = 8;
    pp = 6;
    ctx.assume("tp = 8, pp = 6", "the strong-scaling text gives none; those of the weak-scaling table's 177B run");
  } else if (!c.tp || !c.pp) {
    ctx.assume(fmt::format("{}{}", c.tp ? "" : "tp = 1 ", c.pp ? "" : "pp = 1"),
               conv == SourceConvention::kLlmFoundry ? "FSDP data parallelism only (no TP/PP in these benchmarks)"
                                                     : "not given");
  }
  int64_t micro_batch = c.micro_batch.value_or(1);
  if (!c.micro_batch && !layer_only) {
    std::string why = "not given; Megatron-LM's default";
    if (conv == SourceConvention::kSc21) why = "not in Table 1; Table 2's PTD-P runs on the same system use 1";
    if (conv == SourceConvention::kKorthikanti) why = "Table 5's 530B run";
    ctx.assume("micro_batch = 1", why);
  }
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
    if (conv == SourceConvention::kHagemann) {
      global_batch = kHagemannBatchTokens / seq_len;
      ctx.assume(fmt::format("global_batch = {}", global_batch),
                 "inferred: 4,194,304 tokens per step makes the files' MFU and step times agree with PaLM's FLOPs");
    } else if (layer_only) {
      global_batch = micro_batch * dp;
    } else if (conv == SourceConvention::kKorthikanti) {
      global_batch = 280 * dp;
      ctx.assume(fmt::format("global_batch = {}", global_batch), "Table 5's 280 sequences per pipeline");
    } else {
      out.missing = "global batch not given";
      return out;
    }
  }

  const auto model = resolve_model(ctx, seq_len);
  if (!model) return out;
  out.scenario.model = *model;

  // Training options.
  TrainingSpec& t = out.scenario.training;
  t.seq_len = seq_len;
  t.global_batch = global_batch;
  t.micro_batch = micro_batch;
  const auto dtype = parse_published_precision(c.precision);
  const bool megatron_2021 = conv == SourceConvention::kSc21 || conv == SourceConvention::kKorthikanti;
  if (dtype) {
    t.compute_dtype = *dtype;
    if (megatron_2021 && *dtype == DataType::kFp16 && !contains(lower(c.precision), "fp16")) {
      ctx.assume("precision = fp16", "\"mixed precision (16-bit)\": the 2021-22 Megatron-LM GPT runs used --fp16");
    }
  } else {
    t.compute_dtype = megatron_2021 ? DataType::kFp16 : DataType::kBf16;
    ctx.assume(fmt::format("precision = {}", megatron_2021 ? "fp16" : "bf16"),
               conv == SourceConvention::kMegatronReadme ? "not stated; the MFU/TFLOP/s ratio implies the bf16 peak"
                                                         : "not stated");
  }
  const DataType params_dtype = t.compute_dtype == DataType::kFp16 ? DataType::kFp16 : DataType::kBf16;
  t.precision = PrecisionPolicy::megatron_mixed(params_dtype);
  if (conv == SourceConvention::kLlmFoundry && contains(c.precision, "PURE")) {
    t.precision.grad_dtype = DataType::kBf16;  // FSDP mixed precision PURE reduces gradients in bf16
  }

  const auto recompute = parse_published_recompute(c.recompute);
  if (recompute) {
    t.recompute = *recompute;
  } else if (conv == SourceConvention::kSc21) {
    t.recompute = Recompute::kFull;
    ctx.assume("recompute = full", "eq. 3 counts the recomputed forward pass; §5 trains with it");
  } else {
    t.recompute = Recompute::kNone;
    ctx.assume("recompute = none", "not stated");
  }

  const std::string kernel = note_value(c.notes, "kernel=").value_or("");
  const bool naive = megatron_2021 || conv == SourceConvention::kBigScience ||
                     (conv == SourceConvention::kHagemann && (kernel == "torch" || kernel == "fused"));
  t.attention = naive ? AttentionKernel::kNaive : AttentionKernel::kFlash;
  if (megatron_2021 || conv == SourceConvention::kBigScience) {
    ctx.assume("attention = naive", "Megatron-LM's unfused softmax path; FlashAttention came later (2022)");
  }
  if (conv == SourceConvention::kLlmFoundry && out.node == "dgx-h100") {
    // MPT's attention is the Triton FlashAttention kernel (scripts/train/benchmarking/submit_benchmarks.py:
    // --attn_impl triton by default; the README: "our models use Flash Attention"), written for Ampere: on
    // Hopper it runs as FlashAttention-2 does, well below cuDNN's Hopper kernel (FlashAttention-3 paper,
    // arXiv:2407.08608, Fig. 5: FA2 298-335 vs cuDNN 484-539 TFLOP/s, causal, head dim 128).
    t.flash_kernel = FusedAttentionKernel::kSdpaFlash;
    ctx.assume("attention kernel = FlashAttention-2 class (sdpa-flash)",
               "MPT runs Triton FlashAttention (submit_benchmarks.py --attn_impl triton), which has no Hopper path");
  }
  if (conv == SourceConvention::kLlmFoundry && t.compute_dtype != DataType::kFp8) {
    // llm-foundry trains MPT with Composer: PyTorch modules run eagerly under autocast inside FSDP
    // (mixed precision DEFAULT or PURE), not Megatron's fused kernels (train.py builds the model
    // from llmfoundry/models/mpt/modeling_mpt.py; submit_benchmarks.py sets no torch.compile).
    // Its FP8 rows use Transformer Engine layers and stay on the Megatron op model.
    t.framework = Framework::kPytorchEager;
    ctx.assume("framework = pytorch-eager (PyTorch modules under autocast, FSDP mixed precision)",
               "Composer + FSDP eager training; the Megatron op model prices fused kernels MPT does not use");
  }
  if (conv == SourceConvention::kHagemann) {
    // Aleph Alpha's scaling framework writes RMSNorm, RoPE and SwiGLU in PyTorch operations
    // (src/scaling/core/nn/norm/rms_norm.py, rotary.py, mlp.py); the sweep files' kernel column
    // names a fused RMSNorm ("+ RMS kernel") where a run used one.
    t.fused_rope = false;
    t.fused_swiglu = false;
    t.fused_norm = contains(kernel, "RMS kernel");
    ctx.assume(fmt::format("RoPE and SwiGLU as PyTorch operations, RMSNorm {}",
                           t.fused_norm ? "fused (the file's \"RMS kernel\")" : "as PyTorch operations"),
               "Aleph Alpha's scaling framework (github.com/Aleph-Alpha/scaling, src/scaling/core/nn) has no "
               "fused kernels for them");
    if (kernel == "torch") {
      t.fused_softmax = false;
      ctx.assume("masked softmax as PyTorch operations", "kernel \"torch\": scaling's MaskedSoftmaxTorch");
    }
    if (kernel.starts_with("flash_attentionv1")) {
      t.flash_kernel = FusedAttentionKernel::kFlashV1;
      ctx.assume("attention kernel = FlashAttention v1 (flash-v1)", fmt::format("kernel \"{}\"", kernel));
    }
  }
  // Megatron-LM's GPT runs keep its default dropout of 0.1; Llama and MPT recipes train without.
  const bool gpt_dropout = conv == SourceConvention::kSc21 || conv == SourceConvention::kKorthikanti ||
                           conv == SourceConvention::kMegatronReadme || conv == SourceConvention::kBigScience;
  t.hidden_dropout = gpt_dropout ? 0.1 : 0.0;
  t.attention_dropout = gpt_dropout ? 0.1 : 0.0;

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
  } else if (c.sequence_parallel.empty() && tp > 1 &&
             (conv == SourceConvention::kMegatronReadme || conv == SourceConvention::kMegatronBridge)) {
    l.sequence_parallel = true;
    ctx.assume("sequence_parallel = true", conv == SourceConvention::kMegatronReadme
                                               ? "--tp-comm-overlap needs sequence parallelism"
                                               : "Megatron-Bridge recipes pair tensor with sequence parallelism");
  }
  if (l.sequence_parallel &&
      (conv == SourceConvention::kMegatronReadme || conv == SourceConvention::kMegatronBridge)) {
    // The README's runs state --tp-comm-overlap; Megatron-Bridge's performance recipes set
    // comm_overlap.tp_comm_overlap with a userbuffers configuration for every tensor-parallel Llama run
    // (scripts/performance/configs/llama/llama3_llm_pretrain.py, llama31_llm_pretrain.py).
    l.tp_comm_overlap = true;
    ctx.assume("tp_comm_overlap = true", conv == SourceConvention::kMegatronReadme
                                             ? "the README's runs use --tp-comm-overlap"
                                             : "Megatron-Bridge's performance recipes enable userbuffers overlap with tp > 1");
  }
  const auto zero = parse_published_zero(c.zero_stage);
  if (zero) {
    l.zero_stage = *zero;
  } else if (conv == SourceConvention::kMegatronReadme || conv == SourceConvention::kMegatronBridge) {
    l.zero_stage = 1;
    l.overlap_param_gather = true;
    ctx.assume("distributed optimizer (zero 1) with overlapped parameter gather",
               conv == SourceConvention::kMegatronReadme ? "--overlap-param-gather needs --use-distributed-optimizer"
                                                         : "the Megatron-Bridge recipes' default");
  }
  if (!zero && conv == SourceConvention::kHagemann) {
    l.zero_stage = 1;
    ctx.assume("zero 1 (optimizer state sharded over data parallelism)",
               "not in the data files; unsharded Adam state at tp = pp = 1 would need 18 B/param, 234 GB for 13B");
  }
  if (megatron_2021 || conv == SourceConvention::kBigScience) {
    // Megatron-LM of 2021-22 all-reduced gradients after the backward pass (DDP_impl local);
    // DeepSpeed's pipeline engine likewise reduces after the last microbatch.
    l.overlap_grad_reduce = l.zero_stage == 3;
    if (l.dp > 1 && l.zero_stage != 3) {
      ctx.assume("no gradient-reduction overlap", "2021-22 Megatron-LM and DeepSpeed reduce after the backward pass");
    }
  }
  if (conv == SourceConvention::kBigScience && l.zero_stage == 1 && l.pp > 1 && l.dp > 1) {
    // Megatron-DeepSpeed with bf16 and ZeRO-1 under pipeline parallelism: DeepSpeed's PipelineEngine
    // reduces with _bf16_reduce_grads, a buffered all-reduce of the BF16_Optimizer's fp32 gradients
    // (deepspeed/runtime/pipe/engine.py), and each rank then updates its shard and all-gathers the
    // bf16 parameters.
    l.grad_reduce_op = GradReduceOp::kAllReduce;
    ctx.assume("gradients all-reduced (fp32), not reduce-scattered",
               "DeepSpeed's pipeline engine with its bf16 optimizer all-reduces whole gradients under ZeRO-1");
  }
  if (l.zero_stage == 3 && megatron_2021) {
    t.precision = PrecisionPolicy::deepspeed_mixed(params_dtype, false);  // Table 2's ZeRO-3 runs are DeepSpeed's
    // DeepSpeed's defaults (deepspeed/runtime/zero/config.py): stage3_prefetch_bucket_size 5e7 parameters
    // fetched ahead of use, reduce_bucket_size 5e8 gradient elements per reduction.
    l.zero3_bucket_elements = 50'000'000;
    l.grad_bucket_elements = 500'000'000;
    ctx.assume("DeepSpeed ZeRO-3 gathers of 5e7 parameters prefetched one bucket ahead, gradient buckets of 5e8",
               "stage3_prefetch_bucket_size and reduce_bucket_size defaults; SC21 gives no ZeRO settings");
  }

  const int64_t microbatches_per_pipeline = global_batch / std::max<int64_t>(1, micro_batch * dp);
  if (c.vpp && *c.vpp > 1) {
    l.vpp = static_cast<int>(*c.vpp);
  } else if (!c.vpp && pp > 1 && conv == SourceConvention::kSc21) {
    l.vpp = smallest_interleaving(out.scenario.model.layers, l.pp, microbatches_per_pipeline);
    ctx.assume(fmt::format("vpp = {}", l.vpp),
               "§5 uses the interleaved schedule without giving the chunk count: the fewest chunks (>= 2) that "
               "divide a stage");
  } else if (!c.vpp && pp > 1 && conv == SourceConvention::kKorthikanti && out.scenario.model.layers == 105) {
    l.vpp = 3;
    ctx.assume("vpp = 3", "Table 5's 530B run");
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
