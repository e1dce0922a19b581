#include "workloads/shard_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/units.h"

namespace clustersim {

int64_t padded_vocab_size(int64_t vocab, int64_t divisible_by, int64_t tp) {
  if (vocab <= 0 || divisible_by <= 0 || tp <= 0) {
    throw InputError(fmt::format("vocabulary padding needs positive vocab ({}), make_vocab_size_divisible_by ({}) "
                                 "and tp ({})",
                                 vocab, divisible_by, tp));
  }
  const int64_t multiple = checked_mul(divisible_by, tp, "vocabulary padding multiple");
  return checked_mul((vocab + multiple - 1) / multiple, multiple, "padded vocabulary");
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

ShardedDims shard_model(const ModelSpec& model, const ShardSpec& shard) {
  model.validate();
  if (shard.tp <= 0) throw InputError(fmt::format("parallelism.tp must be a positive integer (got {})", shard.tp));
  if (shard.cp <= 0) throw InputError(fmt::format("parallelism.cp must be a positive integer (got {})", shard.cp));
  const int64_t tp = shard.tp;
  const int64_t heads = model.heads;
  const int64_t kv = model.kv_head_count();
  if (heads % tp != 0) {
    throw InputError(fmt::format("parallelism.tp = {} does not divide model.heads = {} (valid tp for {} heads: {})",
                                 tp, heads, heads, fmt::join(divisors(heads), ", ")));
  }
  if (kv % tp != 0 && tp % kv != 0) {
    std::vector<int64_t> valid;
    for (int64_t t : divisors(heads)) {
      if (kv % t == 0 || t % kv == 0) valid.push_back(t);
    }
    throw InputError(fmt::format(
        "parallelism.tp = {} and model.kv_heads = {} do not nest: each rank must hold whole KV heads, so tp must "
        "divide kv_heads or be a multiple of it (each KV head then replicated tp/kv_heads times); valid tp: {}",
        tp, kv, fmt::join(valid, ", ")));
  }
  if (model.ffn_hidden % tp != 0) {
    std::vector<int64_t> valid;
    for (int64_t t : divisors(heads)) {
      if (model.ffn_hidden % t == 0 && (kv % t == 0 || t % kv == 0)) valid.push_back(t);
    }
    throw InputError(fmt::format("parallelism.tp = {} does not divide model.ffn_hidden = {} (valid tp: {})", tp,
                                 model.ffn_hidden, fmt::join(valid, ", ")));
  }
  ShardedDims d;
  d.tp = tp;
  d.cp = shard.cp;
  d.sequence_parallel = shard.sequence_parallel && tp > 1;
  d.head_dim = model.head_size();
  d.heads_per_rank = heads / tp;
  d.kv_heads_per_rank = kv >= tp ? kv / tp : 1;
  d.kv_replication = kv >= tp ? 1 : tp / kv;
  d.ffn_per_rank = model.ffn_hidden / tp;
  d.padded_vocab = padded_vocab_size(model.vocab, model.make_vocab_size_divisible_by, tp);
  d.vocab_per_rank = d.padded_vocab / tp;
  return d;
}

void validate_sharding(const ModelSpec& model, const TrainingSpec& training, const ShardSpec& shard) {
  const ShardedDims d = shard_model(model, shard);
  training.validate(model);
  if (d.cp > 1 && training.seq_len % (2 * d.cp) != 0) {
    const int64_t chunk = 2 * d.cp;
    throw InputError(fmt::format(
        "training.seq_len = {} cannot be cut into 2·cp = {} equal chunks for load-balanced causal context "
        "parallelism (parallelism.cp = {}); use seq_len {} or {}",
        training.seq_len, chunk, d.cp, training.seq_len / chunk * chunk, (training.seq_len / chunk + 1) * chunk));
  }
  const int64_t local_seq = training.seq_len / d.cp;
  if (d.sequence_parallel && local_seq % d.tp != 0) {
    throw InputError(fmt::format("sequence parallelism splits the sequence over parallelism.tp = {} ranks, but "
                                 "training.seq_len / cp = {} is not a multiple of {}",
                                 d.tp, local_seq, d.tp));
  }
}

}  // namespace clustersim
