// clustersim-layout-report SCENARIO [--out FILE] [--threads N]: the layout search of a scenario and
// why its best layout wins, as Markdown (tools/validation/layout_report.h).

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "core/error.h"
#include "tools/validation/layout_report.h"
#include "tools/common/output_file.h"

int main(int argc, char** argv) {
  using namespace clustersim;
  CLI::App app{"layout search report: the best layouts of a scenario's search and why the best wins"};
  LayoutReportOptions options;
  std::string out_path;
  app.add_option("scenario", options.scenario, "scenario file with a search: section")->required();
  app.add_option("--out", out_path, "write the report here (default: standard output)");
  app.add_option("--threads", options.threads, "worker threads (default: all cores)");
  CLI11_PARSE(app, argc, argv);
  options.command = "clustersim-layout-report " + options.scenario + (out_path.empty() ? "" : " --out " + out_path);
  try {
    write_output(out_path, "--out", std::cout, [&](std::ostream& out) { write_layout_report(options, out); });
    return 0;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
}
