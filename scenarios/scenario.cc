#include "scenarios/scenario.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>
#include <set>
#include <system_error>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/excerpt.h"
#include "parallelism/layout.h"
#include "parallelism/program_builder.h"
#include "parallelism/rank_grid.h"
#include "parallelism/validate_run.h"
#include "scenarios/hardware_presets.h"
#include "scenarios/key_binding.h"
#include "workloads/parameter_count.h"

namespace clustersim {

namespace {

KeyDef integer(std::string path, std::string description, std::string default_text, double min,
               std::optional<double> max = std::nullopt) {
  KeyDef k = key_def(std::move(path), ValueType::kInt, std::move(description), std::move(default_text));
  k.min = min;
  k.max = max;
  return k;
}

KeyDef choice(std::string path, std::string description, std::string default_text, std::vector<std::string> choices) {
  KeyDef k = key_def(std::move(path), ValueType::kEnum, std::move(description), std::move(default_text));
  k.choices = std::move(choices);
  return k;
}

KeyDef real(std::string path, std::string description, std::string default_text, double min, double max) {
  KeyDef k = key_def(std::move(path), ValueType::kReal, std::move(description), std::move(default_text));
  k.min = min;
  k.max = max;
  return k;
}

// Where a node group's keys or the cluster's own node keys are (cluster.node_groups[] elements
// or cluster.node, nodes, gpus_per_node): the values their setters wrote.
struct NodeKeys {
  std::string node;           // preset name or path
  int64_t count = 1;          // nodes
  int64_t gpus_per_node = 0;  // 0 = all
};

// A stragglers[] element as its keys give it.
struct StragglerKeys {
  std::optional<int64_t> gpu;
  std::optional<int64_t> node;
  double speed = 1;
  std::optional<ConfigDocument> doc;  // the element, for messages
};

// What the keys of a scenario file set as it is read: every setter of scenario_schema() writes
// here, the Scenario itself where a value is a field of it, else the values the loader resolves
// once every key is read (presets, sizes and defaults that depend on other keys).
struct ScenarioDraft {
  Scenario s;
  const HardwareCatalog* catalog = nullptr;
  std::string data_dir;
  // cluster.node, nodes and gpus_per_node (a cluster without node groups), and whether the file
  // gives the first two; the node groups are added to s.cluster as they are read.
  NodeKeys root_nodes;
  bool root_node_given = false;
  bool root_count_given = false;
  std::vector<NodeKeys> groups;
  std::string fabric_type;
  std::string pod_type;
  std::optional<int64_t> pod_nodes;
  std::vector<std::string> pod_keys_given;  // the pod keys the file gives, for a fabric without pods
  bool model_given = false;         // the model: section
  bool model_preset_given = false;  // model.preset
  bool vocab_padding_given = false;  // model.make_vocab_size_divisible_by (not a preset's)
  void note_pod_key(const KeyRef& key) {
    if (key.given()) pod_keys_given.push_back(key.path);
  }
  std::vector<std::string> leaf_keys_given;  // leaf_ports, oversubscription: none on a single switch
  void note_leaf_key(const KeyRef& key) {
    if (key.given()) leaf_keys_given.push_back(key.path);
  }
  // training.tokens and steps, the campaign's length.
  std::optional<double> tokens;
  std::optional<int64_t> steps;
  // The precision keys, applied over the framework's defaults (training.framework).
  std::optional<DataType> params_dtype;
  DataType grads_dtype = DataType::kFp32;
  bool master_weights = true;
  bool master_weights_given = false;
  bool fp32_grad_copy = false;
  DataType optimizer_state_dtype = DataType::kFp32;
  bool hidden_dropout_given = false;
  bool attention_dropout_given = false;
  int64_t dp = 0;  // parallelism.dp; 0 = GPUs / (tp·cp·pp)
  std::vector<StragglerKeys> stragglers;
  std::optional<double> jitter_cv;
  std::optional<int64_t> spare_nodes;
  std::optional<double> repair_s;
};

void add_node_group(ScenarioDraft& d, const ConfigDocument& group, const NodeKeys& keys);

// `f()`, its InputErrors placed at `key` (a preset that cannot be loaded, at the key naming it).
template <typename F>
auto located(const KeyRef& key, F&& f) {
  try {
    return f();
  } catch (const InputError& e) {
    throw key.error(e.what());
  }
}

// A search list present but empty, or listing a value twice (which would search, and rank, every
// layout with it twice), is an error naming the key.
template <typename T>
void check_search_list(const KeyRef& key, const std::vector<T>& values) {
  if (key.given() && values.empty()) {
    throw key.error(
        "an empty list leaves nothing to search; give at least one value or leave the key out for its "
        "default");
  }
  std::set<T> seen;  // O(n log n): a list of a million values is checked in a second
  for (const T& value : values) {
    if (!seen.insert(value).second) throw key.error(fmt::format("{} is listed twice; list each value once", value));
  }
}

std::vector<int> to_int(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

// The model keys: "model." in scenarios, the top level of preset files. Each sets its ModelSpec
// field where the file gives it (a preset's value stands otherwise).
//
// Upper bounds keep every derived size inside int64 and the simulation inside memory; each is two
// orders of magnitude or more above the largest published model (GPT 1T of Narayanan et al.: 128
// layers, h 25,600; Llama 3.1 405B: 126 layers, ffn 53,248, vocabulary 128,256).
constexpr int64_t kMaxLayers = 10'000;
constexpr int64_t kMaxHidden = 1 << 20;
constexpr int64_t kMaxHeads = 1 << 16;
constexpr int64_t kMaxVocab = 1 << 26;
// training.global_batch and micro_batch: 2^32 sequences, over a million times the largest published
// batch (Llama 3 405B: 2,048 sequences of 8,192 tokens; Dubey et al. 2024, Table 4).
constexpr int64_t kMaxGlobalBatch = int64_t{1} << 32;
// Routed or shared experts per MoE layer (DeepSeek-V3: 256 routed, 1 shared; Qwen3-235B: 128).
constexpr int64_t kMaxExperts = 1 << 16;
// 2^24 = 16,777,216 tokens: over 100× the longest context in the validation set (Llama 3.1: 131,072).
constexpr int64_t kMaxSeqLen = 1 << 24;

template <typename Root>
void add_model_keys(KeyBinder<Root, ModelSpec>& s) {
  using M = ModelSpec;
  s.given(key_def("name", ValueType::kString, "model name shown in reports"),
          [](M& m, std::string v) { m.name = std::move(v); });
  s.given(integer("layers", "transformer layers L", "", 1, kMaxLayers), [](M& m, int64_t v) { m.layers = v; });
  s.given(integer("hidden", "hidden size h", "", 1, kMaxHidden), [](M& m, int64_t v) { m.hidden = v; });
  s.given(integer("ffn_hidden", "MLP intermediate size (4h for GPT)", "", 1, 4 * kMaxHidden),
          [](M& m, int64_t v) { m.ffn_hidden = v; });
  s.given(integer("heads", "attention (query) heads a", "", 1, kMaxHeads), [](M& m, int64_t v) { m.heads = v; });
  s.given(integer("kv_heads", "key/value heads for grouped-query attention (0 = heads, MHA)", "0", 0, kMaxHeads),
          [](M& m, int64_t v) { m.kv_heads = v; });
  s.given(integer("head_dim", "size of one head (0 = hidden / heads)", "0", 0, kMaxHidden),
          [](M& m, int64_t v) { m.head_dim = v; });
  s.given(integer("vocab", "tokenizer vocabulary before Megatron's padding", "", 1, kMaxVocab),
          [](M& m, int64_t v) { m.vocab = v; });
  s.given(choice("mlp", "MLP kind", "gelu", {"gelu", "swiglu"}),
          [](M& m, std::string v) { m.mlp = parse_mlp_kind(v); });
  s.given(choice("norm", "normalisation", "layernorm", {"layernorm", "rmsnorm"}),
          [](M& m, std::string v) { m.norm = parse_norm_kind(v); });
  s.given(choice("position_embedding", "position encoding: learned table, rotary (rope) or ALiBi biases (alibi)",
                 "learned", {"learned", "rope", "alibi"}),
          [](M& m, std::string v) { m.position_embedding = parse_position_embedding(v); });
  s.given(integer("max_position_embeddings", "rows of a learned position table (0 = seq_len)", "0", 0, kMaxSeqLen),
          [](M& m, int64_t v) { m.max_position_embeddings = v; });
  s.given(key_def("tied_embeddings", ValueType::kBool, "LM head shares the word-embedding matrix", "false"),
          [](M& m, bool v) { m.tied_embeddings = v; });
  const KeyDef vocab_padding = integer("make_vocab_size_divisible_by",
                                       "Megatron pads the vocabulary to a multiple of this × tp "
                                       "(--make-vocab-size-divisible-by; default 1, no padding, with framework "
                                       "pytorch-eager)",
                                       "128", 1, kMaxVocab);
  if constexpr (std::is_same_v<Root, ScenarioDraft>) {
    // A scenario's value also records that the scenario gives one: pytorch-eager pads only then.
    s.at_root().given(vocab_padding, [](ScenarioDraft& d, int64_t v) {
      d.s.model.make_vocab_size_divisible_by = v;
      d.vocab_padding_given = true;
    });
  } else {
    s.given(vocab_padding, [](M& m, int64_t v) { m.make_vocab_size_divisible_by = v; });
  }
  s.given(key_def("linear_bias", ValueType::kBool, "biases on linear layers (GPT: true; Llama: false)", "true"),
          [](M& m, bool v) { m.linear_bias = v; });
  s.given(key_def("qkv_bias", ValueType::kBool, "bias on QKV only when linear_bias is false (Qwen2)", "false"),
          [](M& m, bool v) { m.qkv_bias = v; });
  s.given(integer("sliding_window",
                  "sliding-window attention: each query attends to the last N tokens, itself included (0 = full "
                  "causal attention; Mistral, Gemma 2/3, GPT-OSS)",
                  "0", 0, kMaxSeqLen),
          [](M& m, int64_t v) { m.sliding_window = v; });
  s.given(integer("full_attention_every",
                  "with sliding_window: every N-th layer (N-1, 2N-1, ...) attends to the whole sequence (0 = none; "
                  "GPT-OSS and Gemma 2: 2, Gemma 3: 6)",
                  "0", 0, kMaxLayers),
          [](M& m, int64_t v) { m.full_attention_every = v; });
  s.given(
      key_def("attention_sinks", ValueType::kBool,
              "a learned sink logit per head in every softmax (GPT-OSS): one parameter per head and layer", "false"),
      [](M& m, bool v) { m.attention_sinks = v; });
  s.section("moe", "mixture-of-experts MLP (absent: dense)");
  s.given(integer("moe.num_experts", "routed experts per MoE layer", "0", 0, kMaxExperts),
          [](M& m, int64_t v) { m.moe.num_experts = v; });
  s.given(integer("moe.top_k", "experts each token is routed to", "0", 0, kMaxExperts),
          [](M& m, int64_t v) { m.moe.top_k = v; });
  s.given(integer("moe.moe_ffn_hidden", "intermediate size of one expert", "0", 0, 4 * kMaxHidden),
          [](M& m, int64_t v) { m.moe.moe_ffn_hidden = v; });
  s.given(integer("moe.shared_experts", "always-active shared experts", "0", 0, kMaxExperts),
          [](M& m, int64_t v) { m.moe.shared_experts = v; });
  s.given(integer("moe.shared_ffn_hidden",
                  "total intermediate size of the shared experts (0 = shared_experts × moe_ffn_hidden)", "0", 0,
                  4 * kMaxHidden),
          [](M& m, int64_t v) { m.moe.shared_ffn_hidden = v; });
  s.given(integer("moe.first_dense_layers", "leading layers with a dense MLP", "0", 0, kMaxLayers),
          [](M& m, int64_t v) { m.moe.first_dense_layers = v; });
  s.given(integer("moe.router_num_groups",
                  "group-limited routing: contiguous expert groups (Megatron --moe-router-num-groups; 0 = no limit)",
                  "0", 0, kMaxExperts),
          [](M& m, int64_t v) { m.moe.router_num_groups = v; });
  s.given(integer("moe.router_group_topk",
                  "group-limited routing: groups each token's experts come from (Megatron --moe-router-group-topk)",
                  "0", 0, kMaxExperts),
          [](M& m, int64_t v) { m.moe.router_group_topk = v; });
  s.given(choice("moe.load_balancing",
                 "router balancing: aux_loss (auxiliary loss), aux_loss_free (DeepSeek-V3's expert bias) or none; "
                 "changes only the router's cost",
                 "aux_loss", {"aux_loss", "aux_loss_free", "none"}),
          [](M& m, std::string v) { m.moe.balancing = parse_moe_balancing(v); });
  s.section("mla", "multi-head latent attention (DeepSeek-V2/V3; absent: standard attention)");
  s.given(integer("mla.q_lora_rank", "query down-projection rank", "0", 0, kMaxHidden),
          [](M& m, int64_t v) { m.mla.q_lora_rank = v; });
  s.given(integer("mla.kv_lora_rank", "key/value down-projection rank", "0", 0, kMaxHidden),
          [](M& m, int64_t v) { m.mla.kv_lora_rank = v; });
  s.given(integer("mla.rope_head_dim", "decoupled RoPE head size", "0", 0, kMaxHidden),
          [](M& m, int64_t v) { m.mla.rope_head_dim = v; });
  s.given(integer("mla.v_head_dim", "value head size (0 = head_dim)", "0", 0, kMaxHidden),
          [](M& m, int64_t v) { m.mla.v_head_dim = v; });
}

const std::vector<std::string> kDtypes16 = {"bf16", "fp16", "fp32"};

KeyDef int_list(std::string path, std::string description, double min, std::optional<double> max = std::nullopt) {
  KeyDef k = key_def(std::move(path), ValueType::kIntList, std::move(description));
  k.min = min;
  k.max = max;
  return k;
}

KeyDef string_list(std::string path, std::string description, std::vector<std::string> choices) {
  KeyDef k = key_def(std::move(path), ValueType::kStringList, std::move(description));
  k.choices = std::move(choices);
  return k;
}

using D = ScenarioDraft;
using Binder = KeyBinder<ScenarioDraft>;
using IntList = std::vector<int64_t>;
using StringList = std::vector<std::string>;

// Reported and re-simulated layouts of a search (search.top, search.rerank).
constexpr int64_t kMaxSearchLayouts = 1'000'000;

// The search: section (parallelism/search_space.h says what absent lists mean). Sizes have the
// bounds of the parallelism keys. Its setters write Scenario::search, present with the section.
void add_search_keys(Binder& s) {
  s.section_when_given("search", "the layout search space of `clustersim search` (ignored by `clustersim run`)",
                       [](D& d, const KeyRef&) { d.s.search.emplace(); });
  s.key(int_list("search.tp", "tensor-parallel sizes (absent: every divisor of the heads within a node and the GPUs)",
                 1, kMaxClusterGpus),
        [](D& d, IntList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->tp = to_int(v);
        });
  s.key(int_list("search.pp", "pipeline sizes (absent: every divisor of the layers and the GPUs)", 1, kMaxClusterGpus),
        [](D& d, IntList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->pp = to_int(v);
        });
  s.key(int_list("search.dp", "data-parallel sizes (absent: GPUs / (tp·cp·pp), or the largest that fits)", 1,
                 kMaxClusterGpus),
        [](D& d, IntList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->dp = to_int(v);
        });
  s.key(int_list("search.cp", "context-parallel sizes (absent: parallelism.cp)", 1, kMaxClusterGpus),
        [](D& d, IntList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->cp = to_int(v);
        });
  s.key(int_list("search.ep", "expert-parallel sizes (absent: parallelism.ep)", 1, kMaxClusterGpus),
        [](D& d, IntList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->ep = to_int(v);
        });
  s.key(int_list("search.etp", "expert tensor-parallel sizes (absent: parallelism.etp)", 1, kMaxClusterGpus),
        [](D& d, IntList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->etp = to_int(v);
        });
  s.key(int_list("search.vpp", "model chunks per stage (absent: every divisor of the layers per stage)", 1, kMaxLayers),
        [](D& d, IntList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->vpp = to_int(v);
        });
  s.key(int_list("search.micro_batch", "micro-batch sizes (absent: training.micro_batch)", 1, kMaxGlobalBatch),
        [](D& d, IntList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->micro_batch = v;
        });
  s.key(string_list("search.recompute", "activation recomputation (absent: training.recompute)",
                    {"none", "selective", "full"}),
        [](D& d, StringList v, const KeyRef& k) {
          check_search_list(k, v);
          for (const auto& r : v) d.s.search->recompute.push_back(parse_recompute(r));
        });
  s.key(int_list("search.zero", "ZeRO stages (absent: parallelism.zero)", 0, 3), [](D& d, IntList v, const KeyRef& k) {
    check_search_list(k, v);
    d.s.search->zero = to_int(v);
  });
  s.key(int_list("search.dp_shard",
                 "hybrid-sharding group sizes, 0 = full sharding (absent: parallelism.dp_shard); a layout whose dp a "
                 "size does not divide, or with ZeRO 0, is rejected for that size",
                 0, kMaxClusterGpus),
        [](D& d, IntList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->dp_shard = to_int(v);
        });
  s.key(string_list("search.sequence_parallel", "sequence parallelism on/off (absent: parallelism.sequence_parallel)",
                    {"false", "true"}),
        [](D& d, StringList v, const KeyRef& k) {
          check_search_list(k, v);
          for (const auto& b : v) d.s.search->sequence_parallel.push_back(b == "true");
        });
  s.key(string_list("search.schedule", "pipeline schedules (absent: 1f1b and interleaved-1f1b)",
                    {"gpipe", "1f1b", "interleaved-1f1b"}),
        [](D& d, StringList v, const KeyRef& k) {
          check_search_list(k, v);
          for (const auto& p : v) d.s.search->schedule.push_back(parse_pipeline_schedule(p));
        });
  s.key(key_def("search.order", ValueType::kStringList, "rank orders, innermost first (absent: parallelism.order)"),
        [](D& d, StringList v, const KeyRef& k) {
          check_search_list(k, v);
          d.s.search->order = std::move(v);
        });
  s.key(choice("search.global_batch",
               "fixed: every layout trains training.global_batch; maximum: the largest batch up to it that the "
               "layout divides",
               "fixed", {"fixed", "maximum"}),
        [](D& d, std::string v) {
          d.s.search->global_batch = v == "maximum" ? GlobalBatchRule::kMaximum : GlobalBatchRule::kFixed;
        });
  s.key(
      key_def("search.allow_idle_gpus", ValueType::kBool, "layouts may leave GPUs idle (tp·cp·pp·dp < GPUs)", "false"),
      [](D& d, bool v) { d.s.search->allow_idle_gpus = v; });
  s.key(key_def("search.uneven_stages", ValueType::kBool,
                "pp need not divide the layers: the first and last stages get fewer (explicit stage_layers)", "false"),
        [](D& d, bool v) { d.s.search->uneven_stages = v; });
  s.key(
      choice("search.objective",
             "what the ranking maximises (cost_per_token: GPU-seconds per token; time_to_train, cost and energy: "
             "the campaign's expected wall time, GPU-hours and energy, with a campaign: section)",
             "tokens_per_s", {"tokens_per_s", "step_time", "mfu", "cost_per_token", "time_to_train", "cost", "energy"}),
      [](D& d, std::string v, const KeyRef& k) {
        d.s.search->objective = parse_search_objective(v);
        d.s.search_objective_where = k.where();
      });
  s.key(real("search.gpu_hour_price", "price of one GPU-hour for cost reports (0: report GPU-hours only)", "0", 0, 1e9),
        [](D& d, double v) { d.s.search->gpu_hour_price = v; });
  s.key(key_def("search.memory_headroom", ValueType::kBytes, "memory every GPU must keep free at its peak", "0 GiB"),
        [](D& d, Bytes v) { d.s.search->memory_headroom = v; });
  s.key(key_def("search.tp_within_node", ValueType::kBool, "every tensor-parallel group inside one node", "true"),
        [](D& d, bool v) { d.s.search->tp_within_node = v; });
  s.key(integer("search.top", "layouts reported", "10", 1, kMaxSearchLayouts),
        [](D& d, int64_t v) { d.s.search->top = static_cast<int>(v); });
  s.key(key_def("search.rerank", ValueType::kString,
                "best screened layouts re-simulated at the scenario's fidelity: auto (the best max(search.top, 10), "
                "doubled until the winner holds, at most search.rerank_max) or a count (0: none)",
                "auto"),
        [](D& d, std::string v, const KeyRef& k) {
          d.s.search->rerank = located(k, [&] { return parse_search_rerank(v); });
        });
  s.key(integer("search.rerank_max", "most layouts search.rerank: auto re-simulates", std::to_string(kDefaultRerankMax),
                1, kMaxSearchRerank),
        [](D& d, int64_t v) { d.s.search->rerank_max = static_cast<int>(v); });
  s.key(integer("search.max_candidates",
                "most layouts the space may hold, counted before it is expanded (about 0.5 KB each while held)",
                std::to_string(kDefaultMaxSearchCandidates), 1, kMaxSearchCandidates),
        [](D& d, int64_t v) { d.s.search->max_candidates = v; });
}

// The campaign: section; its setters write Scenario::campaign, present with the section.
void add_campaign_keys(Binder& s) {
  const FailureRates d = llama3_failure_rates();
  s.section_when_given("campaign",
                       "the whole training run: wall-clock time, cost, energy, failures and checkpoints "
                       "(campaign/campaign.h; needs training.tokens or training.steps and cluster.storage)",
                       [](D& draft, const KeyRef& k) {
                         draft.s.campaign.emplace();
                         draft.s.campaign->seed = draft.s.seed;
                         draft.s.campaign->campaign_where = k.where();
                       });
  s.key(real("campaign.gpu_hour_price", "price of one GPU-hour, any currency (0: no cost)", "0", 0, 1e6),
        [](D& draft, double v) { draft.s.campaign->gpu_hour_price = v; });
  s.key(key_def("campaign.relaunch_time", ValueType::kDuration,
                "from a failure to the job running again (detection, replacing the node, process launch, NCCL and "
                "data-loader start-up), the checkpoint load not included; required: it depends on the site",
                "", true),
        [](D& draft, Duration v) { draft.s.campaign->relaunch_s = v.to_seconds(); });
  s.key(integer("campaign.seeds", "Monte-Carlo runs of the campaign", "1000", 1, kMaxCampaignSeeds),
        [](D& draft, int64_t v) { draft.s.campaign->seeds = static_cast<int>(v); });
  s.given(integer("campaign.spare_nodes",
                  "nodes standing by: a GPU, host or NIC failure takes its node out for repair_time and the job "
                  "relaunches on a spare, or waits for a repaired node when none is left (absent: always a spare)",
                  "", 0, kMaxClusterNodes),
          [](D& draft, int64_t v) { draft.spare_nodes = v; });
  KeyDef repair = key_def("campaign.repair_time", ValueType::kDuration,
                          "until a failed node is back among the spares (needed with spare_nodes)");
  repair.max = 30 * 86'400.0;
  s.given(repair, [](D& draft, Duration v) { draft.repair_s = v.to_seconds(); });
  s.given(integer("campaign.seed", "seed of the first run's failures (absent: the top-level seed)", "", 0),
          [](D& draft, int64_t v) { draft.s.campaign->seed = static_cast<uint64_t>(v); });
  s.section("campaign.checkpoint", "how often and how the model and optimizer state is saved");
  s.key(key_def("campaign.checkpoint.interval", ValueType::kString,
                "compute time between two checkpoints (a duration, \"30 min\"; rounded to whole steps), or auto: "
                "Young's optimum sqrt(2 x checkpoint time x MTBF)",
                "auto"),
        [](D& draft, std::string v, const KeyRef& k) {
          if (v == "auto") return;
          double seconds = 0;
          try {
            seconds = parse_duration(v).to_seconds();
          } catch (const OverflowError&) {
            seconds = std::numeric_limits<double>::infinity();  // beyond int64 picoseconds: out of range below
          } catch (const InputError&) {
            throw k.error(fmt::format("\"{}\" is not auto or a duration (\"30 min\", \"2 h\")", excerpt(v)));
          }
          if (!(seconds > 0) || seconds > 86'400.0) {
            throw k.error(
                fmt::format("\"{}\" is out of range: expected auto or a duration in (0 s, 1 day]", excerpt(v)));
          }
          draft.s.campaign->checkpoint_interval_s = seconds;
          draft.s.campaign->interval_where = k.where();
        });
  s.key(key_def("campaign.checkpoint.async", ValueType::kBool,
                "asynchronous save (Megatron-LM --async-save, PyTorch DCP async_save): the training waits only for "
                "the copy to host memory, the write runs behind it",
                "false"),
        [](D& draft, bool v) { draft.s.campaign->async_save = v; });
  s.section("campaign.failures", "failure rates in FIT (failures per 10^9 component-hours); defaults: Llama 3 405B's "
                                 "419 unexpected interruptions in 54 days on 16,384 H100 (arXiv:2407.21783 Table 5)");
  auto rate = [&](const char* name, const char* what, double FailureRates::*field) {
    s.key(real(fmt::format("campaign.failures.{}", name), what, fmt::format("{:.1f}", d.*field), 0, 1e9),
          [field](D& draft, double v) { draft.s.campaign->failures.*field = v; });
  };
  rate("gpu", "per GPU: the GPU, its HBM and SRAM, system processor, thermal interface, silent data corruption",
       &FailureRates::gpu);
  rate("host", "per node: CPU, memory, SSD, power supply, chassis, IO board, unplanned maintenance",
       &FailureRates::host);
  rate("nic", "per compute NIC", &FailureRates::nic);
  rate("network", "per compute NIC port: its share of the fabric's switches and cables", &FailureRates::network);
  rate("software", "per GPU: software bugs, NCCL watchdog timeouts, dependencies", &FailureRates::software);
}

// The parallel layout's keys; they set Scenario::layout (parallelism.dp: ScenarioDraft::dp, resolved
// against the GPUs once the cluster is known).
void add_parallelism_keys(Binder& s) {
  s.section("parallelism", "the parallel layout (Megatron-LM names)");
  s.key(integer("parallelism.tp", "tensor-parallel size", "1", 1, kMaxClusterGpus),
        [](D& d, int64_t v) { d.s.layout.tp = static_cast<int>(v); });
  s.key(integer("parallelism.pp", "pipeline-parallel size", "1", 1, kMaxClusterGpus),
        [](D& d, int64_t v) { d.s.layout.pp = static_cast<int>(v); });
  s.key(integer("parallelism.dp", "data-parallel size (0 = GPUs / (tp·cp·pp))", "0", 0, kMaxClusterGpus),
        [](D& d, int64_t v) { d.dp = v; });
  s.key(integer("parallelism.cp", "context-parallel size", "1", 1, kMaxClusterGpus),
        [](D& d, int64_t v) { d.s.layout.cp = static_cast<int>(v); });
  s.key(integer("parallelism.ep", "expert-parallel size", "1", 1, kMaxClusterGpus),
        [](D& d, int64_t v) { d.s.layout.ep = static_cast<int>(v); });
  s.key(integer("parallelism.etp", "expert tensor-parallel size", "1", 1, kMaxClusterGpus),
        [](D& d, int64_t v) { d.s.layout.etp = static_cast<int>(v); });
  s.key(choice("parallelism.moe_dispatcher",
               "MoE token dispatcher (Megatron --moe-token-dispatcher-type): alltoall, allgather, or deepep "
               "(DeepEP's kernels, Megatron's flex dispatcher: a token crosses the network once per destination node "
               "and NVLink forwards it to the experts' GPUs; dispatched in fp8 when training.precision is fp8)",
               "alltoall", {"alltoall", "allgather", "deepep"}),
        [](D& d, std::string v) { d.s.layout.moe_dispatcher = parse_moe_dispatcher(v); });
  s.key(choice("parallelism.cp_comm",
               "context-parallel attention (Megatron --cp-comm-type): p2p (ring, K/V blocks overlapped with "
               "attention) or a2a (Ulysses all-to-all)",
               "p2p", {"p2p", "a2a"}),
        [](D& d, std::string v) { d.s.layout.cp_comm = parse_context_parallel_comm(v); });
  s.key(integer("parallelism.vpp", "model chunks per pipeline stage (interleaved schedule)", "1", 1, kMaxLayers),
        [](D& d, int64_t v) { d.s.layout.vpp = static_cast<int>(v); });
  s.key(integer("parallelism.layers_per_virtual_stage",
                "layers per model chunk (Megatron --num-layers-per-virtual-pipeline-stage; 0 = use vpp)", "0", 0,
                kMaxLayers),
        [](D& d, int64_t v) { d.s.layout.layers_per_virtual_stage = static_cast<int>(v); });
  KeyDef stage_layers = key_def("parallelism.stage_layers", ValueType::kIntList,
                                "explicit layers per pipeline stage, one per stage (default: even split)");
  stage_layers.min = 1;
  stage_layers.max = kMaxLayers;
  s.key(stage_layers, [](D& d, IntList v) { d.s.layout.stage_layers = to_int(v); });
  s.key(key_def("parallelism.sequence_parallel", ValueType::kBool, "Megatron sequence parallelism (needs tp > 1)",
                "false"),
        [](D& d, bool v) { d.s.layout.sequence_parallel = v; });
  s.key(integer("parallelism.zero",
                "ZeRO stage: 0 none, 1 optimizer state (= distributed optimizer), 2 + grads, 3 + "
                "params",
                "0", 0, 3),
        [](D& d, int64_t v) { d.s.layout.zero_stage = static_cast<int>(v); });
  // After parallelism.zero: the distributed optimizer is ZeRO 1 at least.
  s.key(key_def("parallelism.distributed_optimizer", ValueType::kBool,
                "Megatron's distributed optimizer (shards optimizer state like ZeRO-1)", "false"),
        [](D& d, bool v) {
          if (v) d.s.layout.zero_stage = std::max(d.s.layout.zero_stage, 1);
        });
  s.key(choice("parallelism.schedule", "pipeline schedule", "1f1b", {"gpipe", "1f1b", "interleaved-1f1b"}),
        [](D& d, std::string v) { d.s.layout.schedule = parse_pipeline_schedule(v); });
  s.key(key_def("parallelism.order", ValueType::kString, "rank order, innermost first", "tp-cp-ep-dp-pp"),
        [](D& d, std::string v) { d.s.layout.order = std::move(v); });
  s.key(
      key_def("parallelism.overlap_grad_reduce", ValueType::kBool, "overlap gradient reduction with backward", "true"),
      [](D& d, bool v) { d.s.layout.overlap_grad_reduce = v; });
  s.key(choice("parallelism.reduce_every_microbatch",
               "reduce gradients after every micro-batch's backward (FSDP/DDP outside no_sync: FSDP2, torchtitan, "
               "Composer; DeepSpeed ZeRO-2/3) or once per step (false: Megatron-LM; no_sync, as HF Trainer and "
               "accelerate accumulate); auto = true for zero 2 and 3",
               "auto", {"auto", "true", "false"}),
        [](D& d, std::string v) {
          if (v != "auto") d.s.layout.reduce_every_microbatch = v == "true";
        });
  s.key(key_def("parallelism.overlap_param_gather", ValueType::kBool,
                "overlap the distributed optimizer's parameter all-gather with the next forward", "false"),
        [](D& d, bool v) { d.s.layout.overlap_param_gather = v; });
  KeyDef grad_bucket = integer("parallelism.grad_bucket_elements",
                               "gradient bucket size in parameters: auto (megatron: max(40M, 1M x dp), Megatron-Core "
                               "DDP's default; pytorch-eager: 25 MiB of gradients, DDP's bucket_cap_mb) or a count; "
                               "a stage makes at most 65,536 buckets",
                               "auto", 1, static_cast<double>(int64_t{1} << 62));
  grad_bucket.choices = {"auto"};
  s.key(grad_bucket,
        [](D& d, std::string v, const KeyRef& k) {
          d.s.layout.grad_bucket_elements = located(k, [&] { return parse_grad_bucket_elements(v); });
        });
  s.key(choice("parallelism.grad_reduce_op",
               "data-parallel gradient collective: auto (all_reduce without ZeRO, reduce_scatter with it), all_reduce "
               "(with zero 1: DeepSpeed's bf16 optimizer under pipeline parallelism all-reduces whole fp32 gradients, "
               "then each rank updates its shard), reduce_scatter (needs zero >= 1)",
               "auto", {"auto", "all_reduce", "reduce_scatter"}),
        [](D& d, std::string v) { d.s.layout.grad_reduce_op = parse_grad_reduce_op(v); });
  s.key(
      key_def(
          "parallelism.tp_comm_overlap", ValueType::kBool,
          "Megatron --tp-comm-overlap: sequence-parallel all-gathers and reduce-scatters overlapped with the QKV, "
          "projection and MLP GEMMs as Transformer Engine's userbuffers run them (needs tp > 1 and sequence_parallel)",
          "false"),
      [](D& d, bool v) { d.s.layout.tp_comm_overlap = v; });
  s.key(integer("parallelism.zero3_bucket_elements",
                "ZeRO-3 parameter all-gathers of at most this many parameters, prefetched one bucket ahead (DeepSpeed "
                "stage3_prefetch_bucket_size, 5e7 by default there); 0 = one gather per layer, prefetched one layer "
                "ahead (FSDP)",
                "0", 0),
        [](D& d, int64_t v) { d.s.layout.zero3_bucket_elements = v; });

  s.key(integer("parallelism.dp_shard",
                "hybrid sharding: data-parallel ranks that shard the ZeRO state (FSDP HYBRID_SHARD, torchtitan "
                "data_parallel_shard_degree; Megatron dp / --num-distributed-optimizer-instances), replicated across "
                "dp / dp_shard groups; a divisor of dp; 0 (or dp) = shard over all dp ranks; a value below dp needs "
                "zero >= 1",
                "0", 0, kMaxClusterGpus),
        [](D& d, int64_t v) { d.s.layout.dp_shard = static_cast<int>(v); });
}

// Every key of a scenario file, with its setter.
void add_scenario_keys(Binder& s) {
  s.key(key_def("name", ValueType::kString, "scenario name shown in reports", "unnamed"),
        [](D& d, std::string v) { d.s.name = std::move(v); });
  s.given(key_def("description", ValueType::kString, "free text", ""),
          [](D& d, std::string v) { d.s.description = std::move(v); });
  s.given(key_def("calibration", ValueType::kString,
                  "calibration profile name (scenarios/profiles/<name>.json) or path; absent: datasheet defaults"),
          [](D& d, std::string v, const KeyRef& k) {
            d.s.calibration = std::move(v);
            d.s.calibration_where = k.where();
          });
  s.key(integer("seed",
                "seed of the sampled randomness: jitter.seed and campaign.seed where they are absent (ECMP takes a "
                "fixed hash of each flow, not a random choice)",
                "1", 0),
        [](D& d, int64_t v) { d.s.seed = static_cast<uint64_t>(v); });

  s.section("cluster", "the GPUs and the networks between them");
  s.given(key_def("cluster.node", ValueType::kString, "node preset (scenarios/hardware/nodes/) or path to a node file"),
          [](D& d, std::string v) {
            d.root_nodes.node = std::move(v);
            d.root_node_given = true;
          });
  s.key(integer("cluster.nodes", "number of nodes", "1", 1, kMaxClusterNodes), [](D& d, int64_t v, const KeyRef& k) {
    d.root_nodes.count = v;
    d.root_count_given = k.given();
  });
  s.key(integer("cluster.gpus_per_node", "GPUs used per node (0 = all of the node's GPUs)", "0", 0, kMaxNodeGpus),
        [](D& d, int64_t v) { d.root_nodes.gpus_per_node = v; });
  s.section_list<NodeKeys>(
      "cluster.node_groups", "heterogeneous clusters: groups of identical nodes, in order",
      [](D& d) -> std::vector<NodeKeys>& { return d.groups; },
      [](KeyBinder<NodeKeys>& g) {
        g.key(key_def("node", ValueType::kString, "node preset or path"),
              [](NodeKeys& n, std::string v) { n.node = std::move(v); });
        g.key(integer("count", "nodes in the group", "1", 1, kMaxClusterNodes),
              [](NodeKeys& n, int64_t v) { n.count = v; });
        g.key(integer("gpus_per_node", "GPUs used per node (0 = all)", "0", 0, kMaxNodeGpus),
              [](NodeKeys& n, int64_t v) { n.gpus_per_node = v; });
      },
      [](const NodeKeys& n, const ConfigDocument& group, D& d) { add_node_group(d, group, n); });
  s.section("cluster.fabric", "the inter-node network");
  s.key(choice("cluster.fabric.type",
               "topology of the inter-node network (three-tier: pods of pod_type fabrics joined by a core tier)",
               "rail-optimized", {"single-switch", "fat-tree", "rail-optimized", "three-tier"}),
        [](D& d, std::string v) { d.fabric_type = std::move(v); });
  s.given(key_def("cluster.fabric.nic", ValueType::kString,
                  "NIC preset replacing the node's NIC (scenarios/hardware/nics/)"),
          [](D& d, std::string v, const KeyRef& k) {
            d.s.cluster.fabric.nic = located(k, [&] { return d.catalog->nic(v); });
          });
  s.key(
      hop_latency(key_def("cluster.fabric.switch_latency", ValueType::kDuration,
                          "latency per switch traversal (NVIDIA Quantum-2 QM9700 port to port: < 130 ns; with cables ~ "
                          "300 ns)",
                          "300 ns")),
      [](D& d, Duration v) { d.s.cluster.fabric.switch_latency = v; });
  s.key(integer("cluster.fabric.leaf_ports", "downlink ports of one leaf switch", fmt::format("{}", kDefaultLeafPorts),
                1, kMaxLeafPorts),
        [](D& d, int64_t v, const KeyRef& k) {
          d.s.cluster.fabric.leaf_ports = static_cast<int>(v);
          d.note_leaf_key(k);
        });
  s.key(real("cluster.fabric.oversubscription",
             "leaf downlink / uplink bandwidth of a fat-tree or rail-optimised fabric (a three-tier one's pods)",
             fmt::format("{}", kDefaultOversubscription), 1, kMaxOversubscription),
        [](D& d, double v, const KeyRef& k) {
          d.s.cluster.fabric.oversubscription = v;
          d.note_leaf_key(k);
        });
  s.key(choice("cluster.fabric.pod_type", "three-tier only: how the leaves inside a pod are wired", "fat-tree",
               {"fat-tree", "rail-optimized"}),
        [](D& d, std::string v, const KeyRef& k) {
          d.pod_type = std::move(v);
          d.note_pod_key(k);
        });
  s.given(integer("cluster.fabric.pod_nodes",
                  "three-tier only, required: nodes per pod (Llama 3: 3,072 GPUs = 384 nodes of 8; the last pod may "
                  "hold fewer)",
                  "", 1, kMaxClusterNodes),
          [](D& d, int64_t v, const KeyRef& k) {
            d.pod_nodes = v;
            d.note_pod_key(k);
          });
  s.key(real("cluster.fabric.core_oversubscription",
             "three-tier only: a pod's spine downlink / core uplink bandwidth (Llama 3's cluster: 7, Dubey et al. "
             "2024 3.3.1)",
             fmt::format("{}", kDefaultOversubscription), 1, kMaxOversubscription),
        [](D& d, double v, const KeyRef& k) {
          d.s.cluster.fabric.core_oversubscription = v;
          d.note_pod_key(k);
        });
  s.key(real("cluster.pue",
             "facility power usage effectiveness: facility energy / IT energy (default 1.2: between Google's "
             "fleet-wide 1.10 of 2023 and the 1.58 average of the Uptime Institute's 2023 survey)",
             fmt::format("{}", kDefaultPue), 1, kMaxPue),
        [](D& d, double v) { d.s.pue = v; });
  s.section("cluster.storage", "where checkpoints are written (needed by a campaign:)");
  s.given(key_def("cluster.storage.bandwidth", ValueType::kBandwidth,
                  "the file system's aggregate write and read bandwidth (a parallel file system's vendor figure, or "
                  "IOR's result on it)"),
          [](D& d, Bandwidth v) { d.s.storage_bandwidth = v.bytes_per_second(); });
  s.given(key_def("cluster.storage.node_bandwidth", ValueType::kBandwidth,
                  "one node's path to storage (absent: its compute NICs, nics x NIC bandwidth)"),
          [](D& d, Bandwidth v) { d.s.storage_node_bandwidth = v.bytes_per_second(); });

  s.section_when_given("model", "the transformer", [](D& d, const KeyRef&) { d.model_given = true; });
  s.given(
      key_def("model.preset", ValueType::kString, "model preset (scenarios/models/) whose keys the others override"),
      [](D& d, std::string v, const KeyRef& k) {
        d.s.model = located(k, [&] { return load_model_preset(v, d.data_dir); });
        d.model_preset_given = true;
      });
  auto model = s.at<ModelSpec>("model.", [](D& d) -> ModelSpec& { return d.s.model; });
  add_model_keys(model);

  s.section("training", "what one optimizer step processes and how");
  s.key(integer("training.seq_len", "tokens per sequence", "", 1, kMaxSeqLen),
        [](D& d, int64_t v) { d.s.training.seq_len = v; });
  s.key(integer("training.global_batch", "sequences per optimizer step", "", 1, kMaxGlobalBatch),
        [](D& d, int64_t v) { d.s.training.global_batch = v; });
  s.key(integer("training.micro_batch", "sequences per forward/backward pass", "1", 1, kMaxGlobalBatch),
        [](D& d, int64_t v) { d.s.training.micro_batch = v; });
  s.given(real("training.tokens",
               "tokens of the whole run, for a campaign: (steps: tokens / (global_batch x seq_len), "
               "rounded up)",
               "", 1, kMaxCampaignTokens),
          [](D& d, double v) { d.tokens = v; });
  s.given(integer("training.steps", "optimizer steps of the whole run, for a campaign: (instead of tokens)", "", 1,
                  kMaxCampaignSteps),
          [](D& d, int64_t v) { d.steps = v; });
  s.key(choice("training.precision", "GEMM compute dtype", "bf16", {"bf16", "fp16", "fp8"}),
        [](D& d, std::string v) { d.s.training.compute_dtype = parse_data_type(v); });
  s.given(choice("training.params_dtype",
                 "working copy of the parameters (default: bf16, fp16 for fp16 training, fp32 with framework "
                 "pytorch-eager)",
                 "", kDtypes16),
          [](D& d, std::string v) { d.params_dtype = parse_data_type(v); });
  s.key(choice("training.grads_dtype", "gradient buffer dtype (Megatron: fp32 main grads)", "fp32", kDtypes16),
        [](D& d, std::string v) { d.grads_dtype = parse_data_type(v); });
  s.key(key_def("training.master_weights", ValueType::kBool,
                "fp32 master copy of the parameters (default false with framework pytorch-eager)", "true"),
        [](D& d, bool v, const KeyRef& k) {
          d.master_weights = v;
          d.master_weights_given = k.given();
        });
  s.key(key_def("training.fp32_grad_copy", ValueType::kBool,
                "an extra fp32 gradient copy next to 16-bit gradients (DeepSpeed ZeRO's accounting)", "false"),
        [](D& d, bool v) { d.fp32_grad_copy = v; });
  s.key(choice("training.optimizer_state_dtype", "Adam moments dtype", "fp32", {"fp32", "bf16"}),
        [](D& d, std::string v) { d.optimizer_state_dtype = parse_data_type(v); });
  s.key(choice("training.optimizer", "optimizer", "adam", {"adam", "sgd"}),
        [](D& d, std::string v) { d.s.training.optimizer = parse_optimizer(v); });
  s.key(choice("training.framework",
               "whose kernels run the step: megatron (fused kernels) or pytorch-eager (PyTorch modules under "
               "autocast, as tools/reference/train_step.py; one GPU, DistributedDataParallel, FSDP with zero 3/2, or "
               "pipeline stages or tensor parallelism with dp 1)",
               "megatron", {"megatron", "pytorch-eager"}),
        [](D& d, std::string v, const KeyRef& k) {
          d.s.training.framework = parse_framework(v);
          d.s.framework_given = k.given();
        });
  s.key(choice("training.cuda_graphs",
               "CUDA graphs: none, layers (each layer's forward and backward captured, the attention part of a "
               "mixture-of-experts layer; framework megatron) or step (the whole step; framework pytorch-eager "
               "with tp 1, pp 1, zero 0)",
               "none", {"none", "layers", "step"}),
        [](D& d, std::string v) { d.s.training.cuda_graphs = parse_cuda_graphs(v); });
  s.key(choice("training.recompute", "activation recomputation", "none", {"none", "selective", "full"}),
        [](D& d, std::string v) { d.s.training.recompute = parse_recompute(v); });
  s.key(choice("training.attention", "attention kernel: flash (fused) or naive (unfused, stores s×s)", "flash",
               {"flash", "naive"}),
        [](D& d, std::string v) { d.s.training.attention = parse_attention_kernel(v); });
  s.key(choice("training.flash_kernel",
               "fused kernel of attention flash: cudnn (cuDNN's fused attention: Transformer Engine's, or SDPA's "
               "cuDNN backend under pytorch-eager), sdpa-flash (a FlashAttention-2-class kernel, as SDPA's "
               "flash backend, priced per call shape) or flash-v1 (flash-attn 1.x: half cudnn's default rate; "
               "framework megatron)",
               "cudnn", {"cudnn", "sdpa-flash", "flash-v1"}),
        [](D& d, std::string v) { d.s.training.flash_kernel = parse_fused_attention_kernel(v); });
  s.key(key_def("training.fused_norm", ValueType::kBool,
                "RMSNorm as one fused kernel (Transformer Engine's); false: the ATen kernels of RMSNorm written in "
                "PyTorch operations, x·rsqrt(mean(x²)+ε)·w (workloads/aten_kernels.h)",
                "true"),
        [](D& d, bool v) { d.s.training.fused_norm = v; });
  s.key(key_def("training.fused_rope", ValueType::kBool,
                "RoPE as one fused kernel (Megatron --apply-rope-fusion); false: the ATen kernels of rotate-half RoPE",
                "true"),
        [](D& d, bool v) { d.s.training.fused_rope = v; });
  s.key(key_def("training.fused_swiglu", ValueType::kBool,
                "SwiGLU's gate as one fused kernel (Megatron --bias-swiglu-fusion); false: silu(a)·g as ATen kernels",
                "true"),
        [](D& d, bool v) { d.s.training.fused_swiglu = v; });
  s.key(key_def("training.fused_softmax", ValueType::kBool,
                "naive attention's scale-mask-softmax as one fused kernel (Megatron --masked-softmax-fusion); false: "
                "copy, masked_fill_ and softmax as ATen kernels (needs attention: naive)",
                "true"),
        [](D& d, bool v) { d.s.training.fused_softmax = v; });
  s.key(choice("training.moe_experts",
               "how a mixture-of-experts layer runs its local experts under framework megatron: grouped (grouped "
               "GEMMs, Transformer Engine's TEGroupedMLP) or sequential (SequentialMLP: each expert's MLP in turn, "
               "with the router and permutation in PyTorch operations, as Megatron-Core's local spec without "
               "Transformer Engine)",
               "grouped", {"grouped", "sequential"}),
        [](D& d, std::string v) { d.s.training.moe_experts = parse_moe_experts(v); });
  s.key(real("training.hidden_dropout",
             "dropout probability after attention and MLP, below 1 (0 stores no mask; default 0 with framework "
             "pytorch-eager)",
             "0.1", 0, 1),
        [](D& d, double v, const KeyRef& k) {
          d.s.training.hidden_dropout = v;
          d.hidden_dropout_given = k.given();
        });
  s.key(real("training.attention_dropout",
             "dropout probability on attention probabilities, below 1 (default 0 with framework pytorch-eager)", "0.1",
             0, 1),
        [](D& d, double v, const KeyRef& k) {
          d.s.training.attention_dropout = v;
          d.attention_dropout_given = k.given();
        });
  s.section("training.moe_routing", "how a mixture-of-experts router spreads tokens (workloads/moe_routing.h)");
  s.key(real("training.moe_routing.skew",
             "the busiest expert's tokens over the mean expert's (1 = balanced; at most num_experts / top_k)", "1", 1,
             1e6),
        [](D& d, double v) { d.s.training.moe_routing.skew = v; });
  KeyDef expert_load = key_def("training.moe_routing.expert_load", ValueType::kIntList,
                           "per-expert token histogram (one count per expert; replaces skew)");
  expert_load.min = 0;
  s.key(expert_load, [](D& d, IntList v) {
    for (int64_t n : v) d.s.training.moe_routing.expert_load.push_back(static_cast<double>(n));
  });
  s.key(real("training.moe_routing.capacity_factor",
             "expert capacity as a multiple of the balanced load; tokens above it are dropped (0 = dropless)", "0", 0,
             1e6),
        [](D& d, double v) { d.s.training.moe_routing.capacity_factor = v; });

  add_parallelism_keys(s);

  s.section("simulation", "how to simulate");
  s.key(choice("simulation.fidelity",
               "flow: collectives as flows sharing links; analytical: closed forms; auto: flow up to flow_max_gpus "
               "and flow_max_all_to_all_ranks, and beyond them where the run's flow estimate is at most "
               "auto_flow_seconds (run only; a search ranks by the caps)",
               "auto", {"auto", "flow", "analytical"}),
        [](D& d, std::string v) {
          d.s.simulation.fidelity = v == "flow"         ? FidelityChoice::kFlow
                                    : v == "analytical" ? FidelityChoice::kAnalytical
                                                        : FidelityChoice::kAuto;
        });
  s.key(integer("simulation.flow_max_gpus", "largest cluster simulated with flow fidelity under auto", "256", 1,
                kMaxClusterGpus),
        [](D& d, int64_t v) { d.s.simulation.flow_max_gpus = static_cast<int>(v); });
  s.key(integer("simulation.flow_max_all_to_all_ranks",
                "largest expert- or context-parallel group (max(ep, cp)) simulated with flow fidelity under auto: "
                "an all-to-all of n ranks is n(n-1) flows",
                "64", 1, kMaxClusterGpus),
        [](D& d, int64_t v) { d.s.simulation.flow_max_all_to_all_ranks = static_cast<int>(v); });
  s.key(key_def("simulation.auto_flow_seconds", ValueType::kDuration,
                "under fidelity auto, beyond flow_max_gpus and flow_max_all_to_all_ranks: simulate a run at flow "
                "fidelity where its estimated time on one core is at most this (the estimate is a rough guide, "
                "a factor 2 either way) and its events at most max_events; 0 s: the caps alone decide",
                "60 s"),
        [](D& d, Duration v) { d.s.simulation.auto_flow_seconds = v.to_seconds(); });
  s.key(integer("simulation.max_events",
                "refuse a run estimated at more simulation events than this, before it starts (about 3 min of a "
                "flow-fidelity run on one core at 3 M events/s; parallelism/work_estimate.h); 0 = no bound",
                "500000000", 0, 1e15),
        [](D& d, int64_t v, const KeyRef& k) {
          d.s.simulation.max_events = static_cast<uint64_t>(v);
          if (k.given()) d.s.max_events_where = k.where();
        });
  s.key(key_def("simulation.representative", ValueType::kBool,
                "simulate one rank per pipeline stage, at flow fidelity one per tied component of a stage where "
                "its parts can drift apart (equal to every rank on a rail-optimised fabric; on a fat tree within "
                "about 1 %; false: every rank)",
                "true"),
        [](D& d, bool v) { d.s.simulation.representative = v; });
  s.key(key_def("simulation.allow_idle_gpus", ValueType::kBool, "the layout may use fewer GPUs than the cluster has",
                "false"),
        [](D& d, bool v) { d.s.simulation.allow_idle_gpus = v; });
  s.key(choice("simulation.power_model",
               "run each GPU under its power limit (clock governor, cost_models/power_model.h) and report energy; "
               "false: full clock throughout, no energy figures; auto: true when the calibration profile carries "
               "power measurements of the GPU (a profile's power section), else false",
               "auto", {"auto", "true", "false"}),
        [](D& d, std::string v) {
          if (v != "auto") d.s.simulation.power_model = v == "true";
        });

  s.section_list<StragglerKeys>(
      "stragglers",
      "GPUs or nodes whose kernels run slower than their peers' (a throttled or degraded GPU); the step simulates "
      "what the synchronous step loses to them",
      [](D& d) -> std::vector<StragglerKeys>& { return d.stragglers; },
      [](KeyBinder<StragglerKeys>& e) {
        e.given(integer("gpu", "the slow GPU (0-based, GPUs of the cluster in order)", "", 0),
                [](StragglerKeys& k, int64_t v) { k.gpu = v; });
        e.given(integer("node", "a slow node: every GPU of it (0-based; instead of gpu)", "", 0),
                [](StragglerKeys& k, int64_t v) { k.node = v; });
        KeyDef speed = real("speed",
                            "fraction of the GPU's kernel rates it runs at (0.8: every kernel takes 1/0.8 as "
                            "long)",
                            "", 0.01, 1);
        speed.required = true;
        e.key(speed, [](StragglerKeys& k, double v) { k.speed = v; });
      },
      [](StragglerKeys& k, const ConfigDocument& element, D&) { k.doc = element; });
  s.section_when_given("jitter", "per-step variation of every GPU's kernel times: sampled steps, every rank simulated",
                       [](D& d, const KeyRef& k) {
                         d.s.jitter.emplace();
                         d.s.jitter->seed = d.s.seed;
                         d.s.jitter_where = k.where();
                       });
  s.given(real("jitter.cv", "coefficient of variation of a GPU's kernel times from step to step (log-normal, mean 1)",
               "", 0, 1),
          [](D& d, double v) { d.jitter_cv = v; });
  s.key(integer("jitter.steps", "steps sampled", "5", 1, 100),
        [](D& d, int64_t v) { d.s.jitter->steps = static_cast<int>(v); });
  s.given(integer("jitter.seed", "seed of the first sampled step (absent: the top-level seed)", "", 0),
          [](D& d, int64_t v) { d.s.jitter->seed = static_cast<uint64_t>(v); });
  add_campaign_keys(s);
  add_search_keys(s);
}

// The scenario schema and the setters of its keys.
struct ScenarioKeys {
  Schema schema{"scenario"};
  KeyBindings<ScenarioDraft> bindings;
};

// The top-level keys and sections in the order load_scenario() reads them: the cluster first, then
// the model and training, the layout, the search, the rest; an error in an earlier one is the one
// reported (a file without training: is still told about its unknown node preset first).
const std::vector<std::string> kClusterKeys = {"name", "description", "calibration", "seed", "cluster"};
const std::vector<std::string> kModelKeys = {"model"};
const std::vector<std::string> kTrainingKeys = {"training"};
const std::vector<std::string> kLayoutKeys = {"parallelism", "simulation"};
const std::vector<std::string> kSearchKeys = {"search"};
const std::vector<std::string> kRunKeys = {"stragglers", "jitter", "campaign"};

const ScenarioKeys& scenario_keys() {
  static const ScenarioKeys keys = [] {
    ScenarioKeys k;
    Binder b(k.schema, k.bindings);
    add_scenario_keys(b);
    // Every key is read in one of the steps above.
    for (const auto& binding : k.bindings.bindings()) {
      const std::string top = binding.path.substr(0, binding.path.find_first_of(".["));
      bool read = false;
      for (const auto* step : {&kClusterKeys, &kModelKeys, &kTrainingKeys, &kLayoutKeys, &kSearchKeys, &kRunKeys}) {
        read = read || std::find(step->begin(), step->end(), top) != step->end();
      }
      if (!read) throw InternalError("scenario key " + binding.path + " is read in no step of load_scenario");
    }
    return k;
  }();
  return keys;
}

// The schema of model preset files and the setters of its keys (`source` is documentation only:
// nothing reads it).
struct ModelPresetKeys {
  Schema schema{"model preset"};
  KeyBindings<ModelSpec> bindings;
};

const ModelPresetKeys& model_preset_keys() {
  static const ModelPresetKeys keys = [] {
    ModelPresetKeys k;
    k.schema.key(key_def("source", ValueType::kString, "where the numbers come from"));
    KeyBinder<ModelSpec> b(k.schema, k.bindings);
    add_model_keys(b);
    return k;
  }();
  return keys;
}

std::string data_dir_or_default(const std::string& data_dir) {
  return data_dir.empty() ? default_data_dir() : data_dir;
}

std::string model_preset_path(const std::string& name, const std::string& data_dir) {
  if (name.find('/') != std::string::npos || name.ends_with(".yaml")) return name;
  const auto p = std::filesystem::path(data_dir) / "models" / (name + ".yaml");
  std::error_code error;  // a name too long for a path (ENAMETOOLONG) is an unknown preset, not an exception
  if (!std::filesystem::exists(p, error)) {
    std::string available;
    for (const auto& n : model_preset_names(data_dir)) available += (available.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("unknown model preset \"{}\"; available: {} (or give a path to a .yaml file)",
                                 excerpt(name), available));
  }
  return p.string();
}

// Adds `count` nodes of preset `keys.node` with `keys.gpus_per_node` used (0 = all) to the cluster;
// `doc` holds the keys ("node", "gpus_per_node" under `prefix`) for messages.
void add_nodes(ScenarioDraft& d, const ConfigDocument& doc, const NodeKeys& keys, const std::string& prefix) {
  const std::string node_key = prefix + "node";
  const std::string gpus_key = prefix + "gpus_per_node";
  ClusterSpec& c = d.s.cluster;
  NodeSpec node = located(KeyRef{doc, node_key}, [&] { return d.catalog->node(keys.node); });
  const int64_t gpus_per_node = keys.gpus_per_node;
  const int64_t count = keys.count;
  if (gpus_per_node > node.gpus) {
    throw doc.located(InputError(fmt::format("gpus_per_node = {} but node \"{}\" has {} GPUs (valid: 1 to {}, 0 = all)",
                                             gpus_per_node, node.name, node.gpus, node.gpus))
                          .about({gpus_key, node_key}),
                      "");
  }
  if (gpus_per_node > 0 && gpus_per_node < node.gpus) {
    // Keep the GPUs' own NICs: GPU g keeps the NIC it has in the full node.
    std::vector<int> affinity = node.nic_of_gpu;
    if (affinity.empty()) {
      for (int g = 0; g < node.gpus; ++g) affinity.push_back(g * node.nics / node.gpus);
    }
    affinity.resize(static_cast<size_t>(gpus_per_node));
    node.nic_of_gpu = affinity;
    node.gpus = static_cast<int>(gpus_per_node);
  }
  int64_t gpus = 0;
  for (const NodeSpec& n : c.nodes) gpus += n.gpus;
  if (gpus + count * node.gpus > kMaxSimulatedGpus) {
    throw doc.located(
        InputError(fmt::format("{} GPUs ({} nodes of {} GPUs{}) exceed the {} GPUs clustersim simulates (building a "
                               "larger topology takes minutes and tens of GB); use fewer nodes or GPUs per node",
                               gpus + count * node.gpus, count, node.gpus,
                               gpus > 0 ? " after the earlier groups" : "", kMaxSimulatedGpus))
            .about({gpus_key, node_key}),
        "");
  }
  for (int64_t i = 0; i < count; ++i) c.nodes.push_back(node);
}

void add_node_group(ScenarioDraft& d, const ConfigDocument& group, const NodeKeys& keys) {
  add_nodes(d, group, keys, "");
  // The step simulation and the search price one GPU model (parallelism/training_simulation.h).
  const std::vector<NodeSpec>& nodes = d.s.cluster.nodes;
  if (nodes.back().gpu.name != nodes.front().gpu.name) {
    throw group.error_at("node", fmt::format("node \"{}\" has {} GPUs but the first group's nodes have {}; a cluster "
                                             "is simulated with one GPU model throughout (node groups may differ in "
                                             "NICs, GPUs used per node and count)",
                                             nodes.back().name, nodes.back().gpu.name, nodes.front().gpu.name));
  }
}

// The cluster's nodes without node groups, the fabric type and a three-tier fabric's pods
// (topology/three_tier_fabric.h): pod keys are refused, at their line, with any other fabric type,
// and pod_nodes is required, and at most the cluster's nodes, with this one.
void resolve_cluster(const ConfigDocument& doc, ScenarioDraft& d) {
  ClusterSpec& c = d.s.cluster;
  if (!d.groups.empty()) {
    if (d.root_node_given || d.root_count_given) {
      throw doc.located(InputError("give either cluster.node/nodes or cluster.node_groups, not both")
                            .about({"cluster.node_groups", "cluster.node", "cluster.nodes"}),
                        "cluster");
    }
  } else {
    if (!d.root_node_given) {
      throw doc.error_at("cluster", "missing key \"cluster.node\" (a node preset such as dgx-h100, or a path); "
                                    "presets: " + [&] {
                                      std::string s;
                                      for (const auto& n : d.catalog->names("nodes")) s += (s.empty() ? "" : ", ") + n;
                                      return s;
                                    }());
    }
    add_nodes(d, doc, d.root_nodes, "cluster.");
  }
  const std::string& type = d.fabric_type;
  c.fabric.type = type == "single-switch" ? FabricType::kSingleSwitch
                  : type == "fat-tree"    ? FabricType::kFatTree
                  : type == "three-tier"  ? FabricType::kThreeTier
                                          : FabricType::kRailOptimized;
  if (c.fabric.type == FabricType::kSingleSwitch && !d.leaf_keys_given.empty()) {
    throw doc.located(InputError("is for the leaf switches of a fat-tree, rail-optimised or three-tier fabric, but "
                                 "cluster.fabric.type is single-switch (one non-blocking switch); set another "
                                 "cluster.fabric.type or remove the key")
                          .about(d.leaf_keys_given),
                      "cluster.fabric");
  }
  if (c.fabric.type != FabricType::kThreeTier) {
    if (!d.pod_keys_given.empty()) {
      throw doc.located(InputError(fmt::format("is for pods of a three-tier fabric, but cluster.fabric.type is {}; "
                                               "set cluster.fabric.type: three-tier (leaf, spine, core) or remove "
                                               "the key",
                                               type))
                            .about(d.pod_keys_given),
                        "cluster.fabric");
    }
    return;
  }
  const int nodes = static_cast<int>(c.nodes.size());
  if (!d.pod_nodes) {
    throw doc.located(InputError(fmt::format("three-tier needs cluster.fabric.pod_nodes, the nodes of one pod "
                                             "(1..{}, the cluster's nodes)",
                                             nodes))
                          .about({"cluster.fabric.type", "cluster.fabric.pod_nodes"}),
                      "cluster.fabric");
  }
  if (*d.pod_nodes > nodes) {
    throw doc.located(InputError(fmt::format("{} nodes per pod, but the cluster has {} nodes; valid: 1..{} (a "
                                             "cluster inside one pod is a two-tier fabric: type fat-tree or "
                                             "rail-optimized)",
                                             *d.pod_nodes, nodes, nodes))
                          .about({"cluster.fabric.pod_nodes", "cluster.nodes"}),
                      "cluster.fabric");
  }
  c.fabric.pod_nodes = static_cast<int>(*d.pod_nodes);
  c.fabric.pod_type = d.pod_type == "rail-optimized" ? FabricType::kRailOptimized : FabricType::kFatTree;
}

// The precision policy and the dropouts over training.framework's defaults: pytorch-eager's are
// train_step.py's (fp32 parameters under autocast, no master copy, no dropout); a key the scenario
// sets wins.
void resolve_training(const ConfigDocument& doc, ScenarioDraft& d) {
  TrainingSpec& t = d.s.training;
  const bool eager = t.framework == Framework::kPytorchEager;
  const DataType default_params = eager                                ? DataType::kFp32
                                  : t.compute_dtype == DataType::kFp16 ? DataType::kFp16
                                                                       : DataType::kBf16;
  PrecisionPolicy p = PrecisionPolicy::megatron_mixed(default_params);
  if (d.params_dtype) p.param_dtype = *d.params_dtype;
  p.grad_dtype = d.grads_dtype;
  p.master_weights = eager && !d.master_weights_given ? false : d.master_weights;
  p.fp32_grad_copy = d.fp32_grad_copy;
  p.optimizer_state_dtype = d.optimizer_state_dtype;
  try {
    p.validate();
  } catch (const InputError& e) {
    throw doc.located(e, "training");
  }
  t.precision = p;
  if (eager && !d.hidden_dropout_given) t.hidden_dropout = 0.0;
  if (eager && !d.attention_dropout_given) t.attention_dropout = 0.0;
}

// parallelism.dp: GPUs / (tp·cp·pp) where the file gives 0 (or nothing).
void resolve_dp(const ConfigDocument& doc, ScenarioDraft& d, int gpus, LayoutCheck check) {
  Layout& l = d.s.layout;
  if (d.dp > 0) {
    l.dp = static_cast<int>(d.dp);
    return;
  }
  const int model_parallel = l.tp * l.cp * l.pp;
  if (check == LayoutCheck::kDeferToSearch) {
    l.dp = std::max(1, gpus / model_parallel);
    return;
  }
  if (gpus % model_parallel != 0) {
    throw doc.error_at("parallelism", fmt::format("tp·cp·pp = {}·{}·{} = {} does not divide the cluster's {} GPUs; "
                                                  "set parallelism.dp or change tp, cp, pp",
                                                  l.tp, l.cp, l.pp, model_parallel, gpus));
  }
  l.dp = gpus / model_parallel;
}

// The stragglers: list, each GPU once (a node stands for its GPUs).
void resolve_stragglers(ScenarioDraft& d) {
  const ClusterSpec& cluster = d.s.cluster;
  std::vector<int> first_gpu;  // of each node
  int gpus = 0;
  for (const NodeSpec& n : cluster.nodes) {
    first_gpu.push_back(gpus);
    gpus += cluster.gpus_per_node > 0 ? cluster.gpus_per_node : n.gpus;
  }
  std::set<int> seen;
  for (const StragglerKeys& k : d.stragglers) {
    const ConfigDocument& e = *k.doc;
    if (k.gpu.has_value() == k.node.has_value())
      throw e.error_at("", "give gpu or node (one of the two) for a straggler");
    std::vector<int> of;
    if (k.gpu) {
      const int64_t g = *k.gpu;
      if (g >= gpus) throw e.error_at("gpu", fmt::format("GPU {} is not in the cluster's {} GPUs (0 .. {})", g, gpus, gpus - 1));
      of.push_back(static_cast<int>(g));
    } else {
      const int64_t n = *k.node;
      if (n >= static_cast<int64_t>(cluster.nodes.size())) {
        throw e.error_at("node", fmt::format("node {} is not in the cluster's {} nodes (0 .. {})", n, cluster.nodes.size(),
                                             cluster.nodes.size() - 1));
      }
      const size_t i = static_cast<size_t>(n);
      const int end = i + 1 < first_gpu.size() ? first_gpu[i + 1] : gpus;
      for (int g = first_gpu[i]; g < end; ++g) of.push_back(g);
    }
    for (int g : of) {
      if (!seen.insert(g).second) throw e.error_at("", fmt::format("GPU {} is named by two stragglers", g));
      d.s.stragglers.push_back(Straggler{g, k.speed});
    }
  }
}

// The campaign: section with the run's length from training.tokens / steps (campaign/campaign.h),
// each rule's refusal about the keys it relates, placed at the first of them the file gives.
void resolve_campaign(const ConfigDocument& doc, ScenarioDraft& d) {
  const auto refuse = [&](const std::string& message, std::vector<std::string> keys) {
    return doc.located(InputError(message).about(std::move(keys)), "campaign");
  };
  if (!d.s.campaign) {
    if (d.tokens || d.steps) {
      throw refuse("the run's length is for a campaign: add a campaign: section (its relaunch_time at least) and "
                   "cluster.storage.bandwidth, or remove the key",
                   {"training.tokens", "training.steps"});
    }
    return;
  }
  CampaignSpec& c = *d.s.campaign;
  c.tokens = d.tokens;
  c.steps = d.steps;
  if (c.tokens && c.steps) {
    throw refuse("give the run's length once: training.tokens or training.steps, not both",
                 {"training.steps", "training.tokens"});
  }
  if (!c.tokens && !c.steps) {
    throw refuse("a campaign needs the run's length: training.tokens (15.6e12, say) or training.steps",
                 {"training.tokens", "training.steps", "campaign"});
  }
  if (!d.s.storage_bandwidth) {
    throw refuse("checkpoints need the storage they go to: cluster.storage.bandwidth, the file system's aggregate "
                 "bandwidth (\"1 TB/s\", say)",
                 {"cluster.storage.bandwidth", "campaign"});
  }
  if (d.spare_nodes) {
    if (!d.repair_s) {
      throw refuse("spare nodes need campaign.repair_time, how long a failed node is away (\"3 h\", \"48 h\")",
                   {"campaign.spare_nodes", "campaign.repair_time"});
    }
    c.spare_nodes = static_cast<int>(*d.spare_nodes);
    c.repair_s = *d.repair_s;
  } else if (d.repair_s) {
    throw refuse("a repair time is for campaign.spare_nodes: give both, or neither",
                 {"campaign.repair_time", "campaign.spare_nodes"});
  }
}

}  // namespace

const Schema& scenario_schema() { return scenario_keys().schema; }

const Schema& model_preset_schema() { return model_preset_keys().schema; }

std::vector<std::string> scenario_bound_keys() { return scenario_keys().bindings.bound_paths(); }

std::vector<std::string> model_preset_names(const std::string& data_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(data_dir_or_default(data_dir)) / "models",
                                                           ec)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

ModelSpec load_model_preset(const std::string& name_or_path, const std::string& data_dir) {
  const std::string dir = data_dir_or_default(data_dir);
  const auto doc = ConfigDocument::load_file(model_preset_path(name_or_path, dir), model_preset_schema());
  ModelSpec m;
  m.name = name_or_path;
  model_preset_keys().bindings.apply(doc, m);
  return m;
}

bool power_model_applies(const SimulationSettings& settings, const CalibrationProfile* compute_profile) {
  if (settings.power_model) return *settings.power_model;
  return compute_profile != nullptr && compute_profile->power.has_value();
}

SearchProblem search_problem(const Scenario& scenario, const Cluster& cluster) {
  if (!scenario.search) {
    throw InputError(fmt::format("scenario \"{}\" has no search: section (see `clustersim help-config`)", scenario.name));
  }
  SearchProblem problem;
  problem.cluster = &cluster;
  problem.model = scenario.model;
  problem.training = scenario.training;
  problem.base = scenario.layout;
  problem.space = *scenario.search;
  problem.fidelity_for = [settings = scenario.simulation](const Layout& l) { return resolve_fidelity(settings, l); };
  problem.representative = scenario.simulation.representative;
  // Resolved again once the caller sets problem.compute_profile (power_model_applies).
  problem.power_model = scenario.simulation.power_model.value_or(false);
  // What only `clustersim search` reads is checked here, not at load (run ignores search:).
  const SearchObjective o = problem.space.objective;
  const bool campaign_objective =
      o == SearchObjective::kTimeToTrain || o == SearchObjective::kCampaignCost || o == SearchObjective::kEnergy;
  if (campaign_objective && !scenario.campaign) {
    throw InputError(scenario.search_objective_where +
                     fmt::format("{} ranks by the whole run: add a campaign: section (with training.tokens or steps "
                                 "and cluster.storage.bandwidth)",
                                 name_of(o)));
  }
  if (o == SearchObjective::kEnergy && scenario.simulation.power_model == false) {
    throw InputError(scenario.search_objective_where +
                     "energy needs the power model: set simulation.power_model: true or auto");
  }
  // jitter: is left out: a search ranks steady steps (each sampled step with jitter simulates
  // every rank); `clustersim search` says so, and `run` of the winner applies it.
  problem.stragglers = scenario.stragglers;
  if (scenario.campaign) {
    problem.campaign = [scenario, &cluster](const Layout& layout, const TrainingReport& r, LayoutMetrics& m) {
      const CampaignResult c =
          plan_campaign(*scenario.campaign, campaign_inputs(scenario, cluster, layout, r, r.step_time_s));
      m.campaign_wall_s = c.exact_wall_s;
      m.campaign_gpu_hours = c.gpu_hours;
      m.campaign_energy_mwh = c.energy_mwh.value_or(0);
    };
  }
  return problem;
}

CampaignInputs campaign_inputs(const Scenario& scenario, const Cluster& cluster, const Layout& layout,
                               const TrainingReport& report, double step_time_s) {
  CampaignInputs in;
  const int gpus = report.gpus;
  in.step_time_s = step_time_s;
  in.tokens_per_step = static_cast<double>(scenario.training.global_batch) * static_cast<double>(scenario.training.seq_len);
  in.gpus = gpus;
  in.nodes = cluster.node_count();
  std::vector<double> node_bandwidth(static_cast<size_t>(cluster.node_count()));
  double overhead_w = 0;
  double idle_w = 0;
  for (int n = 0; n < cluster.node_count(); ++n) {
    const NodeSpec& node = cluster.node_spec(n);
    in.nics += node.nics;
    node_bandwidth[static_cast<size_t>(n)] =
        scenario.storage_node_bandwidth.value_or(node.nics * node.nic.bandwidth.bytes_per_second());
    overhead_w += node.overhead_power.in_watts();
    idle_w += node.gpu.idle_power.in_watts() * (static_cast<double>(gpus) / cluster.node_count());
  }
  // What each rank writes: its stage's parameters (memory model) over the replicas that hold them,
  // dense ones over dp·cp, routed experts over the expert-data-parallel size tp·cp·dp / (ep·etp).
  const PrecisionPolicy& p = scenario.training.precision;
  const double per_param = static_cast<double>(p.param_bytes() + p.optimizer_bytes(scenario.training.optimizer) -
                                               (p.fp32_grad_copy ? 4 : 0));
  std::vector<const StageMemory*> stage_of(static_cast<size_t>(layout.pp), nullptr);
  for (const StageMemory& m : report.programs.memory) stage_of.at(static_cast<size_t>(m.stage)) = &m;
  const double dense_replicas = static_cast<double>(layout.dp) * layout.cp;
  const double expert_replicas =
      std::max(1.0, static_cast<double>(layout.tp) * layout.cp * layout.dp / (static_cast<double>(layout.ep) * layout.etp));
  const RankGrid grid(layout);
  std::vector<double> node_bytes(static_cast<size_t>(cluster.node_count()), 0.0);
  double busiest_rank = 0;
  for (int r = 0; r < gpus; ++r) {
    const StageMemory* m = stage_of.at(static_cast<size_t>(grid.coord_of(r).pp));
    if (m == nullptr) throw InternalError("campaign_inputs: a stage without its memory");
    const double bytes = per_param * (static_cast<double>(m->parameters) / dense_replicas +
                                      static_cast<double>(m->expert_parameters) / expert_replicas);
    node_bytes[static_cast<size_t>(cluster.node_of(r))] += bytes;
    in.checkpoint_bytes += bytes;
    busiest_rank = std::max(busiest_rank, bytes);
  }
  // The write ends when the storage has taken every byte and the busiest node has sent its own.
  double write_s = scenario.storage_bandwidth ? in.checkpoint_bytes / *scenario.storage_bandwidth : 0.0;
  for (size_t n = 0; n < node_bytes.size(); ++n) write_s = std::max(write_s, node_bytes[n] / node_bandwidth[n]);
  in.storage_write_bytes_per_s = write_s > 0 ? in.checkpoint_bytes / write_s : 1e15;
  in.storage_read_bytes_per_s = in.storage_write_bytes_per_s;
  in.async_copy_s = busiest_rank / cluster.node_spec(0).pcie.switch_link.bytes_per_second();
  if (report.energy.modelled) {
    in.training_power_w = report.energy.avg_power_w * gpus + overhead_w;
    in.waiting_power_w = idle_w + overhead_w;
  }
  in.pue = scenario.pue;
  return in;
}

Fidelity resolve_fidelity(const SimulationSettings& settings, int gpus, int all_to_all_ranks) {
  switch (settings.fidelity) {
    case FidelityChoice::kFlow: return Fidelity::kFlow;
    case FidelityChoice::kAnalytical: return Fidelity::kAnalytical;
    case FidelityChoice::kAuto: break;
  }
  return gpus <= settings.flow_max_gpus && all_to_all_ranks <= settings.flow_max_all_to_all_ranks ? Fidelity::kFlow
                                                                                                  : Fidelity::kAnalytical;
}

Fidelity resolve_fidelity(const SimulationSettings& settings, const Layout& layout) {
  return resolve_fidelity(settings, layout.world_size(), std::max(layout.ep, layout.cp));
}

std::optional<double> auto_flow_budget(const SimulationSettings& settings, const Layout& layout) {
  if (settings.fidelity != FidelityChoice::kAuto || settings.auto_flow_seconds <= 0 ||
      resolve_fidelity(settings, layout) == Fidelity::kFlow) {
    return std::nullopt;
  }
  return settings.auto_flow_seconds;
}

std::string framework_note(const Scenario& s) {
  const Layout& l = s.layout;
  if (s.framework_given || s.training.framework != Framework::kMegatron || l.zero_stage < 2 || l.tp > 1 || l.pp > 1) {
    return "";
  }
  return fmt::format("training.framework is megatron, the default: Megatron-Core's Transformer Engine kernels. "
                     "ZeRO {} without tensor or pipeline parallelism is usually PyTorch FSDP over plain modules (HF "
                     "Trainer, accelerate, torchtitan without torch.compile): set training.framework: pytorch-eager "
                     "for those, or megatron to keep this and drop the note",
                     l.zero_stage);
}

Scenario load_scenario(const std::string& path, const std::vector<Override>& overrides, const std::string& data_dir,
                       LayoutCheck layout_check) {
  const std::string dir = data_dir_or_default(data_dir);
  const auto doc = ConfigDocument::load_file(path, scenario_schema(), overrides);
  const HardwareCatalog catalog(dir);
  ScenarioDraft d;
  d.catalog = &catalog;
  d.data_dir = dir;
  d.s.source = path;
  // The setters of the keys, section by section (presets resolved as their keys are read).
  const KeyBindings<ScenarioDraft>& keys = scenario_keys().bindings;
  Scenario& s = d.s;
  keys.apply_sections(doc, d, kClusterKeys);
  resolve_cluster(doc, d);

  keys.apply_sections(doc, d, kModelKeys);
  // A model from a preset or the file's dimensions (a model's layers are at least 1, so 0 is none).
  if (!d.model_given) {
    throw doc.located(InputError("model: missing section; give model.preset (a shipped model such as llama3-8b, see "
                                 "`clustersim help-config model`) or the model's dimensions (model.layers, hidden, "
                                 "heads, ...)")
                          .about({"model"}),
                      "");
  }
  if (!d.model_preset_given && s.model.layers == 0) {
    throw doc.located(InputError("no preset and no layers; give model.preset (e.g. llama3-8b) or the model's "
                                 "dimensions (layers, hidden, heads, ffn_hidden, vocab)")
                          .about({"model.preset", "model.layers", "model"}),
                      "model");
  }
  keys.apply_sections(doc, d, kTrainingKeys);
  if (s.model.name.empty()) s.model.name = "model";
  resolve_training(doc, d);
  // PyTorch keeps the tokenizer's vocabulary as it is; Megatron's padding applies to framework
  // megatron only, unless the scenario sets it.
  if (s.training.framework == Framework::kPytorchEager && !d.vocab_padding_given) {
    s.model.make_vocab_size_divisible_by = 1;
  }
  if (s.model.position_embedding == PositionEmbedding::kLearned && s.model.max_position_embeddings == 0) {
    s.model.max_position_embeddings = s.training.seq_len;
  }
  // Every GPU of the cluster must have a peak for the compute dtype (an A100 has none for fp8).
  for (const auto& n : s.cluster.nodes) {
    if (n.gpu.dense_peak.count(s.training.compute_dtype) == 0) {
      std::vector<std::string> listed;
      for (const auto& [dtype, rate] : n.gpu.dense_peak) listed.emplace_back(name_of(dtype));
      throw doc.error_at("training.precision",
                         fmt::format("{}: the cluster's GPU {} has no dense {} peak (its hardware file lists {}); "
                                     "train in one of those, or add dense_peak.{} to the GPU's file",
                                     name_of(s.training.compute_dtype), n.gpu.name, name_of(s.training.compute_dtype),
                                     fmt::join(listed, ", "), name_of(s.training.compute_dtype)));
    }
  }

  int gpus = 0;
  for (const auto& n : s.cluster.nodes) gpus += n.gpus;
  keys.apply_sections(doc, d, kLayoutKeys);
  resolve_dp(doc, d, gpus, layout_check);
  // The checks validate_run applies to a run (parallelism/validate_run.h), on the cluster as the
  // file describes it, each refusal at the key it is about; the model and training spec alone
  // where the layout is only a search's base.
  try {
    if (layout_check == LayoutCheck::kValidate) {
      validate_run(s.model, s.training, s.layout, s.cluster, s.simulation.allow_idle_gpus);
    } else {
      s.model.validate();
      s.training.validate(s.model);
    }
  } catch (const InputError& e) {
    throw doc.located(e, "parallelism");
  }
  keys.apply_sections(doc, d, kSearchKeys);
  if (s.search) {
    // The space's own rules, placed at the key they name (search_layouts() checks them again), and
    // its size, counted before anything is expanded: a space of 10^12 layouts is refused here, in
    // microseconds.
    SearchContext search_context;
    search_context.gpus = gpus;
    search_context.gpus_per_node = s.cluster.nodes.front().gpus;
    for (const auto& n : s.cluster.nodes) {
      if (n.gpus != search_context.gpus_per_node) search_context.gpus_per_node = 0;
    }
    search_context.layers = static_cast<int>(s.model.layers);
    search_context.heads = static_cast<int>(s.model.heads);
    try {
      validate_search_space(*s.search, s.cluster.nodes.front().gpu.hbm_capacity);
      check_search_space_size(*s.search, s.layout, s.training, search_context);
    } catch (const InputError& e) {
      throw doc.located(e, "search");
    }
  }
  keys.apply_sections(doc, d, kRunKeys);
  resolve_stragglers(d);
  if (s.jitter) {
    if (!d.jitter_cv) {
      throw doc.located(InputError("give cv, the coefficient of variation (0.03, say)").about({"jitter.cv", "jitter"}),
                        "jitter");
    }
    s.jitter->cv = *d.jitter_cv;
    if (gpus > kMaxJitterGpus) {
      throw doc.located(InputError(fmt::format("jitter simulates every rank of each sampled step: at most {} GPUs, "
                                               "the cluster has {}",
                                               kMaxJitterGpus, gpus))
                            .about({"jitter", "cluster.nodes"}),
                        "jitter");
    }
  }
  resolve_campaign(doc, d);
  return std::move(d.s);
}

}  // namespace clustersim
