#pragma once

// Test-only helpers shared by the cost_models and workloads tests (not part of the library).

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/gpu_spec.h"

namespace clustersim::testing {

// NVIDIA H200 SXM from docs/validation/published/hardware.csv (dense tensor-core peaks, HBM3e
// 4.8 TB/s, 141 GB) and the 132 SMs the driver reports (cost_models/testdata/h200_pytorch_sweep.json).
inline GpuSpec h200() {
  GpuSpec gpu;
  gpu.name = "H200-SXM-141GB";
  gpu.dense_peak = {{DataType::kBf16, FlopRate::teraflop_per_s(989)},
                    {DataType::kFp16, FlopRate::teraflop_per_s(989)},
                    {DataType::kFp8, FlopRate::teraflop_per_s(1979)},
                    {DataType::kTf32, FlopRate::teraflop_per_s(494.5)},
                    {DataType::kFp32, FlopRate::teraflop_per_s(67)}};
  gpu.hbm_capacity = Bytes::gigabytes(141);
  gpu.hbm_bandwidth = Bandwidth::gigabytes_per_s(4800);
  gpu.sm_count = 132;
  return gpu;
}

// NVIDIA H100 SXM: same SM count and peaks as the H200 (hardware.csv), HBM3 3.35 TB/s, 80 GB.
inline GpuSpec h100() {
  GpuSpec gpu = h200();
  gpu.name = "H100-SXM5-80GB";
  gpu.hbm_capacity = Bytes::gigabytes(80);
  gpu.hbm_bandwidth = Bandwidth::gigabytes_per_s(3350);
  return gpu;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Splits one CSV line into fields, honouring double quotes (RFC 4180, no embedded newlines).
inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace clustersim::testing
