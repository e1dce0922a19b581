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
  kIntList,     // [1, 2, 4] — integers
  kStringList,  // [a, b] — strings (or enum choices when `choices` is set)
};

struct KeyDef {
  std::string path;                  // dotted path; list elements as "a.b[].c"
  ValueType type = ValueType::kString;
  std::string default_text;          // as it would be written in YAML; empty: no default
  std::string description;           // one line
  std::vector<std::string> choices;  // kEnum / kStringList
  std::optional<double> min;         // kInt / kReal / kIntList elements (inclusive)
  std::optional<double> max;
  bool required = false;
};

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
