// The clustersim command line: one subcommand per job. Exit codes: 0 ok, 2 bad input (the message
// names file, line, column and key where there is one), 1 internal error.

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "core/error.h"
#include "scenarios/hardware_presets.h"
#include "scenarios/scenario.h"
#include "tools/calibrate_shapes.h"
#include "tools/run_command.h"

int main(int argc, char** argv) {
  using namespace clustersim;
  CLI::App app{"clustersim: simulate distributed training on GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "clustersim 0.1.0");

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "simulate one training step of a scenario");
  run_cmd->add_option("scenario", run.scenario, "scenario YAML file")->required()->check(CLI::ExistingFile);
  run_cmd->add_option("--set", run.sets, "override a key: a.b=value (repeatable)");
  run_cmd->add_flag("--json", run.json, "print JSON instead of the summary");
  run_cmd->add_option("--trace", run.trace, "write a Chrome trace-event JSON file (open in Perfetto)");
  run_cmd->add_flag("--reproducible", run.reproducible, "report sim.wall_s as 0 (byte-identical output)");

  std::string help_kind = "scenario";
  CLI::App* help_cmd = app.add_subcommand("help-config", "print every key of a file kind with type, unit, default");
  help_cmd->add_option("kind", help_kind, "scenario | model | gpu | nic | node")
      ->check(CLI::IsMember({"scenario", "model", "gpu", "nic", "node"}));

  CLI::App* calibrate_cmd = app.add_subcommand("calibrate", "calibration helpers");
  calibrate_cmd->require_subcommand(1);
  std::vector<std::string> shape_scenarios;
  std::string shapes_out;
  CLI::App* shapes_cmd =
      calibrate_cmd->add_subcommand("shapes", "write the GEMM shapes of scenarios for clustersim-calibrate --shapes");
  shapes_cmd->add_option("scenarios", shape_scenarios, "scenario files")->required()->check(CLI::ExistingFile);
  shapes_cmd->add_option("--out", shapes_out, "output file (default: standard output)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  try {
    if (run_cmd->parsed()) return run_command(run, std::cout);
    if (shapes_cmd->parsed()) {
      if (shapes_out.empty()) {
        write_calibration_shapes(shape_scenarios, std::cout);
      } else {
        std::ofstream file(shapes_out);
        if (!file) throw InputError("--out " + shapes_out + ": cannot open the file for writing");
        write_calibration_shapes(shape_scenarios, file);
      }
      return 0;
    }
    if (help_cmd->parsed()) {
      if (help_kind == "scenario") scenario_schema().print(std::cout);
      if (help_kind == "model") model_preset_schema().print(std::cout);
      if (help_kind == "gpu") HardwareCatalog::gpu_schema().print(std::cout);
      if (help_kind == "nic") HardwareCatalog::nic_schema().print(std::cout);
      if (help_kind == "node") HardwareCatalog::node_schema().print(std::cout);
      return 0;
    }
    return 0;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const InternalError& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
}
