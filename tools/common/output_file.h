#pragma once

// Where the commands write their reports: a file named by a flag, or standard output.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <system_error>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {

// Checks, before any work, that the file at `path` can be written: throws InputError naming `flag`
// and the path when it is a directory (suggesting `path`/`example_name`), its folder is missing or
// not writable, or the file exists and is not writable. Creates nothing.
inline void check_writable_output(const std::string& path, const std::string& flag, const std::string& example_name) {
  namespace fs = std::filesystem;
  std::error_code error;
  const std::string shown = excerpt(path, 200);
  if (fs::is_directory(path, error)) {
    throw InputError(flag + " " + shown + ": is a directory; give a file path, e.g. " + shown + "/" + example_name);
  }
  const fs::path folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(folder, error)) {
    throw InputError(flag + " " + shown + ": the folder " + excerpt(folder.string(), 200) + " does not exist");
  }
  const bool exists = fs::exists(path, error);
  if (access(exists ? path.c_str() : folder.c_str(), W_OK) != 0) {
    throw InputError(flag + " " + shown + ": " + (exists ? "the file" : "its folder") + " is not writable");
  }
}

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
