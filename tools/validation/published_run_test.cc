#include "tools/validation/published_run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "tools/validation/conventions/conventions.h"
#include "tools/validation/published_flops.h"
#include "workloads/parameter_count.h"

namespace clustersim {
namespace published_run_test {

const std::string kCsv = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/published/training_runs.csv";

const std::vector<PublishedConfig>& configs() {
  static const std::vector<PublishedConfig> all = read_published_runs(kCsv);
  return all;
}

const PublishedConfig& config(const std::string& id) {
  for (const auto& c : configs()) {
    if (c.config_id == id) return c;
  }
  throw std::runtime_error("no config " + id);
}

PublishedScenario scenario(const std::string& id) { return build_published_scenario(config(id), HardwareCatalog()); }

bool mentions(const std::vector<std::string>& assumed, const std::string& what) {
  for (const auto& a : assumed) {
    if (a.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(PublishedRun, ReadsEveryRowGroupedByConfiguration) {
  size_t rows = 0;
  for (const auto& c : configs()) rows += c.metrics.size();
  // Every data line of the CSV (its line count less the header; no field holds a line break).
  std::ifstream file(kCsv);
  size_t lines = 0;
  for (std::string line; std::getline(file, line);) lines += line.empty() ? 0 : 1;
  EXPECT_EQ(rows, lines - 1);
  const PublishedConfig& sc21 = config("sc21_t1_0");
  EXPECT_EQ(sc21.metrics.size(), 3u);  // TFLOP/s, % of peak, aggregate PFLOP/s
  EXPECT_EQ(sc21.layers, 24);
  EXPECT_FALSE(sc21.micro_batch.has_value());
}

TEST(PublishedRun, PublicationAndConvention) {
  EXPECT_EQ(publication_of("Narayanan et al., SC21 'Efficient Large-Scale LM Training' (arXiv:2104.04473), Table 1"),
            "Narayanan et al., SC21");
  EXPECT_EQ(publication_of("Korthikanti et al., 'Reducing Activation Recomputation'"), "Korthikanti et al.");
  EXPECT_EQ(publication_of("no parenthesis"), "no parenthesis");
  EXPECT_EQ(convention_of(config("sc21_t2_0").source), SourceConvention::kSc21);
  EXPECT_EQ(convention_of(config("korth_0_full").source), SourceConvention::kKorthikanti);
  EXPECT_EQ(convention_of(config("mcore_h100_0").source), SourceConvention::kMegatronReadme);
  EXPECT_EQ(convention_of(config("mpt_0").source), SourceConvention::kLlmFoundry);
  EXPECT_EQ(convention_of(config("bloom176b").source), SourceConvention::kBigScience);
  EXPECT_EQ(convention_of("a lab's blog post"), SourceConvention::kGeneric);
}

// Every convention has its file under tools/validation/conventions/, which answers to its id and
// name, and recognises its own sources' texts in the CSV.
TEST(PublishedRun, EveryConventionHasItsConventions) {
  const std::map<SourceConvention, std::string> names = {
      {SourceConvention::kSc21, "Narayanan et al. 2021 (SC21)"},
      {SourceConvention::kKorthikanti, "Korthikanti et al. 2022"},
      {SourceConvention::kMegatronReadme, "Megatron-LM README"},
      {SourceConvention::kMegatronBridge, "Megatron-Bridge"},
      {SourceConvention::kLlmFoundry, "llm-foundry"},
      {SourceConvention::kHagemann, "Hagemann et al. 2023"},
      {SourceConvention::kBigScience, "BigScience BLOOM"},
      {SourceConvention::kGeneric, "generic"}};
  for (const auto& [id, name] : names) {
    EXPECT_EQ(conventions::conventions_for(id).id(), id);
    EXPECT_EQ(name_of(id), name);
  }
  std::map<SourceConvention, int> configs_of;
  for (const auto& c : configs()) {
    const SourceConvention id = convention_of(c.source);
    EXPECT_TRUE(conventions::conventions_for(id).describes(c.source)) << c.config_id;
    ++configs_of[id];
  }
  for (const auto& [id, name] : names) EXPECT_GT(configs_of[id], 0) << name;  // every file is used by the CSV
}

TEST(PublishedRun, NodePresetPerGpuType) {
  EXPECT_EQ(node_preset_for("A100-SXM 80GB (DGX A100, Selene)"), "dgx-a100");
  EXPECT_EQ(node_preset_for("A100 40GB (1600 Gbps RoCE node-node)"), "dgx-a100-40gb");
  EXPECT_EQ(node_preset_for("A100 80GB (Jean Zay; 8 GPUs/node NVLink; 4x Omni-Path links/node)"), "jean-zay-a100");
  EXPECT_EQ(node_preset_for("H100 80GB"), "dgx-h100");
  EXPECT_EQ(node_preset_for("H800 (8/node, NVLink+NVSwitch; IB across nodes)"), "hgx-h800");
  EXPECT_EQ(node_preset_for("B200"), "hgx-b200");
  EXPECT_EQ(node_preset_for("GB200"), "gb200-nvl72");
  EXPECT_EQ(node_preset_for("GB300"), "gb300-nvl72");
  EXPECT_FALSE(node_preset_for("MI300X").has_value());
  EXPECT_FALSE(node_preset_for("").has_value());
  // Every preset named here exists.
  const HardwareCatalog catalog;
  for (const char* node : {"dgx-a100", "dgx-a100-40gb", "jean-zay-a100", "dgx-h100", "hgx-h800", "hgx-b200",
                           "gb200-nvl72", "gb300-nvl72"}) {
    EXPECT_NO_THROW(catalog.node(node)) << node;
  }
}

TEST(PublishedRun, Sc21TableOneDefaultsAreTheSourcesAndSaySo) {
  // 145.6B: tp 8, pp 8 on 1536 GPUs → dp = 1536 / 64 = 24; batch 2304 → 96 microbatches per pipeline.
  const PublishedScenario s = scenario("sc21_t1_6");
  ASSERT_TRUE(s.expressible()) << s.missing;
  const Layout& l = s.scenario.layout;
  EXPECT_EQ(l.tp, 8);
  EXPECT_EQ(l.pp, 8);
  EXPECT_EQ(l.dp, 1536 / 64);
  // 80 layers / 8 stages = 10 per stage: the fewest chunks >= 2 dividing 10 is 2; 96 % 8 == 0.
  EXPECT_EQ(l.vpp, 2);
  EXPECT_EQ(l.schedule, PipelineSchedule::kInterleaved1F1B);
  EXPECT_FALSE(l.overlap_grad_reduce);  // 2021 Megatron-LM reduced gradients after the backward pass
  EXPECT_EQ(s.scenario.training.micro_batch, 1);
  EXPECT_EQ(s.scenario.training.recompute, Recompute::kFull);
  EXPECT_EQ(s.scenario.training.attention, AttentionKernel::kNaive);
  EXPECT_EQ(s.scenario.training.compute_dtype, DataType::kFp16);
  EXPECT_EQ(s.node, "dgx-a100");
  EXPECT_EQ(s.nodes, 1536 / 8);
  for (const char* field : {"micro_batch = 1", "vpp = 2", "attention = naive", "no gradient-reduction overlap"}) {
    EXPECT_TRUE(mentions(s.assumed, field)) << field;
  }
  // 530B: 105 layers / 35 stages = 3 per stage → 3 chunks.
  EXPECT_EQ(scenario("sc21_t1_8").scenario.layout.vpp, 3);
}

TEST(PublishedRun, Sc21TableTwoSplitsTheModelParallelSize) {
  const PublishedScenario ptdp = scenario("sc21_t2_6");  // GPT-3 175B, model-parallel size 96, 384 GPUs
  ASSERT_TRUE(ptdp.expressible()) << ptdp.missing;
  EXPECT_EQ(ptdp.scenario.layout.tp * ptdp.scenario.layout.pp, 96);
  EXPECT_EQ(ptdp.scenario.layout.dp, 384 / 96);
  const PublishedScenario zero3 = scenario("sc21_t2_0");  // ZeRO-3, micro batch 4
  ASSERT_TRUE(zero3.expressible()) << zero3.missing;
  EXPECT_EQ(zero3.scenario.layout.zero_stage, 3);
  EXPECT_EQ(zero3.scenario.layout.dp, 384);
  EXPECT_EQ(zero3.scenario.training.micro_batch, 4);
  // DeepSpeed's defaults: 5e7-parameter gathers prefetched one bucket ahead, 5e8-element gradient buckets.
  EXPECT_EQ(zero3.scenario.layout.zero3_bucket_elements, 50'000'000);
  EXPECT_EQ(zero3.scenario.layout.grad_bucket_elements, 500'000'000);
  EXPECT_EQ(ptdp.scenario.layout.zero3_bucket_elements, 0);
  // The fused-operator numbers of §5.8 give neither GPUs nor layout.
  EXPECT_FALSE(scenario("sc21_fusion_0").expressible());
}

TEST(PublishedRun, TensorParallelOverlapWhereTheSourcesStateIt) {
  // The README's runs pass --tp-comm-overlap (with sequence parallelism, which it needs); at tp 1
  // there is nothing to overlap. Megatron-Bridge's tensor-parallel Llama recipes enable userbuffers.
  const PublishedScenario tp8 = scenario("mcore_h100_3");  // GPT 32B, tp 8
  ASSERT_TRUE(tp8.expressible()) << tp8.missing;
  EXPECT_TRUE(tp8.scenario.layout.sequence_parallel);
  EXPECT_TRUE(tp8.scenario.layout.tp_comm_overlap);
  EXPECT_TRUE(mentions(tp8.assumed, "tp_comm_overlap = true"));
  EXPECT_FALSE(scenario("mcore_h100_0").scenario.layout.tp_comm_overlap);  // tp 1
  EXPECT_TRUE(scenario("mbridge2511_DGX-H100_1_0").scenario.layout.tp_comm_overlap);  // Llama 3 70B, tp 4
  // 2021-22 Megatron-LM did not overlap tensor-parallel communication.
  EXPECT_FALSE(scenario("korth_1_sp_sel").scenario.layout.tp_comm_overlap);
}

TEST(PublishedRun, LlmFoundryRunsFlashAttentionTwoClassKernelsOnHopper) {
  // MPT's Triton FlashAttention has no Hopper path: the H100 rows price it as FlashAttention-2; on
  // A100 the default fused-attention efficiencies stand for it.
  for (const auto& c : configs()) {
    if (convention_of(c.source) != SourceConvention::kLlmFoundry) continue;
    const PublishedScenario s = build_published_scenario(c, HardwareCatalog());
    ASSERT_TRUE(s.expressible()) << c.config_id << ": " << s.missing;
    const bool hopper = c.gpu_type.find("H100") != std::string::npos;
    EXPECT_EQ(s.scenario.training.flash_kernel,
              hopper ? FusedAttentionKernel::kSdpaFlash : FusedAttentionKernel::kCudnn)
        << c.config_id;
  }
}

TEST(PublishedRun, KorthikantiAsPublished) {
  const PublishedScenario s = scenario("korth_1_sp_sel");
  ASSERT_TRUE(s.expressible()) << s.missing;
  EXPECT_EQ(s.scenario.layout.vpp, 3);
  EXPECT_TRUE(s.scenario.layout.sequence_parallel);
  EXPECT_EQ(s.scenario.training.recompute, Recompute::kSelective);
  // 530B with 8-way data parallelism: global batch assumed 8 × Table 5's 280.
  const PublishedScenario dp8 = scenario("korth_530b_dp8");
  ASSERT_TRUE(dp8.expressible()) << dp8.missing;
  EXPECT_EQ(dp8.scenario.training.global_batch, 8 * 280);
  EXPECT_EQ(dp8.scenario.layout.vpp, 3);
  // Table 4 times one layer of the 22B model on one node's 8 GPUs.
  const PublishedScenario layer = scenario("korth_t4_0");
  ASSERT_TRUE(layer.expressible()) << layer.missing;
  EXPECT_EQ(layer.scenario.layout.world_size(), 8);
  EXPECT_EQ(layer.scenario.training.micro_batch, 4);
}

TEST(PublishedRun, FeaturesNotModelledAreNamedAndMoeAndContextParallelRowsAreExpressible) {
  int moe_or_cp = 0;
  for (const auto& c : configs()) {
    const PublishedScenario s = build_published_scenario(c, HardwareCatalog());
    const bool rack = c.gpu_type.find("GB200") != std::string::npos || c.gpu_type.find("GB300") != std::string::npos;
    if (rack) {
      // NVL72 racks: one NVLink domain of all the job's GPUs up to 72, else 64 GPUs per rack.
      EXPECT_TRUE(s.expressible()) << c.config_id << ": " << s.missing;
      const int per_rack = s.scenario.cluster.gpus_per_node > 0 ? s.scenario.cluster.gpus_per_node : 72;
      EXPECT_EQ(per_rack, std::min<int64_t>(*c.gpus, 64)) << c.config_id;
      EXPECT_EQ(s.nodes * per_rack, *c.gpus) << c.config_id;
    }
    if (c.model.find("GPT OSS") != std::string::npos) {
      // Sliding windows on every other layer; the source's FLOPs price the experts as ungated.
      EXPECT_TRUE(s.expressible()) << c.config_id << ": " << s.missing;
      EXPECT_EQ(s.scenario.model.sliding_window, 128) << c.config_id;
      EXPECT_TRUE(s.flop_ungated_mlp) << c.config_id;
    }
    if ((c.ep && *c.ep > 1) || (c.cp && *c.cp > 1)) {
      // Mixture-of-experts and context-parallel configurations on GPUs with presets are simulated.
      EXPECT_TRUE(s.expressible()) << c.config_id << ": " << s.missing;
      EXPECT_EQ(s.scenario.layout.ep, c.ep.value_or(1)) << c.config_id;
      EXPECT_EQ(s.scenario.layout.cp, c.cp.value_or(1)) << c.config_id;
      ++moe_or_cp;
    }
    if (!s.expressible()) {
      EXPECT_FALSE(s.missing.empty());
    }
  }
  EXPECT_GE(moe_or_cp, 8);  // DeepSeek-V3 (paper and B200), Qwen3 MoE, Llama 3.1 405B with cp 2
}

TEST(PublishedRun, HagemannInferredBatchAndVocabularyAgreeWithEveryRow) {
  // The data files give MFU and step time but neither global batch nor vocabulary. With 4,194,304
  // tokens per step and a 128,000-token untied vocabulary, PaLM's FLOPs per step (6N + 12·L·h·s per
  // token) equal MFU × time × GPUs × 312 TFLOP/s in every file to within 1 % (32-GPU file: 2 %).
  int checked = 0;
  std::map<std::string, int> kernels;
  for (const auto& c : configs()) {
    if (convention_of(c.source) != SourceConvention::kHagemann) continue;
    const PublishedScenario s = build_published_scenario(c, HardwareCatalog());
    ASSERT_TRUE(s.expressible()) << c.config_id << ": " << s.missing;
    double mfu = 0, time = 0;
    for (const auto& m : c.metrics) {
      if (m.name == "mfu") mfu = m.value / 100;
      if (m.name == "iteration_time") time = m.value;
    }
    const ModelSpec& model = s.scenario.model;
    const TrainingSpec& t = s.scenario.training;
    EXPECT_EQ(t.global_batch * t.seq_len, 4'194'304);
    EXPECT_EQ(model.vocab, 128'000);
    const double N = static_cast<double>(count_parameters(model).total());
    const double palm = palm_step_flops(static_cast<double>(t.global_batch), static_cast<double>(t.seq_len),
                                        static_cast<double>(model.layers), static_cast<double>(model.hidden), N);
    const double published = mfu * time * static_cast<double>(*c.gpus) * 312e12;
    const bool small_file = c.source.find("32_GPUs") != std::string::npos;
    EXPECT_NEAR(published / palm, 1.0, small_file ? 0.02 : 0.01) << c.config_id;
    EXPECT_TRUE(mentions(s.assumed, "A100")) << c.config_id;
    // The kernel column: a fused RMSNorm only with "+ RMS kernel"; the framework's RoPE and SwiGLU
    // are PyTorch operations; "torch" is the PyTorch masked softmax, "flash_attentionv1.0.8" v1.
    const std::string kernel = c.notes.substr(c.notes.find("kernel=") + 7, c.notes.find(';', c.notes.find("kernel=")) -
                                                                               c.notes.find("kernel=") - 7);
    EXPECT_EQ(t.fused_norm, kernel.find("RMS kernel") != std::string::npos) << c.config_id;
    EXPECT_FALSE(t.fused_rope);
    EXPECT_FALSE(t.fused_swiglu);
    EXPECT_EQ(t.fused_softmax, kernel != "torch") << c.config_id;
    EXPECT_EQ(t.attention == AttentionKernel::kNaive, kernel == "torch" || kernel == "fused") << c.config_id;
    EXPECT_EQ(t.flash_kernel == FusedAttentionKernel::kFlashV1, kernel.starts_with("flash_attentionv1")) << c.config_id;
    ++kernels[kernel];
    ++checked;
  }
  EXPECT_EQ(checked, 283);
  // Every kernel the files name (counts of configurations).
  EXPECT_EQ(kernels, (std::map<std::string, int>{{"flash_attention2", 80},
                                                 {"flash_attention2 + RMS kernel", 96},
                                                 {"flash_attentionv1.0.8", 69},
                                                 {"fused", 19},
                                                 {"torch", 19}}));
}

TEST(PublishedRun, BadInputNamesFileLineAndColumn) {
  const auto dir = std::filesystem::temp_directory_path() / "clustersim_published_run_test";
  std::filesystem::create_directories(dir);
  const std::string header =
      "source,model,params_b,layers,hidden,ffn_hidden,heads,kv_heads,vocab,seq_len,global_batch,micro_batch,gpus,"
      "gpu_type,tp,pp,dp,cp,ep,vpp,sequence_parallel,recompute,precision,zero_stage,metric_name,metric_value,"
      "metric_unit,notes,config_id\n";
  auto write = [&](const std::string& name, const std::string& text) {
    const auto path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  };
  const std::string bad_number = write("bad_number.csv", header +
                                                             "src,GPT,,twelve,768,,12,,50257,1024,8,1,8,H100,1,1,8,,,,,"
                                                             "none,bf16,,iteration_time,1.0,s,,cfg\n");
  try {
    read_published_runs(bad_number);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad_number.csv:2: column layers = \"twelve\": not a number"),
              std::string::npos)
        << e.what();
  }
  const std::string no_column = write("no_column.csv", "source,model\nsrc,GPT\n");
  EXPECT_THROW(read_published_runs(no_column), InputError);
  // A header and no rows: nothing to validate.
  const std::string no_rows = write("no_rows.csv", header);
  try {
    read_published_runs(no_rows);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no_rows.csv: no data rows"), std::string::npos) << e.what();
  }
  // A configuration whose given tp·pp·dp contradicts its GPU count.
  const std::string contradiction = write("contradiction.csv", header +
                                                                   "src,GPT,,12,768,,12,,50257,1024,8,1,8,H100,2,1,8,,,,,"
                                                                   "none,bf16,,iteration_time,1.0,s,,cfg\n");
  EXPECT_THROW(build_published_scenario(read_published_runs(contradiction).front(), HardwareCatalog()), InputError);
  // Counts beyond the range of the scenario key they become (layers 4294967320 ran as 24 layers once
  // cut to int; tp 4294967297 as tp 1).
  const std::string huge_layers = write("huge_layers.csv", header +
                                                               "src,GPT,,4294967320,768,,12,,50257,1024,8,1,8,H100,1,1,"
                                                               "8,,,,,none,bf16,,iteration_time,1.0,s,,cfg\n");
  try {
    read_published_runs(huge_layers);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("huge_layers.csv:2: column layers = \"4294967320\": out of range; valid: "
                                         "1..10000 (as model.layers of a scenario)"),
              std::string::npos)
        << e.what();
  }
  const std::string huge_tp = write("huge_tp.csv", header +
                                                       "src,GPT,,12,768,,12,,50257,1024,8,1,8,H100,4294967297,1,8,,,,,"
                                                       "none,bf16,,iteration_time,1.0,s,,cfg\n");
  try {
    read_published_runs(huge_tp);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("huge_tp.csv:2: column tp = \"4294967297\": out of range; valid: 1.." +
                                         std::to_string(kMaxClusterGpus) + " (as parallelism.tp of a scenario)"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace published_run_test
}  // namespace clustersim
