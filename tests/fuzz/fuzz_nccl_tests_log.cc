// Fuzzes the nccl-tests log reader (tools/calibration/nccl_tests_log.h) with the bytes as a log.

#include <cstddef>
#include <cstdint>
#include <sstream>

#include "tests/fuzz/fuzz_support.h"
#include "tools/calibration/nccl_tests_log.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace clustersim;
  fuzz::expect_loads_or_input_error([&] {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    parse_nccl_tests_log(in, "fuzz.log");
  });
  return 0;
}
