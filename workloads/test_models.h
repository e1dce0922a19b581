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
