#pragma once

// Where the commands write their reports: a file named by a flag, or standard output.

#include <fstream>
#include <functional>
#include <ostream>
#include <string>

#include "core/error.h"

namespace clustersim {

// Runs `writer` on the file at `path`, or on `standard_output` when `path` is empty, and checks
// that every byte arrived (check_written). Throws InputError naming `flag` and the path when the
// file cannot be opened for writing or a write fails (a full disk, /dev/full).
inline void write_output(const std::string& path, const std::string& flag, std::ostream& standard_output,
                         const std::function<void(std::ostream&)>& writer) {
  if (path.empty()) {
    writer(standard_output);
    check_written(standard_output, "standard output");
    return;
  }
  std::ofstream file(path);
  if (!file) throw InputError(flag + " " + path + ": cannot open the file for writing");
  writer(file);
  check_written(file, flag + " " + path);
}

}  // namespace clustersim
