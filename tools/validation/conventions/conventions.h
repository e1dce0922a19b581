#pragma once

// How one publication's rows become a scenario: the defaults its text supports for the fields it
// leaves empty, the model its names stand for, its framework, kernels, precision, recomputation and
// optimizer sharding, and how it counts the FLOPs of its TFLOP/s and MFU.
// build_published_scenario (tools/validation/published_run.cc) does what every source shares and
// asks the source's PublicationConventions at each point where sources differ; validate --runs
// (validate_runs.cc) asks them for the FLOPs of a step. Each publication's answers,
// with their citations, sit in one file of this folder:
//
//   megatron_sc21.cc         Narayanan et al. 2021, SC21 (arXiv:2104.04473)
//   megatron_korthikanti.cc  Korthikanti et al. 2022 (arXiv:2205.05198)
//   megatron_readme.cc       NVIDIA/Megatron-LM README scaling tables
//   megatron_bridge.cc       NVIDIA-NeMo/Megatron-Bridge performance summary
//   llm_foundry.cc           mosaicml/llm-foundry benchmark tables
//   hagemann.cc              Hagemann et al. 2023 (arXiv:2311.05610) sweep data
//   bigscience.cc            BigScience BLOOM-176B training log
//   generic.cc               any other source: clustersim's own conventions (the defaults below)
//   megatron_2021.h/.cc      what the Megatron-LM code of 2021-22 did, shared by SC21, Korthikanti
//                            et al. and BigScience's Megatron-DeepSpeed
//
// A hook that decides a value for an empty field records it with ConventionContext::assume
// ("field = value (why)"); the order of the hooks is the order of PublishedScenario::assumed.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "scenarios/scenario.h"
#include "tools/validation/published_run.h"
#include "workloads/model_flops.h"

namespace clustersim::conventions {

// Whether `part` occurs in `text` (case-sensitive), and `text` in ASCII lower case: how source,
// GPU, precision and notes fields are matched.
bool contains(std::string_view text, std::string_view part);
std::string lower(std::string_view text);

// The value of `key` in a notes field of "key=value; key=value" ("kernel=", "NumParams="), or
// nullopt when the notes do not name it.
std::optional<std::string> note_value(const std::string& notes, std::string_view key);

// Whether every metric of the configuration is a single-layer time (layer_*: Korthikanti Table 4).
bool only_layer_metrics(const PublishedConfig& config);

// The configuration being built, the scenario it becomes, and the record of what was assumed.
struct ConventionContext {
  const PublishedConfig& config;
  PublishedScenario& out;
  bool layer_only = false;  // only_layer_metrics(config)

  // Records "field (why)" in out.assumed.
  void assume(std::string field, std::string why);
};

// Records "tp = 1 pp = 1" (the one not given) for a configuration without model parallelism.
void assume_unsplit(ConventionContext& ctx, std::string why);

// GPT as Megatron-LM builds it: GeLU MLP of ffn_hidden (4h when not given), LayerNorm, learned
// positions up to seq_len tokens, tied embeddings, biases. Needs config.layers, hidden and heads.
ModelSpec gpt_model(const PublishedConfig& config, int64_t seq_len);

// Llama: SwiGLU, RMSNorm, RoPE, untied LM head, no biases (Touvron et al. 2023).
ModelSpec llama_model(std::string name, int64_t layers, int64_t hidden, int64_t heads, int64_t ffn, int64_t vocab);

// The step's dimensions as the FLOP formulas of tools/validation/published_flops.h take them.
struct FlopShape {
  double global_batch, seq_len, layers, hidden, vocab, heads, kv_heads, head_size, ffn_hidden;
  bool swiglu = false;
  Recompute recompute = Recompute::kNone;
};
FlopShape flop_shape(const PublishedScenario& ps);

// One publication's conventions. The defaults are clustersim's own (generic.cc says why each is).
class PublicationConventions {
 public:
  virtual ~PublicationConventions() = default;

  virtual SourceConvention id() const = 0;
  virtual std::string_view name() const = 0;                   // "Narayanan et al. 2021 (SC21)"
  virtual bool describes(const std::string& source) const = 0;  // whether a source text is this publication's

  // ---- cluster
  // Called when the GPU type names a node preset (out.node is set): notes what the source leaves out.
  virtual void note_node(ConventionContext&) const {}
  // The node preset of a configuration whose GPU type is empty, or nullopt (then it is `missing`).
  virtual std::optional<std::string> node_for_unnamed_gpu(ConventionContext&) const { return std::nullopt; }

  // ---- sequence, split and batch
  // The sequence length (tokens) when the source gives none, or nullopt (then it is `missing`).
  virtual std::optional<int64_t> unstated_seq_len(ConventionContext&) const { return std::nullopt; }
  // Fills tp and pp (already the published values, 1 where empty) when either is not given; false
  // with out.missing set when the configuration cannot be built.
  virtual bool model_parallel(ConventionContext& ctx, int64_t& tp, int64_t& pp) const;
  // Why micro_batch = 1 stands in for an empty micro_batch.
  virtual std::string unstated_micro_batch_reason() const { return "not given; Megatron-LM's default"; }
  // The global batch (sequences) when the source gives none, or nullopt (then it is `missing`).
  virtual std::optional<int64_t> unstated_global_batch(ConventionContext& ctx, int64_t seq_len, int64_t micro_batch,
                                                       int64_t dp) const;

  // ---- model
  // The model of the configuration, or nullopt with out.missing set. The default reads the
  // dimensions from the columns (model_from_columns).
  virtual std::optional<ModelSpec> model(ConventionContext& ctx, int64_t seq_len) const {
    return model_from_columns(ctx, seq_len);
  }
  // The vocabulary (tokens) of a GPT configuration that gives none, and why; nullopt (the default)
  // makes the missing vocabulary `missing`.
  struct UnstatedVocab {
    int64_t vocab = 0;
    std::string why;
  };
  virtual std::optional<UnstatedVocab> unstated_vocab(ConventionContext&) const { return std::nullopt; }

  // ---- training
  // The compute dtype when the precision column names none.
  virtual DataType unstated_precision(ConventionContext& ctx) const;
  // Called with the dtype the precision column names.
  virtual void note_precision(ConventionContext&, DataType) const {}
  // Adjusts the mixed-precision policy (Megatron's for the compute dtype on entry).
  virtual void mixed_precision(ConventionContext&, TrainingSpec&) const {}
  // The recomputation when the recompute column names none.
  virtual Recompute unstated_recompute(ConventionContext& ctx) const;
  // Whether attention is the unfused softmax path (else FlashAttention).
  virtual bool naive_attention(ConventionContext&) const { return false; }
  // The framework, attention kernel and fused kernels of the source's training code.
  virtual void kernels(ConventionContext&, TrainingSpec&) const {}
  // Hidden and attention dropout probability.
  virtual double dropout() const { return 0.0; }

  // ---- layout
  // Whether sequence parallelism is on when the column is empty and tp > 1.
  virtual bool unstated_sequence_parallel(ConventionContext&) const { return false; }
  // Called when sequence parallelism is on: tensor-parallel communication overlap.
  virtual void tp_comm_overlap(ConventionContext&, Layout&) const {}
  // Called when the zero_stage column names no stage: the optimizer sharding.
  virtual void unstated_zero(ConventionContext&, Layout&) const {}
  // The gradient reduction (overlap, operation, buckets) of the source's framework; may set the
  // precision policy of its optimizer. params_dtype: the dtype of the weights (fp16 or bf16).
  virtual void gradient_reduction(ConventionContext&, Layout&, TrainingSpec&, DataType /*params_dtype*/) const {}
  // Model chunks per stage when vpp is not given and pp > 1 (1 = no interleaving); microbatches
  // per pipeline and layers of the model as the builder has them.
  virtual int unstated_vpp(ConventionContext&, int64_t /*layers*/, int /*pp*/, int64_t /*microbatches*/) const {
    return 1;
  }

  // ---- FLOPs as the source counts them (tools/validation/published_flops.h, SOURCES.md "FLOP-counting
  // conventions differ")
  // FLOPs of one step of `ps`: its model FLOPs (MFU, "model TFLOP/s"), or with `hardware` the FLOPs
  // with the recomputation (HFU). `simulated`: clustersim's own count of the step
  // (workloads/model_flops.h), which the generic conventions report.
  virtual double step_flops(const PublishedScenario& /*ps*/, const StepFlops& simulated, bool hardware) const {
    return hardware ? simulated.hardware : simulated.model;
  }
  // Whether the source's "achieved" TFLOP/s (and aggregate PFLOP/s, % of peak) count the recomputed
  // forward pass (hardware FLOPs) rather than model FLOPs; clustersim's own report does.
  virtual bool achieved_counts_recompute() const { return true; }

 protected:
  // The model from the configuration's columns: a preset where the name is one clustersim ships
  // without dimensions (DeepSeek-V3), Llama where the name says so, GPT otherwise.
  std::optional<ModelSpec> model_from_columns(ConventionContext& ctx, int64_t seq_len) const;
};

// The conventions of the first publication that describes `source` (SC21, Korthikanti et al.,
// Megatron-Bridge, the Megatron-LM README, llm-foundry, Hagemann et al., BigScience, in that order),
// or the generic ones. Never throws.
const PublicationConventions& conventions_of(const std::string& source);
// The conventions whose id() is `id`; InternalError if none (every SourceConvention has a file).
const PublicationConventions& conventions_for(SourceConvention id);

// One per file of this folder: each a single immutable instance.
const PublicationConventions& sc21_conventions();
const PublicationConventions& korthikanti_conventions();
const PublicationConventions& megatron_readme_conventions();
const PublicationConventions& megatron_bridge_conventions();
const PublicationConventions& llm_foundry_conventions();
const PublicationConventions& hagemann_conventions();
const PublicationConventions& bigscience_conventions();
const PublicationConventions& generic_conventions();

}  // namespace clustersim::conventions
