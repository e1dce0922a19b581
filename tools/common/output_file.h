#pragma once

// Where the commands write their reports: a file named by a flag, or standard output.

#include <stdlib.h>
#include <sys/stat.h>
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
// not writable, or the file exists and is not writable. A file that does not exist yet is probed
// by creating and removing a temporary file in its folder (access(2) says yes to root in /proc and
// /sys, where nothing can be created); nothing is left behind.
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
  if (!exists) {
    std::string probe = (folder / ".clustersim-probe-XXXXXX").string();
    const int fd = mkstemp(probe.data());
    if (fd < 0) {
      throw InputError(flag + " " + shown + ": cannot create a file in its folder " + excerpt(folder.string(), 200));
    }
    close(fd);
    unlink(probe.c_str());
  }
}

// check_writable_output for a file written whole through write_output_atomically, which renames a
// temporary file over `path`: also InputError when `path` exists and is not a regular file (a
// device such as /dev/full, a pipe), which the rename would replace instead of writing.
inline void check_atomic_output(const std::string& path, const std::string& flag, const std::string& example_name) {
  check_writable_output(path, flag, example_name);
  std::error_code error;
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error)) {
    throw InputError(flag + " " + excerpt(path, 200) + ": not a regular file; give the path of a file to write, e.g. " +
                     example_name);
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

// Runs `writer` on a temporary file beside `path` (`path`.tmp-XXXXXX, created by mkstemp) and
// renames it to `path` once every byte arrived, so that `path` is either the whole output or left as
// it was. Throws InputError naming `flag` and the path when the temporary file cannot be created, a
// write fails (a full disk) or the rename fails, and, before writing, when `path` exists and is not
// a regular file (the rename would replace a device or a pipe); the temporary file is removed on
// every error, also when `writer` throws.
inline void write_output_atomically(const std::string& path, const std::string& flag,
                                    const std::function<void(std::ostream&)>& writer) {
  const std::string shown = excerpt(path, 200);
  std::error_code kind_error;
  if (std::filesystem::exists(path, kind_error) && !std::filesystem::is_regular_file(path, kind_error)) {
    throw InputError(flag + " " + shown + ": not a regular file; the output would replace it, not be written to it");
  }
  std::string temporary = path + ".tmp-XXXXXX";
  const int fd = mkstemp(temporary.data());
  if (fd < 0) throw InputError(flag + " " + shown + ": cannot create a file in its folder");
  // mkstemp's 0600 would outlive the rename: give the file the mode a plain open would.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  close(fd);
  try {
    {
      std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
      if (!file) throw InputError(flag + " " + shown + ": cannot open the file for writing");
      writer(file);
      file.flush();
      check_written(file, flag + " " + shown);
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) throw InputError(flag + " " + shown + ": cannot replace the file (" + error.message() + ")");
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
}

}  // namespace clustersim
