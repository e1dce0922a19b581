#include "core/data_type.h"

#include <array>
#include <fmt/format.h>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {

namespace {
struct DataTypeEntry {
  DataType type;
  std::string_view name;
  int64_t bytes;
};
constexpr std::array kDataTypes{
    DataTypeEntry{DataType::kFp32, "fp32", 4}, DataTypeEntry{DataType::kTf32, "tf32", 4},
    DataTypeEntry{DataType::kBf16, "bf16", 2}, DataTypeEntry{DataType::kFp16, "fp16", 2},
    DataTypeEntry{DataType::kFp8, "fp8", 1},
};

const DataTypeEntry& entry_of(DataType type) {
  for (const auto& e : kDataTypes) {
    if (e.type == type) return e;
  }
  throw InternalError("unknown DataType value");
}
}  // namespace

int64_t bytes_per_element(DataType type) { return entry_of(type).bytes; }

std::string_view name_of(DataType type) { return entry_of(type).name; }

DataType parse_data_type(std::string_view text) {
  for (const auto& e : kDataTypes) {
    if (e.name == text) return e.type;
  }
  throw InputError(fmt::format("unknown data type \"{}\" (valid: fp32, tf32, bf16, fp16, fp8)", excerpt(text)));
}

}  // namespace clustersim
