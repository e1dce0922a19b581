// Fuzzes the preset loaders: the first byte picks GPU, NIC, node or model preset, the rest is the
// preset file (a path, as a scenario may give one instead of a shipped name).

#include <cstddef>
#include <cstdint>

#include "scenarios/hardware_presets.h"
#include "scenarios/scenario.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  if (size == 0) return 0;
  const int kind = data[0] % 4;
  const std::string path = fuzz::write_input(data + 1, size - 1, "preset.yaml");
  static const HardwareCatalog catalog;
  fuzz::expect_loads_or_input_error([&] {
    switch (kind) {
      case 0:
        catalog.gpu(path);
        break;
      case 1:
        catalog.nic(path);
        break;
      case 2:
        catalog.node(path);
        break;
      default:
        load_model_preset(path);
        break;
    }
  });
  return 0;
}
