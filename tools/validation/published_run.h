#pragma once

// Published training runs (docs/validation/published/training_runs.csv, or any CSV with its
// columns) as clustersim scenarios.
//
// The CSV is long: one row per (configuration, metric), the rows of one configuration sharing its
// config_id and repeating its fields; an empty field is one the source does not give. For each
// configuration this file builds the scenario the source describes — model dimensions, sequence,
// global and micro batch, GPUs as nodes of the GPU type's node preset with the source's published
// fabric, tp/pp/dp/cp/ep/vpp, sequence parallelism, recomputation, precision, ZeRO stage — and
// where the source leaves a field empty it uses a default that the source's text supports, recorded
// in `assumed` with its reason (docs/validation/published/SOURCES.md per source). A configuration
// clustersim cannot express (sliding-window attention, a GPU without a preset, missing model
// dimensions) gets the missing feature in `missing` instead; nothing is skipped.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/hardware_presets.h"
#include "scenarios/scenario.h"

namespace clustersim {

struct PublishedMetric {
  std::string name;  // metric_name: "achieved_tflops_per_gpu", "mfu", "iteration_time", ...
  std::string unit;  // metric_unit as published
  double value = 0;  // metric_value
  int line = 0;      // CSV line
};

// One configuration: its fields (taken from its first row) and every metric row it has.
struct PublishedConfig {
  std::string config_id;
  std::string source;
  std::string model;
  std::string gpu_type;
  std::string recompute;          // free text as published ("full", "every_layer", "selective", ...)
  std::string precision;          // "BF16", "FP8-CS", "mixed precision (16-bit)", ...
  std::string zero_stage;         // "3 (FSDP FULL_SHARD)", "DDP (FSDP=0)", "1", ...
  std::string sequence_parallel;  // "yes", "no" or empty
  std::string notes;
  std::optional<double> params_b;
  std::optional<int64_t> layers, hidden, ffn_hidden, heads, kv_heads, vocab, seq_len, global_batch, micro_batch,
      gpus, tp, pp, dp, cp, ep, vpp;
  std::vector<PublishedMetric> metrics;
  int line = 0;  // first CSV line of the configuration
};

// Reads the CSV and groups its rows by config_id, in order of first appearance. Throws InputError
// naming file, line and column for an unreadable file, a missing column, a field that is not a
// number where one is expected, a row without config_id or metric_name, or a file with a header
// and no data rows.
std::vector<PublishedConfig> read_published_runs(const std::string& csv_path);

// The publication a source text names: the text before its first " (" or " '", without a trailing
// comma ("Narayanan et al., SC21", "Korthikanti et al.", "NVIDIA/Megatron-LM README").
std::string publication_of(const std::string& source);

// Which published setup a configuration follows, recognised from its source text. It decides the
// defaults for fields the source leaves empty and how the source counts FLOPs
// (tools/validation/conventions/, one file per publication).
enum class SourceConvention {
  kSc21,            // Narayanan et al. 2021, "SC21" / arXiv:2104.04473
  kKorthikanti,     // Korthikanti et al. 2022, arXiv:2205.05198
  kMegatronReadme,  // NVIDIA/Megatron-LM README scaling tables (Megatron-Core r0.8)
  kMegatronBridge,  // NVIDIA-NeMo/Megatron-Bridge performance summary
  kLlmFoundry,      // MosaicML llm-foundry benchmark tables
  kHagemann,        // Hagemann et al. 2023, arXiv:2311.05610 sweep data
  kBigScience,      // BigScience BLOOM-176B training log
  kGeneric,         // any other source: clustersim's own conventions
};
std::string_view name_of(SourceConvention convention);
SourceConvention convention_of(const std::string& source);

// A configuration as a scenario, or the reason it cannot be one yet.
struct PublishedScenario {
  SourceConvention convention = SourceConvention::kGeneric;
  std::string missing;                // empty when expressible: the feature or field clustersim lacks
  Scenario scenario;                  // cluster, model, training, layout; analytical, representative
  std::string node;                   // node preset the cluster is built from
  int nodes = 0;
  double parameters = 0;              // N as the source counts it (llm-foundry NumParams, PaLM's N)
  int flop_mtp_layers = 0;            // multi-token-prediction layers the source's FLOP count includes
  bool flop_ungated_mlp = false;      // the source's FLOP count prices a SwiGLU MLP as two matrices (GPT-OSS)
  std::vector<std::string> assumed;   // "field = value (why)" for every field the source leaves empty

  bool expressible() const { return missing.empty(); }
};

// Builds the scenario of `config` with the node presets of `catalog` (model presets from the default
// data directory): what every source shares here, what its publication implies at each point where
// sources differ from its PublicationConventions (tools/validation/conventions/conventions.h). The layout is validated (validate_layout); a configuration the simulator rejects
// is returned with the rejection as `missing`. Throws InputError only for a configuration whose own
// fields contradict each other (tp·pp·cp·dp ≠ GPUs when all are given) and for an unreadable preset.
PublishedScenario build_published_scenario(const PublishedConfig& config, const HardwareCatalog& catalog);

// The node preset for a published GPU type ("A100 40GB ..." → dgx-a100-40gb, "H100 ..." →
// dgx-h100, "GB200" → gb200-nvl72), or nullopt when no preset describes it (an empty field).
std::optional<std::string> node_preset_for(const std::string& gpu_type);

}  // namespace clustersim
