#include "scenarios/schema.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

namespace {

std::string parent_of(const std::string& path) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos) return "";
  std::string parent = path.substr(0, dot);
  return parent;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

// Whole bounds up to 2^53 print as integers (16777216, not 1.67772e+07).
std::string format_bound(double v) {
  if (v == std::floor(v) && std::abs(v) < 9.007199254740992e15) return fmt::format("{}", static_cast<int64_t>(v));
  // A large power of two (2^62, the bound of counts that int64 arithmetic keeps exact) as one.
  int exponent = 0;
  if (v > 0 && std::frexp(v, &exponent) == 0.5) return fmt::format("2^{}", exponent - 1);
  return fmt::format("{:g}", v);
}

}  // namespace

KeyDef key_def(std::string path, ValueType type, std::string description, std::string default_text, bool required) {
  KeyDef k;
  k.path = std::move(path);
  k.type = type;
  k.description = std::move(description);
  k.default_text = std::move(default_text);
  k.required = required;
  return k;
}

PhysicalRange physical_range(const KeyDef& def) {
  PhysicalRange r;
  switch (def.type) {
    case ValueType::kDuration: r = {0.0, 86'400.0}; break;
    case ValueType::kBandwidth: r = {1e3, 1e15}; break;
    case ValueType::kFlopRate: r = {1e9, 1e18}; break;
    case ValueType::kPower: r = {0.0, 1e6}; break;
    default: return {def.min, def.max};
  }
  if (def.min) r.min = def.min;
  if (def.max) r.max = def.max;
  return r;
}

std::string describe_physical_range(const KeyDef& def) {
  double scale = 1;
  const char* unit = "";
  switch (def.type) {
    case ValueType::kDuration: unit = "s"; break;
    case ValueType::kBandwidth: scale = 1e-9, unit = "GB/s"; break;
    case ValueType::kFlopRate: scale = 1e-12, unit = "TFLOP/s"; break;
    case ValueType::kPower: unit = "W"; break;
    default: return "";
  }
  const PhysicalRange r = physical_range(def);
  return fmt::format("in [{:g} {}, {:g} {}]", *r.min * scale, unit, *r.max * scale, unit);
}

std::string describe_type(const KeyDef& def) {
  std::string range;
  if (def.min && def.max) {
    range = fmt::format(" in [{}, {}]", format_bound(*def.min), format_bound(*def.max));
  } else if (def.min) {
    range = fmt::format(" >= {}", format_bound(*def.min));
  } else if (def.max) {
    range = fmt::format(" <= {}", format_bound(*def.max));
  }
  switch (def.type) {
    case ValueType::kSection: return "section";
    case ValueType::kSectionList: return "list of sections";
    case ValueType::kInt: return "integer" + range + (def.choices.empty() ? "" : " or " + join(def.choices));
    case ValueType::kReal: return "number" + range;
    case ValueType::kBool: return "true|false";
    case ValueType::kString: return "string";
    case ValueType::kEnum: return "one of: " + join(def.choices);
    case ValueType::kDuration: return "duration, e.g. \"1.5 us\" (ps, ns, us, µs, ms, s, min, h), " + describe_physical_range(def);
    case ValueType::kBytes: return "size, e.g. \"80 GiB\" (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)";
    case ValueType::kBandwidth: return "bandwidth, e.g. \"400 Gb/s\" or \"450 GB/s\", " + describe_physical_range(def);
    case ValueType::kFlopRate: return "FLOP rate, e.g. \"989 TFLOP/s\", " + describe_physical_range(def);
    case ValueType::kPower: return "power, e.g. \"700 W\" (W, kW, MW), " + describe_physical_range(def);
    case ValueType::kIntList: return "list of integers" + range;
    case ValueType::kStringList:
      return def.choices.empty() ? "list of strings" : "list of: " + join(def.choices);
  }
  return "?";
}

Schema& Schema::section(const std::string& path, const std::string& description) {
  return key(KeyDef{.path = path, .type = ValueType::kSection, .description = description});
}

Schema& Schema::section_list(const std::string& path, const std::string& description) {
  return key(KeyDef{.path = path, .type = ValueType::kSectionList, .description = description});
}

Schema& Schema::key(KeyDef def) {
  if (find(def.path) != nullptr) throw InternalError("schema " + name_ + ": duplicate key " + def.path);
  std::string parent = parent_of(def.path);
  if (!parent.empty()) {
    const bool in_list = parent.size() > 2 && parent.ends_with("[]");
    const std::string parent_key = in_list ? parent.substr(0, parent.size() - 2) : parent;
    const KeyDef* p = find(parent_key);
    const ValueType wanted = in_list ? ValueType::kSectionList : ValueType::kSection;
    if (p == nullptr || p->type != wanted) {
      throw InternalError("schema " + name_ + ": key " + def.path + " declared before its section");
    }
  }
  keys_.push_back(std::move(def));
  return *this;
}

const KeyDef* Schema::find(const std::string& path) const {
  for (const auto& k : keys_) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

std::vector<std::string> Schema::children(const std::string& path) const {
  std::vector<std::string> out;
  for (const auto& k : keys_) {
    if (parent_of(k.path) == path) out.push_back(k.path.substr(path.empty() ? 0 : path.size() + 1));
  }
  return out;
}

void Schema::print(std::ostream& out) const {
  out << fmt::format("# {} keys\n", name_);
  for (const auto& k : keys_) {
    const int depth = static_cast<int>(std::count(k.path.begin(), k.path.end(), '.'));
    std::string line = fmt::format("{:<{}}{}", "", depth * 2, k.path);
    line = fmt::format("{:<44} {}", line, describe_type(k));
    if (!k.default_text.empty()) line += fmt::format("; default {}", k.default_text);
    if (k.required) line += "; required";
    out << line << "\n" << fmt::format("{:<44}   {}\n", "", k.description);
  }
}

}  // namespace clustersim
