#pragma once

// The declared keys of a YAML file kind (scenario, GPU preset, node preset, ...). Every key is
// declared once with its type, unit, default and a one-line description (STYLE.md point 5, after
// SST's documented parameters and gem5's Param.Latency("30ns")). Loading checks every key of a
// file against the schema: unknown keys, wrong types, bare numbers for dimensioned keys and values
// out of range are errors naming file, line, column and key. `clustersim help-config` prints the
// schema.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace clustersim {

enum class ValueType {
  kSection,     // a map of further keys
  kSectionList, // a list of maps, each checked against the keys below "path[]"
  kInt,         // integer, optionally bounded
  kReal,        // real number, optionally bounded
  kBool,        // true / false
  kString,      // free text (names, paths)
  kEnum,        // one of `choices`
  kDuration,    // "1.5 us" (core/units.h parse_duration)
  kBytes,       // "80 GiB"
  kBandwidth,   // "400 Gb/s"
  kFlopRate,    // "989 TFLOP/s"
  kPower,       // "700 W"
  kIntList,     // [1, 2, 4] — integers
  kStringList,  // [a, b] — strings (or enum choices when `choices` is set)
};

struct KeyDef {
  std::string path;                  // dotted path; list elements as "a.b[].c"
  ValueType type = ValueType::kString;
  std::string default_text;          // as it would be written in YAML; empty: no default
  std::string description;           // one line
  std::vector<std::string> choices;  // kEnum / kStringList; kInt: words taken besides integers ("auto")
  // Inclusive bounds: of kInt / kReal / kIntList elements; of kDuration in seconds, kBandwidth in
  // bytes/s, kFlopRate in FLOP/s, kPower in W. A dimensioned key without bounds gets its type's physical range
  // (physical_range()).
  std::optional<double> min;
  std::optional<double> max;
  bool required = false;
};

// A key definition with the common fields set (the builders of the scenario and preset schemas
// add bounds and choices to it).
KeyDef key_def(std::string path, ValueType type, std::string description, std::string default_text = "",
               bool required = false);

// Bounds of a dimensioned type that no key of it may leave: values beyond them are typing errors
// ("1e18 ps", "1e-300 TFLOP/s") that would overflow int64 picoseconds later in the simulation.
//   kDuration  0 s .. 1 day (86,400 s; the longest time a scenario key gives);
//   kBandwidth 1 kB/s .. 1 PB/s (1e3 .. 1e15 bytes/s; NVLink 5 is 900 GB/s per GPU direction);
//   kFlopRate  1 GFLOP/s .. 1 EFLOP/s (1e9 .. 1e18; a GB200 is 2.5e15 dense BF16);
//   kPower     0 W .. 1 MW (a GB300 draws 1,400 W; a whole rack ~130 kW).
// Other types: none. `def`'s own min/max, where given, take precedence.
struct PhysicalRange {
  std::optional<double> min;
  std::optional<double> max;
};
PhysicalRange physical_range(const KeyDef& def);

// A hop's latency (switch, adapter, NVLink or PCIe hop) is nanoseconds to microseconds; above 1 s
// it is a typing error, and a collective's thousands of hops would overflow int64 picoseconds.
inline constexpr double kMaxHopLatencySeconds = 1.0;
// `def` bounded as a hop latency: 0 s .. kMaxHopLatencySeconds.
inline KeyDef hop_latency(KeyDef def) {
  def.min = 0.0;
  def.max = kMaxHopLatencySeconds;
  return def;
}

// "in [0 s, 1 s]" for a dimensioned key: its bounds in its unit (s, GB/s, TFLOP/s), or "".
std::string describe_physical_range(const KeyDef& def);

class Schema {
 public:
  explicit Schema(std::string name) : name_(std::move(name)) {}

  // Declares a key. Its parent section must be declared first. Throws InternalError on a
  // duplicate or an undeclared parent (schemas are code, so that is a bug).
  Schema& section(const std::string& path, const std::string& description);
  Schema& section_list(const std::string& path, const std::string& description);
  Schema& key(KeyDef def);

  const std::string& name() const { return name_; }
  // The declaration of `path` ("a.b" or "a.b[].c"), or null.
  const KeyDef* find(const std::string& path) const;
  // Names of the keys directly under section `path` ("" for the top level).
  std::vector<std::string> children(const std::string& path) const;
  const std::vector<KeyDef>& keys() const { return keys_; }

  // One line per key: path, type (with unit and range), default, description.
  void print(std::ostream& out) const;

 private:
  std::string name_;
  std::vector<KeyDef> keys_;
};

// "int", "duration (e.g. \"1.5 us\")", "one of: a, b" — for messages and help-config.
std::string describe_type(const KeyDef& def);

}  // namespace clustersim
