#include "scenarios/config_document.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/excerpt.h"
#include "core/input_file.h"
#include "core/suggest.h"
#include "core/utf8.h"
#include "core/units.h"

namespace clustersim {

namespace {

// Where a value or section was written: as messages name it ("file:line:column", or "--set a.b" for
// a --set override) and as the fields of an InputError's location (its key left empty).
struct Place {
  std::string text;
  InputLocation at;
};

// `at` with its key.
InputLocation keyed(InputLocation at, const std::string& key) {
  at.key = key;
  return at;
}

// A --set override's place: no file, no line.
Place override_place(const std::string& key) { return Place{"--set " + key, InputLocation{}}; }

struct Entry {
  Place location;                   // "file:line:column" or "--set a.b"
  std::string text;                 // scalar text
  std::vector<std::string> items;   // list elements
  bool is_list = false;
};

// Removes list indices: "a.b[3].c" -> "a.b[].c".
std::string schema_path_of(const std::string& concrete) {
  std::string out;
  out.reserve(concrete.size());
  for (size_t i = 0; i < concrete.size(); ++i) {
    out += concrete[i];
    if (concrete[i] == '[') {
      while (i + 1 < concrete.size() && concrete[i + 1] != ']') ++i;
    }
  }
  return out;
}

std::string join_path(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

bool parse_int_text(const std::string& text, int64_t& value) { return parse_whole_number(text, value); }

bool parse_real_text(const std::string& text, double& value) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  return ec == std::errc() && ptr == last && !text.empty() && std::isfinite(value);
}

// `text` is the value as written, for the message (a double would print 9223372036854775807 as
// 9.223372036854776e+18).
void check_range(const KeyDef& def, double v, const std::string& text,
                 const std::function<InputError(const std::string&)>& fail) {
  if ((def.min && v < *def.min) || (def.max && v > *def.max)) {
    throw fail(fmt::format("{} is out of range: expected {}", excerpt(text), describe_type(def)));
  }
}

// How a scalar written as a string says so: in quotes ('32', "32"; yaml-cpp tags a quoted scalar
// "!" and a plain one "?") or with an explicit !!str tag. YAML reads such a scalar as text whatever
// it looks like. Empty for a plain scalar.
std::string string_form(const YAML::Node& scalar) {
  if (scalar.Tag() == "!") return "the quoted string";
  if (scalar.Tag() == "tag:yaml.org,2002:str") return "the !!str string";
  return "";
}

// Parses one scalar as `def` says; throws via `fail` with what is valid. `written_as`: how the
// scalar was written as a string (string_form()), which makes it text, never a number or a boolean.
void validate_scalar(const KeyDef& def, const std::string& text, const std::string& written_as,
                     const std::function<InputError(const std::string&)>& fail) {
  const bool number = def.type == ValueType::kInt || def.type == ValueType::kIntList || def.type == ValueType::kReal;
  if (!written_as.empty() && (number || def.type == ValueType::kBool)) {
    const std::string expected = def.type == ValueType::kBool ? "true or false" : describe_type(def);
    throw fail(fmt::format("expected {}, got {} \"{}\" (YAML reads it as text); write the value plain, without "
                           "quotes or tag",
                           expected, written_as, excerpt(text)));
  }
  switch (def.type) {
    case ValueType::kInt:
    case ValueType::kIntList: {
      if (std::find(def.choices.begin(), def.choices.end(), text) != def.choices.end()) return;
      int64_t v = 0;
      if (!parse_int_text(text, v)) {
        // Digits beyond int64 are an integer out of range, not a malformed one.
        const bool digits = text.find_first_not_of("0123456789", text.starts_with('-') ? 1 : 0) == std::string::npos &&
                            text.size() > (text.starts_with('-') ? 1U : 0U);
        // So is an integral value in exponent notation beyond what a double holds exactly (1e16).
        double real = 0;
        const bool whole_real = parse_real_text(text, real) && real == std::floor(real);
        if (digits || whole_real) {
          throw fail(fmt::format("{} is out of range: expected {}", excerpt(text), describe_type(def)));
        }
        throw fail(fmt::format("\"{}\" is not {}; expected {}", excerpt(text),
                               def.choices.empty() ? "an integer" : "valid", describe_type(def)));
      }
      check_range(def, static_cast<double>(v), text, fail);
      return;
    }
    case ValueType::kReal: {
      double v = 0;
      if (!parse_real_text(text, v)) {
        const bool huge = std::from_chars(text.data(), text.data() + text.size(), v).ec == std::errc::result_out_of_range;
        throw fail(huge ? fmt::format("{} is out of range of a double (about 1e308)", excerpt(text))
                        : fmt::format("\"{}\" is not a number", excerpt(text)));
      }
      check_range(def, v, text, fail);
      return;
    }
    case ValueType::kBool:
      if (text != "true" && text != "false") {
        throw fail(fmt::format("\"{}\" is not true or false (written in lower case)", excerpt(text)));
      }
      return;
    case ValueType::kEnum:
    case ValueType::kStringList:
      if (!def.choices.empty() && std::find(def.choices.begin(), def.choices.end(), text) == def.choices.end()) {
        throw fail(fmt::format("\"{}\" is not valid; expected {}", excerpt(text), describe_type(def)));
      }
      return;
    case ValueType::kString: return;
    case ValueType::kDuration:
    case ValueType::kBytes:
    case ValueType::kBandwidth:
    case ValueType::kFlopRate:
    case ValueType::kPower:
    {
      double si = 0;  // seconds, bytes/s, FLOP/s or W
      try {
        if (def.type == ValueType::kDuration) si = parse_duration(text).to_seconds();
        if (def.type == ValueType::kBytes) parse_bytes(text);
        if (def.type == ValueType::kBandwidth) si = parse_bandwidth(text).bytes_per_second();
        if (def.type == ValueType::kFlopRate) si = parse_flop_rate(text).flop_per_second();
        if (def.type == ValueType::kPower) si = parse_power(text).in_watts();
      } catch (const OverflowError& e) {
        // A number beyond int64 picoseconds is a value out of range, not a bad format.
        if (def.type == ValueType::kBytes) throw fail(e.what());
        throw fail(fmt::format("\"{}\" is out of range: expected {}", excerpt(text), describe_physical_range(def)));
      } catch (const InputError& e) {
        throw fail(e.what());
      }
      const PhysicalRange range = physical_range(def);
      if (def.type != ValueType::kBytes && ((range.min && si < *range.min) || (range.max && si > *range.max))) {
        throw fail(fmt::format("\"{}\" is out of range: expected {}", excerpt(text), describe_physical_range(def)));
      }
      return;
    }
    case ValueType::kSection:
    case ValueType::kSectionList: break;
  }
  throw InternalError("validate_scalar on a section");
}

// `text` with bytes outside printable ASCII as '?', cut to 60 characters: for naming a value
// that is not text in a message.
std::string ascii_excerpt(const std::string& text) {
  std::string out;
  for (const char c : text.substr(0, 60)) out += c >= 0x20 && c < 0x7f ? c : '?';
  return text.size() > 60 ? out + "..." : out;
}

std::string mark_text(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return source;
  return fmt::format("{}:{}:{}", source, mark.line + 1, mark.column + 1);
}

// The place of `mark` in `source`; the file alone for a null mark.
Place mark_place(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return Place{source, InputLocation{.file = source}};
  return Place{mark_text(source, mark),
               InputLocation{.file = source, .line = mark.line + 1, .column = mark.column + 1}};
}

// "file:line" of the "---" that starts the second document of `text`, whose first node is at
// `mark` (0-based; null for an empty document, then the last "---" line of the text counts): the
// last line beginning with "---" at or before that node.
std::string second_document_where(const std::string& text, const std::string& source, const YAML::Mark& mark) {
  const int content_line = mark.is_null() || mark.line < 0 ? std::numeric_limits<int>::max() : mark.line;
  int marker_line = -1;
  int line = 0;
  for (size_t start = 0; start < text.size() && line <= content_line; ++line) {
    if (text.compare(start, 3, "---") == 0) marker_line = line;
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (marker_line < 0) return mark_text(source, mark);
  return fmt::format("{}:{}", source, marker_line + 1);
}

// Records where a document starts and where its first node is; builds nothing.
class DocumentMarks : public YAML::EventHandler {
 public:
  YAML::Mark start = YAML::Mark::null_mark();
  YAML::Mark first_node = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node_at(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node_at(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    node_at(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node_at(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node_at(mark);
  }
  void OnMapEnd() override {}

 private:
  void node_at(const YAML::Mark& mark) {
    if (first_node.is_null()) first_node = mark;
  }
};

// What a yaml-cpp parser error most often means in a hand-written file, where its own wording
// ("illegal map value", "end of map flow not found") does not say: a tab in a line's indentation
// (YAML indents with spaces only, YAML 1.2 section 6.1) or a `{` / `[` never closed. Returns the
// place and message to report, or nothing where neither applies.
std::optional<std::pair<YAML::Mark, std::string>> syntax_hint(const std::string& text, const std::string& msg) {
  // A tab before the first other character of a line that has one (not a blank or comment line).
  int line = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t i = start;
    size_t tab = std::string::npos;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
      if (text[i] == '\t' && tab == std::string::npos) tab = i;
      ++i;
    }
    if (tab != std::string::npos && i < text.size() && text[i] != '\n' && text[i] != '\r' && text[i] != '#') {
      YAML::Mark mark;
      mark.pos = static_cast<int>(tab);
      mark.line = line;
      mark.column = static_cast<int>(tab - start);
      return std::make_pair(mark, std::string("a tab in the indentation; YAML indents with spaces only (replace it "
                                              "with spaces)"));
    }
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) break;
    start = end + 1;
    ++line;
  }
  const bool map = msg.find("end of map flow not found") != std::string::npos;
  const bool seq = msg.find("end of sequence flow not found") != std::string::npos;
  if (!map && !seq) return std::nullopt;
  // The last `{` or `[` left open, outside quotes and comments.
  std::vector<YAML::Mark> open;
  YAML::Mark here;
  here.line = 0;
  here.column = 0;
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++here.line;
      here.column = 0;
      comment = false;
      continue;
    }
    if (!comment) {
      if (quote != 0) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
        comment = true;
      } else if (c == '{' || c == '[') {
        YAML::Mark m = here;
        m.pos = static_cast<int>(i);
        open.push_back(m);
      } else if ((c == '}' || c == ']') && !open.empty()) {
        open.pop_back();
      }
    }
    ++here.column;
  }
  if (open.empty()) return std::nullopt;
  const char c = text[static_cast<size_t>(open.back().pos)];
  return std::make_pair(open.back(), fmt::format("this `{}` is never closed by `{}` (a flow {} runs to its closing "
                                                 "bracket, across lines)",
                                                 c, c == '{' ? '}' : ']', c == '{' ? "map" : "list"));
}

// Checks that `text` holds at most one YAML document, parsing at most three with yaml-cpp's event
// parser (nothing is built). Throws InputError at a second document's "---", and at a token the
// parser cannot step over: yaml-cpp 0.7 returns an empty document at a ',' (a flow entry) outside
// [ ] or { } without consuming it, so YAML::LoadAll, which loops until the input ends, never
// returns and grows its list of documents without bound.
void check_single_document(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  std::vector<DocumentMarks> documents;
  for (int i = 0; i < 3; ++i) {
    DocumentMarks marks;
    if (!parser.HandleNextDocument(marks)) break;
    if (!documents.empty() && marks.start.pos == documents.back().start.pos) {
      const auto pos = static_cast<size_t>(std::max(0, marks.start.pos));
      const char c = pos < text.size() ? text[pos] : ' ';
      throw InputError(fmt::format(
          "{}: YAML syntax error: unexpected '{}'{}; a scenario is a map of `key: value` lines",
          mark_text(source, marks.start), c == ',' || (c >= 0x21 && c < 0x7f) ? std::string(1, c) : "?",
          c == ',' ? " (a list separator outside [ ] or { })" : ""), mark_place(source, marks.start).at);
    }
    documents.push_back(marks);
  }
  if (documents.size() > 1) {
    throw InputError(fmt::format("{}: a second YAML document starts here; a file holds one document: remove "
                                 "this --- line and what follows it, or merge the two",
                                 second_document_where(text, source, documents[1].first_node)));
  }
}

}  // namespace

struct ConfigDocument::Data {
  std::string source;
  const Schema* schema = nullptr;  // schemas are static objects owned by their loaders
  std::map<std::string, Entry> values;          // concrete path -> value
  std::map<std::string, Place> sections;        // concrete section path -> location
  std::map<std::string, size_t> list_sizes;     // concrete section-list path -> elements
};

namespace {

class Walker {
 public:
  Walker(ConfigDocument::Data& data, const std::set<std::string>& overridden)
      : data_(data), overridden_(overridden) {}

  void walk_section(const YAML::Node& node, const std::string& concrete, const std::string& schema_prefix) {
    const Schema& schema = *data_.schema;
    if (!node.IsMap()) {
      Place at = mark_place(data_.source, node.Mark());
      bool named = false;  // "--set training" names the section already
      for (const auto& o : overridden_) {
        if (concrete == o || concrete.starts_with(o + ".")) {  // a --set gave the section a value
          at = override_place(o);
          named = concrete == o;
        }
      }
      throw InputError(fmt::format("{}: {}expected a map of keys, got {}", at.text,
                                   concrete.empty() || named ? "" : concrete + ": ", kind_of(node)),
                       keyed(at.at, concrete));
    }
    std::map<std::string, YAML::Mark> seen;  // key -> where it was first set
    for (const auto& kv : node) {
      if (kv.first.IsNull() || !kv.first.IsDefined()) {
        // `{a: 1,, b: 2}`: the flow map's empty entry is a null key.
        throw InputError(fmt::format("{}: {}an empty entry in a map (two commas in a row?); "
                                     "write `key: value` pairs separated by single commas",
                                     mark_text(data_.source, kv.first.Mark()), concrete.empty() ? "" : concrete + ": "),
                         keyed(mark_place(data_.source, kv.first.Mark()).at, concrete));
      }
      if (!kv.first.IsScalar()) {
        throw InputError(fmt::format("{}: {}a key must be a plain name, got {} (a `? ` complex key)",
                                     mark_text(data_.source, kv.first.Mark()), concrete.empty() ? "" : concrete + ": ",
                                     kind_of(kv.first)),
                         keyed(mark_place(data_.source, kv.first.Mark()).at, concrete));
      }
      const std::string key = kv.first.Scalar();
      const Place where = location(concrete, key, kv.first.Mark());
      if (const auto [first, inserted] = seen.emplace(key, kv.first.Mark()); !inserted) {
        throw InputError(fmt::format("{}: duplicate key \"{}\", first set at {}; keep one of the two",
                                     where.text, join_path(concrete, key), mark_text(data_.source, first->second)),
                         keyed(where.at, join_path(concrete, key)));
      }
      const std::string spath = join_path(schema_prefix, key);
      const KeyDef* def = schema.find(spath);
      if (def == nullptr) throw unknown_key(where, concrete, schema_prefix, key);
      const std::string cpath = join_path(concrete, key);
      dispatch(*def, kv.second, cpath, spath, where);
    }
    for (const auto& child : schema.children(schema_prefix)) {
      const KeyDef* def = schema.find(join_path(schema_prefix, child));
      if (def->required && seen.count(child) == 0) {
        throw InputError(fmt::format("{}: missing required key \"{}\" ({}): {}",
                                     mark_text(data_.source, node.Mark()), join_path(concrete, child),
                                     describe_type(*def), def->description),
                         keyed(mark_place(data_.source, node.Mark()).at, join_path(concrete, child)));
      }
    }
  }

 private:
  static std::string kind_of(const YAML::Node& n) {
    if (n.IsScalar()) return "the value \"" + excerpt(n.Scalar()) + "\"";
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a map";
    return "nothing";
  }

  Place location(const std::string& concrete, const std::string& key, const YAML::Mark& mark) const {
    const std::string cpath = join_path(concrete, key);
    for (const auto& o : overridden_) {
      if (cpath == o || cpath.starts_with(o + ".")) return override_place(o);  // the --set that wrote this value
    }
    if (mark.is_null()) {  // not in the file: a --set created this section on its way to a key
      for (const auto& o : overridden_) {
        if (o.starts_with(cpath + ".")) return override_place(o);
      }
    }
    return mark_place(data_.source, mark);
  }

  InputError unknown_key(const Place& where, const std::string& concrete, const std::string& schema_prefix,
                         const std::string& key) const {
    const auto valid = data_.schema->children(schema_prefix);
    const std::string suggestion = closest_match(key, valid);
    std::string list;
    for (const auto& v : valid) list += (list.empty() ? "" : ", ") + v;
    return InputError(fmt::format("{}: unknown key \"{}\"{}{}; valid keys{}: {}", where.text,
                                  excerpt(join_path(concrete, key), 120),
                                  concrete.empty() ? "" : " in section " + concrete,
                                  suggestion.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", suggestion),
                                  concrete.empty() ? " at the top level" : " here", list),
                      keyed(where.at, join_path(concrete, key)));
  }

  void dispatch(const KeyDef& def, const YAML::Node& value, const std::string& cpath, const std::string& spath,
                const Place& where) {
    auto fail = [&](const std::string& why) {
      // A --set value's location already names its key ("--set training.seq_len").
      const std::string& at = where.text;
      const bool named = at.size() >= cpath.size() && at.compare(at.size() - cpath.size(), cpath.size(), cpath) == 0;
      return InputError(named ? fmt::format("{}: {}", at, why) : fmt::format("{}: {}: {}", at, cpath, why),
                        keyed(where.at, cpath));
    };
    switch (def.type) {
      case ValueType::kSection:
        data_.sections[cpath] = where;
        if (value.IsNull()) return;  // an empty section keeps its defaults
        walk_section(value, cpath, spath);
        return;
      case ValueType::kSectionList: {
        if (!value.IsSequence()) throw fail("expected a list of maps");
        data_.sections[cpath] = where;
        data_.list_sizes[cpath] = value.size();
        for (size_t i = 0; i < value.size(); ++i) {
          const std::string element = fmt::format("{}[{}]", cpath, i);
          data_.sections[element] = mark_place(data_.source, value[i].Mark());
          walk_section(value[i], element, spath + "[]");
        }
        return;
      }
      case ValueType::kIntList:
      case ValueType::kStringList: {
        Entry e{.location = where, .is_list = true};
        if (value.IsScalar()) throw fail(fmt::format("expected a list ({}), e.g. [1, 2]", describe_type(def)));
        if (!value.IsSequence()) throw fail("expected a list, " + describe_type(def));
        for (const auto& item : value) {
          if (!item.IsScalar()) throw fail("list elements must be plain values");
          validate_scalar(def, item.Scalar(), string_form(item), fail);
          e.items.push_back(item.Scalar());
        }
        data_.values[cpath] = std::move(e);
        return;
      }
      default: {
        if (!value.IsScalar()) {
          throw fail(fmt::format("expected {}, got {}", describe_type(def), kind_of(value)));
        }
        validate_scalar(def, value.Scalar(), string_form(value), fail);
        data_.values[cpath] = Entry{.location = where, .text = value.Scalar()};
        return;
      }
    }
  }

  ConfigDocument::Data& data_;
  const std::set<std::string>& overridden_;
};

// Sets `path` in `root` to the YAML value `text`, creating maps on the way.
void apply_override(YAML::Node& root, const Override& o) {
  YAML::Node value;
  try {
    value = YAML::Load(o.value);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("--set {}={}: the value is not valid YAML: {}", o.path, o.value, e.msg),
                     InputLocation{.key = o.path});
  }
  std::vector<std::string> parts;
  std::stringstream ss(o.path);
  for (std::string part; std::getline(ss, part, '.');) {
    if (part.empty()) {
      throw InputError(fmt::format("--set {}: empty key in the path", o.path), InputLocation{.key = o.path});
    }
    parts.push_back(part);
  }
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back()[parts[i]];
    if (!next.IsDefined() || next.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = chain.back()[parts[i]];
    }
    if (!next.IsMap()) {
      throw InputError(fmt::format("--set {}: \"{}\" is not a section", o.path, parts[i]),
                       InputLocation{.key = o.path});
    }
    chain.push_back(next);
  }
  chain.back()[parts.back()] = value;
}

}  // namespace

Override parse_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError(fmt::format("--set \"{}\": expected KEY=VALUE, e.g. training.seq_len=4096", excerpt(text)));
  }
  return Override{text.substr(0, eq), text.substr(eq + 1)};
}

ConfigDocument ConfigDocument::load_string(const std::string& text, const std::string& source_name,
                                           const Schema& schema, const std::vector<Override>& overrides) {
  auto data = std::make_shared<Data>();
  data->source = source_name;
  data->schema = &schema;
  // A NUL byte is binary data (or UTF-16 text); yaml-cpp would report it as a bad escape or token.
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    throw InputError(fmt::format("{}:{}: binary data (a NUL byte) at line {}; expected a YAML text file (UTF-8)",
                                 source_name, line, line),
                     InputLocation{.file = source_name, .line = static_cast<int>(line)});
  }
  if (const size_t bad = first_invalid_utf8(text); bad != std::string::npos) {
    const auto before = text.begin() + static_cast<std::ptrdiff_t>(bad);
    const auto line = 1 + std::count(text.begin(), before, '\n');
    const size_t newline = text.rfind('\n', bad);  // text[bad] is not '\n': the newline before it
    const size_t column = newline == std::string::npos ? bad + 1 : bad - newline;
    throw InputError(fmt::format("{}:{}:{}: byte 0x{:02X} is not UTF-8; a YAML file is UTF-8 text (YAML 1.2 "
                                 "section 5.2): save it as UTF-8",
                                 source_name, line, column, static_cast<unsigned char>(text[bad])),
                     InputLocation{
                         .file = source_name, .line = static_cast<int>(line), .column = static_cast<int>(column)});
  }
  for (const auto& o : overrides) {
    if (first_invalid_utf8(o.path) != std::string::npos || first_invalid_utf8(o.value) != std::string::npos) {
      throw InputError(fmt::format("--set {}: not UTF-8 text; give keys and values as UTF-8",
                                   ascii_excerpt(o.path)));
    }
  }
  YAML::Node root;
  try {
    // YAML::Load would read the first document and drop any later one silently.
    check_single_document(text, source_name);
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp stops at 2,000 nested levels with the message "bad file".
    throw InputError(fmt::format("{}: YAML nesting deeper than yaml-cpp's limit of 2,000 levels; a scenario needs a "
                                 "few",
                                 mark_text(source_name, e.mark)),
                     mark_place(source_name, e.mark).at);
  } catch (const YAML::ParserException& e) {
    if (const auto hint = syntax_hint(text, e.msg)) {
      throw InputError(fmt::format("{}: YAML syntax error: {} (the parser: {} at {})", mark_text(source_name, hint->first),
                                   hint->second, e.msg, mark_text(source_name, e.mark)),
                       mark_place(source_name, hint->first).at);
    }
    throw InputError(fmt::format("{}: YAML syntax error: {}", mark_text(source_name, e.mark), e.msg),
                     mark_place(source_name, e.mark).at);
  }
  if (root.IsNull()) {
    if (overrides.empty()) {
      throw InputError(fmt::format("{}: the file is empty (no YAML keys); `clustersim help-config` lists the keys",
                                   source_name),
                       InputLocation{.file = source_name});
    }
    root = YAML::Node(YAML::NodeType::Map);  // every key comes from --set
  }
  std::set<std::string> overridden;
  for (const auto& o : overrides) {
    if (!root.IsMap()) break;
    apply_override(root, o);
    overridden.insert(o.path);
  }
  Walker(*data, overridden).walk_section(root, "", "");
  return ConfigDocument(std::move(data), "");
}

ConfigDocument ConfigDocument::load_file(const std::string& path, const Schema& schema,
                                         const std::vector<Override>& overrides) {
  return load_string(read_input_file(path, "YAML file"), path, schema, overrides);
}

ConfigDocument::ConfigDocument(std::shared_ptr<const Data> data, std::string prefix)
    : data_(std::move(data)), prefix_(std::move(prefix)) {}
ConfigDocument::~ConfigDocument() = default;
ConfigDocument::ConfigDocument(ConfigDocument&&) noexcept = default;
ConfigDocument& ConfigDocument::operator=(ConfigDocument&&) noexcept = default;
ConfigDocument::ConfigDocument(const ConfigDocument&) = default;

const std::string& ConfigDocument::source() const { return data_->source; }

bool ConfigDocument::has(const std::string& path) const {
  const std::string c = prefix_ + path;
  return data_->values.count(c) != 0 || data_->sections.count(c) != 0;
}

const KeyDef& ConfigDocument::declared(const std::string& path, ValueType type) const {
  const std::string spath = schema_path_of(prefix_ + path);
  const KeyDef* def = data_->schema->find(spath);
  if (def == nullptr) throw InternalError("ConfigDocument: undeclared key " + spath);
  // A string reads an enum, and an integer key that also takes words (choices, e.g. "auto"): the
  // setter then parses the text.
  const bool compatible = def->type == type || (type == ValueType::kString && def->type == ValueType::kEnum) ||
                          (type == ValueType::kString && def->type == ValueType::kInt && !def->choices.empty());
  if (!compatible) throw InternalError("ConfigDocument: key " + spath + " read with the wrong type");
  return *def;
}

namespace {
// The innermost section around `concrete` that the file (or a --set) wrote, else the file: where a
// missing key belongs.
Place section_place(const ConfigDocument::Data& data, const std::string& concrete) {
  std::string section = concrete;
  while (true) {
    const size_t dot = section.rfind('.');
    if (dot == std::string::npos) break;
    section.resize(dot);
    if (auto it = data.sections.find(section); it != data.sections.end()) return it->second;
  }
  return Place{data.source, InputLocation{.file = data.source}};
}

// The text of a scalar value or its default; throws when neither exists.
const std::string& scalar_or_default(const ConfigDocument::Data& data, const std::string& concrete,
                                     const KeyDef& def) {
  auto it = data.values.find(concrete);
  if (it != data.values.end()) return it->second.text;
  if (def.default_text.empty()) {
    const Place at = section_place(data, concrete);
    throw InputError(
        fmt::format("{}: missing key \"{}\" ({}): {}", at.text, concrete, describe_type(def), def.description),
        keyed(at.at, concrete));
  }
  return def.default_text;
}
}  // namespace

int64_t ConfigDocument::get_int(const std::string& path) const {
  const KeyDef& def = declared(path, ValueType::kInt);
  int64_t v = 0;
  const std::string& text = scalar_or_default(*data_, prefix_ + path, def);
  if (!parse_int_text(text, v)) throw InternalError("schema default of " + def.path + " is not an integer");
  return v;
}

double ConfigDocument::get_real(const std::string& path) const {
  const KeyDef& def = declared(path, ValueType::kReal);
  double v = 0;
  const std::string& text = scalar_or_default(*data_, prefix_ + path, def);
  if (!parse_real_text(text, v)) throw InternalError("schema default of " + def.path + " is not a number");
  return v;
}

bool ConfigDocument::get_bool(const std::string& path) const {
  const KeyDef& def = declared(path, ValueType::kBool);
  return scalar_or_default(*data_, prefix_ + path, def) == "true";
}

std::string ConfigDocument::get_string(const std::string& path) const {
  const KeyDef& def = declared(path, ValueType::kString);
  return scalar_or_default(*data_, prefix_ + path, def);
}

Duration ConfigDocument::get_duration(const std::string& path) const {
  const KeyDef& def = declared(path, ValueType::kDuration);
  return parse_duration(scalar_or_default(*data_, prefix_ + path, def));
}

Bytes ConfigDocument::get_bytes(const std::string& path) const {
  const KeyDef& def = declared(path, ValueType::kBytes);
  return parse_bytes(scalar_or_default(*data_, prefix_ + path, def));
}

Bandwidth ConfigDocument::get_bandwidth(const std::string& path) const {
  const KeyDef& def = declared(path, ValueType::kBandwidth);
  return parse_bandwidth(scalar_or_default(*data_, prefix_ + path, def));
}

Power ConfigDocument::get_power(const std::string& path) const {
  const KeyDef& def = declared(path, ValueType::kPower);
  return parse_power(scalar_or_default(*data_, prefix_ + path, def));
}

FlopRate ConfigDocument::get_flop_rate(const std::string& path) const {
  const KeyDef& def = declared(path, ValueType::kFlopRate);
  return parse_flop_rate(scalar_or_default(*data_, prefix_ + path, def));
}

std::vector<int64_t> ConfigDocument::get_int_list(const std::string& path) const {
  declared(path, ValueType::kIntList);
  std::vector<int64_t> out;
  auto it = data_->values.find(prefix_ + path);
  if (it == data_->values.end()) return out;
  for (const auto& item : it->second.items) {
    int64_t v = 0;
    parse_int_text(item, v);
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> ConfigDocument::get_string_list(const std::string& path) const {
  declared(path, ValueType::kStringList);
  auto it = data_->values.find(prefix_ + path);
  if (it == data_->values.end()) return {};
  return it->second.items;
}

std::vector<ConfigDocument> ConfigDocument::get_sections(const std::string& path) const {
  declared(path, ValueType::kSectionList);
  std::vector<ConfigDocument> out;
  auto it = data_->list_sizes.find(prefix_ + path);
  if (it == data_->list_sizes.end()) return out;
  for (size_t i = 0; i < it->second; ++i) {
    out.push_back(ConfigDocument(data_, fmt::format("{}{}[{}].", prefix_, path, i)));
  }
  return out;
}

std::vector<std::string> ConfigDocument::present_children(const std::string& path) const {
  const std::string base = prefix_ + path + ".";
  std::set<std::string> names;
  auto collect = [&](const std::string& key) {
    if (key.starts_with(base)) {
      const std::string rest = key.substr(base.size());
      names.insert(rest.substr(0, rest.find_first_of(".[")));
    }
  };
  for (const auto& kv : data_->values) collect(kv.first);
  for (const auto& kv : data_->sections) collect(kv.first);
  return {names.begin(), names.end()};
}

namespace {
// Where the value or section at `path` of a document rooted at `prefix` was written, and the key a
// message about it names ("" for the file itself); `key_in_place`: the place names the key already
// (a --set value's "--set training.seq_len").
struct KeyPlace {
  Place place;
  std::string key;
  bool key_in_place = false;
};
KeyPlace place_of(const ConfigDocument::Data& data, const std::string& prefix, const std::string& path) {
  const std::string c = prefix + path;
  // A --set place names its key already ("--set a.b").
  const auto names_key = [&](const Place& at) { return at.text.ends_with(c); };
  if (auto it = data.values.find(c); it != data.values.end()) {
    return {it->second.location, c, names_key(it->second.location)};
  }
  if (auto it = data.sections.find(c); it != data.sections.end()) return {it->second, c, names_key(it->second)};
  if (!prefix.empty()) {
    const std::string section = prefix.substr(0, prefix.size() - 1);
    if (auto it = data.sections.find(section); it != data.sections.end()) {
      return {it->second, path.empty() ? section : c};
    }
  }
  return {Place{data.source, InputLocation{.file = data.source}}, path.empty() ? "" : c};
}
}  // namespace

std::string ConfigDocument::where(const std::string& path) const {
  const KeyPlace at = place_of(*data_, prefix_, path);
  if (at.key.empty() || at.key_in_place) return at.place.text + ": ";
  return at.place.text + ": " + at.key + ": ";
}

InputLocation ConfigDocument::location_of(const std::string& path) const {
  const KeyPlace at = place_of(*data_, prefix_, path);
  return keyed(at.place.at, at.key);
}

InputError ConfigDocument::error_at(const std::string& path, const std::string& message) const {
  return InputError(where(path) + message, location_of(path));
}

InputError ConfigDocument::located(const InputError& error, const std::string& section) const {
  const std::string message = error.what();
  const std::vector<std::string>& keys = error.keys();
  for (const std::string& key : keys) {
    if (!has(key)) continue;
    if (!message.starts_with(key)) return error_at(key, message).about(keys);
    // The message opens with the key: the place, naming the key as the root does (an element's
    // with its list and index: "file:line:column: a.b[1].c", or "--set a.b"), then the rest.
    const KeyPlace at = place_of(*data_, prefix_, key);
    const std::string place = at.key_in_place ? at.place.text : at.place.text + ": " + at.key;
    return InputError(place + message.substr(key.size()), keyed(at.place.at, at.key)).about(keys);
  }
  if (keys.empty()) return error_at(section, message);
  const std::string& key = keys.front();
  const Place at = section_place(*data_, prefix_ + key);
  return InputError(at.text + ": " + prefix_ + key + (message.starts_with(key) ? message.substr(key.size()) : ": " + message),
                    keyed(at.at, prefix_ + key))
      .about(keys);
}

}  // namespace clustersim
