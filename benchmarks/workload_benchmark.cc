// How long building a transformer's op lists takes: a layout search builds one per candidate
// layout, thousands per second.

#include <benchmark/benchmark.h>

#include "workloads/test_models.h"
#include "workloads/transformer.h"

namespace clustersim {
namespace {

// Llama-3-70B (80 layers, h 8192, 64 heads, 8 KV heads, ffn 28672, vocabulary 128256), sequence
// 8192, tp 8 with sequence parallelism: all op lists of one rank.
void BM_BuildTransformer(benchmark::State& state) {
  const ModelSpec m = testing::llama3_70b();
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
