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
// How positions enter the model: a learned table added to the embeddings, rotary embeddings of q
// and k (RoPE, Su et al. 2021), or ALiBi's linear attention biases (Press et al. 2022: no
// parameters, added to the attention scores inside the attention kernel; MPT, BLOOM).
enum class PositionEmbedding { kLearned, kRope, kAlibi };

std::string_view name_of(MlpKind kind);                // "gelu", "swiglu"
std::string_view name_of(NormKind kind);               // "layernorm", "rmsnorm"
std::string_view name_of(PositionEmbedding kind);      // "learned", "rope"
// Parse the names above; throw InputError naming the text and the valid names.
MlpKind parse_mlp_kind(std::string_view text);
NormKind parse_norm_kind(std::string_view text);
PositionEmbedding parse_position_embedding(std::string_view text);

// How the router keeps the experts' loads even; only the router's cost depends on it.
//   aux_loss       an auxiliary load-balancing loss over the router probabilities (Switch
//                  Transformer; Megatron --moe-router-load-balancing-type aux_loss, its default)
//   aux_loss_free  a per-expert bias added to the scores before top-k and adjusted between steps
//                  (DeepSeek-V3, arXiv:2412.19437 §2.1.2; Megatron --moe-router-enable-expert-bias)
//   none           plain top-k
enum class MoeBalancing { kAuxLoss, kAuxLossFree, kNone };
std::string_view name_of(MoeBalancing balancing);  // "aux_loss", "aux_loss_free", "none"
MoeBalancing parse_moe_balancing(std::string_view text);

// Mixture-of-experts MLP (Megatron-LM names: --num-experts, --moe-router-topk, --moe-ffn-hidden-size,
// --moe-shared-expert-intermediate-size, --moe-layer-freq with leading dense layers). num_experts = 0
// is a dense model. Every layer from `first_dense_layers` on replaces its MLP by a router over
// `num_experts` routed experts (each an MLP of the model's kind with `moe_ffn_hidden`) of which each
// token uses `top_k`, plus `shared_experts` always-active experts (one MLP of `shared_ffn()`).
struct MoeSpec {
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t moe_ffn_hidden = 0;
  int64_t shared_experts = 0;      // number of always-active shared experts
  int64_t shared_ffn_hidden = 0;   // their total intermediate size; 0 = shared_experts × moe_ffn_hidden
  int64_t first_dense_layers = 0;  // leading layers with a dense MLP of ffn_hidden (DeepSeek-V3: 3)
  MoeBalancing balancing = MoeBalancing::kAuxLoss;
  // Group-limited routing (Megatron --moe-router-num-groups / --moe-router-group-topk; DeepSeek-V3's
  // node-limited routing, arXiv:2412.19437 §2.1.2: 8 groups, 4 chosen): the experts are cut into
  // router_num_groups contiguous groups and each token's top_k experts come from router_group_topk
  // of them. 0 = no limit. Only the deepep dispatcher's traffic depends on it (Transformer).
  int64_t router_num_groups = 0;
  int64_t router_group_topk = 0;

  bool enabled() const { return num_experts > 0; }
  int64_t shared_ffn() const { return shared_ffn_hidden > 0 ? shared_ffn_hidden : shared_experts * moe_ffn_hidden; }
};

// Multi-head latent attention (DeepSeek-V2/V3, arXiv:2405.04434 §2.1; Megatron-Core
// multi_latent_attention.py): queries through a low-rank q_lora_rank bottleneck (0: a direct
// projection), keys and values through a shared kv_lora_rank latent; each head has a "nope" part of
// the model's head_dim plus a decoupled RoPE part of rope_head_dim (its key shared by all heads), and
// values of v_head_dim. kv_lora_rank = 0 is standard attention. DeepSeek-V3: q_lora_rank 1536,
// kv_lora_rank 512, head_dim (qk_nope) 128, rope_head_dim 64, v_head_dim 128, 128 heads.
struct MlaSpec {
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t rope_head_dim = 0;
  int64_t v_head_dim = 0;  // 0 = the model's head_dim

  bool enabled() const { return kv_lora_rank > 0; }
};

// A decoder-only transformer (GPT / Llama family, with optional mixture-of-experts MLPs and latent
// attention) as Megatron-LM builds it.
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
  // Sliding-window attention (Mistral 7B, arXiv:2310.06825 §2; Gemma 2/3; GPT-OSS): a query at
  // position i attends to keys i − sliding_window + 1 .. i. 0 = full causal attention. With
  // full_attention_every = N > 0, layers N−1, 2N−1, ... (0-based) attend to the whole sequence
  // (GPT-OSS's config.json layer_types: sliding, full, sliding, ...: N = 2).
  int64_t sliding_window = 0;
  int64_t full_attention_every = 0;
  bool attention_sinks = false;          // a learned per-head sink logit in the softmax (GPT-OSS)
  MoeSpec moe;
  MlaSpec mla;

  int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t head_size() const { return head_dim > 0 ? head_dim : (heads > 0 ? hidden / heads : 0); }
  // Query/key size per head: head_size() plus the decoupled RoPE part with MLA.
  int64_t qk_head_size() const { return head_size() + (mla.enabled() ? mla.rope_head_dim : 0); }
  // Value size per head: mla.v_head_dim with MLA (when set), else head_size().
  int64_t v_head_size() const { return mla.enabled() && mla.v_head_dim > 0 ? mla.v_head_dim : head_size(); }
  // Whether layer `layer` (0-based) attends through a sliding window (see sliding_window).
  bool is_window_layer(int64_t layer) const {
    return sliding_window > 0 && !(full_attention_every > 0 && (layer + 1) % full_attention_every == 0);
  }
  // Whether layer `layer` (0-based) has a mixture-of-experts MLP.
  bool is_moe_layer(int64_t layer) const { return moe.enabled() && layer >= moe.first_dense_layers; }
  // Layers with a mixture-of-experts MLP, and with a dense one.
  int64_t moe_layer_count() const { return moe.enabled() ? layers - moe.first_dense_layers : 0; }
  int64_t dense_layer_count() const { return layers - moe_layer_count(); }

  // Throws InputError naming the field (as "model.<key>"), its value and what is valid: non-positive
  // sizes, heads not divisible by kv_heads, hidden not divisible by heads without an explicit
  // head_dim, a learned position table without max_position_embeddings, a non-positive
  // vocabulary divisor; MoE fields without experts, top_k outside 1..num_experts, a non-positive
  // expert size, first_dense_layers not below layers; MLA with grouped KV heads or without RoPE;
  // negative sliding_window or full_attention_every, full_attention_every without a window, of 1
  // (no layer windowed) or above layers (no layer full).
  void validate() const;

 private:
  void validate_moe() const;
  void validate_mla() const;
};

}  // namespace clustersim
