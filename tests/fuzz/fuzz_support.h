#pragma once

// Shared by the fuzz harnesses of tests/fuzz/ (docs/development.md says how to run them).
//
// A harness feeds one input to one loader and accepts exactly two outcomes: the loader returns,
// or it throws InputError (bad input, exit code 2 in the CLI). Anything else — another exception,
// a crash, a sanitizer report, a hang or memory above libFuzzer's -rss_limit_mb — is a finding.
// An InputError whose message was cut by InputError itself (longer than kMaxInputErrorBytes,
// core/error.h) is a finding too: messages name the file, line and key and cut the values they
// quote where they quote them.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <unistd.h>

#include "core/error.h"

namespace clustersim::fuzz {

// A file holding the current input, for loaders that read paths. One per process, rewritten per
// input, under the system's temporary directory; `name` keeps the extension the loader expects.
// The folder is removed when the process exits normally (a run's fixed number of executions).
struct FuzzTempDir {
  std::filesystem::path path;
  ~FuzzTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
inline std::string write_input(const std::uint8_t* data, std::size_t size, const std::string& name) {
  static const FuzzTempDir dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("clustersim-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return FuzzTempDir{d};
  }();
  const auto path = (dir.path / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// Runs `load`; returns normally for success or InputError, aborts (a finding) for anything else.
template <typename F>
void expect_loads_or_input_error(F&& load) {
  try {
    load();
  } catch (const InputError& e) {
    if (e.cut()) {
      std::fprintf(stderr, "InputError message longer than %zu bytes (cut by InputError): %.300s...\n",
                   kMaxInputErrorBytes, e.what());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "not an InputError: %s\n", e.what());
    std::abort();
  }
}

}  // namespace clustersim::fuzz
