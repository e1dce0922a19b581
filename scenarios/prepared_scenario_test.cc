#include "scenarios/prepared_scenario.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace clustersim {
namespace prepared_scenario_test {

std::string message_of(const std::string& name_or_path) {
  try {
    resolve_profile_path(name_or_path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A shipped name resolves to scenarios/profiles/NAME.json; a path that does not exist is a file
// not found, and both messages list the shipped profiles, not the files beside the given path.
TEST(PreparedScenario, ResolvesShippedProfileNamesAndPaths) {
  EXPECT_NE(resolve_profile_path("h200-2026-11-29").find("profiles/h200-2026-11-29.json"), std::string::npos);
  const std::string missing_name = message_of("h200-2099");
  EXPECT_NE(missing_name.find("calibration profile name \"h200-2099\" not found; shipped profiles: h200-2026-11-29"),
            std::string::npos)
      << missing_name;
  const std::string missing_file = message_of("/nonexistent-folder/profile.json");
  EXPECT_NE(missing_file.find("calibration profile file \"/nonexistent-folder/profile.json\" not found; shipped "
                              "profiles: h200-2026-11-29"),
            std::string::npos)
      << missing_file;
  // An absolute path without .json is not completed to a shipped-profile lookup beside it.
  EXPECT_NE(message_of(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/profiles/h200-2026-11-29")
                .find("calibration profile file"),
            std::string::npos);
}

}  // namespace prepared_scenario_test
}  // namespace clustersim
