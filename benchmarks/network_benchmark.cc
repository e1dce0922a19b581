// Speed of the topology and the flow-level network at scale: building a 16,384-GPU cluster,
// looking up routes, and starting/finishing thousands of concurrent flows.

#include <benchmark/benchmark.h>

#include <cstdint>

#include "core/units.h"
#include "engine/simulator.h"
#include "network/flow_network.h"
#include "topology/cluster.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace {

ClusterSpec rail_cluster(int nodes) {
  return test_specs::cluster(test_specs::nvswitch_node(), nodes, test_specs::fabric(FabricType::kRailOptimized));
}

// 2,048 DGX-H100-like nodes (16,384 GPUs), rail-optimized.
void BM_BuildCluster(benchmark::State& state) {
  const ClusterSpec spec = rail_cluster(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Cluster cluster(spec);
    benchmark::DoNotOptimize(cluster.link_count());
  }
  state.counters["gpus"] = static_cast<double>(state.range(0) * 8);
}
BENCHMARK(BM_BuildCluster)->Arg(2048)->Unit(benchmark::kMillisecond);

// First lookups (computed and cached) of ring-neighbour routes on 16,384 GPUs, then cached ones.
void BM_RouteLookup(benchmark::State& state) {
  const Cluster cluster(rail_cluster(2048));
  const int n = cluster.gpu_count();
  for (int g = 0; g < n; ++g) benchmark::DoNotOptimize(cluster.route(g, (g + 1) % n).links.size());
  int g = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cluster.route(g, (g + 1) % n).latency);
    g = (g + 1) % n;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RouteLookup);

void BM_FirstRoutes(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    const Cluster cluster(rail_cluster(2048));
    state.ResumeTiming();
    const int n = cluster.gpu_count();
    for (int g = 0; g < n; ++g) benchmark::DoNotOptimize(cluster.route(g, (g + 8) % n).links.size());
  }
  state.SetItemsProcessed(state.iterations() * 16384);
}
BENCHMARK(BM_FirstRoutes)->Unit(benchmark::kMillisecond);

// One ring step on 1,024 GPUs (128 nodes): every GPU sends `channels` flows of 1 MiB to the next
// GPU at the same instant (8,192 flows for 8 channels), all run to completion.
// items_per_second = flows started and finished.
void BM_RingStep(benchmark::State& state) {
  const int channels = static_cast<int>(state.range(0));
  const Cluster cluster(rail_cluster(128));
  const int n = cluster.gpu_count();
  for (auto _ : state) {
    Simulator sim;
    FlowNetwork network(sim, cluster);
    int64_t done = 0;
    for (int c = 0; c < channels; ++c) {
      for (GpuId g = 0; g < n; ++g) {
        network.start_flow(g, (g + 1) % n, Bytes::mebibytes(1), [&done] { ++done; }, static_cast<uint64_t>(c));
      }
    }
    sim.run();
    benchmark::DoNotOptimize(done);
  }
  state.SetItemsProcessed(state.iterations() * channels * n);
}
BENCHMARK(BM_RingStep)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond);

// The same 8,192 flows with distinct sizes, so they finish at distinct instants and every finish
// triggers a rate update of its component: the worst case of the incremental update.
void BM_StaggeredFinishes(benchmark::State& state) {
  const int channels = 8;
  const Cluster cluster(rail_cluster(128));
  const int n = cluster.gpu_count();
  for (auto _ : state) {
    Simulator sim;
    FlowNetwork network(sim, cluster);
    int64_t done = 0;
    for (int c = 0; c < channels; ++c) {
      for (GpuId g = 0; g < n; ++g) {
        const Bytes size = Bytes::of(1048576 + 4096 * static_cast<int64_t>(c * n + g));
        network.start_flow(g, (g + 1) % n, size, [&done] { ++done; }, static_cast<uint64_t>(c));
      }
    }
    sim.run();
    benchmark::DoNotOptimize(done);
  }
  state.SetItemsProcessed(state.iterations() * channels * n);
}
BENCHMARK(BM_StaggeredFinishes)->Unit(benchmark::kMillisecond);

// An all-to-all on `nodes` 8-GPU nodes under a two-tier fat tree of 16-port leaves: every GPU sends
// 256 KiB to every other at once (16,256 flows on 16 nodes), ECMP-hashed by pair, so the flows
// crossing the spines form one component that every finish recomputes (batched while more than
// 8,192 are in flight, network/flow_network.h). The max-min solve and the component search
// decide its speed. items_per_second = flows started and finished.
void BM_AllToAll(benchmark::State& state) {
  const Cluster cluster(
      test_specs::cluster(test_specs::nvswitch_node(), static_cast<int>(state.range(0)), test_specs::fabric(FabricType::kFatTree, 16)));
  const int n = cluster.gpu_count();
  for (auto _ : state) {
    Simulator sim;
    FlowNetwork network(sim, cluster);
    int64_t done = 0;
    for (GpuId src = 0; src < n; ++src) {
      for (GpuId dst = 0; dst < n; ++dst) {
        if (src == dst) continue;
        network.start_flow(src, dst, Bytes::kibibytes(256), [&done] { ++done; }, static_cast<uint64_t>(src * n + dst));
      }
    }
    sim.run();
    benchmark::DoNotOptimize(done);
  }
  state.SetItemsProcessed(state.iterations() * n * (n - 1));
}
BENCHMARK(BM_AllToAll)->Arg(16)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace clustersim

BENCHMARK_MAIN();
