// clustersim-collective-validation [--csv PATH] [--data-dir DIR] [--out PATH]
// Writes docs/validation/collectives.md (or PATH) comparing simulated collectives with the
// published measurements. Exit codes: 0 ok, 2 bad input, 1 internal error.

#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "core/error.h"
#include "scenarios/hardware_presets.h"
#include "tools/collective_validation.h"

int main(int argc, char** argv) {
  std::string csv = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/published/collectives.csv";
  std::string data_dir = clustersim::default_data_dir();
  std::string out = std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/validation/collectives.md";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 < argc && flag == "--csv") {
      csv = argv[++i];
    } else if (i + 1 < argc && flag == "--data-dir") {
      data_dir = argv[++i];
    } else if (i + 1 < argc && flag == "--out") {
      out = argv[++i];
    } else {
      std::cerr << "unknown argument \"" << flag << "\"; valid: --csv PATH, --data-dir DIR, --out PATH\n";
      return 2;
    }
  }
  try {
    const auto validation = clustersim::validate_collectives(csv, data_dir);
    std::ofstream file(out);
    if (!file) {
      std::cerr << "cannot write \"" << out << "\"\n";
      return 2;
    }
    clustersim::write_collective_validation(validation, file);
    std::cout << "wrote " << out << ": median |error| " << 100 * validation.median_error_large << " % over "
              << validation.large_rows << " rows >= 64 MiB, " << validation.compared_rows << " rows compared\n";
    return 0;
  } catch (const clustersim::InputError& error) {
    std::cerr << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "internal error: " << error.what() << "\n";
    return 1;
  }
}
