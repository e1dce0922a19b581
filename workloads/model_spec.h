#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace clustersim {

// The MLP of a transformer layer. gelu: fc1 [h → ffn], GeLU, fc2 [ffn → h] (GPT). swiglu: fc1 holds
// the gate and up projections [h → 2·ffn], SiLU(gate)·up, fc2 [ffn → h] (Llama).
enum class MlpKind { kGelu, kSwiglu };
// layernorm: weight and bias (2h parameters); rmsnorm: weight only (h).
enum class NormKind { kLayerNorm, kRmsNorm };
// learned: a [max_position_embeddings, h] table added to the token embeddings (GPT-2/3);
// rope: rotary embedding applied to Q and K, no parameters (Llama).
enum class PositionEmbedding { kLearned, kRope };

std::string_view name_of(MlpKind kind);                // "gelu", "swiglu"
std::string_view name_of(NormKind kind);               // "layernorm", "rmsnorm"
std::string_view name_of(PositionEmbedding kind);      // "learned", "rope"
// Parse the names above; throw InputError naming the text and the valid names.
MlpKind parse_mlp_kind(std::string_view text);
NormKind parse_norm_kind(std::string_view text);
PositionEmbedding parse_position_embedding(std::string_view text);

// Mixture-of-experts fields, reserved for the issue that adds MoE layers: a model with
// num_experts > 0 is rejected until then. Names follow Megatron-LM (--num-experts,
// --moe-router-topk, --moe-ffn-hidden-size, --moe-shared-expert-intermediate-size,
// --moe-layer-freq / first dense layers).
struct MoeSpec {
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t moe_ffn_hidden = 0;
  int64_t shared_experts = 0;      // number of always-active shared experts
  int64_t first_dense_layers = 0;  // leading layers with a dense MLP (DeepSeek-V3: 3)
};

// Multi-head latent attention (DeepSeek-V2/V3), reserved likewise: all zero = standard attention.
struct MlaSpec {
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t rope_head_dim = 0;
};

// A dense decoder-only transformer (GPT / Llama family) as Megatron-LM builds it.
struct ModelSpec {
  std::string name;
  int64_t layers = 0;
  int64_t hidden = 0;       // h
  int64_t ffn_hidden = 0;   // MLP intermediate size (4h for GPT; 11008 for Llama-2-7B)
  int64_t heads = 0;        // query heads a
  int64_t kv_heads = 0;     // key/value heads (grouped-query attention); 0 means = heads (MHA)
  int64_t head_dim = 0;     // 0 means hidden / heads
  int64_t vocab = 0;        // tokenizer vocabulary, before Megatron's padding
  MlpKind mlp = MlpKind::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  PositionEmbedding position_embedding = PositionEmbedding::kLearned;
  int64_t max_position_embeddings = 0;   // rows of the learned position table (learned only)
  bool tied_embeddings = false;          // LM head reuses the word-embedding matrix
  int64_t make_vocab_size_divisible_by = 128;  // Megatron --make-vocab-size-divisible-by
  bool linear_bias = true;               // biases on every linear layer (Megatron --add-bias-linear; GPT)
  bool qkv_bias = false;                 // bias on QKV only, when linear_bias is off (Qwen2)
  MoeSpec moe;
  MlaSpec mla;

  int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t head_size() const { return head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0); }

  // Throws InputError naming the field (as "model.<key>"), its value and what is valid: non-positive
  // sizes, heads not divisible by kv_heads, hidden not divisible by heads without an explicit
  // head_dim, a learned position table without max_position_embeddings, a non-positive
  // vocabulary divisor, and MoE/MLA fields (not supported yet).
  void validate() const;
};

}  // namespace clustersim
