// Fuzzes the scenario loader (scenarios::load_scenario) with the bytes as a scenario file; a
// scenario small enough (at most 16 GPUs, 8 layers, 4 micro-batches, sequences of 4,096) is then
// simulated for one step at analytical fidelity, which must also end in a result or an InputError.

#include <cstddef>
#include <cstdint>

#include "parallelism/training_simulation.h"
#include "scenarios/scenario.h"
#include "tests/fuzz/fuzz_support.h"
#include "topology/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  const std::string path = fuzz::write_input(data, size, "scenario.yaml");
  fuzz::expect_loads_or_input_error([&] {
    const Scenario s = load_scenario(path);
    int gpus = 0;
    for (const auto& n : s.cluster.nodes) gpus += n.gpus;
    const int64_t micro_batches = s.training.global_batch / std::max<int64_t>(1, s.training.micro_batch);
    if (gpus > 16 || s.model.layers > 8 || micro_batches > 4 || s.training.seq_len > 4096) return;
    const Cluster cluster(s.cluster);
    TrainingSimulationOptions options;
    options.fidelity = Fidelity::kAnalytical;
    options.representative = s.simulation.representative;
    options.allow_idle_gpus = s.simulation.allow_idle_gpus;
    options.stragglers = s.stragglers;
    const TrainingReport r = simulate_training(cluster, s.model, s.training, s.layout, options);
    // A small campaign on the step (checkpoint size and bandwidth fixed: the spec is what is fuzzed).
    if (s.campaign && s.campaign->seeds <= 20) {
      CampaignInputs in;
      in.step_time_s = r.step_time_s;
      in.tokens_per_step = static_cast<double>(s.training.global_batch * s.training.seq_len);
      in.gpus = r.gpus;
      in.nodes = cluster.node_count();
      in.nics = in.nodes;
      in.checkpoint_bytes = 1e9;
      in.storage_write_bytes_per_s = s.storage_bandwidth.value_or(1e9);
      in.storage_read_bytes_per_s = in.storage_write_bytes_per_s;
      simulate_campaign(*s.campaign, in);
    }
  });
  return 0;
}
