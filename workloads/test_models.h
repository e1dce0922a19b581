#pragma once

// Test-only model and training definitions with their published sources (not part of the library).

#include "workloads/model_spec.h"
#include "workloads/training_spec.h"

namespace clustersim::testing {

// GPT-3 175B (Brown et al. 2020, Table 2.1; Megatron's vocabulary 51,200 as in Narayanan et al. 2021
// and Korthikanti et al. 2022): 96 layers, h 12288, 96 heads, ffn 4h, learned positions 2048,
// LayerNorm, GeLU, biases, tied embeddings.
inline ModelSpec gpt3_175b() {
  ModelSpec m;
  m.name = "gpt3-175b";
  m.layers = 96;
  m.hidden = 12288;
  m.ffn_hidden = 4 * 12288;
  m.heads = 96;
  m.vocab = 51200;
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.position_embedding = PositionEmbedding::kLearned;
  m.max_position_embeddings = 2048;
  m.tied_embeddings = true;
  m.linear_bias = true;
  return m;
}

// Llama-2-7B (Touvron et al. 2023; Hugging Face config): 32 layers, h 4096, 32 heads, ffn 11008,
// vocab 32000, RMSNorm, SwiGLU, RoPE, no biases, untied LM head.
inline ModelSpec llama2_7b() {
  ModelSpec m;
  m.name = "llama2-7b";
  m.layers = 32;
  m.hidden = 4096;
  m.ffn_hidden = 11008;
  m.heads = 32;
  m.vocab = 32000;
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.position_embedding = PositionEmbedding::kRope;
  m.tied_embeddings = false;
  m.linear_bias = false;
  return m;
}

// Llama-3-70B (Meta model card): 80 layers, h 8192, 64 heads, 8 KV heads of 128, ffn 28672,
// vocab 128256.
inline ModelSpec llama3_70b() {
  ModelSpec m = llama2_7b();
  m.name = "llama3-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.ffn_hidden = 28672;
  m.heads = 64;
  m.kv_heads = 8;
  m.vocab = 128256;
  return m;
}

// Llama-3-8B (Meta model card): 32 layers, h 4096, 32 heads, 8 KV heads of 128, ffn 14336, vocab 128256.
inline ModelSpec llama3_8b() {
  ModelSpec m = llama2_7b();
  m.name = "llama3-8b";
  m.ffn_hidden = 14336;
  m.kv_heads = 8;
  m.vocab = 128256;
  return m;
}

// Mixtral-8x7B (Jiang et al. 2024, arXiv:2401.04088 Table 1; Hugging Face config.json): 32 layers,
// h 4096, 32 heads, 8 KV heads of 128, 8 experts of SwiGLU ffn 14336, top-2, vocab 32000, RMSNorm,
// RoPE, untied, no biases.
inline ModelSpec mixtral_8x7b() {
  ModelSpec m = llama2_7b();
  m.name = "mixtral-8x7b";
  m.ffn_hidden = 14336;
  m.kv_heads = 8;
  m.moe.num_experts = 8;
  m.moe.top_k = 2;
  m.moe.moe_ffn_hidden = 14336;
  return m;
}

// DeepSeek-V3 (arXiv:2412.19437 §4.2; Hugging Face config.json): 61 layers, h 7168, the first 3
// dense with ffn 18432, then 1 shared + 256 routed experts of 2048, top-8, auxiliary-loss-free
// balancing; MLA with 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, rope 64, v 128;
// vocab 129280, untied, no biases.
inline ModelSpec deepseek_v3() {
  ModelSpec m = llama2_7b();
  m.name = "deepseek-v3";
  m.layers = 61;
  m.hidden = 7168;
  m.ffn_hidden = 18432;
  m.heads = 128;
  m.head_dim = 128;
  m.vocab = 129280;
  m.moe.num_experts = 256;
  m.moe.top_k = 8;
  m.moe.moe_ffn_hidden = 2048;
  m.moe.shared_experts = 1;
  m.moe.first_dense_layers = 3;
  m.moe.balancing = MoeBalancing::kAuxLossFree;
  m.moe.router_num_groups = 8;  // config.json n_group, topk_group: each token on at most 4 nodes
  m.moe.router_group_topk = 4;
  m.mla.q_lora_rank = 1536;
  m.mla.kv_lora_rank = 512;
  m.mla.rope_head_dim = 64;
  m.mla.v_head_dim = 128;
  return m;
}

// A GPT-3-shaped model of `layers` layers at h 2048 (ffn 8192, 16 heads): 12h² + 13h = 50,358,272
// parameters per layer, small enough for step tests.
inline ModelSpec small_gpt(int64_t layers) {
  ModelSpec m = gpt3_175b();
  m.name = "gpt-small";
  m.layers = layers;
  m.hidden = 2048;
  m.ffn_hidden = 4 * 2048;
  m.heads = 16;
  return m;
}

// Sequences of `seq_len` tokens, one per micro-batch, `global_batch` per step.
inline TrainingSpec sequences(int64_t seq_len, int64_t global_batch) {
  TrainingSpec t;
  t.seq_len = seq_len;
  t.micro_batch = 1;
  t.global_batch = global_batch;
  return t;
}

inline TrainingSpec training(int64_t seq_len, int64_t micro_batch, Recompute recompute, AttentionKernel attention) {
  TrainingSpec t;
  t.seq_len = seq_len;
  t.micro_batch = micro_batch;
  t.global_batch = micro_batch;
  t.recompute = recompute;
  t.attention = attention;
  t.compute_dtype = DataType::kBf16;
  return t;
}

}  // namespace clustersim::testing
