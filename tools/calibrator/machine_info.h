#pragma once

// The machine description written at the top of every raw-sample file: what a profile was
// measured on, so that `clustersim calibrate fit` and readers can tell profiles apart.

#include "tools/calibrator/raw_table.h"

namespace clustersim::calibrate {

// Describes GPU `device` and the software stack. Keys (values as text):
//   gpu_name, gpu_count, device, pci_bus_id, compute_capability, sm_count,
//   sm_clock_max_mhz, memory_clock_max_mhz, memory_bus_width_bits (cudaDeviceGetAttribute),
//   memory_total_bytes, l2_cache_bytes, ecc_enabled,
//   memory_peak_gbps_derived = 2 (double data rate) · memory clock · bus width / 8, in GB/s,
//   nvidia_smi (current clocks, power limit and temperature read through nvidia-smi, or
//   "unavailable"), driver (first line of /proc/driver/nvidia/version, or "unavailable"),
//   cuda_driver_api, cuda_runtime, cublaslt_version, nccl_version, hostname, date_utc.
// Throws DeviceError when the device cannot be queried.
Metadata describe_machine(int device);

}  // namespace clustersim::calibrate
