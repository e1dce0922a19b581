// _clustersim, the extension of the clustersim Python package (python/clustersim/__init__.py wraps
// it). Each function runs the C++ of one CLI command (tools/cli/run_command.h, search_command.h,
// collective_command.h; help-config's schemas, scenarios/schema.h) and returns the document that the command's --json prints, as compact JSON
// text that the package parses: a number is the same double, a string the same text, as in the
// CLI's output. Nothing is simulated here. Bad input raises clustersim.InputError (a ValueError)
// whose message is the one the CLI prints after "error: " and whose file, line, column and key are
// those the C++ error carries (InputError::location()), None where it carries none; a broken
// invariant raises RuntimeError("internal error: ...") as the CLI prints it. The simulation runs
// without the GIL.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <climits>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "parallelism/layout_search.h"
#include "scenarios/hardware_presets.h"
#include "scenarios/scenario.h"
#include "scenarios/schema.h"
#include "tools/cli/collective_command.h"
#include "tools/cli/input_error_message.h"
#include "tools/cli/run_command.h"
#include "tools/cli/run_report.h"
#include "tools/cli/search_command.h"

namespace py = pybind11;

namespace clustersim {
namespace {

// clustersim.InputError, created when the module is imported; the module holds a reference.
PyObject* input_error_type = nullptr;

// `text` (UTF-8 but for bytes of a path that is not) as a Python str: with U+FFFD for bad bytes
// ("replace", for messages) or with them kept as lone surrogates ("surrogateescape", for a path,
// as os.fsdecode does, so that os.fsencode gives the bytes back).
py::object decoded(const std::string& text, const char* errors) {
  PyObject* str = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), errors);
  if (str == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(str);
}

// Sets clustersim.InputError for `error` as the pending Python exception.
void set_input_error(const InputError& error) {
  const std::string message = input_error_message(error);
  try {
    py::object exception = py::reinterpret_borrow<py::object>(input_error_type)(decoded(message, "replace"));
    if (const std::optional<InputLocation>& at = error.location()) {
      if (!at->file.empty()) exception.attr("file") = decoded(at->file, "surrogateescape");
      if (at->line > 0) exception.attr("line") = at->line;
      if (at->column > 0) exception.attr("column") = at->column;
      if (!at->key.empty()) exception.attr("key") = decoded(at->key, "replace");
    }
    PyErr_SetObject(input_error_type, exception.ptr());
  } catch (const py::error_already_set&) {
    PyErr_SetString(input_error_type, message.c_str());  // the message alone, should the fields fail
  }
}

// A compact dump of `document`, its bytes that are not UTF-8 (a path from the caller) replaced by
// U+FFFD, as the CLI's dump does.
template <typename Json>
std::string json_text(const Json& document) {
  return document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `value` as the int of a flag, or InputError naming the flag when it does not fit one.
int int_flag(const char* flag, int64_t value) {
  if (value < INT_MIN || value > INT_MAX) {
    throw InputError(fmt::format("{} {}: out of range of a 32-bit integer", flag, value));
  }
  return static_cast<int>(value);
}

// `clustersim run SCENARIO --set SET... --json [--reproducible] [--trace TRACE]`: the JSON text of
// its document (run_json()). `sets` are "a.b=value" overrides, applied in order; `trace` ("" for
// none) is the path of a Chrome trace file to write.
std::string run(const std::string& scenario, const std::vector<std::string>& sets, bool reproducible,
                const std::string& trace) {
  RunOptions options;
  options.scenario = scenario;
  options.sets = sets;
  options.json = true;
  options.reproducible = reproducible;
  options.trace = trace;
  const py::gil_scoped_release unlocked;
  const RunOutcome outcome = simulate_run(options);
  return json_text(run_json(outcome.report, outcome.context()));
}

// `clustersim search SCENARIO --set SET... [--top TOP] [--threads THREADS] --json`, in this process:
// the JSON text of its document (search_json()).
std::string search(const std::string& scenario, const std::vector<std::string>& sets, std::optional<int64_t> top,
                   int64_t threads) {
  SearchCommandOptions options;
  options.scenario = scenario;
  options.sets = sets;
  if (top) options.top = int_flag("--top", *top);
  options.threads = int_flag("--threads", threads);
  options.json = true;
  options.progress = false;
  const py::gil_scoped_release unlocked;
  SingleProcess partition;
  const SearchOutcome outcome = run_search(options, partition);
  return json_text(search_json(outcome.prepared.scenario, outcome.result, outcome.top, options.sets));
}

// `clustersim collective ... --json` with the flags given (std::nullopt: not given, the CLI's
// default): the JSON text of its document (collective_json()), each row of "results" with the
// columns of the text output in their order, "type", "redop" and "root" included.
std::string collective(std::optional<std::string> node, std::optional<std::string> nic, std::optional<int64_t> nodes,
                       std::optional<int64_t> gpus_per_node, std::optional<std::string> fabric,
                       std::optional<double> oversubscription, std::optional<int64_t> leaf_ports,
                       std::optional<std::string> op, std::optional<std::string> min_bytes,
                       std::optional<std::string> max_bytes, std::optional<int64_t> step_factor,
                       std::optional<std::string> step_bytes, std::optional<std::string> algo,
                       std::optional<std::string> proto, std::optional<std::string> datatype,
                       std::optional<std::string> fidelity) {
  CollectiveCommandOptions options;
  CollectiveFlags flags;
  if (node) options.node = *node;
  if (nic) options.nic = *nic;
  if (nodes) options.nodes = int_flag("--nodes", *nodes);
  if (gpus_per_node) options.gpus_per_node = int_flag("--gpus-per-node", *gpus_per_node);
  if (fabric) flags.fabric = *fabric;
  if (oversubscription) options.oversubscription = *oversubscription;
  if (leaf_ports) options.leaf_ports = int_flag("--leaf-ports", *leaf_ports);
  if (op) flags.op = *op;
  if (min_bytes) flags.min_bytes = *min_bytes;
  if (max_bytes) flags.max_bytes = *max_bytes;
  if (step_factor) options.step_factor = *step_factor;
  flags.step_factor_given = step_factor.has_value();
  if (step_bytes) flags.step_bytes = *step_bytes;
  flags.step_bytes_given = step_bytes.has_value();
  if (algo) flags.algo = *algo;
  if (proto) flags.proto = *proto;
  if (datatype) flags.datatype = *datatype;
  if (fidelity) flags.fidelity = *fidelity;
  apply_collective_flags(flags, options);
  const py::gil_scoped_release unlocked;
  const CollectiveSweep sweep = simulate_collective_sweep(options);
  nlohmann::json document = collective_json(sweep);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const CollectiveRow& row : sweep.rows) {
    const nlohmann::json cli = collective_row_json(sweep, row);
    rows.push_back({{"size_bytes", cli.at("size_bytes")},
                    {"count", cli.at("count")},
                    {"type", sweep.type},
                    {"redop", sweep.redop},
                    {"root", sweep.root},
                    {"time_us", cli.at("time_us")},
                    {"algbw_GBps", cli.at("algbw_GBps")},
                    {"busbw_GBps", cli.at("busbw_GBps")},
                    {"algorithm", cli.at("algorithm")},
                    {"protocol", cli.at("protocol")}});
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, value] : document.items()) out[key] = key == "results" ? rows : nlohmann::ordered_json(value);
  return json_text(out);
}

// The schema `clustersim help-config KIND` prints: "scenario", "model", "gpu", "nic" or "node";
// InputError naming the kind and the valid ones for any other.
const Schema& schema_of(const std::string& kind) {
  if (kind == "scenario") return scenario_schema();
  if (kind == "model") return model_preset_schema();
  if (kind == "gpu") return HardwareCatalog::gpu_schema();
  if (kind == "nic") return HardwareCatalog::nic_schema();
  if (kind == "node") return HardwareCatalog::node_schema();
  throw InputError(fmt::format("kind \"{}\": expected one of scenario, model, gpu, nic, node (as `clustersim "
                               "help-config KIND`)",
                               kind));
}

// The keys of `clustersim help-config KIND`, in its order, as the JSON text of a list: per key
// (sections and lists of sections included) its dotted path `key` ("a.b[].c" for a list's
// elements), `type` in help-config's words (describe_type: "integer in [1, 16777216]", "one of:
// ..."), `default` as YAML writes it (null: none), `required`, `description`, `choices` (enum and
// string-list keys; for an integer key the words it takes besides numbers, as ["auto"]; else
// empty) and `min`/`max` (null where unbounded; durations in s, bandwidths in bytes/s, FLOP rates
// in FLOP/s, power in W: KeyDef's bounds).
std::string keys(const std::string& kind) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const KeyDef& k : schema_of(kind).keys()) {
    out.push_back({{"key", k.path},
                   {"type", describe_type(k)},
                   {"default", k.default_text.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(k.default_text)},
                   {"required", k.required},
                   {"description", k.description},
                   {"choices", k.choices},
                   {"min", k.min ? nlohmann::ordered_json(*k.min) : nlohmann::ordered_json()},
                   {"max", k.max ? nlohmann::ordered_json(*k.max) : nlohmann::ordered_json()}});
  }
  return json_text(out);
}

}  // namespace
}  // namespace clustersim

PYBIND11_MODULE(_clustersim, m) {
  using namespace clustersim;
  m.doc() =
      "clustersim's commands run, search and collective, returning their --json documents as JSON text, and "
      "the keys of help-config; use the clustersim package, which parses them.";

  py::dict fields;  // unknown unless the C++ error carries them
  fields["file"] = py::none();
  fields["line"] = py::none();
  fields["column"] = py::none();
  fields["key"] = py::none();
  input_error_type = PyErr_NewExceptionWithDoc(
      "clustersim.InputError",
      "Bad input, as the CLI reports it with exit code 2: str(e) is the message the CLI prints after \"error: \".\n"
      "file, line, column (1-based) and key (the dotted key, e.g. \"training.seq_len\") say where the bad value is, "
      "as far as the C++ error that was raised carries them, and are None otherwise. The scenario loader gives them "
      "for a value of a file (file, line, column, key), a --set override (key; file None) or a whole file "
      "(file; a YAML syntax error also line and column); an error about a combination of values found later (a "
      "layout that does not fit the cluster, a calibration profile) may carry only some or none, its message "
      "naming the place in words. The message is not parsed to fill them.",
      PyExc_ValueError, fields.ptr());
  if (input_error_type == nullptr) throw py::error_already_set();
  m.attr("InputError") = py::reinterpret_borrow<py::object>(input_error_type);

  py::register_local_exception_translator([](std::exception_ptr pending) {
    try {
      if (pending) std::rethrow_exception(pending);
    } catch (const InputError& e) {
      set_input_error(e);
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, (std::string("internal error: ") + e.what()).c_str());
    }
  });

  m.def("run", &run, py::arg("scenario"), py::arg("sets"), py::arg("reproducible"), py::arg("trace"),
        "JSON text of `clustersim run SCENARIO --set SET... --json`.");
  m.def("search", &search, py::arg("scenario"), py::arg("sets"), py::arg("top"), py::arg("threads"),
        "JSON text of `clustersim search SCENARIO --set SET... --json` in this process.");
  m.def("collective", &collective, py::arg("node"), py::arg("nic"), py::arg("nodes"), py::arg("gpus_per_node"),
        py::arg("fabric"), py::arg("oversubscription"), py::arg("leaf_ports"), py::arg("op"), py::arg("min_bytes"),
        py::arg("max_bytes"), py::arg("step_factor"), py::arg("step_bytes"), py::arg("algo"), py::arg("proto"),
        py::arg("datatype"), py::arg("fidelity"),
        "JSON text of `clustersim collective ... --json`, each row with the text output's columns.");
  m.def("keys", &keys, py::arg("kind"), "JSON text of the keys `clustersim help-config KIND` lists.");
}
