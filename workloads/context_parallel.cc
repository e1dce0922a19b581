#include "workloads/context_parallel.h"

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

namespace {

void check(int64_t seq_len, int64_t cp) {
  if (cp < 1) throw InputError(fmt::format("parallelism.cp must be a positive integer (got {})", cp));
  if (seq_len <= 0 || seq_len % (2 * cp) != 0) {
    throw InputError(fmt::format("training.seq_len = {} must be a positive multiple of 2·cp = {} to be sharded over "
                                 "cp = {} ranks",
                                 seq_len, 2 * cp, cp));
  }
}

}  // namespace

std::vector<int64_t> context_parallel_tokens(int64_t seq_len, int64_t cp, int64_t rank, SequenceSharding sharding) {
  check(seq_len, cp);
  if (rank < 0 || rank >= cp) {
    throw InputError(fmt::format("context-parallel rank {} is outside [0, {})", rank, cp));
  }
  std::vector<int64_t> out;
  auto add_range = [&](int64_t first, int64_t count) {
    for (int64_t i = 0; i < count; ++i) out.push_back(first + i + 1);
  };
  if (sharding == SequenceSharding::kContiguous) {
    const int64_t share = seq_len / cp;
    add_range(rank * share, share);
  } else {
    const int64_t chunk = seq_len / (2 * cp);
    add_range(rank * chunk, chunk);
    add_range((2 * cp - 1 - rank) * chunk, chunk);
  }
  return out;
}

std::vector<int64_t> causal_attention_work(int64_t seq_len, int64_t cp, SequenceSharding sharding) {
  std::vector<int64_t> work;
  for (int64_t rank = 0; rank < cp; ++rank) {
    int64_t pairs = 0;
    for (int64_t position : context_parallel_tokens(seq_len, cp, rank, sharding)) pairs += position;
    work.push_back(pairs);
  }
  return work;
}

}  // namespace clustersim
