// Fuzzes `run --layout-from` (overrides_from_search_json) with the bytes as a search JSON file,
// taking its first ranked layout.

#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "tools/cli/search_command.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  const std::string path = fuzz::write_input(data, size, "search.json");
  fuzz::expect_loads_or_input_error([&] {
    std::string scenario;
    overrides_from_search_json(path, 1, &scenario);
  });
  return 0;
}
