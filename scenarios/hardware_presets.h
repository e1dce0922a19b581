#pragma once

// Hardware presets: YAML files under <data dir>/hardware/{gpus,nics,nodes}/<name>.yaml, each
// number with a comment naming its source (scenarios/hardware/README.md lists the keys). A name
// that contains '/' or ends in ".yaml" is read as a file path instead.

#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "scenarios/schema.h"
#include "topology/specs.h"

namespace clustersim {

// A node's GPUs (a node preset's gpus and nics): at most 1,024, far above the largest NVLink domain
// built as one system (NVIDIA GB200 NVL72: 72 GPUs).
inline constexpr int kMaxNodeGpus = 1'024;

// The directory holding hardware/ and models/: $CLUSTERSIM_DATA_DIR if set, else the source
// tree's scenarios/ folder (compiled in).
std::string default_data_dir();

class HardwareCatalog {
 public:
  explicit HardwareCatalog(std::string data_dir = default_data_dir());

  // Each throws InputError for an unknown name (listing the available presets) or an invalid file
  // (file:line:column: key: why).
  GpuSpec gpu(const std::string& name) const;
  NicSpec nic(const std::string& name) const;
  NodeSpec node(const std::string& name) const;

  // Preset names available for "gpus", "nics" or "nodes", sorted.
  std::vector<std::string> names(const std::string& kind) const;

  static const Schema& gpu_schema();
  static const Schema& nic_schema();
  static const Schema& node_schema();

 private:
  std::string path_of(const std::string& kind, const std::string& name) const;
  std::string data_dir_;
};

}  // namespace clustersim
