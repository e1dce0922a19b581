// clustersim-search-sc21 [--out FILE] [--threads N]: runs the layout search of every SC21 Table 1
// GPT row and writes docs/validation/search-sc21.md (tools/validation/search_sc21_report.h). The repository is
// found through the CLUSTERSIM_SOURCE_DIR compile definition.

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "core/error.h"
#include "tools/validation/search_sc21_report.h"
#include "tools/common/output_file.h"

int main(int argc, char** argv) {
  using namespace clustersim;
  CLI::App app{"layout search against SC21 Table 1: writes the Markdown report"};
  std::string out_path;
  int threads = 0;
  app.add_option("--out", out_path, "write the report here (default: standard output)");
  app.add_option("--threads", threads, "worker threads (default: all cores)");
  CLI11_PARSE(app, argc, argv);
  try {
    const auto rows = run_sc21_searches(CLUSTERSIM_SOURCE_DIR, threads);
    const auto figure13 = run_sc21_figure13(CLUSTERSIM_SOURCE_DIR, threads);
    for (const auto& row : rows) {
      std::cerr << row.paper.model << ": " << row.result.candidates.size() << " candidates, " << row.result.evaluated
                << " simulated in " << row.wall_s << " s\n";
    }
    write_output(out_path, "--out", std::cout,
                 [&](std::ostream& out) { write_sc21_search_report(rows, figure13, out); });
    return 0;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
}
