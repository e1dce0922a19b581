#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "cost_models/attention_predictor.h"
#include "cost_models/gemm_shape.h"
#include "cost_models/memory_access.h"

namespace clustersim {

// The machine a profile was measured on, as the calibrator records it.
struct MachineDescription {
  std::string gpu;           // device name as the driver reports it, e.g. "NVIDIA H200"
  int sm_count = 0;          // streaming multiprocessors
  int sm_clock_mhz = 0;      // maximum SM clock
  int memory_clock_mhz = 0;  // maximum memory clock
  std::string driver;        // e.g. "580.159.04"
  std::string cuda;          // CUDA runtime version
  std::string cublas;        // cuBLAS version
  std::string nccl;          // NCCL version
  std::string date;          // ISO date of the measurement
  std::string method;        // how the samples were taken (tool, timing method)
};

// One measured GEMM: its shape and the kernel duration, i.e. the time from the start of one kernel to
// the start of the next when identical kernels run back to back (replayed in a CUDA graph, so CPU
// launch cost is excluded but the GPU's inter-kernel gap is included).
struct GemmSample {
  GemmShape shape;
  Duration time;
  double tflops() const { return shape.flops() / time.to_seconds() * 1e-12; }
};

// Host costs measured on the machine of a profile (workloads/host_costs.h gives their meaning and
// the defaults): the CPU thread's time per call, each at least zero.
struct ProfileHostCosts {
  Duration elementwise, gemm, megatron_gemm, library, backward_elementwise, backward_gemm, optimizer_per_tensor,
      collective, sync, graph_node;
  std::string source;  // where they were measured
  // The keys of the JSON section, in order, with their fields.
  static constexpr const char* kKeys[] = {"elementwise",  "gemm",  "megatron_gemm",
                                          "library",      "backward_elementwise", "backward_gemm",
                                          "optimizer_per_tensor", "collective", "sync", "graph_node"};
  Duration* field(size_t i) {
    Duration* fields[] = {&elementwise, &gemm, &megatron_gemm, &library, &backward_elementwise, &backward_gemm,
                          &optimizer_per_tensor, &collective, &sync, &graph_node};
    return fields[i];
  }
};

// One kernel class of a profile's power measurements (cost_models/power_model.h): a sustained run
// of it on an otherwise idle GPU.
struct ProfilePowerClass {
  double full_rate = 0;      // FLOP/s (GEMMs, attention: the FLOPs the kernel executes) or bytes/s
                             // (copy: read + written) at full clock, the run's first milliseconds
  double settled_ratio = 0;  // settled rate / full_rate, in (0, 1] (1: never capped)
  Power settled_power;       // board power of the settled run
};

// The power measurements of a profile's GPU (section `power`, every key but `source` required):
// what cost_models/power_model.h derives its parameters from. Measured as
// tools/data/h200-2026-12-01-power/README.md describes (tools/reference/power_clock.py).
struct ProfilePower {
  std::string source;         // where they were measured
  Power power_limit;          // the enforced limit during the measurement
  Power idle_power;           // CUDA context open, nothing running
  Power held_power;           // the board power capped runs settle at (<= power_limit)
  Duration window;            // the governor's averaging time constant
  double memory_clock_share = 0;  // share of a memory-bound kernel's time that follows the clock, [0, 1]
  ProfilePowerClass gemm_bf16, gemm_fp8, gemm_tf32, gemm_fp32, attention, copy;
  // The keys of the class sub-sections, in order, with their fields.
  static constexpr const char* kClassKeys[] = {"gemm_bf16", "gemm_fp8", "gemm_tf32", "gemm_fp32", "attention", "copy"};
  ProfilePowerClass* power_class(size_t i) {
    ProfilePowerClass* c[] = {&gemm_bf16, &gemm_fp8, &gemm_tf32, &gemm_fp32, &attention, &copy};
    return c[i];
  }
  const ProfilePowerClass* power_class(size_t i) const { return const_cast<ProfilePower*>(this)->power_class(i); }
};

// A calibration profile: measurements of one GPU model that replace the datasheet defaults of
// ComputeCostModel. The JSON format is documented in cost_models/calibration_profile.md.
struct CalibrationProfile {
  std::string name;
  MachineDescription machine;
  std::vector<GemmSample> gemm_samples;
  // Device-to-device copy rate counting bytes read plus bytes written.
  std::optional<Bandwidth> copy_bandwidth;
  // Measured rates of framework kernels by memory-access kind (cost_models/memory_access.h),
  // counting bytes read plus bytes written; kinds absent here use their default fraction of the
  // copy rate.
  std::map<MemoryAccess, Bandwidth> kernel_bandwidths;
  // Measured fused attention kernels (forward and backward time per shape).
  std::vector<AttentionSample> attention_samples;
  // Interval at which the CPU issues eager kernels (framework dispatch + cudaLaunchKernel).
  std::optional<Duration> launch_eager;
  // Gap between consecutive kernels replayed from a CUDA graph.
  std::optional<Duration> launch_graph;
  // The host thread's costs on the profile's machine (section `host_costs`, every key required).
  std::optional<ProfileHostCosts> host_costs;
  // The GPU's power measurements (section `power`); without them the power model uses its defaults.
  std::optional<ProfilePower> power;
  // Collective fits of the calibration tool chain, kept verbatim (JSON text, "" when absent); their
  // schema belongs to collectives/.
  std::string collectives_json;
};

// Parses a profile from JSON text. `source` names the file in error messages. Throws InputError
// naming the source, the key and what is valid for malformed JSON, a wrong format tag or version,
// unknown keys, missing required keys, non-positive dimensions or durations, unit-less values, and
// a host_costs section missing a key or holding a negative time, and a power section missing a key,
// with a negative or non-finite value, an idle power at or above the held power, a held power above
// the limit or a settled ratio outside (0, 1].
CalibrationProfile parse_calibration_profile(std::string_view json_text, std::string_view source);
// Parses a profile's `power` section given on its own (a JSON object, as in a profile), with the
// same checks. Throws InputError naming `source` and the key.
ProfilePower parse_profile_power(std::string_view json_text, std::string_view source);
// Reads and parses a file. Throws InputError if it cannot be read.
CalibrationProfile load_calibration_profile(const std::string& path);
// Serialises to the documented JSON format; parse_calibration_profile(to_json(p)) == p up to the
// picosecond (durations are written in µs with 6 decimals).
std::string to_json(const CalibrationProfile& profile);
// Writes to_json(profile) to `path`. Throws InputError if the file cannot be written.
void save_calibration_profile(const CalibrationProfile& profile, const std::string& path);

}  // namespace clustersim
