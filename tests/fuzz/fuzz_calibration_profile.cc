// Fuzzes the calibration profile reader (cost_models/calibration_profile.h) and, where the profile
// holds collective fits, the collective profile reader (collectives/collective_profile.h).

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/collective_profile.h"
#include "cost_models/calibration_profile.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_loads_or_input_error([&] {
    const CalibrationProfile profile = parse_calibration_profile(text, "fuzz.json");
    if (!profile.collectives_json.empty()) parse_collective_profile(profile.collectives_json);
  });
  return 0;
}
