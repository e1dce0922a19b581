// Fuzzes the CSV reader and the published-runs table (tools/validation/csv_table.h, tools/validation/published_run.h)
// with the bytes as a CSV file. Only reading: building and simulating each row is the validation's
// own test.

#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "tools/validation/csv_table.h"
#include "tools/validation/published_run.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_loads_or_input_error([&] { CsvTable::parse(text, "fuzz.csv", "measurements"); });
  const std::string path = fuzz::write_input(data, size, "runs.csv");
  fuzz::expect_loads_or_input_error([&] { read_published_runs(path); });
  return 0;
}
