#pragma once

// The shipped search scenarios, shared by the search tests (not part of the library).

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace clustersim::testing {

// Paths of scenarios/search/*.yaml under the source tree, sorted.
inline std::vector<std::string> search_scenarios() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/search")) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace clustersim::testing
