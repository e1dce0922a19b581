// The power model against the measured training steps of one H200: average board power
// and energy per step of the reference steps gpt-350m, gpt-1.3b and llama-7b-2k, simulated from
// their scenarios (scenarios/reference/h200-*.yaml, profile h200-2026-11-29) with
// simulation.power_model on. Measured: tools/data/h200-2026-12-01-power/README.md,
// "Training steps (run2)" (NVML energy counter over 78–131 timed steps).

#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include <cmath>
#include <string>

#include "parallelism/training_simulation.h"
#include "scenarios/scenario.h"
#include "tools/cli/run_command.h"

namespace clustersim {
namespace power_reference_steps_test {

struct MeasuredStep {
  const char* scenario;
  double step_ms;  // median of the timed steps
  double avg_w;
  double joules_per_step;
};

constexpr MeasuredStep kSteps[] = {
    {"h200-gpt-350m.yaml", 151.5, 650.5, 98.7},
    {"h200-gpt-1.3b.yaml", 195.1, 673.7, 131.6},
    {"h200-llama-7b-2k.yaml", 258.6, 688.7, 178.1},
};

// The targets: average power within 5 %, energy per step within 10 %. On 2026-12-02, with
// the profile's GEMM and attention rates taken as sustained rates and undone to full clock
// (ComputeCostModel::set_power_governed): gpt-350m +3.4 % / +6.8 %, gpt-1.3b +1.3 % / +3.3 %,
// llama-7b-2k -1.8 % / -3.7 % (before that, energy +11.7 % and +11.1 %: the step times were 6–8 %
// long). PowerModel::kRateShare was chosen between 0 (all steps at the held 691 W, 20 % too slow)
// and 1 (520–650 W, no slowdown) after seeing these three steps: this test is not independent of it.
constexpr double kPowerTolerance = 0.05;
constexpr double kEnergyTolerance = 0.10;

class ReferenceStepPower : public ::testing::TestWithParam<MeasuredStep> {};

TEST_P(ReferenceStepPower, AveragePowerAndEnergyMatchTheMeasurement) {
  const MeasuredStep& m = GetParam();
  const Scenario s = load_scenario(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/reference/" + m.scenario,
                                   {Override{"simulation.power_model", "true"}});  // auto would, too
  const Cluster cluster(s.cluster);
  const ScenarioProfiles profiles = load_scenario_profiles(s.calibration, cluster.node_spec(0).gpu.name, "");
  TrainingSimulationOptions o;
  o.compute_profile = profiles.compute ? &*profiles.compute : nullptr;
  o.collective_profile = profiles.collectives ? &*profiles.collectives : nullptr;
  o.power_model = true;
  const TrainingReport r = simulate_training(cluster, s.model, s.training, s.layout, o);
  ASSERT_TRUE(r.energy.modelled);
  const double power_error = r.energy.avg_power_w / m.avg_w - 1;
  const double energy_error = r.energy.joules_per_step / m.joules_per_step - 1;
  RecordProperty("step_ms", std::to_string(r.step_time_s * 1e3));
  RecordProperty("avg_power_w", std::to_string(r.energy.avg_power_w));
  RecordProperty("joules_per_step", std::to_string(r.energy.joules_per_step));
  std::printf("%s: step %.1f ms (measured %.1f), %.1f W (measured %.1f, %+.1f %%), %.1f J (measured %.1f, %+.1f %%), "
              "rate factor %.3f\n",
              m.scenario, r.step_time_s * 1e3, m.step_ms, r.energy.avg_power_w, m.avg_w, 100 * power_error,
              r.energy.joules_per_step, m.joules_per_step, 100 * energy_error, r.energy.rate_factor);
  EXPECT_LE(std::abs(power_error), kPowerTolerance);
  EXPECT_LE(std::abs(energy_error), kEnergyTolerance);
}

// Named by the scenario: "h200_gpt_350m" rather than gtest's bytes of the struct.
std::string step_name(const ::testing::TestParamInfo<MeasuredStep>& info) {
  std::string name = info.param.scenario;
  name = name.substr(0, name.find(".yaml"));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(H200, ReferenceStepPower, ::testing::ValuesIn(kSteps), step_name);

}  // namespace power_reference_steps_test
}  // namespace clustersim
