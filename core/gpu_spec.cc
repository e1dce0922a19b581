#include "core/gpu_spec.h"

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

FlopRate GpuSpec::peak(DataType type) const {
  auto it = dense_peak.find(type);
  if (it == dense_peak.end()) {
    throw InputError(fmt::format("GPU \"{}\" has no dense {} peak in its specification", name, name_of(type)));
  }
  return it->second;
}

}  // namespace clustersim
