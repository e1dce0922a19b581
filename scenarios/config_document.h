#pragma once

// A YAML file checked against a Schema, with typed access to its values. Every value remembers
// where it came from (file:line:column, or the --set override that gave it), so any later error
// about it can name the place.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/units.h"
#include "scenarios/schema.h"

namespace clustersim {

// "training.seq_len=4096": the value is parsed as a YAML scalar or flow collection.
struct Override {
  std::string path;
  std::string value;
};

// Parses "a.b=value" (from --set). Throws InputError if there is no '=' or the path is empty.
Override parse_override(const std::string& text);

class ConfigDocument {
 public:
  // Loads and validates `path`. `overrides` replace or add values before validation.
  // Throws InputError naming file:line:column and key for: unreadable file, YAML syntax errors,
  // unknown keys (with the valid keys of that section), duplicate keys, type errors, bare numbers
  // for dimensioned keys, values out of range, missing required keys.
  static ConfigDocument load_file(const std::string& path, const Schema& schema,
                                  const std::vector<Override>& overrides = {});
  // Same, from text; `source_name` stands for the file name in messages.
  static ConfigDocument load_string(const std::string& text, const std::string& source_name, const Schema& schema,
                                    const std::vector<Override>& overrides = {});

  ~ConfigDocument();
  ConfigDocument(ConfigDocument&&) noexcept;
  ConfigDocument& operator=(ConfigDocument&&) noexcept;
  ConfigDocument(const ConfigDocument&);

  const std::string& source() const;
  // True if the file (or an override) sets `path`; defaults do not count.
  bool has(const std::string& path) const;

  // Typed getters. An absent key yields its schema default; an absent key without a default
  // throws InputError ("missing key"). Asking for a key under a type other than its declaration
  // is an InternalError.
  int64_t get_int(const std::string& path) const;
  double get_real(const std::string& path) const;
  bool get_bool(const std::string& path) const;
  std::string get_string(const std::string& path) const;  // also kEnum
  Duration get_duration(const std::string& path) const;
  Bytes get_bytes(const std::string& path) const;
  Bandwidth get_bandwidth(const std::string& path) const;
  FlopRate get_flop_rate(const std::string& path) const;
  Power get_power(const std::string& path) const;
  std::vector<int64_t> get_int_list(const std::string& path) const;
  std::vector<std::string> get_string_list(const std::string& path) const;
  // Elements of a kSectionList: each is a document rooted at one element, whose keys are the
  // schema's "path[].x" keys, addressed as "x".
  std::vector<ConfigDocument> get_sections(const std::string& path) const;
  // Keys present under section `path` (for sections whose keys are free-form, like a map of
  // named entries).
  std::vector<std::string> present_children(const std::string& path) const;

  // "file:line:column: key: " for messages about the value at `path` (or the file when absent).
  std::string where(const std::string& path) const;
  // The same place as fields: the file, line and column that wrote `path` (or its section, or the
  // file; no file for a --set value) and the key where() names.
  InputLocation location_of(const std::string& path) const;
  // An InputError located at `path`: "<where(path)><message>", with location_of(path).
  InputError error_at(const std::string& path, const std::string& message) const;
  // `error` (from a check of values the file gave, such as ModelSpec::validate) placed at the first
  // of its keys (InputError::keys()) that the file or a --set gives: "file:line:column: " before a
  // message that starts with that key (the key named as the root names it: "a.b[1].c" for a key
  // "c" of an element of a list), where(key) before any other. When it gives none of them, at
  // the innermost section around the first key that the file writes (else the file), naming that
  // key; an error about no key, at `section` (error_at). Keys are paths from the document's root.
  InputError located(const InputError& error, const std::string& section) const;

  // Parsed values shared by a document and the section-list elements taken from it.
  struct Data;

 private:
  explicit ConfigDocument(std::shared_ptr<const Data> data, std::string prefix);
  const KeyDef& declared(const std::string& path, ValueType type) const;

  std::shared_ptr<const Data> data_;
  std::string prefix_;  // "a.b[3]." for elements of a section list, "" at the root
};

}  // namespace clustersim
