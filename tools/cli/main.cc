// The clustersim command line: one subcommand per job. Exit codes: 0 ok, 2 bad input (the message
// names file, line, column and key where there is one, or the flag), 1 internal error, 3 `validate
// --calibration` found a target of its Summary (docs/validation/calibration.md) missed (its report
// is written anyway).
// README.md ("Exit codes") and `clustersim validate --help` list the same.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "core/error.h"
#include "core/suggest.h"
#include "scenarios/hardware_presets.h"
#include "scenarios/scenario.h"
#include "tools/calibration/calibrate_fit.h"
#include "tools/calibration/calibrate_shapes.h"
#include "tools/cli/collective_command.h"
#include "tools/validation/collective_validation.h"
#include "tools/cli/input_error_message.h"
#include "tools/cli/report_command.h"
#include "tools/cli/run_command.h"
#include "tools/cli/shell_line.h"
#include "tools/common/output_file.h"
#include "tools/validation/validate_runs.h"
#include "tools/cli/search_command.h"
#include "tools/validation/validate_calibration.h"

namespace {

// For each `--flag` (or `--flag=value`) on the command line of subcommand argv[1] that the
// subcommand does not have, the nearest flag it has (core/suggest.h), as "; --sett: did you mean
// --set?"; "" when none is near.
std::string unknown_flag_hint(CLI::App& app, int argc, char** argv) {
  CLI::App* command = nullptr;
  try {
    command = app.get_subcommand(argv[1]);
  } catch (const CLI::OptionNotFound&) {
    return "";
  }
  std::vector<std::string> flags;
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
  }
  std::string hint;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.starts_with("--") || arg == "--") continue;
    const std::string flag = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    const std::string near = clustersim::closest_match(flag, flags);
    if (!near.empty()) hint += fmt::format("; {}: did you mean {}?", flag, near);
  }
  return hint;
}

}  // namespace

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
  const auto non_empty_path = [](const std::string& value) {
    return value.empty() ? std::string("empty path; give the path of the file to write") : std::string();
  };
  run_cmd->add_option("--trace", run.trace, "write a Chrome trace-event JSON file (open in Perfetto)")
      ->check(non_empty_path);
  run_cmd->add_flag("--reproducible", run.reproducible, "report sim.wall_s as 0 (byte-identical output)");
  bool run_no_progress = false;
  bool run_quiet = false;
  run_cmd->add_flag("--no-progress", run_no_progress,
                    "no estimate and no progress on standard error (a bar on a terminal, otherwise a line every 5 s, "
                    "for runs estimated at 2 s or more)");
  run_cmd->add_flag("--quiet", run_quiet, "as --no-progress");
  std::string layout_from;
  int layout_rank = 1;
  CLI::Option* layout_from_option =
      run_cmd->add_option("--layout-from", layout_from, "take the layout from a `clustersim search --json` result file")
          ->check(CLI::ExistingFile);
  run_cmd->add_option("--rank", layout_rank, "which layout of --layout-from (1 = the best)")
      ->capture_default_str()
      ->needs(layout_from_option);

  SearchCommandOptions search;
  CLI::App* search_cmd = app.add_subcommand("search", "rank the layouts of a scenario's search space");
  search_cmd->add_option("scenario", search.scenario, "scenario YAML file with a search: section")
      ->required()
      ->check(CLI::ExistingFile);
  search_cmd->add_option("--set", search.sets, "override a key: a.b=value (repeatable), e.g. search.tp=[4,8]");
  int search_top = 0;
  CLI::Option* top_option = search_cmd->add_option("--top", search_top, "layouts shown, >= 1 (default: search.top)");
  search_cmd->add_option("--threads", search.threads,
                         fmt::format("worker threads per process, 1..{}, or 0 for all cores (the default)",
                                     kMaxSearchThreads));
  search_cmd->add_option("--csv", search.csv, "write every simulated layout to this CSV file")->check(non_empty_path);
  search_cmd->add_flag("--json", search.json, "print JSON instead of the table");
  search_cmd->add_flag("!--no-progress", search.progress,
                       "no progress on standard error (a bar on a terminal, otherwise a line every 5 s)");
  search_cmd->add_flag("--quiet", search.quiet, "no progress and no closing summary line on standard error");

  ReportOptions report_options;
  CLI::App* report_cmd =
      app.add_subcommand("report", "write one self-contained HTML page of a step (or with --search, a search)");
  report_cmd->add_option("scenario", report_options.scenario, "scenario YAML file")->required()->check(CLI::ExistingFile);
  report_cmd->add_option("--out", report_options.out, "the HTML file to write")->required()->check(non_empty_path);
  report_cmd->add_option("--set", report_options.sets, "override a key: a.b=value (repeatable)");
  report_cmd->add_flag("--search", report_options.search, "report the scenario's search: section instead of one step");
  report_cmd->add_option("--threads", report_options.threads,
                         fmt::format("with --search: worker threads, 1..{}, or 0 for all cores (the default)",
                                     kMaxSearchThreads));

  std::string help_kind = "scenario";
  CLI::App* help_cmd = app.add_subcommand("help-config", "print every key of a file kind with type, unit, default");
  help_cmd->add_option("kind", help_kind, "scenario | model | gpu | nic | node")
      ->check(CLI::IsMember({"scenario", "model", "gpu", "nic", "node"}));
  help_cmd->footer("Each kind ends with the names of its shipped presets (scenarios/models/, scenarios/hardware/).");

  CollectiveCommandOptions coll;
  CollectiveFlags coll_flags;
  CLI::App* coll_cmd = app.add_subcommand("collective", "simulated nccl-tests: one collective over all GPUs per size");
  coll_cmd->add_option("--node", coll.node, "node preset or node YAML path")->capture_default_str();
  coll_cmd->add_option("--nodes", coll.nodes, fmt::format("number of nodes, 1..{}", kMaxClusterNodes))
      ->capture_default_str();
  coll_cmd->add_option("--gpus-per-node", coll.gpus_per_node, "GPUs used per node, up to the node's GPUs (0 = all)");
  coll_cmd->add_option("--nic", coll.nic, "NIC preset replacing the node's");
  coll_cmd->add_option("--fabric", coll_flags.fabric,
                       "rail-optimized | fat-tree | single-switch | three-tier (as cluster.fabric.type; rail and switch "
                       "also work)")
      ->capture_default_str();
  coll_cmd->add_option("--pod-nodes", coll.pod_nodes,
                       "--fabric three-tier: nodes per pod, required (as cluster.fabric.pod_nodes)");
  coll_cmd->add_option("--core-oversubscription", coll.core_oversubscription,
                       fmt::format("--fabric three-tier: a pod's spine downlink / core uplink bandwidth, 1..{}",
                                   kMaxOversubscription))
      ->capture_default_str();
  coll_cmd->add_option("--oversubscription", coll.oversubscription,
                       fmt::format("leaf switch downlink / uplink bandwidth, 1..{}", kMaxOversubscription))
      ->capture_default_str();
  coll_cmd->add_option("--leaf-ports", coll.leaf_ports,
                       fmt::format("downlink ports (NICs) of one leaf switch, 1..{}", kMaxLeafPorts))
      ->capture_default_str();
  coll_cmd->add_option("--op", coll_flags.op,
                       "all_reduce | all_gather | reduce_scatter | broadcast | reduce | all_to_all | send_recv")
      ->capture_default_str();
  coll_cmd->add_option("-b,--minbytes", coll_flags.min_bytes, "smallest size (nccl-tests syntax: 8, 64K, 1M, 8G)")
      ->capture_default_str();
  coll_cmd->add_option("-e,--maxbytes", coll_flags.max_bytes,
                       fmt::format("largest size, at most {}G", kMaxCollectiveBytes >> 30))
      ->capture_default_str();
  coll_cmd->add_option("-f,--stepfactor", coll.step_factor, "multiply the size by this each step")
      ->capture_default_str();
  coll_cmd->add_option("-i,--stepbytes", coll_flags.step_bytes, "add this many bytes each step (instead of -f)");
  coll_cmd->add_option("--algo", coll_flags.algo, "auto | ring | tree | nvls | hierarchical | pairwise")
      ->capture_default_str();
  coll_cmd->add_option("--proto", coll_flags.proto, "auto | LL | LL128 | Simple")->capture_default_str();
  coll_cmd->add_option("-d,--datatype", coll_flags.datatype, "fp32 | tf32 | bf16 | fp16 | fp8 (tf32 moves as float)")
      ->capture_default_str();
  coll_cmd->add_option("--fidelity", coll_flags.fidelity,
                       "auto | flow | analytical (auto: flow, but analytical for an all_to_all over more than 256 GPUs)")
      ->capture_default_str();
  coll_cmd->add_flag("--json", coll.json, "print JSON");
  coll_cmd->add_option("--html", coll.html,
                       "also write a self-contained HTML page: busbw against size for every algorithm that can run "
                       "the op")
      ->check(non_empty_path);

  std::string validate_collectives_csv, validate_out;
  CLI::App* validate_cmd = app.add_subcommand("validate", "compare predictions with measurements");
  validate_cmd->footer(
      "Give one of --runs, --collectives, --calibration.\n"
      "Exit codes: 0 ok; 1 internal error; 2 bad input (the message names file, line, column or flag);\n"
      "3 --calibration missed a target of the calibration issue (the report is written anyway).");
  CLI::Option* collectives_option =
      validate_cmd->add_option("--collectives", validate_collectives_csv,
                               "nccl-tests measurements CSV (docs/validation/published/collectives.csv)")
          ->check(CLI::ExistingFile);
  validate_cmd->add_option("--out", validate_out, "write the Markdown report here (default: standard output)");
  ValidateRunsOptions validate_runs_options;
  CLI::Option* runs_option =
      validate_cmd->add_option("--runs", validate_runs_options.csv,
                               "published training-run measurements CSV (docs/validation/published/training_runs.csv)")
          ->check(CLI::ExistingFile);
  validate_cmd->add_option("--training-out", validate_runs_options.training_out,
                           "with --runs: also write the per-configuration summary (docs/validation/training.md)");
  validate_cmd
      ->add_option_function<std::string>(
          "--power-model",
          [&](const std::string& v) {
            if (v != "auto") validate_runs_options.power_model = v == "on";
          },
          "with --runs: simulate every GPU under its power limit (on) or at full clock (off); auto (default): "
          "as simulation.power_model: auto, full clock here (the rows have no calibration profile)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  CLI::Option* validate_json_option =
      validate_cmd->add_flag("--json", validate_runs_options.json, "with --runs only: print JSON on standard output");
  CalibrationValidationOptions calibration_validation;
  std::vector<std::string> nccl_logs, nccl_ops, nccl_algos, nccl_protos;
  std::vector<int> nccl_ranks, nccl_nodes;
  auto add_nccl_log_options = [&](CLI::App* cmd) {
    cmd->add_option("--nccl-tests-log", nccl_logs,
                    "an nccl-tests text log (repeatable; with --ranks and --nodes; validate: with --calibration)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--ranks", nccl_ranks, "GPUs of each --nccl-tests-log (once per log, or once for all)");
    cmd->add_option("--nodes", nccl_nodes, "nodes of each --nccl-tests-log");
    cmd->add_option("--nccl-op", nccl_ops, "collective of a log that does not name its test binary");
    cmd->add_option("--nccl-algo", nccl_algos, "NCCL_ALGO a log was run with (default auto)");
    cmd->add_option("--nccl-proto", nccl_protos, "NCCL_PROTO a log was run with (default auto)");
  };
  CLI::Option* calibration_option = validate_cmd->add_option(
      "--calibration", calibration_validation.profile,
      "calibration profile (name or path): GEMM and attention leave-one-out, collectives, and with --reference the "
      "training steps (docs/validation/calibration.md); exits 3 when a target is missed");
  runs_option->excludes(collectives_option)->excludes(calibration_option);
  collectives_option->excludes(calibration_option);
  validate_cmd->add_option("--reference", calibration_validation.references,
                           "with --calibration: tools/reference/train_step.py results (JSON lines; repeatable)")
      ->check(CLI::ExistingFile);
  validate_cmd->add_option("--nccl-raw", calibration_validation.nccl_raw,
                           "with --calibration: clustersim-calibrate nccl.csv files to fit and check (repeatable)")
      ->check(CLI::ExistingFile);
  validate_cmd->add_option("--gemm-holdout", calibration_validation.gemm_holdout,
                           "with --calibration: clustersim-calibrate gemm.csv files of shapes outside the profile, "
                           "predicted from all of it (repeatable)")
      ->check(CLI::ExistingFile);
  validate_cmd->add_option("--gpu", calibration_validation.gpu, "with --calibration: GPU preset of the profile")
      ->capture_default_str();
  add_nccl_log_options(validate_cmd);

  CLI::App* calibrate_cmd = app.add_subcommand("calibrate", "calibration helpers");
  calibrate_cmd->require_subcommand(1);
  std::vector<std::string> shape_scenarios;
  std::string shapes_out;
  CLI::App* shapes_cmd =
      calibrate_cmd->add_subcommand("shapes", "write the GEMM shapes of scenarios for clustersim-calibrate --shapes");
  shapes_cmd->add_option("scenarios", shape_scenarios, "scenario files")->required()->check(CLI::ExistingFile);
  shapes_cmd->add_option("--out", shapes_out, "output file (default: standard output)");
  CalibrateFitOptions fit;
  CLI::App* fit_cmd = calibrate_cmd->add_subcommand(
      "fit", "fit a calibration profile from clustersim-calibrate raw samples and nccl-tests logs");
  fit_cmd->add_option("inputs", fit.inputs, "raw-sample directories or files (gemm, memory, launch, nccl, framework, "
                                            "attention .csv)")
      ->check(CLI::ExistingPath);
  fit_cmd->add_option("--out", fit.out, "profile JSON to write")->required();
  fit_cmd->add_option("--name", fit.name, "profile name (default: the first input's name)");
  fit_cmd->add_option("--power", fit.power,
                      "JSON file of the GPU's power measurements, the profile's power section "
                      "(the format of cost_models/calibration_profile.md); --power-summary derives one")
      ->check(CLI::ExistingFile);
  fit_cmd->add_option("--power-summary", fit.power_summary,
                      "summary.json of a power and clock run (tools/reference/power_clock_analyze.py) to derive the "
                      "profile's power section from (tools/data/h200-2026-12-01-power/run1/summary.json)")
      ->check(CLI::ExistingFile);
  add_nccl_log_options(fit_cmd);

  // CLI11 reports an unknown subcommand as an unexpected argument; name the valid ones instead.
  if (argc > 1 && argv[1][0] != '-') {
    try {
      app.get_subcommand(argv[1]);
    } catch (const CLI::OptionNotFound&) {
      std::cerr << "error: unknown command " << argv[1] << "; valid: run, search, report, collective, calibrate, "
                << "validate, help-config\n";
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's own words, in the form of every other bad-input message, and where the valid ones are.
    const std::string what = e.what();
    const bool command = argc > 1 && argv[1][0] != '-';
    if (!command) {
      std::cerr << "error: " << what << "; give a command: run, search, report, collective, calibrate, validate, "
                << "help-config (`clustersim --help`)\n";
    } else {
      std::cerr << "error: clustersim " << argv[1] << ": " << what << unknown_flag_hint(app, argc, argv)
                << "; `clustersim " << argv[1] << " --help` lists its arguments and the values they take\n";
    }
    return 2;
  }

  try {
    auto dispatch = [&]() -> int {
      if (run_cmd->parsed()) {
        if (!layout_from.empty()) {
          std::vector<std::string> sets = overrides_from_search_json(layout_from, layout_rank, &run.layout_from_scenario);
          run.layout_from_file = layout_from;
          run.layout_from_rank = layout_rank;
          run.warnings = &std::cerr;
          sets.insert(sets.end(), run.sets.begin(), run.sets.end());  // the user's --set win
          run.sets = std::move(sets);
        }
        run.progress = !run_no_progress && !run_quiet;
        return run_command(run, std::cout);
      }
      if (report_cmd->parsed()) {
        if (!report_options.search && report_cmd->count("--threads") > 0) {
          throw InputError("--threads belongs to --search (the worker threads of the layout search)");
        }
        report_options.command_line = shell_line(std::vector<std::string>(argv, argv + argc));
        return report_command(report_options, std::cerr);
      }
      if (search_cmd->parsed()) {
        if (top_option->count() > 0) search.top = search_top;
        const auto partition = make_search_partition();
        return search_command(search, *partition, std::cout);
      }
      if (coll_cmd->parsed()) {
        coll_flags.step_factor_given = coll_cmd->count("-f") > 0;
        coll_flags.step_bytes_given = coll_cmd->count("-i") > 0;
        apply_collective_flags(coll_flags, coll);
        coll.command_line = shell_line(std::vector<std::string>(argv, argv + argc));
        coll.announce = &std::cerr;
        return run_collective_command(coll, std::cout);
      }
      if (validate_cmd->parsed()) {
        // --collectives and --calibration write Markdown only.
        if (validate_json_option->count() > 0 && validate_runs_options.csv.empty()) {
          throw InputError("--json is available with --runs only; --collectives and --calibration write a Markdown "
                           "report (--out)");
        }
        if (calibration_validation.profile.empty()) {
          // Flags of --calibration given without it would be silently ignored.
          std::vector<std::string> misplaced;
          for (const char* flag : {"--reference", "--nccl-raw", "--gemm-holdout", "--gpu", "--nccl-tests-log", "--ranks",
                                   "--nodes", "--nccl-op", "--nccl-algo", "--nccl-proto"}) {
            if (validate_cmd->count(flag) > 0) misplaced.emplace_back(flag);
          }
          if (!misplaced.empty()) {
            throw InputError(fmt::format("{} {} to --calibration PROFILE; give the profile (e.g. --calibration "
                                         "h200-2026-11-29)",
                                         fmt::join(misplaced, ", "), misplaced.size() == 1 ? "belongs" : "belong"));
          }
        }
        if (validate_runs_options.csv.empty() && validate_cmd->count("--training-out") > 0) {
          throw InputError("--training-out belongs to --runs (the per-configuration summary of the training runs)");
        }
        if (!calibration_validation.profile.empty()) {
          calibration_validation.out = validate_out;
          calibration_validation.nccl_logs =
              nccl_log_inputs(nccl_logs, nccl_ranks, nccl_nodes, nccl_ops, nccl_algos, nccl_protos);
          return validate_calibration_command(calibration_validation, std::cout, std::cerr);
        }
        if (!validate_runs_options.csv.empty()) {
          validate_runs_options.out = validate_out;
          return validate_runs_command(validate_runs_options, std::cout, std::cerr);
        }
        if (validate_collectives_csv.empty()) {
          throw InputError("validate: give what to validate, e.g. --collectives docs/validation/published/collectives.csv, "
                           "--runs docs/validation/published/training_runs.csv or --calibration PROFILE");
        }
        const auto validation = validate_collectives(validate_collectives_csv, default_data_dir());
        write_output(validate_out, "--out", std::cout, [&](std::ostream& report) {
          write_collective_validation(validation, collective_validation_command(validate_collectives_csv, validate_out),
                                      report);
        });
        if (!validate_out.empty()) {
          std::cerr << "wrote " << validate_out << ": median |error| " << 100 * validation.median_error_large
                    << " % over " << validation.large_rows << " rows >= 64 MiB\n";
        }
        return 0;
      }
      if (fit_cmd->parsed()) {
        fit.nccl_logs = nccl_log_inputs(nccl_logs, nccl_ranks, nccl_nodes, nccl_ops, nccl_algos, nccl_protos);
        return calibrate_fit_command(fit, std::cout);
      }
      if (shapes_cmd->parsed()) {
        write_output(shapes_out, "--out", std::cout,
                     [&](std::ostream& out) { write_calibration_shapes(shape_scenarios, out); });
        return 0;
      }
      if (help_cmd->parsed()) {
        if (help_kind == "scenario") scenario_schema().print(std::cout);
        if (help_kind == "model") model_preset_schema().print(std::cout);
        if (help_kind == "gpu") HardwareCatalog::gpu_schema().print(std::cout);
        if (help_kind == "nic") HardwareCatalog::nic_schema().print(std::cout);
        if (help_kind == "node") HardwareCatalog::node_schema().print(std::cout);
        // The shipped presets a scenario can name: all of them for a scenario, else those of the kind.
        const HardwareCatalog catalog;
        const auto list = [](const std::string& title, const std::vector<std::string>& names) {
          std::cout << "\n" << title << ":\n";
          std::string line = " ";
          for (const std::string& name : names) {
            if (line.size() + name.size() + 2 > 100) {
              std::cout << line << "\n";
              line = " ";
            }
            line += " " + name;
          }
          std::cout << line << "\n";
        };
        if (help_kind == "scenario" || help_kind == "model") {
          list("Model presets (model.preset; scenarios/models/)", model_preset_names());
        }
        if (help_kind == "scenario" || help_kind == "node") {
          list("Node presets (cluster.node; scenarios/hardware/nodes/)", catalog.names("nodes"));
        }
        if (help_kind == "scenario" || help_kind == "gpu") {
          list("GPU presets (a node's gpu; scenarios/hardware/gpus/)", catalog.names("gpus"));
        }
        if (help_kind == "scenario" || help_kind == "nic") {
          list("NIC presets (cluster.fabric.nic; scenarios/hardware/nics/)", catalog.names("nics"));
        }
        return 0;
      }
      return 0;
    };
    const int rc = dispatch();
    check_written(std::cout, "standard output");
    return rc;
  } catch (const InputError& e) {
    std::cerr << "error: " << input_error_message(e) << "\n";
    return 2;
  } catch (const InternalError& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
}
