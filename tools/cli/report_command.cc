#include "tools/cli/report_command.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/error.h"
#include "core/excerpt.h"
#include "tools/cli/html_report.h"
#include "tools/cli/run_command.h"
#include "tools/cli/search_command.h"
#include "tools/common/output_file.h"

namespace clustersim {

int report_command(const ReportOptions& options, std::ostream& messages) {
  if (options.out.empty()) throw InputError("--out: empty path; give the HTML file to write, e.g. --out report.html");
  check_atomic_output(options.out, "--out", "report.html");  // renamed into place: no device or pipe
  std::error_code same_error;
  if (std::filesystem::equivalent(options.out, options.scenario, same_error)) {
    throw InputError(fmt::format("--out {}: that is the scenario file; give another path", excerpt(options.out, 200)));
  }
  HtmlReportSource source;
  source.scenario_path = options.scenario;
  source.sets = options.sets;
  source.command_line = options.command_line;
  {
    std::ifstream in(options.scenario, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    source.scenario_text = text.str();
  }

  std::function<void(std::ostream&)> writer;
  std::optional<RunOutcome> run;
  std::optional<SearchOutcome> searched;
  if (options.search) {
    SearchCommandOptions search;
    search.scenario = options.scenario;
    search.sets = options.sets;
    search.threads = options.threads;
    SingleProcess partition;
    searched.emplace(run_search(search, partition));
    writer = [&](std::ostream& out) {
      write_search_html(searched->prepared.scenario, searched->result, searched->top, searched->wall_s, source, out);
    };
  } else {
    RunOptions run_options;
    run_options.scenario = options.scenario;
    run_options.sets = options.sets;
    run_options.record_trace = true;
    run_options.progress = true;  // the estimate and progress of a long step, as `run`
    run.emplace(simulate_run(run_options));
    writer = [&](std::ostream& out) { write_run_html(run->report, run->context(), source, out); };
  }
  write_output_atomically(options.out, "--out", writer);
  std::error_code size_error;
  const auto bytes = std::filesystem::file_size(options.out, size_error);
  messages << fmt::format("wrote {} ({} bytes)\n", options.out, size_error ? 0 : bytes);
  return 0;
}

}  // namespace clustersim
