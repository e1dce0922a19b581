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
#include "scenarios/hardware_presets.h"
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

// The model keys, under `prefix` ("model." in scenarios, "" in preset files).
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

void add_model_keys(Schema& s, const std::string& prefix) {
  s.key(key_def(prefix + "name", ValueType::kString, "model name shown in reports"));
  s.key(integer(prefix + "layers", "transformer layers L", "", 1, kMaxLayers));
  s.key(integer(prefix + "hidden", "hidden size h", "", 1, kMaxHidden));
  s.key(integer(prefix + "ffn_hidden", "MLP intermediate size (4h for GPT)", "", 1, 4 * kMaxHidden));
  s.key(integer(prefix + "heads", "attention (query) heads a", "", 1, kMaxHeads));
  s.key(integer(prefix + "kv_heads", "key/value heads for grouped-query attention (0 = heads, MHA)", "0", 0,
                kMaxHeads));
  s.key(integer(prefix + "head_dim", "size of one head (0 = hidden / heads)", "0", 0, kMaxHidden));
  s.key(integer(prefix + "vocab", "tokenizer vocabulary before Megatron's padding", "", 1, kMaxVocab));
  s.key(choice(prefix + "mlp", "MLP kind", "gelu", {"gelu", "swiglu"}));
  s.key(choice(prefix + "norm", "normalisation", "layernorm", {"layernorm", "rmsnorm"}));
  s.key(choice(prefix + "position_embedding", "position encoding: learned table, rotary (rope) or ALiBi biases (alibi)",
               "learned", {"learned", "rope", "alibi"}));
  s.key(integer(prefix + "max_position_embeddings", "rows of a learned position table (0 = seq_len)", "0", 0,
                kMaxSeqLen));
  s.key(key_def(prefix + "tied_embeddings", ValueType::kBool, "LM head shares the word-embedding matrix", "false"));
  s.key(integer(prefix + "make_vocab_size_divisible_by",
                "Megatron pads the vocabulary to a multiple of this × tp (--make-vocab-size-divisible-by; default 1, "
                "no padding, with framework pytorch-eager)",
                "128", 1,
                kMaxVocab));
  s.key(key_def(prefix + "linear_bias", ValueType::kBool, "biases on linear layers (GPT: true; Llama: false)", "true"));
  s.key(key_def(prefix + "qkv_bias", ValueType::kBool, "bias on QKV only when linear_bias is false (Qwen2)", "false"));
  s.key(integer(prefix + "sliding_window",
                "sliding-window attention: each query attends to the last N tokens, itself included (0 = full "
                "causal attention; Mistral, Gemma 2/3, GPT-OSS)",
                "0", 0, kMaxSeqLen));
  s.key(integer(prefix + "full_attention_every",
                "with sliding_window: every N-th layer (N-1, 2N-1, ...) attends to the whole sequence (0 = none; "
                "GPT-OSS and Gemma 2: 2, Gemma 3: 6)",
                "0", 0, kMaxLayers));
  s.key(key_def(prefix + "attention_sinks", ValueType::kBool,
            "a learned sink logit per head in every softmax (GPT-OSS): one parameter per head and layer", "false"));
  const std::string moe = prefix + "moe";
  s.section(moe, "mixture-of-experts MLP (absent: dense)");
  s.key(integer(moe + ".num_experts", "routed experts per MoE layer", "0", 0, kMaxExperts));
  s.key(integer(moe + ".top_k", "experts each token is routed to", "0", 0, kMaxExperts));
  s.key(integer(moe + ".moe_ffn_hidden", "intermediate size of one expert", "0", 0, 4 * kMaxHidden));
  s.key(integer(moe + ".shared_experts", "always-active shared experts", "0", 0, kMaxExperts));
  s.key(integer(moe + ".shared_ffn_hidden",
                "total intermediate size of the shared experts (0 = shared_experts × moe_ffn_hidden)", "0", 0,
                4 * kMaxHidden));
  s.key(integer(moe + ".first_dense_layers", "leading layers with a dense MLP", "0", 0, kMaxLayers));
  s.key(integer(moe + ".router_num_groups",
                "group-limited routing: contiguous expert groups (Megatron --moe-router-num-groups; 0 = no limit)", "0",
                0, kMaxExperts));
  s.key(integer(moe + ".router_group_topk",
                "group-limited routing: groups each token's experts come from (Megatron --moe-router-group-topk)", "0",
                0, kMaxExperts));
  s.key(choice(moe + ".load_balancing",
               "router balancing: aux_loss (auxiliary loss), aux_loss_free (DeepSeek-V3's expert bias) or none; "
               "changes only the router's cost",
               "aux_loss", {"aux_loss", "aux_loss_free", "none"}));
  const std::string mla = prefix + "mla";
  s.section(mla, "multi-head latent attention (DeepSeek-V2/V3; absent: standard attention)");
  s.key(integer(mla + ".q_lora_rank", "query down-projection rank", "0", 0, kMaxHidden));
  s.key(integer(mla + ".kv_lora_rank", "key/value down-projection rank", "0", 0, kMaxHidden));
  s.key(integer(mla + ".rope_head_dim", "decoupled RoPE head size", "0", 0, kMaxHidden));
  s.key(integer(mla + ".v_head_dim", "value head size (0 = head_dim)", "0", 0, kMaxHidden));
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

// Reported and re-simulated layouts of a search (search.top, search.rerank).
constexpr int64_t kMaxSearchLayouts = 1'000'000;

// The search: section (parallelism/search_space.h says what absent lists mean). Sizes have the
// bounds of the parallelism keys.
void add_search_keys(Schema& s) {
  s.section("search", "the layout search space of `clustersim search` (ignored by `clustersim run`)");
  s.key(int_list("search.tp", "tensor-parallel sizes (absent: every divisor of the heads within a node and the GPUs)",
                 1, kMaxClusterGpus));
  s.key(int_list("search.pp", "pipeline sizes (absent: every divisor of the layers and the GPUs)", 1,
                 kMaxClusterGpus));
  s.key(int_list("search.dp", "data-parallel sizes (absent: GPUs / (tp·cp·pp), or the largest that fits)", 1,
                 kMaxClusterGpus));
  s.key(int_list("search.cp", "context-parallel sizes (absent: parallelism.cp)", 1, kMaxClusterGpus));
  s.key(int_list("search.ep", "expert-parallel sizes (absent: parallelism.ep)", 1, kMaxClusterGpus));
  s.key(int_list("search.etp", "expert tensor-parallel sizes (absent: parallelism.etp)", 1, kMaxClusterGpus));
  s.key(int_list("search.vpp", "model chunks per stage (absent: every divisor of the layers per stage)", 1,
                 kMaxLayers));
  s.key(int_list("search.micro_batch", "micro-batch sizes (absent: training.micro_batch)", 1, kMaxGlobalBatch));
  s.key(string_list("search.recompute", "activation recomputation (absent: training.recompute)",
                    {"none", "selective", "full"}));
  s.key(int_list("search.zero", "ZeRO stages (absent: parallelism.zero)", 0, 3));
  s.key(int_list("search.dp_shard",
                 "hybrid-sharding group sizes, 0 = full sharding (absent: parallelism.dp_shard); a layout whose dp a "
                 "size does not divide, or with ZeRO 0, is rejected for that size",
                 0, kMaxClusterGpus));
  s.key(string_list("search.sequence_parallel", "sequence parallelism on/off (absent: parallelism.sequence_parallel)",
                    {"false", "true"}));
  s.key(string_list("search.schedule", "pipeline schedules (absent: 1f1b and interleaved-1f1b)",
                    {"gpipe", "1f1b", "interleaved-1f1b"}));
  s.key(key_def("search.order", ValueType::kStringList, "rank orders, innermost first (absent: parallelism.order)"));
  s.key(choice("search.global_batch",
               "fixed: every layout trains training.global_batch; maximum: the largest batch up to it that the "
               "layout divides",
               "fixed", {"fixed", "maximum"}));
  s.key(key_def("search.allow_idle_gpus", ValueType::kBool, "layouts may leave GPUs idle (tp·cp·pp·dp < GPUs)", "false"));
  s.key(key_def("search.uneven_stages", ValueType::kBool,
            "pp need not divide the layers: the first and last stages get fewer (explicit stage_layers)", "false"));
  s.key(choice("search.objective",
               "what the ranking maximises (cost_per_token: GPU-seconds per token; time_to_train, cost and energy: "
               "the campaign's expected wall time, GPU-hours and energy, with a campaign: section)",
               "tokens_per_s", {"tokens_per_s", "step_time", "mfu", "cost_per_token", "time_to_train", "cost", "energy"}));
  s.key(real("search.gpu_hour_price", "price of one GPU-hour for cost reports (0: report GPU-hours only)", "0", 0,
             1e9));
  s.key(key_def("search.memory_headroom", ValueType::kBytes, "memory every GPU must keep free at its peak", "0 GiB"));
  s.key(key_def("search.tp_within_node", ValueType::kBool, "every tensor-parallel group inside one node", "true"));
  s.key(integer("search.top", "layouts reported", "10", 1, kMaxSearchLayouts));
  s.key(key_def("search.rerank", ValueType::kString,
                "best screened layouts re-simulated at the scenario's fidelity: auto (the best max(search.top, 10), "
                "doubled until the winner holds, at most search.rerank_max) or a count (0: none)",
                "auto"));
  s.key(integer("search.rerank_max", "most layouts search.rerank: auto re-simulates",
                std::to_string(kDefaultRerankMax), 1, kMaxSearchRerank));
  s.key(integer("search.max_candidates",
                "most layouts the space may hold, counted before it is expanded (about 0.5 KB each while held)",
                std::to_string(kDefaultMaxSearchCandidates), 1, kMaxSearchCandidates));
}

void add_campaign_keys(Schema& s) {
  const FailureRates d = llama3_failure_rates();
  s.section("campaign", "the whole training run: wall-clock time, cost, energy, failures and checkpoints "
                        "(campaign/campaign.h; needs training.tokens or training.steps and cluster.storage)");
  s.key(real("campaign.gpu_hour_price", "price of one GPU-hour, any currency (0: no cost)", "0", 0, 1e6));
  s.key(key_def("campaign.relaunch_time", ValueType::kDuration,
                "from a failure to the job running again (detection, replacing the node, process launch, NCCL and "
                "data-loader start-up), the checkpoint load not included; required: it depends on the site",
                "", true));
  s.key(integer("campaign.seeds", "Monte-Carlo runs of the campaign", "1000", 1, kMaxCampaignSeeds));
  s.key(integer("campaign.spare_nodes",
                "nodes standing by: a GPU, host or NIC failure takes its node out for repair_time and the job "
                "relaunches on a spare, or waits for a repaired node when none is left (absent: always a spare)",
                "", 0, kMaxClusterNodes));
  KeyDef repair = key_def("campaign.repair_time", ValueType::kDuration,
                          "until a failed node is back among the spares (needed with spare_nodes)");
  repair.max = 30 * 86'400.0;
  s.key(repair);
  s.key(integer("campaign.seed", "seed of the first run's failures", "1", 0));
  s.section("campaign.checkpoint", "how often and how the model and optimizer state is saved");
  s.key(key_def("campaign.checkpoint.interval", ValueType::kString,
                "compute time between two checkpoints (a duration, \"30 min\"; rounded to whole steps), or auto: "
                "Young's optimum sqrt(2 x checkpoint time x MTBF)",
                "auto"));
  s.key(key_def("campaign.checkpoint.async", ValueType::kBool,
                "asynchronous save (Megatron-LM --async-save, PyTorch DCP async_save): the training waits only for "
                "the copy to host memory, the write runs behind it",
                "false"));
  s.section("campaign.failures", "failure rates in FIT (failures per 10^9 component-hours); defaults: Llama 3 405B's "
                                 "419 unexpected interruptions in 54 days on 16,384 H100 (arXiv:2407.21783 Table 5)");
  auto rate = [&](const char* name, const char* what, double v) {
    s.key(real(fmt::format("campaign.failures.{}", name), what, fmt::format("{:.1f}", v), 0, 1e9));
  };
  rate("gpu", "per GPU: the GPU, its HBM and SRAM, system processor, thermal interface, silent data corruption", d.gpu);
  rate("host", "per node: CPU, memory, SSD, power supply, chassis, IO board, unplanned maintenance", d.host);
  rate("nic", "per compute NIC", d.nic);
  rate("network", "per compute NIC port: its share of the fabric's switches and cables", d.network);
  rate("software", "per GPU: software bugs, NCCL watchdog timeouts, dependencies", d.software);
}

Schema build_scenario_schema() {
  Schema s("scenario");
  s.key(key_def("name", ValueType::kString, "scenario name shown in reports", "unnamed"));
  s.key(key_def("description", ValueType::kString, "free text", ""));
  s.key(key_def("calibration", ValueType::kString,
            "calibration profile name (scenarios/profiles/<name>.json) or path; absent: datasheet defaults"));
  s.key(integer("seed", "seed of every random choice (ECMP hashing, noise)", "1", 0));

  s.section("cluster", "the GPUs and the networks between them");
  s.key(key_def("cluster.node", ValueType::kString, "node preset (scenarios/hardware/nodes/) or path to a node file"));
  s.key(integer("cluster.nodes", "number of nodes", "1", 1, kMaxClusterNodes));
  s.key(integer("cluster.gpus_per_node", "GPUs used per node (0 = all of the node's GPUs)", "0", 0, kMaxNodeGpus));
  s.section_list("cluster.node_groups", "heterogeneous clusters: groups of identical nodes, in order");
  s.key(key_def("cluster.node_groups[].node", ValueType::kString, "node preset or path"));
  s.key(integer("cluster.node_groups[].count", "nodes in the group", "1", 1, kMaxClusterNodes));
  s.key(integer("cluster.node_groups[].gpus_per_node", "GPUs used per node (0 = all)", "0", 0, kMaxNodeGpus));
  s.section("cluster.fabric", "the inter-node network");
  s.key(choice("cluster.fabric.type",
               "topology of the inter-node network (three-tier: pods of pod_type fabrics joined by a core tier)",
               "rail-optimized", {"single-switch", "fat-tree", "rail-optimized", "three-tier"}));
  s.key(key_def("cluster.fabric.nic", ValueType::kString, "NIC preset replacing the node's NIC (scenarios/hardware/nics/)"));
  s.key(hop_latency(key_def("cluster.fabric.switch_latency", ValueType::kDuration,
                        "latency per switch traversal (NVIDIA Quantum-2 QM9700 port to port: < 130 ns; with cables ~ "
                        "300 ns)",
                        "300 ns")));
  s.key(integer("cluster.fabric.leaf_ports", "downlink ports of one leaf switch", fmt::format("{}", kDefaultLeafPorts),
                1, kMaxLeafPorts));
  s.key(real("cluster.fabric.oversubscription", "fat-tree leaf downlink / uplink bandwidth",
             fmt::format("{}", kDefaultOversubscription), 1, kMaxOversubscription));
  s.key(choice("cluster.fabric.pod_type", "three-tier only: how the leaves inside a pod are wired", "fat-tree",
               {"fat-tree", "rail-optimized"}));
  s.key(integer("cluster.fabric.pod_nodes",
                "three-tier only, required: nodes per pod (Llama 3: 3,072 GPUs = 384 nodes of 8; the last pod may "
                "hold fewer)",
                "", 1, kMaxClusterNodes));
  s.key(real("cluster.fabric.core_oversubscription",
             "three-tier only: a pod's spine downlink / core uplink bandwidth (Llama 3's cluster: 7, Dubey et al. "
             "2024 3.3.1)",
             fmt::format("{}", kDefaultOversubscription), 1, kMaxOversubscription));
  s.key(real("cluster.pue",
             "facility power usage effectiveness: facility energy / IT energy (default 1.2: between Google's "
             "fleet-wide 1.10 of 2023 and the 1.58 average of the Uptime Institute's 2023 survey)",
             fmt::format("{}", kDefaultPue), 1, kMaxPue));
  s.section("cluster.storage", "where checkpoints are written (needed by a campaign:)");
  s.key(key_def("cluster.storage.bandwidth", ValueType::kBandwidth,
                "the file system's aggregate write and read bandwidth (a parallel file system's vendor figure, or "
                "IOR's result on it)"));
  s.key(key_def("cluster.storage.node_bandwidth", ValueType::kBandwidth,
                "one node's path to storage (absent: its compute NICs, nics x NIC bandwidth)"));

  s.section("model", "the transformer");
  s.key(key_def("model.preset", ValueType::kString, "model preset (scenarios/models/) whose keys the others override"));
  add_model_keys(s, "model.");

  s.section("training", "what one optimizer step processes and how");
  s.key(integer("training.seq_len", "tokens per sequence", "", 1, kMaxSeqLen));
  s.key(integer("training.global_batch", "sequences per optimizer step", "", 1, kMaxGlobalBatch));
  s.key(integer("training.micro_batch", "sequences per forward/backward pass", "1", 1, kMaxGlobalBatch));
  s.key(real("training.tokens", "tokens of the whole run, for a campaign: (steps: tokens / (global_batch x seq_len), "
             "rounded up)", "", 1, kMaxCampaignTokens));
  s.key(integer("training.steps", "optimizer steps of the whole run, for a campaign: (instead of tokens)", "", 1,
                kMaxCampaignSteps));
  s.key(choice("training.precision", "GEMM compute dtype", "bf16", {"bf16", "fp16", "fp8"}));
  s.key(choice("training.params_dtype",
               "working copy of the parameters (default: bf16, fp16 for fp16 training, fp32 with framework "
               "pytorch-eager)",
               "",
               kDtypes16));
  s.key(choice("training.grads_dtype", "gradient buffer dtype (Megatron: fp32 main grads)", "fp32", kDtypes16));
  s.key(key_def("training.master_weights", ValueType::kBool,
            "fp32 master copy of the parameters (default false with framework pytorch-eager)", "true"));
  s.key(key_def("training.fp32_grad_copy", ValueType::kBool,
            "an extra fp32 gradient copy next to 16-bit gradients (DeepSpeed ZeRO's accounting)", "false"));
  s.key(choice("training.optimizer_state_dtype", "Adam moments dtype", "fp32", {"fp32", "bf16"}));
  s.key(choice("training.optimizer", "optimizer", "adam", {"adam", "sgd"}));
  s.key(choice("training.framework",
               "whose kernels run the step: megatron (fused kernels) or pytorch-eager (PyTorch modules under "
               "autocast, as tools/reference/train_step.py; one GPU, DistributedDataParallel, FSDP with zero 3/2, or "
               "pipeline stages or tensor parallelism with dp 1)",
               "megatron", {"megatron", "pytorch-eager"}));
  s.key(choice("training.cuda_graphs",
               "CUDA graphs: none, layers (each layer's forward and backward captured, the attention part of a "
               "mixture-of-experts layer; framework megatron) or step (the whole step; framework pytorch-eager "
               "with tp 1, pp 1, zero 0)",
               "none", {"none", "layers", "step"}));
  s.key(choice("training.recompute", "activation recomputation", "none", {"none", "selective", "full"}));
  s.key(choice("training.attention", "attention kernel: flash (fused) or naive (unfused, stores s×s)", "flash",
               {"flash", "naive"}));
  s.key(choice("training.flash_kernel",
               "fused kernel of attention flash: cudnn (cuDNN's fused attention: Transformer Engine's, or SDPA's "
               "cuDNN backend under pytorch-eager), sdpa-flash (a FlashAttention-2-class kernel, as SDPA's "
               "flash backend, priced per call shape) or flash-v1 (flash-attn 1.x: half cudnn's default rate; "
               "framework megatron)",
               "cudnn", {"cudnn", "sdpa-flash", "flash-v1"}));
  s.key(key_def("training.fused_norm", ValueType::kBool,
            "RMSNorm as one fused kernel (Transformer Engine's); false: the ATen kernels of RMSNorm written in "
            "PyTorch operations, x·rsqrt(mean(x²)+ε)·w (workloads/aten_kernels.h)",
            "true"));
  s.key(key_def("training.fused_rope", ValueType::kBool,
            "RoPE as one fused kernel (Megatron --apply-rope-fusion); false: the ATen kernels of rotate-half RoPE",
            "true"));
  s.key(key_def("training.fused_swiglu", ValueType::kBool,
            "SwiGLU's gate as one fused kernel (Megatron --bias-swiglu-fusion); false: silu(a)·g as ATen kernels",
            "true"));
  s.key(key_def("training.fused_softmax", ValueType::kBool,
            "naive attention's scale-mask-softmax as one fused kernel (Megatron --masked-softmax-fusion); false: "
            "copy, masked_fill_ and softmax as ATen kernels (needs attention: naive)",
            "true"));
  s.key(real("training.hidden_dropout",
             "dropout probability after attention and MLP, below 1 (0 stores no mask; default 0 with framework "
             "pytorch-eager)",
             "0.1", 0, 1));
  s.key(real("training.attention_dropout",
             "dropout probability on attention probabilities, below 1 (default 0 with framework pytorch-eager)", "0.1",
             0, 1));
  s.section("training.moe_routing", "how a mixture-of-experts router spreads tokens (workloads/moe_routing.h)");
  s.key(real("training.moe_routing.skew",
             "the busiest expert's tokens over the mean expert's (1 = balanced; at most num_experts / top_k)", "1", 1,
             1e6));
  KeyDef expert_load = key_def("training.moe_routing.expert_load", ValueType::kIntList,
                           "per-expert token histogram (one count per expert; replaces skew)");
  expert_load.min = 0;
  s.key(expert_load);
  s.key(real("training.moe_routing.capacity_factor",
             "expert capacity as a multiple of the balanced load; tokens above it are dropped (0 = dropless)", "0", 0,
             1e6));

  s.section("parallelism", "the parallel layout (Megatron-LM names)");
  s.key(integer("parallelism.tp", "tensor-parallel size", "1", 1, kMaxClusterGpus));
  s.key(integer("parallelism.pp", "pipeline-parallel size", "1", 1, kMaxClusterGpus));
  s.key(integer("parallelism.dp", "data-parallel size (0 = GPUs / (tp·cp·pp))", "0", 0, kMaxClusterGpus));
  s.key(integer("parallelism.cp", "context-parallel size", "1", 1, kMaxClusterGpus));
  s.key(integer("parallelism.ep", "expert-parallel size", "1", 1, kMaxClusterGpus));
  s.key(integer("parallelism.etp", "expert tensor-parallel size", "1", 1, kMaxClusterGpus));
  s.key(choice("parallelism.moe_dispatcher",
               "MoE token dispatcher (Megatron --moe-token-dispatcher-type): alltoall, allgather, or deepep "
               "(DeepEP's kernels, Megatron's flex dispatcher: a token crosses the network once per destination node "
               "and NVLink forwards it to the experts' GPUs; dispatched in fp8 when training.precision is fp8)",
               "alltoall", {"alltoall", "allgather", "deepep"}));
  s.key(choice("parallelism.cp_comm",
               "context-parallel attention (Megatron --cp-comm-type): p2p (ring, K/V blocks overlapped with "
               "attention) or a2a (Ulysses all-to-all)",
               "p2p", {"p2p", "a2a"}));
  s.key(integer("parallelism.vpp", "model chunks per pipeline stage (interleaved schedule)", "1", 1, kMaxLayers));
  s.key(integer("parallelism.layers_per_virtual_stage",
                "layers per model chunk (Megatron --num-layers-per-virtual-pipeline-stage; 0 = use vpp)", "0", 0,
                kMaxLayers));
  KeyDef stage_layers = key_def("parallelism.stage_layers", ValueType::kIntList,
                            "explicit layers per pipeline stage, one per stage (default: even split)");
  stage_layers.min = 1;
  stage_layers.max = kMaxLayers;
  s.key(stage_layers);
  s.key(key_def("parallelism.sequence_parallel", ValueType::kBool, "Megatron sequence parallelism (needs tp > 1)",
            "false"));
  s.key(integer("parallelism.zero", "ZeRO stage: 0 none, 1 optimizer state (= distributed optimizer), 2 + grads, 3 + "
                "params",
                "0", 0, 3));
  s.key(key_def("parallelism.distributed_optimizer", ValueType::kBool,
            "Megatron's distributed optimizer (shards optimizer state like ZeRO-1)", "false"));
  s.key(choice("parallelism.schedule", "pipeline schedule", "1f1b", {"gpipe", "1f1b", "interleaved-1f1b"}));
  s.key(key_def("parallelism.order", ValueType::kString, "rank order, innermost first", "tp-cp-ep-dp-pp"));
  s.key(key_def("parallelism.overlap_grad_reduce", ValueType::kBool, "overlap gradient reduction with backward", "true"));
  s.key(choice("parallelism.reduce_every_microbatch",
               "reduce gradients after every micro-batch's backward (FSDP/DDP outside no_sync: FSDP2, torchtitan, "
               "Composer; DeepSpeed ZeRO-2/3) or once per step (false: Megatron-LM; no_sync, as HF Trainer and "
               "accelerate accumulate); auto = true for zero 2 and 3",
               "auto", {"auto", "true", "false"}));
  s.key(key_def("parallelism.overlap_param_gather", ValueType::kBool,
            "overlap the distributed optimizer's parameter all-gather with the next forward", "false"));
  s.key(integer("parallelism.grad_bucket_elements", "gradient bucket size in parameters (Megatron DDP: 40M)",
                "40000000", 1));
  s.key(choice("parallelism.grad_reduce_op",
               "data-parallel gradient collective: auto (all_reduce without ZeRO, reduce_scatter with it), all_reduce "
               "(with zero 1: DeepSpeed's bf16 optimizer under pipeline parallelism all-reduces whole fp32 gradients, "
               "then each rank updates its shard), reduce_scatter (needs zero >= 1)",
               "auto", {"auto", "all_reduce", "reduce_scatter"}));
  s.key(key_def("parallelism.tp_comm_overlap", ValueType::kBool,
            "Megatron --tp-comm-overlap: sequence-parallel all-gathers and reduce-scatters overlapped with the QKV, "
            "projection and MLP GEMMs as Transformer Engine's userbuffers run them (needs tp > 1 and sequence_parallel)",
            "false"));
  s.key(integer("parallelism.zero3_bucket_elements",
                "ZeRO-3 parameter all-gathers of at most this many parameters, prefetched one bucket ahead (DeepSpeed "
                "stage3_prefetch_bucket_size, 5e7 by default there); 0 = one gather per layer, prefetched one layer "
                "ahead (FSDP)",
                "0", 0));

  s.key(integer("parallelism.dp_shard",
                "hybrid sharding: data-parallel ranks that shard the ZeRO state (FSDP HYBRID_SHARD, torchtitan "
                "data_parallel_shard_degree; Megatron dp / --num-distributed-optimizer-instances), replicated across "
                "dp / dp_shard groups; a divisor of dp; 0 (or dp) = shard over all dp ranks; a value below dp needs "
                "zero >= 1",
                "0", 0, kMaxClusterGpus));

  s.section("simulation", "how to simulate");
  s.key(choice("simulation.fidelity",
               "flow: collectives as flows sharing links; analytical: closed forms; auto: flow up to flow_max_gpus "
               "and flow_max_all_to_all_ranks",
               "auto", {"auto", "flow", "analytical"}));
  s.key(integer("simulation.flow_max_gpus", "largest cluster simulated with flow fidelity under auto", "256", 1,
                kMaxClusterGpus));
  s.key(integer("simulation.flow_max_all_to_all_ranks",
                "largest expert- or context-parallel group (max(ep, cp)) simulated with flow fidelity under auto: "
                "an all-to-all of n ranks is n(n-1) flows",
                "64", 1, kMaxClusterGpus));
  s.key(integer("simulation.max_events",
                "refuse a run estimated at more simulation events than this, before it starts (about 8 min of a "
                "flow-fidelity run on one core at 1 M events/s; parallelism/work_estimate.h); 0 = no bound",
                "500000000", 0, 1e15));
  s.key(key_def("simulation.representative", ValueType::kBool,
            "simulate one rank per pipeline stage (exact for symmetric layouts; false: every rank)", "true"));
  s.key(key_def("simulation.allow_idle_gpus", ValueType::kBool, "the layout may use fewer GPUs than the cluster has",
            "false"));
  s.key(choice("simulation.power_model",
               "run each GPU under its power limit (clock governor, cost_models/power_model.h) and report energy; "
               "false: full clock throughout, no energy figures; auto: true when the calibration profile carries "
               "power measurements of the GPU (a profile's power section), else false",
               "auto", {"auto", "true", "false"}));

  s.section_list("stragglers", "GPUs or nodes whose kernels run slower than their peers' (a throttled or degraded "
                               "GPU); the step simulates what the synchronous step loses to them");
  s.key(integer("stragglers[].gpu", "the slow GPU (0-based, GPUs of the cluster in order)", "", 0));
  s.key(integer("stragglers[].node", "a slow node: every GPU of it (0-based; instead of gpu)", "", 0));
  KeyDef speed = real("stragglers[].speed",
                      "fraction of the GPU's kernel rates it runs at (0.8: every kernel takes 1/0.8 as long)", "", 0.01, 1);
  speed.required = true;
  s.key(speed);
  s.section("jitter", "per-step variation of every GPU's kernel times: sampled steps, every rank simulated");
  s.key(real("jitter.cv", "coefficient of variation of a GPU's kernel times from step to step (log-normal, mean 1)",
             "", 0, 1));
  s.key(integer("jitter.steps", "steps sampled", "5", 1, 100));
  s.key(integer("jitter.seed", "seed of the first sampled step", "1", 0));
  add_campaign_keys(s);
  add_search_keys(s);
  return s;
}

Schema build_model_preset_schema() {
  Schema s("model preset");
  s.key(key_def("source", ValueType::kString, "where the numbers come from"));
  add_model_keys(s, "");
  return s;
}

std::string data_dir_or_default(const std::string& data_dir) {
  return data_dir.empty() ? default_data_dir() : data_dir;
}

// Copies the model keys present in `doc` under `prefix` onto `m`.
void apply_model_keys(const ConfigDocument& doc, const std::string& prefix, ModelSpec& m) {
  auto int_key = [&](const char* name, int64_t& field) {
    if (doc.has(prefix + name)) field = doc.get_int(prefix + name);
  };
  if (doc.has(prefix + "name")) m.name = doc.get_string(prefix + "name");
  int_key("layers", m.layers);
  int_key("hidden", m.hidden);
  int_key("ffn_hidden", m.ffn_hidden);
  int_key("heads", m.heads);
  int_key("kv_heads", m.kv_heads);
  int_key("head_dim", m.head_dim);
  int_key("vocab", m.vocab);
  if (doc.has(prefix + "mlp")) m.mlp = parse_mlp_kind(doc.get_string(prefix + "mlp"));
  if (doc.has(prefix + "norm")) m.norm = parse_norm_kind(doc.get_string(prefix + "norm"));
  if (doc.has(prefix + "position_embedding")) {
    m.position_embedding = parse_position_embedding(doc.get_string(prefix + "position_embedding"));
  }
  int_key("max_position_embeddings", m.max_position_embeddings);
  if (doc.has(prefix + "tied_embeddings")) m.tied_embeddings = doc.get_bool(prefix + "tied_embeddings");
  int_key("make_vocab_size_divisible_by", m.make_vocab_size_divisible_by);
  if (doc.has(prefix + "linear_bias")) m.linear_bias = doc.get_bool(prefix + "linear_bias");
  if (doc.has(prefix + "qkv_bias")) m.qkv_bias = doc.get_bool(prefix + "qkv_bias");
  int_key("sliding_window", m.sliding_window);
  int_key("full_attention_every", m.full_attention_every);
  if (doc.has(prefix + "attention_sinks")) m.attention_sinks = doc.get_bool(prefix + "attention_sinks");
  int_key("moe.num_experts", m.moe.num_experts);
  int_key("moe.top_k", m.moe.top_k);
  int_key("moe.moe_ffn_hidden", m.moe.moe_ffn_hidden);
  int_key("moe.shared_experts", m.moe.shared_experts);
  int_key("moe.first_dense_layers", m.moe.first_dense_layers);
  int_key("moe.router_num_groups", m.moe.router_num_groups);
  int_key("moe.router_group_topk", m.moe.router_group_topk);
  int_key("moe.shared_ffn_hidden", m.moe.shared_ffn_hidden);
  if (doc.has(prefix + "moe.load_balancing")) {
    m.moe.balancing = parse_moe_balancing(doc.get_string(prefix + "moe.load_balancing"));
  }
  int_key("mla.q_lora_rank", m.mla.q_lora_rank);
  int_key("mla.kv_lora_rank", m.mla.kv_lora_rank);
  int_key("mla.rope_head_dim", m.mla.rope_head_dim);
  int_key("mla.v_head_dim", m.mla.v_head_dim);
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

// Wraps InputErrors thrown while interpreting `path` with its location.
template <typename F>
auto located(const ConfigDocument& doc, const std::string& path, F&& f) {
  try {
    return f();
  } catch (const InputError& e) {
    throw doc.error_at(path, e.what());
  }
}

// The dotted keys ("model.heads") a message names, in order.
std::vector<std::string> keys_named_in(const std::string& message) {
  std::vector<std::string> keys;
  auto is_key_char = [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::islower(u) || std::isdigit(u) || c == '_' || c == '.';
  };
  for (size_t i = 0; i < message.size();) {
    if (!is_key_char(message[i]) || (i > 0 && is_key_char(message[i - 1]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < message.size() && is_key_char(message[j])) ++j;
    std::string word = message.substr(i, j - i);
    while (!word.empty() && word.back() == '.') word.pop_back();
    if (word.find('.') != std::string::npos && word.front() != '.') keys.push_back(word);
    i = j;
  }
  return keys;
}

// Like located(), for checks whose messages name the keys they are about ("parallelism.tp = 3
// ..."): the message is placed at the first named key the file gives (not repeating the key when
// the message starts with it), else at `path`.
template <typename F>
void located_by_message(const ConfigDocument& doc, const std::string& path, F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string message = e.what();
    for (const std::string& key : keys_named_in(message)) {
      if (!doc.has(key)) continue;
      const std::string at = doc.where(key);
      if (message.rfind(key, 0) == 0) {
        throw InputError(at.substr(0, at.size() - key.size() - 2) + message, doc.location_of(key));
      }
      throw doc.error_at(key, message);
    }
    std::string rest = message;
    for (const std::string& lead : {path + ".", path + ": ", path + " "}) {
      if (rest.rfind(lead, 0) == 0) rest = rest.substr(lead.size());
    }
    throw doc.error_at(path, rest);
  }
}

// The pod keys of a three-tier fabric (topology/three_tier_fabric.h): refused, at their line, with
// any other fabric type, and pod_nodes required and at most the cluster's nodes with this one.
void load_pods(const ConfigDocument& doc, ClusterSpec& c) {
  const std::string type = doc.get_string("cluster.fabric.type");
  const std::vector<std::string> pod_keys = {"cluster.fabric.pod_type", "cluster.fabric.pod_nodes",
                                             "cluster.fabric.core_oversubscription"};
  if (c.fabric.type != FabricType::kThreeTier) {
    for (const std::string& key : pod_keys) {
      if (doc.has(key)) {
        throw doc.error_at(key, fmt::format("is for pods of a three-tier fabric, but cluster.fabric.type is {}; set "
                                            "cluster.fabric.type: three-tier (leaf, spine, core) or remove the key",
                                            type));
      }
    }
    return;
  }
  const int nodes = static_cast<int>(c.nodes.size());
  if (!doc.has("cluster.fabric.pod_nodes")) {
    throw doc.error_at("cluster.fabric.type", fmt::format("three-tier needs cluster.fabric.pod_nodes, the nodes of one "
                                                          "pod (1..{}, the cluster's nodes)",
                                                          nodes));
  }
  const int64_t pod_nodes = doc.get_int("cluster.fabric.pod_nodes");
  if (pod_nodes > nodes) {
    throw doc.error_at("cluster.fabric.pod_nodes",
                       fmt::format("{} nodes per pod, but the cluster has {} nodes; valid: 1..{} (a cluster inside one "
                                   "pod is a two-tier fabric: type fat-tree or rail-optimized)",
                                   pod_nodes, nodes, nodes));
  }
  c.fabric.pod_nodes = static_cast<int>(pod_nodes);
  c.fabric.pod_type = doc.get_string("cluster.fabric.pod_type") == "rail-optimized" ? FabricType::kRailOptimized
                                                                                    : FabricType::kFatTree;
  c.fabric.core_oversubscription = doc.get_real("cluster.fabric.core_oversubscription");
}

ClusterSpec load_cluster(const ConfigDocument& doc, const HardwareCatalog& catalog) {
  ClusterSpec c;
  auto add_nodes = [&](const ConfigDocument& d, const std::string& node_key, int64_t count, int64_t gpus_per_node,
                       const std::string& gpus_key) {
    NodeSpec node = located(d, node_key, [&] { return catalog.node(d.get_string(node_key)); });
    if (gpus_per_node > node.gpus) {
      throw d.error_at(d.has(gpus_key) ? gpus_key : node_key,
                       fmt::format("gpus_per_node = {} but node \"{}\" has {} GPUs (valid: 1 to {}, 0 = all)",
                                   gpus_per_node, node.name, node.gpus, node.gpus));
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
      throw d.error_at(d.has(gpus_key) ? gpus_key : node_key,
                       fmt::format("{} GPUs ({} nodes of {} GPUs{}) exceed the {} GPUs clustersim simulates (building a "
                                   "larger topology takes minutes and tens of GB); use fewer nodes or GPUs per node",
                                   gpus + count * node.gpus, count, node.gpus, gpus > 0 ? " after the earlier groups" : "",
                                   kMaxSimulatedGpus));
    }
    for (int64_t i = 0; i < count; ++i) c.nodes.push_back(node);
  };
  const auto groups = doc.get_sections("cluster.node_groups");
  if (!groups.empty()) {
    if (doc.has("cluster.node") || doc.has("cluster.nodes")) {
      throw doc.error_at("cluster.node_groups", "give either cluster.node/nodes or cluster.node_groups, not both");
    }
    for (const auto& g : groups) {
      add_nodes(g, "node", g.get_int("count"), g.get_int("gpus_per_node"), "gpus_per_node");
      // The step simulation and the search price one GPU model (parallelism/training_simulation.h).
      if (c.nodes.back().gpu.name != c.nodes.front().gpu.name) {
        throw g.error_at("node", fmt::format("node \"{}\" has {} GPUs but the first group's nodes have {}; a cluster "
                                             "is simulated with one GPU model throughout (node groups may differ in "
                                             "NICs, GPUs used per node and count)",
                                             c.nodes.back().name, c.nodes.back().gpu.name, c.nodes.front().gpu.name));
      }
    }
  } else {
    if (!doc.has("cluster.node")) {
      throw doc.error_at("cluster", "missing key \"cluster.node\" (a node preset such as dgx-h100, or a path); "
                                    "presets: " + [&] {
                                      std::string s;
                                      for (const auto& n : catalog.names("nodes")) s += (s.empty() ? "" : ", ") + n;
                                      return s;
                                    }());
    }
    add_nodes(doc, "cluster.node", doc.get_int("cluster.nodes"), doc.get_int("cluster.gpus_per_node"),
              "cluster.gpus_per_node");
  }
  const std::string type = doc.get_string("cluster.fabric.type");
  c.fabric.type = type == "single-switch" ? FabricType::kSingleSwitch
                  : type == "fat-tree"    ? FabricType::kFatTree
                  : type == "three-tier"  ? FabricType::kThreeTier
                                          : FabricType::kRailOptimized;
  if (doc.has("cluster.fabric.nic")) {
    c.fabric.nic = located(doc, "cluster.fabric.nic", [&] { return catalog.nic(doc.get_string("cluster.fabric.nic")); });
  }
  c.fabric.switch_latency = doc.get_duration("cluster.fabric.switch_latency");
  c.fabric.leaf_ports = static_cast<int>(doc.get_int("cluster.fabric.leaf_ports"));
  c.fabric.oversubscription = doc.get_real("cluster.fabric.oversubscription");
  load_pods(doc, c);
  return c;
}

TrainingSpec load_training(const ConfigDocument& doc) {
  TrainingSpec t;
  t.seq_len = doc.get_int("training.seq_len");
  t.global_batch = doc.get_int("training.global_batch");
  t.micro_batch = doc.get_int("training.micro_batch");
  t.compute_dtype = parse_data_type(doc.get_string("training.precision"));
  t.framework = parse_framework(doc.get_string("training.framework"));
  t.cuda_graphs = parse_cuda_graphs(doc.get_string("training.cuda_graphs"));
  // pytorch-eager's defaults are train_step.py's: fp32 parameters under autocast, no master copy,
  // no dropout; a key the scenario sets wins.
  const bool eager = t.framework == Framework::kPytorchEager;
  const DataType default_params = eager                                ? DataType::kFp32
                                  : t.compute_dtype == DataType::kFp16 ? DataType::kFp16
                                                                       : DataType::kBf16;
  PrecisionPolicy p = PrecisionPolicy::megatron_mixed(default_params);
  if (doc.has("training.params_dtype")) p.param_dtype = parse_data_type(doc.get_string("training.params_dtype"));
  p.grad_dtype = parse_data_type(doc.get_string("training.grads_dtype"));
  p.master_weights = eager && !doc.has("training.master_weights") ? false : doc.get_bool("training.master_weights");
  p.fp32_grad_copy = doc.get_bool("training.fp32_grad_copy");
  p.optimizer_state_dtype = parse_data_type(doc.get_string("training.optimizer_state_dtype"));
  located(doc, "training", [&] {
    p.validate();
    return 0;
  });
  t.precision = p;
  t.optimizer = parse_optimizer(doc.get_string("training.optimizer"));
  t.recompute = parse_recompute(doc.get_string("training.recompute"));
  t.attention = parse_attention_kernel(doc.get_string("training.attention"));
  t.flash_kernel = parse_fused_attention_kernel(doc.get_string("training.flash_kernel"));
  t.fused_norm = doc.get_bool("training.fused_norm");
  t.fused_rope = doc.get_bool("training.fused_rope");
  t.fused_swiglu = doc.get_bool("training.fused_swiglu");
  t.fused_softmax = doc.get_bool("training.fused_softmax");
  t.hidden_dropout = eager && !doc.has("training.hidden_dropout") ? 0.0 : doc.get_real("training.hidden_dropout");
  t.attention_dropout =
      eager && !doc.has("training.attention_dropout") ? 0.0 : doc.get_real("training.attention_dropout");
  t.moe_routing.skew = doc.get_real("training.moe_routing.skew");
  for (int64_t n : doc.get_int_list("training.moe_routing.expert_load")) {
    t.moe_routing.expert_load.push_back(static_cast<double>(n));
  }
  t.moe_routing.capacity_factor = doc.get_real("training.moe_routing.capacity_factor");
  return t;
}

Layout load_layout(const ConfigDocument& doc, int gpus, LayoutCheck check) {
  Layout l;
  l.tp = static_cast<int>(doc.get_int("parallelism.tp"));
  l.pp = static_cast<int>(doc.get_int("parallelism.pp"));
  l.cp = static_cast<int>(doc.get_int("parallelism.cp"));
  l.ep = static_cast<int>(doc.get_int("parallelism.ep"));
  l.etp = static_cast<int>(doc.get_int("parallelism.etp"));
  l.moe_dispatcher = parse_moe_dispatcher(doc.get_string("parallelism.moe_dispatcher"));
  l.cp_comm = parse_context_parallel_comm(doc.get_string("parallelism.cp_comm"));
  l.vpp = static_cast<int>(doc.get_int("parallelism.vpp"));
  l.layers_per_virtual_stage = static_cast<int>(doc.get_int("parallelism.layers_per_virtual_stage"));
  for (int64_t n : doc.get_int_list("parallelism.stage_layers")) l.stage_layers.push_back(static_cast<int>(n));
  l.sequence_parallel = doc.get_bool("parallelism.sequence_parallel");
  l.zero_stage = static_cast<int>(doc.get_int("parallelism.zero"));
  if (doc.get_bool("parallelism.distributed_optimizer")) l.zero_stage = std::max(l.zero_stage, 1);
  l.schedule = parse_pipeline_schedule(doc.get_string("parallelism.schedule"));
  l.order = doc.get_string("parallelism.order");
  l.overlap_grad_reduce = doc.get_bool("parallelism.overlap_grad_reduce");
  if (const std::string every = doc.get_string("parallelism.reduce_every_microbatch"); every != "auto") {
    l.reduce_every_microbatch = every == "true";
  }
  l.overlap_param_gather = doc.get_bool("parallelism.overlap_param_gather");
  l.grad_bucket_elements = doc.get_int("parallelism.grad_bucket_elements");
  l.grad_reduce_op = parse_grad_reduce_op(doc.get_string("parallelism.grad_reduce_op"));
  l.tp_comm_overlap = doc.get_bool("parallelism.tp_comm_overlap");
  l.zero3_bucket_elements = doc.get_int("parallelism.zero3_bucket_elements");
  l.dp_shard = static_cast<int>(doc.get_int("parallelism.dp_shard"));
  const int64_t dp = doc.get_int("parallelism.dp");
  if (dp > 0) {
    l.dp = static_cast<int>(dp);
  } else {
    const int model_parallel = l.tp * l.cp * l.pp;
    if (check == LayoutCheck::kDeferToSearch) {
      l.dp = std::max(1, gpus / model_parallel);
      return l;
    }
    if (gpus % model_parallel != 0) {
      throw doc.error_at("parallelism", fmt::format("tp·cp·pp = {}·{}·{} = {} does not divide the cluster's {} GPUs; "
                                                    "set parallelism.dp or change tp, cp, pp",
                                                    l.tp, l.cp, l.pp, model_parallel, gpus));
    }
    l.dp = gpus / model_parallel;
  }
  return l;
}

// A search list present but empty, or listing a value twice (which would search, and rank, every
// layout with it twice), is an error naming the key.
template <typename T>
void check_search_list(const ConfigDocument& doc, const std::string& path, const std::vector<T>& values) {
  if (doc.has(path) && values.empty()) {
    throw doc.error_at(path, "an empty list leaves nothing to search; give at least one value or leave the key out "
                             "for its default");
  }
  std::set<T> seen;  // O(n log n): a list of a million values is checked in a second
  for (const T& value : values) {
    if (!seen.insert(value).second) {
      throw doc.error_at(path, fmt::format("{} is listed twice; list each value once", value));
    }
  }
}

SearchSpace load_search(const ConfigDocument& doc) {
  SearchSpace sp;
  auto ints = [&](const char* name) {
    const std::string path = std::string("search.") + name;
    const std::vector<int64_t> values = doc.get_int_list(path);
    check_search_list(doc, path, values);
    return values;
  };
  auto strings = [&](const char* name) {
    const std::string path = std::string("search.") + name;
    std::vector<std::string> values = doc.get_string_list(path);
    check_search_list(doc, path, values);
    return values;
  };
  auto to_int = [](const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); };
  sp.tp = to_int(ints("tp"));
  sp.pp = to_int(ints("pp"));
  sp.dp = to_int(ints("dp"));
  sp.cp = to_int(ints("cp"));
  sp.ep = to_int(ints("ep"));
  sp.etp = to_int(ints("etp"));
  sp.vpp = to_int(ints("vpp"));
  sp.micro_batch = ints("micro_batch");
  sp.zero = to_int(ints("zero"));
  sp.dp_shard = to_int(ints("dp_shard"));
  for (const auto& r : strings("recompute")) sp.recompute.push_back(parse_recompute(r));
  for (const auto& b : strings("sequence_parallel")) sp.sequence_parallel.push_back(b == "true");
  for (const auto& p : strings("schedule")) sp.schedule.push_back(parse_pipeline_schedule(p));
  sp.order = strings("order");
  sp.global_batch = doc.get_string("search.global_batch") == "maximum" ? GlobalBatchRule::kMaximum
                                                                       : GlobalBatchRule::kFixed;
  sp.allow_idle_gpus = doc.get_bool("search.allow_idle_gpus");
  sp.uneven_stages = doc.get_bool("search.uneven_stages");
  sp.objective = parse_search_objective(doc.get_string("search.objective"));
  sp.gpu_hour_price = doc.get_real("search.gpu_hour_price");
  sp.memory_headroom = doc.get_bytes("search.memory_headroom");
  sp.tp_within_node = doc.get_bool("search.tp_within_node");
  sp.top = static_cast<int>(doc.get_int("search.top"));
  try {
    sp.rerank = parse_search_rerank(doc.get_string("search.rerank"));
  } catch (const InputError& e) {
    throw doc.error_at("search.rerank", e.what());
  }
  sp.rerank_max = static_cast<int>(doc.get_int("search.rerank_max"));
  sp.max_candidates = doc.get_int("search.max_candidates");
  return sp;
}

// The stragglers: list, each GPU once (a node stands for its GPUs).
std::vector<Straggler> load_stragglers(const ConfigDocument& doc, const ClusterSpec& cluster) {
  std::vector<int> first_gpu;  // of each node
  int gpus = 0;
  for (const NodeSpec& n : cluster.nodes) {
    first_gpu.push_back(gpus);
    gpus += cluster.gpus_per_node > 0 ? cluster.gpus_per_node : n.gpus;
  }
  std::vector<Straggler> out;
  std::set<int> seen;
  for (const ConfigDocument& e : doc.get_sections("stragglers")) {
    const double speed = e.get_real("speed");
    if (e.has("gpu") == e.has("node")) throw e.error_at("", "give gpu or node (one of the two) for a straggler");
    std::vector<int> of;
    if (e.has("gpu")) {
      const int64_t g = e.get_int("gpu");
      if (g >= gpus) throw e.error_at("gpu", fmt::format("GPU {} is not in the cluster's {} GPUs (0 .. {})", g, gpus, gpus - 1));
      of.push_back(static_cast<int>(g));
    } else {
      const int64_t n = e.get_int("node");
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
      out.push_back(Straggler{g, speed});
    }
  }
  return out;
}

// The campaign: section with the run's length from training.tokens / steps (campaign/campaign.h).
CampaignSpec load_campaign(const ConfigDocument& doc) {
  CampaignSpec c;
  c.campaign_where = doc.where("campaign");
  if (doc.has("training.tokens")) c.tokens = doc.get_real("training.tokens");
  if (doc.has("training.steps")) c.steps = doc.get_int("training.steps");
  if (c.tokens && c.steps) {
    throw doc.error_at("training.steps", "give the run's length once: training.tokens or training.steps, not both");
  }
  if (!c.tokens && !c.steps) {
    throw doc.error_at("campaign", "a campaign needs the run's length: training.tokens (15.6e12, say) or "
                                   "training.steps");
  }
  if (!doc.has("cluster.storage.bandwidth")) {
    throw doc.error_at("campaign", "checkpoints need the storage they go to: cluster.storage.bandwidth, the file "
                                   "system's aggregate bandwidth (\"1 TB/s\", say)");
  }
  c.gpu_hour_price = doc.get_real("campaign.gpu_hour_price");
  c.relaunch_s = doc.get_duration("campaign.relaunch_time").to_seconds();
  c.seeds = static_cast<int>(doc.get_int("campaign.seeds"));
  if (doc.has("campaign.spare_nodes")) {
    if (!doc.has("campaign.repair_time")) {
      throw doc.error_at("campaign.spare_nodes", "spare nodes need campaign.repair_time, how long a failed node is "
                                                 "away (\"3 h\", \"48 h\")");
    }
    c.spare_nodes = static_cast<int>(doc.get_int("campaign.spare_nodes"));
    c.repair_s = doc.get_duration("campaign.repair_time").to_seconds();
  } else if (doc.has("campaign.repair_time")) {
    throw doc.error_at("campaign.repair_time", "a repair time is for campaign.spare_nodes: give both, or neither");
  }
  c.seed = static_cast<uint64_t>(doc.get_int("campaign.seed"));
  const std::string interval = doc.get_string("campaign.checkpoint.interval");
  if (interval != "auto") {
    c.interval_where = doc.where("campaign.checkpoint.interval");
    double seconds = 0;
    try {
      seconds = parse_duration(interval).to_seconds();
    } catch (const OverflowError&) {
      seconds = std::numeric_limits<double>::infinity();  // beyond int64 picoseconds: out of range below
    } catch (const InputError&) {
      throw doc.error_at("campaign.checkpoint.interval",
                         fmt::format("\"{}\" is not auto or a duration (\"30 min\", \"2 h\")", excerpt(interval)));
    }
    if (!(seconds > 0) || seconds > 86'400.0) {
      throw doc.error_at("campaign.checkpoint.interval",
                         fmt::format("\"{}\" is out of range: expected auto or a duration in (0 s, 1 day]",
                                     excerpt(interval)));
    }
    c.checkpoint_interval_s = seconds;
  }
  c.async_save = doc.get_bool("campaign.checkpoint.async");
  c.failures.gpu = doc.get_real("campaign.failures.gpu");
  c.failures.host = doc.get_real("campaign.failures.host");
  c.failures.nic = doc.get_real("campaign.failures.nic");
  c.failures.network = doc.get_real("campaign.failures.network");
  c.failures.software = doc.get_real("campaign.failures.software");
  return c;
}

}  // namespace

const Schema& scenario_schema() {
  static const Schema schema = build_scenario_schema();
  return schema;
}

const Schema& model_preset_schema() {
  static const Schema schema = build_model_preset_schema();
  return schema;
}

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
  apply_model_keys(doc, "", m);
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
  if (scenario.jitter) {
    throw InputError(scenario.jitter_where + "a search ranks steady steps (each sampled step with jitter simulates "
                                             "every rank); remove jitter: to search, and run the best layout with it");
  }
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
  Scenario s;
  s.source = path;
  s.name = doc.get_string("name");
  if (doc.has("calibration")) {
    s.calibration = doc.get_string("calibration");
    s.calibration_where = doc.where("calibration");
  }
  s.cluster = load_cluster(doc, catalog);

  if (!doc.has("model")) {
    throw doc.error_at("", "no model: section; give model.preset (a shipped model such as llama3-8b, see "
                           "`clustersim help-config model`) or the model's dimensions (model.layers, hidden, heads, ...)");
  }
  if (doc.has("model.preset")) {
    s.model = located(doc, "model.preset", [&] { return load_model_preset(doc.get_string("model.preset"), dir); });
  } else if (!doc.has("model.layers")) {
    throw doc.error_at("model", "no preset and no layers; give model.preset (e.g. llama3-8b) or the model's "
                                "dimensions (layers, hidden, heads, ffn_hidden, vocab)");
  }
  apply_model_keys(doc, "model.", s.model);
  if (s.model.name.empty()) s.model.name = "model";
  s.training = load_training(doc);
  s.framework_given = doc.has("training.framework");
  // PyTorch keeps the tokenizer's vocabulary as it is; Megatron's padding applies to framework
  // megatron only, unless the scenario sets it.
  if (s.training.framework == Framework::kPytorchEager && !doc.has("model.make_vocab_size_divisible_by")) {
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
  located_by_message(doc, "model", [&] { s.model.validate(); });
  located_by_message(doc, "training", [&] { s.training.validate(s.model); });

  int gpus = 0;
  for (const auto& n : s.cluster.nodes) gpus += n.gpus;
  s.layout = load_layout(doc, gpus, layout_check);
  LayoutContext context;
  context.layers = static_cast<int>(s.model.layers);
  context.heads = static_cast<int>(s.model.heads);
  context.kv_heads = static_cast<int>(s.model.kv_head_count());
  context.experts = static_cast<int>(s.model.moe.num_experts);
  context.moe_ffn_hidden = static_cast<int>(s.model.moe.moe_ffn_hidden);
  context.ffn_hidden = static_cast<int>(s.model.ffn_hidden);
  context.gpus = gpus;
  context.gpus_per_node = s.cluster.nodes.front().gpus;
  for (const auto& n : s.cluster.nodes) {
    if (n.gpus != context.gpus_per_node) context.gpus_per_node = 0;
  }
  context.global_batch = s.training.global_batch;
  context.micro_batch = s.training.micro_batch;
  context.seq_len = s.training.seq_len;
  context.allow_idle_gpus = doc.get_bool("simulation.allow_idle_gpus");
  if (layout_check == LayoutCheck::kValidate) {
    located_by_message(doc, "parallelism", [&] {
      validate_layout(s.layout, context);
      validate_sharding(s.model, s.training, shard_spec(s.layout));
      check_pytorch_eager_layout(s.training, s.layout);
      check_cuda_graphs(s.training, s.layout);
      if (s.layout.moe_dispatcher == MoeDispatcher::kDeepEp && s.layout.ep > 1 && s.model.moe.enabled()) {
        require_even_shares_for_deepep(
            expert_rank_shares(expert_token_shares(s.model, s.training.moe_routing), s.layout.ep));
      }
    });
  }
  if (doc.has("search")) {
    s.search = load_search(doc);
    // The space's own rules, placed at the key they name (search_layouts() checks them again).
    located_by_message(doc, "search",
                       [&] { validate_search_space(*s.search, s.cluster.nodes.front().gpu.hbm_capacity); });
    // Counted before anything is expanded: a space of 10^12 layouts is refused here, in microseconds.
    SearchContext search_context;
    search_context.gpus = gpus;
    search_context.gpus_per_node = context.gpus_per_node;
    search_context.layers = context.layers;
    search_context.heads = context.heads;
    located_by_message(doc, "search",
                       [&] { check_search_space_size(*s.search, s.layout, s.training, search_context); });
  }

  const std::string fidelity = doc.get_string("simulation.fidelity");
  s.simulation.fidelity = fidelity == "flow"         ? FidelityChoice::kFlow
                          : fidelity == "analytical" ? FidelityChoice::kAnalytical
                                                     : FidelityChoice::kAuto;
  s.simulation.flow_max_gpus = static_cast<int>(doc.get_int("simulation.flow_max_gpus"));
  s.simulation.flow_max_all_to_all_ranks = static_cast<int>(doc.get_int("simulation.flow_max_all_to_all_ranks"));
  s.simulation.max_events = static_cast<uint64_t>(doc.get_int("simulation.max_events"));
  s.simulation.representative = doc.get_bool("simulation.representative");
  s.simulation.allow_idle_gpus = doc.get_bool("simulation.allow_idle_gpus");
  if (const std::string power = doc.get_string("simulation.power_model"); power != "auto") {
    s.simulation.power_model = power == "true";
  }
  s.pue = doc.get_real("cluster.pue");
  if (doc.has("cluster.storage.bandwidth")) {
    s.storage_bandwidth = doc.get_bandwidth("cluster.storage.bandwidth").bytes_per_second();
  }
  if (doc.has("cluster.storage.node_bandwidth")) {
    s.storage_node_bandwidth = doc.get_bandwidth("cluster.storage.node_bandwidth").bytes_per_second();
  }
  s.stragglers = load_stragglers(doc, s.cluster);
  if (doc.has("jitter")) {
    if (!doc.has("jitter.cv")) throw doc.error_at("jitter", "give cv, the coefficient of variation (0.03, say)");
    s.jitter = StepJitter{doc.get_real("jitter.cv"), static_cast<int>(doc.get_int("jitter.steps")),
                          static_cast<uint64_t>(doc.get_int("jitter.seed"))};
    if (gpus > kMaxJitterGpus) {
      throw doc.error_at("jitter", fmt::format("jitter simulates every rank of each sampled step: at most {} GPUs, the "
                                               "cluster has {}",
                                               kMaxJitterGpus, gpus));
    }
  }
  if (s.search) s.search_objective_where = doc.where("search.objective");
  if (doc.has("jitter")) s.jitter_where = doc.where("jitter");
  if (doc.has("campaign")) {
    s.campaign = load_campaign(doc);
  } else {
    for (const char* key : {"training.tokens", "training.steps"}) {
      if (doc.has(key)) {
        throw doc.error_at(key, "the run's length is for a campaign: add a campaign: section (its relaunch_time at "
                                "least) and cluster.storage.bandwidth, or remove the key");
      }
    }
  }
  return s;
}

}  // namespace clustersim
