// Every key of the scenario schema is declared with the setter that writes it into the Scenario
// (scenarios/key_binding.h): each one, set through YAML to a valid value other than its default,
// changes the loaded Scenario.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "scenarios/config_document.h"
#include "scenarios/scenario.h"

namespace clustersim {
namespace scenario_keys_test {

// Every field of a loaded Scenario that a key can set, one per line, for comparing two loads.
std::string describe(const Scenario& s) {
  std::ostringstream o;
  o << fmt::format("name {} description {} seed {} calibration {} where {}\n", s.name, s.description, s.seed,
                   s.calibration.value_or("-"), s.calibration_where);
  const ClusterSpec& c = s.cluster;
  for (const NodeSpec& n : c.nodes)
    o << fmt::format("node {} {} gpus {} nics {}\n", n.name, n.gpu.name, n.gpus, n.nics);
  o << fmt::format("gpus_per_node {}\n", c.gpus_per_node);
  const FabricSpec& f = c.fabric;
  o << fmt::format("fabric {} latency {} leaf_ports {} oversubscription {} nic {} pod {} {} core {}\n",
                   static_cast<int>(f.type), f.switch_latency.to_seconds(), f.leaf_ports, f.oversubscription,
                   f.nic ? f.nic->name : "-", static_cast<int>(f.pod_type), f.pod_nodes, f.core_oversubscription);
  o << fmt::format("pue {} storage {} node {}\n", s.pue, s.storage_bandwidth.value_or(-1),
                   s.storage_node_bandwidth.value_or(-1));
  const ModelSpec& m = s.model;
  o << fmt::format(
      "model {} L {} h {} ffn {} a {} kv {} d {} vocab {} mlp {} norm {} pos {} maxpos {} tied {} "
      "divisible {} bias {} qkv_bias {} window {} full_every {} sinks {}\n",
      m.name, m.layers, m.hidden, m.ffn_hidden, m.heads, m.kv_heads, m.head_dim, m.vocab, static_cast<int>(m.mlp),
      static_cast<int>(m.norm), static_cast<int>(m.position_embedding), m.max_position_embeddings, m.tied_embeddings,
      m.make_vocab_size_divisible_by, m.linear_bias, m.qkv_bias, m.sliding_window, m.full_attention_every,
      m.attention_sinks);
  o << fmt::format("moe {} {} {} {} {} {} {} {} {}\n", m.moe.num_experts, m.moe.top_k, m.moe.moe_ffn_hidden,
                   m.moe.shared_experts, m.moe.shared_ffn_hidden, m.moe.first_dense_layers, m.moe.router_num_groups,
                   m.moe.router_group_topk, static_cast<int>(m.moe.balancing));
  o << fmt::format("mla {} {} {} {}\n", m.mla.q_lora_rank, m.mla.kv_lora_rank, m.mla.rope_head_dim, m.mla.v_head_dim);
  const TrainingSpec& t = s.training;
  const PrecisionPolicy& p = t.precision;
  o << fmt::format(
      "training s {} B {} b {} dtype {} framework {} given {} graphs {} optimizer {} recompute {} "
      "attention {} flash {} fused {} {} {} {} dropout {} {} experts {}\n",
      t.seq_len, t.global_batch, t.micro_batch, static_cast<int>(t.compute_dtype), static_cast<int>(t.framework),
      s.framework_given, static_cast<int>(t.cuda_graphs), static_cast<int>(t.optimizer), static_cast<int>(t.recompute),
      static_cast<int>(t.attention), static_cast<int>(t.flash_kernel), t.fused_norm, t.fused_rope, t.fused_swiglu,
      t.fused_softmax, t.hidden_dropout, t.attention_dropout, static_cast<int>(t.moe_experts));
  o << fmt::format("precision {} {} {} {} {}\n", static_cast<int>(p.param_dtype), static_cast<int>(p.grad_dtype),
                   p.master_weights, p.fp32_grad_copy, static_cast<int>(p.optimizer_state_dtype));
  o << fmt::format("routing {} [{}] {}\n", t.moe_routing.skew, fmt::join(t.moe_routing.expert_load, ","),
                   t.moe_routing.capacity_factor);
  const Layout& l = s.layout;
  o << fmt::format(
      "layout tp {} pp {} dp {} cp {} ep {} etp {} dispatcher {} cp_comm {} vpp {} per_chunk {} "
      "stages [{}] sp {} zero {} schedule {} order {} overlap {} every {} gather {} bucket {} op {} "
      "tp_overlap {} zero3_bucket {} dp_shard {}\n",
      l.tp, l.pp, l.dp, l.cp, l.ep, l.etp, static_cast<int>(l.moe_dispatcher), static_cast<int>(l.cp_comm), l.vpp,
      l.layers_per_virtual_stage, fmt::join(l.stage_layers, ","), l.sequence_parallel, l.zero_stage,
      static_cast<int>(l.schedule), l.order, l.overlap_grad_reduce,
      l.reduce_every_microbatch ? (*l.reduce_every_microbatch ? "true" : "false") : "auto", l.overlap_param_gather,
      l.grad_bucket_elements, static_cast<int>(l.grad_reduce_op), l.tp_comm_overlap, l.zero3_bucket_elements,
      l.dp_shard);
  const SimulationSettings& sim = s.simulation;
  o << fmt::format("simulation {} {} {} {} {} {} {} {}\n", static_cast<int>(sim.fidelity), sim.flow_max_gpus,
                   sim.flow_max_all_to_all_ranks, sim.auto_flow_seconds, sim.max_events, sim.representative, sim.allow_idle_gpus,
                   sim.power_model ? (*sim.power_model ? "true" : "false") : "auto");
  for (const Straggler& st : s.stragglers) o << fmt::format("straggler {} {}\n", st.gpu, st.speed);
  if (s.jitter) o << fmt::format("jitter {} {} {} {}\n", s.jitter->cv, s.jitter->steps, s.jitter->seed, s.jitter_where);
  if (s.campaign) {
    const CampaignSpec& k = *s.campaign;
    o << fmt::format(
        "campaign tokens {} steps {} price {} interval {} async {} relaunch {} spares {} repair {} "
        "seeds {} seed {} failures {} {} {} {} {}\n",
        k.tokens.value_or(-1), k.steps.value_or(-1), k.gpu_hour_price, k.checkpoint_interval_s.value_or(-1),
        k.async_save, k.relaunch_s, k.spare_nodes.value_or(-1), k.repair_s, k.seeds, k.seed, k.failures.gpu,
        k.failures.host, k.failures.nic, k.failures.network, k.failures.software);
  }
  if (s.search) {
    const SearchSpace& q = *s.search;
    std::vector<int> recompute;
    for (Recompute r : q.recompute) recompute.push_back(static_cast<int>(r));
    std::vector<int> schedule;
    for (PipelineSchedule p2 : q.schedule) schedule.push_back(static_cast<int>(p2));
    std::vector<int> sequence_parallel(q.sequence_parallel.begin(), q.sequence_parallel.end());
    o << fmt::format(
        "search tp [{}] pp [{}] dp [{}] cp [{}] ep [{}] etp [{}] vpp [{}] b [{}] recompute [{}] "
        "zero [{}] dp_shard [{}] sp [{}] schedule [{}] order [{}] batch {} idle {} uneven {} "
        "objective {} price {} headroom {} tp_node {} top {} rerank {} {} max {} where {}\n",
        fmt::join(q.tp, ","), fmt::join(q.pp, ","), fmt::join(q.dp, ","), fmt::join(q.cp, ","), fmt::join(q.ep, ","),
        fmt::join(q.etp, ","), fmt::join(q.vpp, ","), fmt::join(q.micro_batch, ","), fmt::join(recompute, ","),
        fmt::join(q.zero, ","), fmt::join(q.dp_shard, ","), fmt::join(sequence_parallel, ","), fmt::join(schedule, ","),
        fmt::join(q.order, ","), static_cast<int>(q.global_batch), q.allow_idle_gpus, q.uneven_stages,
        static_cast<int>(q.objective), q.gpu_hour_price, q.memory_headroom.count(), q.tp_within_node, q.top, q.rerank,
        q.rerank_max, q.max_candidates, s.search_objective_where);
  }
  return o.str();
}

// Two loads of the base scenario that differ in one key: `before` the --set values that make a
// value of the key valid (or set it first), `after` those with the key set to another value.
struct Change {
  std::vector<std::string> before;
  std::vector<std::string> after;
};

const std::vector<std::string> kCluster = {"cluster.node=dgx-h100", "cluster.nodes=2"};

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// `sets` on the base cluster, and the same with `change` added.
Change set(std::vector<std::string> sets, std::vector<std::string> change) {
  return {kCluster + sets, kCluster + sets + change};
}
Change set(std::string change) { return set({}, {std::move(change)}); }
// The same for a key of a section list, whose whole list each side gives.
Change list(std::string before, std::string after) {
  return {kCluster + std::vector{before}, kCluster + std::vector{after}};
}

const std::vector<std::string> kMoe = {"model.preset=mixtral-8x7b"};
const std::vector<std::string> kMla = {"model.preset=deepseek-v3"};
const std::vector<std::string> kCampaign = {"campaign.relaunch_time=10 min", "cluster.storage.bandwidth=1 TB/s",
                                            "training.tokens=1e12"};
const std::vector<std::string> kSearch = {"search.global_batch=fixed"};
const std::vector<std::string> kPods = {"cluster.fabric.type=three-tier", "cluster.fabric.pod_nodes=1"};

// A value other than the default for every key (cluster.node_groups[] keys with their own list).
const std::map<std::string, Change>& changes() {
  static const std::map<std::string, Change> c = {
      {"name", set("name=other")},
      {"description", set("description=a scenario")},
      {"calibration", set("calibration=h200-2026-11-29")},
      {"seed", set("seed=7")},
      {"cluster.node", set("cluster.node=dgx-a100")},
      {"cluster.nodes", set("cluster.nodes=4")},
      {"cluster.gpus_per_node", set("cluster.gpus_per_node=4")},
      {"cluster.node_groups", {{"cluster.node_groups=[{node: dgx-h100}]"}, {"cluster.node_groups=[{node: hgx-h200}]"}}},
      {"cluster.node_groups[].node",
       {{"cluster.node_groups=[{node: dgx-h100}]"}, {"cluster.node_groups=[{node: hgx-h200}]"}}},
      {"cluster.node_groups[].count",
       {{"cluster.node_groups=[{node: dgx-h100}]"}, {"cluster.node_groups=[{node: dgx-h100, count: 3}]"}}},
      {"cluster.node_groups[].gpus_per_node",
       {{"cluster.node_groups=[{node: dgx-h100}]"}, {"cluster.node_groups=[{node: dgx-h100, gpus_per_node: 4}]"}}},
      {"cluster.fabric.type", set("cluster.fabric.type=fat-tree")},
      {"cluster.fabric.nic", set("cluster.fabric.nic=cx8-800g")},
      {"cluster.fabric.switch_latency", set("cluster.fabric.switch_latency=500 ns")},
      {"cluster.fabric.leaf_ports", set("cluster.fabric.leaf_ports=64")},
      {"cluster.fabric.oversubscription", set("cluster.fabric.oversubscription=2")},
      {"cluster.fabric.pod_type", set(kPods, {"cluster.fabric.pod_type=rail-optimized"})},
      {"cluster.fabric.pod_nodes", set(kPods, {"cluster.fabric.pod_nodes=2"})},
      {"cluster.fabric.core_oversubscription", set(kPods, {"cluster.fabric.core_oversubscription=7"})},
      {"cluster.pue", set("cluster.pue=1.5")},
      {"cluster.storage.bandwidth", set("cluster.storage.bandwidth=1 TB/s")},
      {"cluster.storage.node_bandwidth", set("cluster.storage.node_bandwidth=50 GB/s")},
      {"model.preset", set("model.preset=llama3-70b")},
      {"model.name", set("model.name=other")},
      {"model.layers", set("model.layers=16")},
      {"model.hidden", set("model.hidden=2048")},
      {"model.ffn_hidden", set("model.ffn_hidden=8192")},
      {"model.heads", set("model.heads=16")},
      {"model.kv_heads", set("model.kv_heads=4")},
      {"model.head_dim", set("model.head_dim=64")},
      {"model.vocab", set("model.vocab=32000")},
      {"model.mlp", set("model.mlp=gelu")},
      {"model.norm", set("model.norm=layernorm")},
      {"model.position_embedding", set("model.position_embedding=learned")},
      {"model.max_position_embeddings", set("model.max_position_embeddings=16384")},
      {"model.tied_embeddings", set("model.tied_embeddings=true")},
      {"model.make_vocab_size_divisible_by", set("model.make_vocab_size_divisible_by=64")},
      {"model.linear_bias", set("model.linear_bias=true")},
      {"model.qkv_bias", set("model.qkv_bias=true")},
      {"model.sliding_window", set("model.sliding_window=1024")},
      {"model.full_attention_every", set({"model.sliding_window=1024"}, {"model.full_attention_every=2"})},
      {"model.attention_sinks", set("model.attention_sinks=true")},
      {"model.moe.num_experts", set(kMoe, {"model.moe.num_experts=16"})},
      {"model.moe.top_k", set(kMoe, {"model.moe.top_k=1"})},
      {"model.moe.moe_ffn_hidden", set(kMoe, {"model.moe.moe_ffn_hidden=7168"})},
      {"model.moe.shared_experts", set(kMoe, {"model.moe.shared_experts=1"})},
      {"model.moe.shared_ffn_hidden",
       set(kMoe + std::vector<std::string>{"model.moe.shared_experts=1"}, {"model.moe.shared_ffn_hidden=4096"})},
      {"model.moe.first_dense_layers", set(kMoe, {"model.moe.first_dense_layers=1"})},
      {"model.moe.router_num_groups",
       set(kMoe + std::vector<std::string>{"model.moe.router_num_groups=4", "model.moe.router_group_topk=2"},
           {"model.moe.router_num_groups=2"})},
      {"model.moe.router_group_topk",
       set(kMoe + std::vector<std::string>{"model.moe.router_num_groups=4", "model.moe.router_group_topk=2"},
           {"model.moe.router_group_topk=1"})},
      {"model.moe.load_balancing", set(kMoe, {"model.moe.load_balancing=none"})},
      {"model.mla.q_lora_rank", set(kMla, {"model.mla.q_lora_rank=1024"})},
      {"model.mla.kv_lora_rank", set(kMla, {"model.mla.kv_lora_rank=256"})},
      {"model.mla.rope_head_dim", set(kMla, {"model.mla.rope_head_dim=32"})},
      {"model.mla.v_head_dim", set(kMla, {"model.mla.v_head_dim=64"})},
      {"training.seq_len", set("training.seq_len=2048")},
      {"training.global_batch", set("training.global_batch=128")},
      {"training.micro_batch", set("training.micro_batch=2")},
      {"training.tokens", set(kCampaign, {"training.tokens=2e12"})},
      {"training.steps",
       set({"campaign.relaunch_time=10 min", "cluster.storage.bandwidth=1 TB/s", "training.steps=1000"},
           {"training.steps=2000"})},
      {"training.precision", set("training.precision=fp16")},
      {"training.params_dtype", set({"training.precision=fp16"}, {"training.params_dtype=bf16"})},
      {"training.grads_dtype", set("training.grads_dtype=bf16")},
      {"training.master_weights", set("training.master_weights=false")},
      {"training.fp32_grad_copy", set("training.fp32_grad_copy=true")},
      {"training.optimizer_state_dtype", set("training.optimizer_state_dtype=bf16")},
      {"training.optimizer", set("training.optimizer=sgd")},
      {"training.framework", set("training.framework=pytorch-eager")},
      {"training.cuda_graphs", set("training.cuda_graphs=layers")},
      {"training.recompute", set("training.recompute=selective")},
      {"training.attention", set("training.attention=naive")},
      {"training.flash_kernel", set("training.flash_kernel=sdpa-flash")},
      {"training.fused_norm", set("training.fused_norm=false")},
      {"training.fused_rope", set("training.fused_rope=false")},
      {"training.fused_swiglu", set("training.fused_swiglu=false")},
      {"training.fused_softmax", set({"training.attention=naive"}, {"training.fused_softmax=false"})},
      {"training.moe_experts", set(kMoe, {"training.moe_experts=sequential"})},
      {"training.hidden_dropout", set("training.hidden_dropout=0.2")},
      {"training.attention_dropout", set("training.attention_dropout=0.2")},
      {"training.moe_routing.skew", set(kMoe, {"training.moe_routing.skew=1.5"})},
      {"training.moe_routing.expert_load", set(kMoe, {"training.moe_routing.expert_load=[1, 1, 1, 1, 1, 1, 1, 2]"})},
      {"training.moe_routing.capacity_factor", set(kMoe, {"training.moe_routing.capacity_factor=1.25"})},
      {"parallelism.tp", set("parallelism.tp=2")},
      {"parallelism.pp", set("parallelism.pp=2")},
      {"parallelism.dp", set("parallelism.dp=4")},
      {"parallelism.cp", set("parallelism.cp=2")},
      {"parallelism.ep", set("parallelism.ep=2")},
      {"parallelism.etp", set("parallelism.etp=2")},
      {"parallelism.moe_dispatcher", set("parallelism.moe_dispatcher=allgather")},
      {"parallelism.cp_comm", set("parallelism.cp_comm=a2a")},
      {"parallelism.vpp", set("parallelism.vpp=2")},
      {"parallelism.layers_per_virtual_stage", set("parallelism.layers_per_virtual_stage=4")},
      {"parallelism.stage_layers", set("parallelism.stage_layers=[16, 16]")},
      {"parallelism.sequence_parallel", set("parallelism.sequence_parallel=true")},
      {"parallelism.zero", set("parallelism.zero=1")},
      {"parallelism.distributed_optimizer", set("parallelism.distributed_optimizer=true")},
      {"parallelism.schedule", set("parallelism.schedule=gpipe")},
      {"parallelism.order", set("parallelism.order=tp-cp-dp-ep-pp")},
      {"parallelism.overlap_grad_reduce", set("parallelism.overlap_grad_reduce=false")},
      {"parallelism.reduce_every_microbatch", set("parallelism.reduce_every_microbatch=true")},
      {"parallelism.overlap_param_gather", set("parallelism.overlap_param_gather=true")},
      {"parallelism.grad_bucket_elements", set("parallelism.grad_bucket_elements=1000000")},
      {"parallelism.grad_reduce_op", set("parallelism.grad_reduce_op=all_reduce")},
      {"parallelism.tp_comm_overlap", set("parallelism.tp_comm_overlap=true")},
      {"parallelism.zero3_bucket_elements", set("parallelism.zero3_bucket_elements=1000")},
      {"parallelism.dp_shard", set("parallelism.dp_shard=2")},
      {"simulation.fidelity", set("simulation.fidelity=flow")},
      {"simulation.flow_max_gpus", set("simulation.flow_max_gpus=128")},
      {"simulation.flow_max_all_to_all_ranks", set("simulation.flow_max_all_to_all_ranks=32")},
      {"simulation.auto_flow_seconds", set("simulation.auto_flow_seconds=30 s")},
      {"simulation.max_events", set("simulation.max_events=1000")},
      {"simulation.representative", set("simulation.representative=false")},
      {"simulation.allow_idle_gpus", set("simulation.allow_idle_gpus=true")},
      {"simulation.power_model", set("simulation.power_model=true")},
      {"stragglers", list("stragglers=[{gpu: 1, speed: 0.5}]", "stragglers=[{gpu: 2, speed: 0.5}]")},
      {"stragglers[].gpu", list("stragglers=[{gpu: 1, speed: 0.5}]", "stragglers=[{gpu: 2, speed: 0.5}]")},
      {"stragglers[].node", list("stragglers=[{node: 0, speed: 0.5}]", "stragglers=[{node: 1, speed: 0.5}]")},
      {"stragglers[].speed", list("stragglers=[{gpu: 1, speed: 0.5}]", "stragglers=[{gpu: 1, speed: 0.8}]")},
      {"jitter", set({}, {"jitter.cv=0.03"})},
      {"jitter.cv", set({"jitter.cv=0.03"}, {"jitter.cv=0.05"})},
      {"jitter.steps", set({"jitter.cv=0.03"}, {"jitter.steps=3"})},
      {"jitter.seed", set({"jitter.cv=0.03"}, {"jitter.seed=2"})},
      {"campaign", set({"cluster.storage.bandwidth=1 TB/s"}, kCampaign)},
      {"campaign.gpu_hour_price", set(kCampaign, {"campaign.gpu_hour_price=2"})},
      {"campaign.relaunch_time", set(kCampaign, {"campaign.relaunch_time=20 min"})},
      {"campaign.seeds", set(kCampaign, {"campaign.seeds=10"})},
      {"campaign.spare_nodes",
       set(kCampaign + std::vector<std::string>{"campaign.spare_nodes=1", "campaign.repair_time=3 h"},
           {"campaign.spare_nodes=2"})},
      {"campaign.repair_time",
       set(kCampaign + std::vector<std::string>{"campaign.spare_nodes=1", "campaign.repair_time=3 h"},
           {"campaign.repair_time=6 h"})},
      {"campaign.seed", set(kCampaign, {"campaign.seed=5"})},
      {"campaign.checkpoint.interval", set(kCampaign, {"campaign.checkpoint.interval=30 min"})},
      {"campaign.checkpoint.async", set(kCampaign, {"campaign.checkpoint.async=true"})},
      {"campaign.failures.gpu", set(kCampaign, {"campaign.failures.gpu=100"})},
      {"campaign.failures.host", set(kCampaign, {"campaign.failures.host=100"})},
      {"campaign.failures.nic", set(kCampaign, {"campaign.failures.nic=100"})},
      {"campaign.failures.network", set(kCampaign, {"campaign.failures.network=100"})},
      {"campaign.failures.software", set(kCampaign, {"campaign.failures.software=100"})},
      {"search", set({}, kSearch)},
      {"search.tp", set(kSearch, {"search.tp=[1, 2]"})},
      {"search.pp", set(kSearch, {"search.pp=[1, 2]"})},
      {"search.dp", set(kSearch, {"search.dp=[1, 2]"})},
      {"search.cp", set(kSearch, {"search.cp=[1, 2]"})},
      {"search.ep", set(kSearch, {"search.ep=[1]"})},
      {"search.etp", set(kSearch, {"search.etp=[1]"})},
      {"search.vpp", set(kSearch, {"search.vpp=[1, 2]"})},
      {"search.micro_batch", set(kSearch, {"search.micro_batch=[1, 2]"})},
      {"search.recompute", set(kSearch, {"search.recompute=[none, full]"})},
      {"search.zero", set(kSearch, {"search.zero=[0, 1]"})},
      {"search.dp_shard", set(kSearch, {"search.dp_shard=[0]"})},
      {"search.sequence_parallel", set(kSearch, {"search.sequence_parallel=[false]"})},
      {"search.schedule", set(kSearch, {"search.schedule=[1f1b]"})},
      {"search.order", set(kSearch, {"search.order=[tp-cp-ep-dp-pp]"})},
      {"search.global_batch", set({"search.top=10"}, {"search.global_batch=maximum"})},
      {"search.allow_idle_gpus", set(kSearch, {"search.allow_idle_gpus=true"})},
      {"search.uneven_stages", set(kSearch, {"search.uneven_stages=true"})},
      {"search.objective", set(kSearch, {"search.objective=mfu"})},
      {"search.gpu_hour_price", set(kSearch, {"search.gpu_hour_price=2"})},
      {"search.memory_headroom", set(kSearch, {"search.memory_headroom=4 GiB"})},
      {"search.tp_within_node", set(kSearch, {"search.tp_within_node=false"})},
      {"search.top", set(kSearch, {"search.top=5"})},
      {"search.rerank", set(kSearch, {"search.rerank=3"})},
      {"search.rerank_max", set(kSearch, {"search.rerank_max=50"})},
      {"search.max_candidates", set(kSearch, {"search.max_candidates=500000"})},
  };
  return c;
}

// A Llama-3-8B scenario without its cluster (each Change gives one): every key at its default.
const std::string kBase =
    "model: {preset: llama3-8b}\n"
    "training: {seq_len: 4096, global_batch: 64}\n";

Scenario load_with(const std::vector<std::string>& sets) {
  // One file per process: ctest runs this file's tests as parallel processes.
  const std::string path =
      (std::filesystem::temp_directory_path() / ("clustersim_scenario_keys_test_" + std::to_string(::getpid()) + ".yaml"))
          .string();
  std::ofstream(path) << kBase;
  std::vector<Override> overrides;
  for (const std::string& s : sets) overrides.push_back(parse_override(s));
  // The layout rules are not what this test is about: the layout is loaded as a search's base.
  return load_scenario(path, overrides, "", LayoutCheck::kDeferToSearch);
}

TEST(ScenarioKeys, EveryKeyOfTheSchemaHasASetter) {
  const std::vector<std::string> bound = scenario_bound_keys();
  for (const KeyDef& def : scenario_schema().keys()) {
    if (def.type == ValueType::kSection) continue;
    EXPECT_NE(std::find(bound.begin(), bound.end(), def.path), bound.end()) << def.path << " has no setter";
  }
  // Each setter is that of a declared key.
  for (const std::string& path : bound) EXPECT_NE(scenario_schema().find(path), nullptr) << path;
}

TEST(ScenarioKeys, SettingEachKeyThroughYamlChangesTheScenario) {
  for (const std::string& path : scenario_bound_keys()) {
    const KeyDef* def = scenario_schema().find(path);
    ASSERT_NE(def, nullptr) << path;
    if (def->type == ValueType::kSection && !changes().contains(path)) continue;  // a plain section: no value
    const auto it = changes().find(path);
    ASSERT_NE(it, changes().end()) << path << ": give this test a value of the key other than its default";
    try {
      const std::string before = describe(load_with(it->second.before));
      const std::string after = describe(load_with(it->second.after));
      EXPECT_NE(before, after) << path << " set to another value leaves the Scenario as it was:\n" << before;
    } catch (const InputError& e) {
      ADD_FAILURE() << path << ": " << e.what();
    }
  }
}

// seed is the default of jitter.seed and campaign.seed; a section's own seed wins over it.
TEST(ScenarioKeys, TopLevelSeedSeedsTheJitterAndTheCampaignWhereTheirSeedIsAbsent) {
  const std::vector<std::string> sections = kCampaign + std::vector<std::string>{"jitter.cv=0.03"};
  const Scenario defaults = load_with(kCluster + sections);
  ASSERT_TRUE(defaults.jitter && defaults.campaign);
  EXPECT_EQ(defaults.jitter->seed, defaults.seed);
  EXPECT_EQ(defaults.campaign->seed, defaults.seed);
  const Scenario seeded = load_with(kCluster + sections + std::vector<std::string>{"seed=42"});
  EXPECT_EQ(seeded.seed, 42u);
  EXPECT_EQ(seeded.jitter->seed, 42u);
  EXPECT_EQ(seeded.campaign->seed, 42u);
  const Scenario own = load_with(kCluster + sections +
                                 std::vector<std::string>{"seed=42", "jitter.seed=5", "campaign.seed=6"});
  EXPECT_EQ(own.jitter->seed, 5u);
  EXPECT_EQ(own.campaign->seed, 6u);
}

// The loader's refusals of two keys together carry both (InputError::keys(), most to blame first)
// and are placed at the first the file or a --set gives (the location's key).
TEST(ScenarioKeys, CrossKeyRefusalsCarryTheirKeysAndThePlaceOfTheFirstGiven) {
  const auto refusal = [](const std::vector<std::string>& sets) {
    try {
      load_with(sets);
    } catch (const InputError& e) {
      return e;
    }
    return InputError("loaded");
  };
  const InputError spares = refusal(kCluster + kCampaign + std::vector<std::string>{"campaign.spare_nodes=2"});
  EXPECT_EQ(spares.keys(), (std::vector<std::string>{"campaign.spare_nodes", "campaign.repair_time"})) << spares.what();
  ASSERT_TRUE(spares.location().has_value());
  EXPECT_EQ(spares.location()->key, "campaign.spare_nodes");
  const InputError both =
      refusal(kCluster + kCampaign + std::vector<std::string>{"training.steps=1000"});  // tokens and steps
  EXPECT_EQ(both.keys(), (std::vector<std::string>{"training.steps", "training.tokens"})) << both.what();
  EXPECT_EQ(both.location()->key, "training.steps");
  const InputError pods = refusal(kCluster + std::vector<std::string>{"cluster.fabric.core_oversubscription=2"});
  EXPECT_EQ(pods.keys(), (std::vector<std::string>{"cluster.fabric.core_oversubscription"})) << pods.what();
  EXPECT_EQ(pods.location()->key, "cluster.fabric.core_oversubscription");
  const InputError crowded = refusal(kCluster + std::vector<std::string>{"cluster.gpus_per_node=9"});
  EXPECT_EQ(crowded.keys(), (std::vector<std::string>{"cluster.gpus_per_node", "cluster.node"})) << crowded.what();
  EXPECT_EQ(crowded.location()->key, "cluster.gpus_per_node");
  const InputError groups = refusal(kCluster + std::vector<std::string>{"cluster.node_groups=[{node: dgx-h100}]"});
  EXPECT_EQ(groups.keys(), (std::vector<std::string>{"cluster.node_groups", "cluster.node", "cluster.nodes"}))
      << groups.what();
  EXPECT_EQ(groups.location()->key, "cluster.node_groups");
  EXPECT_NE(std::string(groups.what()).find("--set cluster.node_groups: give either cluster.node/nodes or "
                                            "cluster.node_groups, not both"),
            std::string::npos)
      << groups.what();
}

}  // namespace scenario_keys_test
}  // namespace clustersim
