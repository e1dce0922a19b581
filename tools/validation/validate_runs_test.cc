#include "tools/validation/validate_runs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "scenarios/hardware_presets.h"
#include "tools/validation/published_flops.h"

namespace clustersim {
namespace validate_runs_test {

const std::string kCsv = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/published/training_runs.csv";

const RunValidation& committed() {
  static const RunValidation v = validate_runs(kCsv, default_data_dir());
  return v;
}

std::map<std::string, double> predicted_metrics(const std::string& config_id) {
  std::map<std::string, double> out;
  for (const auto& r : committed().rows) {
    if (r.config_id == config_id && r.expressible) out[r.metric_name] = r.predicted;
  }
  return out;
}

bool is_core_row(const RunValidationRow& r) {
  return r.convention == SourceConvention::kSc21 || r.convention == SourceConvention::kKorthikanti ||
         r.convention == SourceConvention::kMegatronReadme || r.convention == SourceConvention::kMegatronBridge;
}

const SourceSummary& source(const std::string& publication) {
  for (const auto& s : committed().by_source) {
    if (s.publication == publication) return s;
  }
  throw std::runtime_error("no source " + publication);
}

// MAPE over the expressible rows that `keep` accepts.
template <typename Keep>
double mape_of(Keep keep) {
  double sum = 0;
  int n = 0;
  for (const auto& r : committed().rows) {
    if (!r.expressible || !keep(r)) continue;
    sum += std::abs(r.error);
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

bool dense_without_cp(const RunValidationRow& r) { return r.ep == 1 && r.cp == 1; }

// The targets of docs/validation/published.md (its summary lines) where they are met, and regression bounds where they are not yet
// (docs/validation/error_budget.md explains the gap); tighten them as the model improves. The
// bounds of the dense rows without context parallelism are kept apart from those of the
// mixture-of-experts and context-parallel rows (published.md, "Mixture-of-experts and context-parallel rows"), whose errors are larger.
TEST(ValidateRuns, AccuracyDoesNotRegress) {
  const RunValidation& v = committed();
  EXPECT_GE(v.expressible_fraction, 0.80);  // published.md's target: at least 80 % of all rows expressible
  EXPECT_GE(v.expressible_fraction, 0.95);  // today
  EXPECT_LE(source("Narayanan et al., SC21").mape, 0.20);
  EXPECT_LE(source("Korthikanti et al.").mape, 0.05);
  EXPECT_LE(source("NVIDIA/Megatron-LM README").mape, 0.12);
  const std::string bridge = "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md";
  EXPECT_LE(mape_of([&](const RunValidationRow& r) { return r.publication == bridge && dense_without_cp(r); }), 0.20);
  EXPECT_LE(mape_of([](const RunValidationRow& r) { return is_core_row(r) && dense_without_cp(r); }), 0.18);
  EXPECT_LE(mape_of(dense_without_cp), 0.22);
  // llm-foundry (MPT under Composer + FSDP, priced by the PyTorch eager op model): the 15 % target of published.md.
  EXPECT_LE(source("mosaicml/llm-foundry scripts/train/benchmarking/README.md").mape, 0.15);
  // BLOOM-176B (Megatron-DeepSpeed, whose pipeline engine all-reduces the bf16 optimizer's fp32
  // gradients): the 15 % target of published.md.
  EXPECT_LE(source("BigScience tr11-176B-ml README").mape, 0.15);
  // DeepSeek-V3's own run (DeepEP's node-limited dispatch): the 15 % target of published.md.
  EXPECT_LE(source("DeepSeek-AI").mape, 0.15);
  // Hagemann et al. (Aleph Alpha's scaling framework: RoPE, SwiGLU and, unless the file names its
  // RMS kernel, RMSNorm as PyTorch operations): the 15 % target of published.md.
  EXPECT_LE(source("Hagemann et al.").mape, 0.15);
  // All expressible rows: a regression bound (14.4 % when it was set; 14.9 % with the NVL72 and GPT-OSS rows).
  EXPECT_LE(v.mape, 0.15);
}

// The mixture-of-experts and context-parallel rows. Context parallelism (Llama 3.1 405B with cp 2 on H100 and B200, Megatron-Bridge):
// 8 % before tensor-parallel communication overlap was modelled, 18 % since (+13 % on H100, +17 … +24 %
// on B200: the overlap removed the exposed collectives that had offset optimistic compute, see
// docs/validation/error_budget.md section 2); the bound is a regression bound above today's value. Mixture-of-experts rows are predicted 1.5-4× too fast for Megatron-Bridge's
// fine-grained MoE runs (Qwen3-30B-A3B, Qwen3-235B-A22B, DeepSeek-V3 on B200); DeepSeek-V3's own run,
// 1.5× too slow until DeepEP's node-limited dispatch was modelled, is now within 10 %: regression
// bounds only.
TEST(ValidateRuns, MoeAndContextParallelRowsArePredicted) {
  int cp_rows = 0, moe_rows = 0;
  for (const auto& r : committed().rows) {
    if (!r.expressible) continue;
    cp_rows += r.cp > 1;
    moe_rows += r.ep > 1;
  }
  EXPECT_GE(cp_rows, 6);
  EXPECT_GE(moe_rows, 10);
  EXPECT_LE(mape_of([](const RunValidationRow& r) { return r.cp > 1 && r.ep == 1; }), 0.20);
  EXPECT_LE(mape_of([](const RunValidationRow& r) { return r.ep > 1; }), 1.3);
}

TEST(ValidateRuns, EveryRowIsPredictedOrNamesWhatIsMissing) {
  const RunValidation& v = committed();
  EXPECT_EQ(v.rows.size(), 1335u);  // every data row of the CSV
  int expressible = 0;
  double sum = 0;
  for (const auto& r : v.rows) {
    if (r.expressible) {
      ++expressible;
      sum += std::abs(r.error);
      EXPECT_GT(r.predicted, 0) << r.config_id << " " << r.metric_name;
      EXPECT_DOUBLE_EQ(r.error, r.predicted / r.published - 1.0);
      EXPECT_FALSE(r.setup.empty()) << r.config_id;
    } else {
      EXPECT_FALSE(r.missing.empty()) << r.config_id << " " << r.metric_name;
    }
  }
  EXPECT_EQ(expressible, v.expressible_rows);
  EXPECT_DOUBLE_EQ(v.mape, sum / expressible);
  EXPECT_DOUBLE_EQ(v.expressible_fraction, static_cast<double>(expressible) / static_cast<double>(v.rows.size()));
}

TEST(ValidateRuns, Sc21MetricsFollowEquationThree) {
  // 145.6B on 1536 GPUs, batch 2304: achieved TFLOP/s = eq. 3 / (step time × GPUs); % of peak over
  // 312 TFLOP/s; aggregate PFLOP/s = per GPU × GPUs.
  const auto m = predicted_metrics("sc21_t1_6");
  double step = 0;
  for (const auto& r : committed().rows) {
    if (r.config_id == "sc21_t1_6") step = r.step_time_s;
  }
  ASSERT_GT(step, 0);
  const double eq3 = sc21_step_flops(2304, 2048, 80, 12288, 51200);
  EXPECT_NEAR(m.at("achieved_tflops_per_gpu"), eq3 / (step * 1536) * 1e-12, 1e-9);
  EXPECT_NEAR(m.at("pct_of_theoretical_peak"), 100 * m.at("achieved_tflops_per_gpu") / 312, 1e-9);
  EXPECT_NEAR(m.at("aggregate_pflops"), m.at("achieved_tflops_per_gpu") * 1536 / 1000, 1e-9);
}

// GPT-OSS 120B: the FLOPs per token behind the predicted TFLOP/s (Megatron-Bridge's formula with
// glu = 1, attention over the whole sequence on every layer) are those of the published pair,
// 223 TFLOP/s per 8,213 tokens/s at s = 4,096 and 488 per 15,876 at s = 8,192.
TEST(ValidateRuns, GptOssFlopsPerTokenAreThePublishedOnes) {
  for (const auto& [config, published] : {std::pair{"mbridge2511_DGX-B200_3_0", 223e12 / 8213},
                                          std::pair{"mbridge2511_DGX-GB200_5_0", 488e12 / 15876}}) {
    const auto m = predicted_metrics(config);
    ASSERT_EQ(m.count("model_tflops_per_gpu"), 1u) << config;
    const double per_token = m.at("model_tflops_per_gpu") * 1e12 / m.at("tokens_per_s_per_gpu");
    EXPECT_NEAR(per_token, published, 0.005 * published) << config;
  }
}

TEST(ValidateRuns, KorthikantiMetricsFollowTheirModelAndHardwareFlops) {
  // 175B, tp 8 · pp 8, 64 GPUs, batch 64, sequence parallel + selective recompute.
  const auto m = predicted_metrics("korth_1_sp_sel");
  const double time = m.at("iteration_time");
  const double model = 72.0 * 64 * 2048 * 96 * 12288.0 * 12288 * (1 + 2048 / (6 * 12288.0) + 51200 / (12 * 12288.0 * 96));
  const double hardware = 72.0 * 64 * 2048 * 96 * 12288.0 * 12288 * (1 + 2048 / (3 * 12288.0) + 51200 / (12 * 12288.0 * 96));
  EXPECT_NEAR(m.at("mfu"), 100 * model / (time * 64 * 312e12), 1e-9);
  EXPECT_NEAR(m.at("hfu"), 100 * hardware / (time * 64 * 312e12), 1e-9);
  // Table 4: forward + backward is the sum of the two.
  const auto layer = predicted_metrics("korth_t4_2");
  EXPECT_NEAR(layer.at("layer_fwd_plus_bwd_time"), layer.at("layer_forward_time") + layer.at("layer_backward_time"),
              1e-9);
  // Full recompute repeats the forward inside the backward pass.
  EXPECT_GT(layer.at("layer_backward_time"), predicted_metrics("korth_t4_0").at("layer_backward_time"));
}

TEST(ValidateRuns, MemoryModelMatchesKorthikantisFormulasExactly) {
  // cases/memory.md M3 (GPT-3 175B, tp 8, pp 8, v 3): 45.5625 GiB of model state, 66.84 GiB of
  // activations without recompute or sequence parallelism, 12.35 GiB with both.
  int m3 = 0;
  for (const auto& c : committed().memory_checks) {
    EXPECT_NEAR(c.model_gib, c.formula_gib, 1e-9) << c.config_id << ": " << c.quantity;
    if (c.config_id != "korth_1_sp_sel") continue;
    if (c.quantity.starts_with("weights")) {
      EXPECT_DOUBLE_EQ(c.model_gib, 45.5625);
      ++m3;
    } else if (c.quantity.starts_with("activations, no recompute")) {
      EXPECT_NEAR(c.model_gib, 66.84, 0.005);
      ++m3;
    } else if (c.quantity.starts_with("activations, sequence parallel")) {
      EXPECT_NEAR(c.model_gib, 12.35, 0.005);
      ++m3;
    }
  }
  EXPECT_EQ(m3, 3);
}

TEST(ValidateRuns, AnyCsvWithTheColumnsWorks) {
  // A source the harness knows nothing about: clustersim's own conventions (MFU over the dense
  // peak, model FLOPs without recomputation), and memory rows from the memory model.
  const auto dir = std::filesystem::temp_directory_path() / "clustersim_validate_runs_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "runs.csv").string();
  std::ofstream(path)
      << "source,model,params_b,layers,hidden,ffn_hidden,heads,kv_heads,vocab,seq_len,global_batch,micro_batch,gpus,"
         "gpu_type,tp,pp,dp,cp,ep,vpp,sequence_parallel,recompute,precision,zero_stage,metric_name,metric_value,"
         "metric_unit,notes,config_id\n"
         "A lab notebook (2025),GPT 1.3B,1.3,24,2048,,16,,50304,2048,64,4,16,H100 80GB,2,1,,,,,yes,none,bf16,,mfu,"
         "40,%,,lab_0\n"
         "A lab notebook (2025),GPT 1.3B,1.3,24,2048,,16,,50304,2048,64,4,16,H100 80GB,2,1,,,,,yes,none,bf16,,"
         "peak_memory,20,GB,,lab_0\n"
         "A lab notebook (2025),GPT 1.3B,1.3,24,2048,,16,,50304,2048,64,4,16,MI300X,2,1,,,,,yes,none,bf16,,mfu,"
         "40,%,,lab_1\n"
         "A lab notebook (2025),GPT 1.3B,1.3,24,2048,,16,,50304,2048,64,4,16,H100 80GB,2,1,,,,,yes,none,bf16,,"
         "time_to_train,3,days,,lab_2\n";
  const RunValidation v = validate_runs(path, default_data_dir());
  ASSERT_EQ(v.rows.size(), 4u);
  EXPECT_TRUE(v.rows[0].expressible) << v.rows[0].missing;
  EXPECT_TRUE(v.rows[1].expressible) << v.rows[1].missing;
  EXPECT_FALSE(v.rows[2].expressible);  // no MI300X preset
  EXPECT_FALSE(v.rows[3].expressible);  // not a per-step quantity
  EXPECT_NE(v.rows[3].missing.find("time_to_train"), std::string::npos);
  EXPECT_DOUBLE_EQ(v.expressible_fraction, 0.5);
  ASSERT_EQ(v.by_source.size(), 1u);
  EXPECT_EQ(v.by_source[0].publication, "A lab notebook");

  std::ostringstream json;
  write_runs_json(v, json);
  const auto j = nlohmann::json::parse(json.str());
  for (const char* key : {"mape", "expressible_fraction", "rows", "by_source"}) EXPECT_TRUE(j.contains(key)) << key;
  const auto& row = j["rows"][0];
  for (const char* key : {"config_id", "metric_name", "published", "predicted", "error"}) {
    EXPECT_TRUE(row.contains(key)) << key;
  }
  EXPECT_TRUE(j["rows"][2]["predicted"].is_null());
  EXPECT_DOUBLE_EQ(j["by_source"]["A lab notebook"]["mape"].get<double>(), v.mape);
  std::filesystem::remove_all(dir);
}

TEST(ValidateRuns, ReportsListEveryRow) {
  const RunValidation& v = committed();
  std::ostringstream published, training;
  write_runs_report(v, "clustersim validate --runs training_runs.csv", published);
  write_training_report(v, "clustersim validate --runs training_runs.csv", training);
  const std::string text = published.str();
  EXPECT_NE(text.find("**Overall MAPE:"), std::string::npos);
  const size_t every_row = text.find("## Every row");
  ASSERT_NE(every_row, std::string::npos);
  size_t lines = 0;
  for (size_t at = text.find("\n| ", every_row); at != std::string::npos; at = text.find("\n| ", at + 1)) ++lines;
  EXPECT_EQ(lines, v.rows.size() + 1);  // plus the header row
  // training.md: one line per configuration, each metric of it named.
  EXPECT_NE(training.str().find("published.md"), std::string::npos);
  EXPECT_NE(training.str().find("korth_t4_4"), std::string::npos);
}

TEST(ValidateRuns, BadInputIsAnInputError) {
  EXPECT_THROW(validate_runs("/nonexistent/runs.csv", default_data_dir()), InputError);
}

}  // namespace validate_runs_test
}  // namespace clustersim
