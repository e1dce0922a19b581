#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace clustersim {

// Numeric formats of tensors and of the GPU math units that process them.
// tf32 is an fp32 storage format computed on tensor cores at reduced mantissa precision.
enum class DataType { kFp32, kTf32, kBf16, kFp16, kFp8 };

// Storage size of one element in bytes: fp32/tf32 4, bf16/fp16 2, fp8 (e4m3/e5m2) 1.
int64_t bytes_per_element(DataType type);

// "fp32", "tf32", "bf16", "fp16", "fp8".
std::string_view name_of(DataType type);

// Parses the names above (case-sensitive). Throws InputError naming the text and the valid names.
DataType parse_data_type(std::string_view text);

}  // namespace clustersim
