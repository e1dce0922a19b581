#include "tools/calibrator/machine_info.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <fstream>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "tools/calibrator/device_error.h"
#include "tools/calibrator/sample_stats.h"

namespace clustersim::calibrate {

namespace {

int attribute(cudaDeviceAttr attr, int device, const char* what) {
  int value = 0;
  check_cuda(cudaDeviceGetAttribute(&value, attr, device), what);
  return value;
}

// CUDA encodes versions as 1000·major + 10·minor.
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string trim(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string driver_line() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line)) return "unavailable";
  return trim(line);
}

// Current clocks, power limit and temperature, read-only through nvidia-smi (no settings change).
std::string nvidia_smi_state(const std::string& pci_bus_id) {
  const std::string command =
      "nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu,pstate "
      "--format=csv,noheader -i " + pci_bus_id + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "unavailable";
  std::array<char, 512> buffer{};
  std::string output;
  while (fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) output += buffer.data();
  const int status = pclose(pipe);
  output = trim(output);
  if (status != 0 || output.empty()) return "unavailable";
  for (char& c : output) {
    if (c == '\n' || c == '\r') c = ';';
  }
  return "sm " + output.substr(0, output.find(',')) + " (" + output + ": clocks.sm, clocks.max.sm, clocks.mem, "
         "power.limit, temperature.gpu, pstate)";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace

Metadata describe_machine(int device) {
  int count = 0;
  check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  char pci[32] = {};
  check_cuda(cudaDeviceGetPCIBusId(pci, sizeof pci, device), "cudaDeviceGetPCIBusId");
  const int sm_clock_khz = attribute(cudaDevAttrClockRate, device, "clock rate");
  const int mem_clock_khz = attribute(cudaDevAttrMemoryClockRate, device, "memory clock rate");
  const int bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, device, "memory bus width");
  const int ecc = attribute(cudaDevAttrEccEnabled, device, "ECC");
  int driver_api = 0;
  int runtime = 0;
  check_cuda(cudaDriverGetVersion(&driver_api), "cudaDriverGetVersion");
  check_cuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  int nccl = 0;
  check_nccl(ncclGetVersion(&nccl), "ncclGetVersion");
  const size_t lt = cublasLtGetVersion();  // 10000·major + 100·minor + patch
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  // Double data rate: two transfers per memory clock, bus_bits / 8 bytes each.
  const double peak_gbps = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) * 1e-9;
  return {
      {"gpu_name", prop.name},
      {"gpu_count", std::to_string(count)},
      {"device", std::to_string(device)},
      {"pci_bus_id", pci},
      {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
      {"sm_count", std::to_string(prop.multiProcessorCount)},
      {"sm_clock_max_mhz", std::to_string(sm_clock_khz / 1000)},
      {"memory_clock_max_mhz", std::to_string(mem_clock_khz / 1000)},
      {"memory_bus_width_bits", std::to_string(bus_bits)},
      {"memory_total_bytes", std::to_string(prop.totalGlobalMem)},
      {"memory_peak_gbps_derived", format_number(peak_gbps, 5)},
      {"l2_cache_bytes", std::to_string(prop.l2CacheSize)},
      {"ecc_enabled", ecc ? "yes" : "no"},
      {"nvidia_smi", nvidia_smi_state(pci)},
      {"driver", driver_line()},
      {"cuda_driver_api", cuda_version_text(driver_api)},
      {"cuda_runtime", cuda_version_text(runtime)},
      {"cublaslt_version", std::to_string(lt / 10000) + "." + std::to_string(lt % 10000 / 100) + "." +
                               std::to_string(lt % 100)},
      {"nccl_version", std::to_string(nccl / 10000) + "." + std::to_string(nccl % 10000 / 100) + "." +
                           std::to_string(nccl % 100)},
      {"hostname", host},
      {"date_utc", utc_now()},
  };
}

}  // namespace clustersim::calibrate
