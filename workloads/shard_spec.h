#pragma once

#include <cstdint>
#include <vector>

#include "workloads/model_spec.h"
#include "workloads/training_spec.h"

namespace clustersim {

// How one rank's share of a layer is cut (Megatron-LM names): tensor parallel size tp (column- and
// row-parallel linear layers, Shoeybi et al. 2019), sequence parallel (norms, dropout and residuals
// split along the sequence across the tp ranks, Korthikanti et al. 2022), context parallel size cp
// (the sequence split across cp ranks, attention by a ring exchange of K/V). Expert parallel sizes
// (ep, etp) come with mixture-of-experts support.
struct ShardSpec {
  int64_t tp = 1;
  bool sequence_parallel = false;
  int64_t cp = 1;
};

// Per-rank dimensions of a model under a ShardSpec.
struct ShardedDims {
  int64_t tp = 1;
  int64_t cp = 1;
  bool sequence_parallel = false;
  int64_t head_dim = 0;
  int64_t heads_per_rank = 0;     // a / tp
  int64_t kv_heads_per_rank = 0;  // kv / tp, or 1 when kv < tp (replicated)
  int64_t kv_replication = 1;     // ranks holding a copy of each KV head: tp / kv when kv < tp
  int64_t ffn_per_rank = 0;       // ffn / tp
  int64_t padded_vocab = 0;       // vocabulary padded as Megatron does (see padded_vocab_size)
  int64_t vocab_per_rank = 0;     // padded_vocab / tp
};

// Megatron's vocabulary padding: the smallest multiple of divisible_by × tp that is ≥ vocab
// (megatron/training/tokenizer _vocab_size_with_padding). 50,257 → 50,304 (tp 1), 50,688 (tp 4),
// 51,200 (tp 8). Throws InputError for non-positive arguments.
int64_t padded_vocab_size(int64_t vocab, int64_t divisible_by, int64_t tp);

// Positive divisors of n in increasing order (for "valid values" in error messages).
std::vector<int64_t> divisors(int64_t n);

// Validates the model against the shard spec and returns the per-rank dimensions. Throws InputError
// naming the fields and suggesting valid values when: tp or cp is not positive; heads % tp ≠ 0
// (../shared/cases/layouts.md L3); kv_heads and tp do not nest (tp must divide kv_heads, or kv_heads
// must divide tp so that each KV head is replicated tp/kv times: L2); ffn_hidden % tp ≠ 0.
ShardedDims shard_model(const ModelSpec& model, const ShardSpec& shard);

// Checks that need the training spec too; throws InputError naming the fields: with cp > 1 the
// sequence must split into 2·cp equal chunks (causal load balancing by zig-zag sharding,
// ../shared/cases/moe_cp.md E2); with sequence parallel each tp rank must get a whole share of the
// (context-parallel) sequence.
void validate_sharding(const ModelSpec& model, const TrainingSpec& training, const ShardSpec& shard);

}  // namespace clustersim
