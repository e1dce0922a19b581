// How long building a transformer's op lists takes: a layout search builds one per candidate
// layout, thousands per second.

#include <benchmark/benchmark.h>

#include "workloads/transformer.h"

namespace clustersim {
namespace {

// Llama-3-70B (80 layers, h 8192, 64 heads, 8 KV heads, ffn 28672, vocabulary 128256), sequence
// 8192, tp 8 with sequence parallelism: all op lists of one rank.
void BM_BuildTransformer(benchmark::State& state) {
  ModelSpec m;
  m.name = "llama3-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.ffn_hidden = 28672;
  m.heads = 64;
  m.kv_heads = 8;
  m.vocab = 128256;
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.position_embedding = PositionEmbedding::kRope;
  m.linear_bias = false;
  TrainingSpec t;
  t.seq_len = 8192;
  t.global_batch = 64;
  t.micro_batch = 1;
  t.recompute = Recompute::kSelective;
  ShardSpec shard;
  shard.tp = 8;
  shard.sequence_parallel = true;
  for (auto _ : state) {
    const Transformer x(m, t, shard);
    benchmark::DoNotOptimize(x.layer_forward().size());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BuildTransformer)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace clustersim
BENCHMARK_MAIN();
