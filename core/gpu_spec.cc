#include "core/gpu_spec.h"

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

FlopRate GpuSpec::peak(DataType type) const {
  auto it = dense_peak.find(type);
  if (it == dense_peak.end()) {
    throw InputError(fmt::format("GPU \"{}\" has no dense {} peak in its specification; add dense_peak.{} to its "
                                 "hardware file (scenarios/hardware/gpus/ or the cluster's own) or train in a dtype "
                                 "it lists",
                                 name, name_of(type), name_of(type)));
  }
  return it->second;
}

}  // namespace clustersim
