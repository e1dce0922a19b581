#pragma once

#include <map>
#include <string>

#include "core/data_type.h"
#include "core/units.h"

namespace clustersim {

// Idle power (CUDA context open, no kernel) as a fraction of the power limit where a preset gives
// none: the H200's measured 123.3 W of its 700 W limit (tools/data/h200-2026-12-01-power).
inline constexpr double kDefaultIdleFractionOfLimit = 123.3 / 700.0;

// Datasheet description of one GPU model. Pure data: shared by topology/ (links, NVLink) and
// cost_models/ (compute and memory rates), which is why it lives in core/. Presets are YAML files
// under scenarios/hardware/gpus/, each number with its source.
struct GpuSpec {
  std::string name;                              // e.g. "H100-SXM5-80GB"
  std::map<DataType, FlopRate> dense_peak;       // dense tensor-core (or fp32 CUDA-core) peak per dtype
  Bytes hbm_capacity;                            // device memory as the datasheet gives it (80 GB, 141 GB)
  Bandwidth hbm_bandwidth;                       // datasheet peak device-memory bandwidth
  Bandwidth nvlink_bandwidth;                    // NVLink bandwidth per direction, all links together
  int nvlink_links = 0;                          // number of NVLink links (0: no NVLink)
  int sm_count = 0;                              // streaming multiprocessors
  bool supports_nvls = false;                    // NVLink SHARP (in-switch reduction): H100 and later
  // Board power limit (TDP) from the datasheet and the board's power with a CUDA context open and
  // nothing running (measured on the H200; derived from the limit elsewhere, see the presets).
  // Zero: not given; the power model is then off for this GPU (cost_models/power_model.h).
  Power power_limit;
  Power idle_power;

  // Dense peak for `type`. Throws InputError naming the GPU and dtype if the datasheet gives none.
  FlopRate peak(DataType type) const;
};

}  // namespace clustersim
