#pragma once

// Runs the clustersim binary of the build (CLUSTERSIM_BINARY, a compile definition) as a user
// would, for the CLI tests: the command line through the shell, standard output and error
// together.

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace clustersim::cli_test {

struct Result {
  int exit_code = -1;   // -1 when the process did not exit normally
  std::string output;  // stdout and stderr
};

// `args` after the binary's path, as a shell would split them.
inline Result run(const std::string& args) {
  const std::string command = std::string(CLUSTERSIM_BINARY) + " " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) r.output += buffer.data();
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace clustersim::cli_test
