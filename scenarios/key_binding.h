#pragma once

// Keys declared together with what they set. Each key of a schema is declared once, with its type,
// default, description (schema.h) and the setter that writes its parsed value into a target struct,
// after ns-3's attributes, whose declaration carries the accessor of the member it sets
// (MakeUintegerAccessor(&Class::m_field)). Loading a file applies every setter in declaration order;
// nothing reads a key by name elsewhere.
//
//   KeyBinder<Scenario> b(schema, bindings);
//   b.key(integer("parallelism.tp", "tensor-parallel size", "1", 1, kMaxClusterGpus),
//         [](Scenario& s, int64_t v) { s.layout.tp = static_cast<int>(v); });
//
// A setter takes the target and the value as its type reads it (ValueType -> C++ type):
//   kInt int64_t (std::string where the key also takes words, KeyDef::choices), kReal double, kBool bool, kString and kEnum std::string, kDuration Duration,
//   kBytes Bytes, kBandwidth Bandwidth, kFlopRate FlopRate, kPower Power, kIntList
//   std::vector<int64_t>, kStringList std::vector<std::string>;
// and optionally, third, the KeyRef of the key (its document and path: where(), error()).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/units.h"
#include "scenarios/config_document.h"
#include "scenarios/schema.h"

namespace clustersim {

// A key of a loaded document, for a setter that places a message or remembers where its value was.
struct KeyRef {
  const ConfigDocument& doc;
  const std::string& path;  // relative to doc
  std::string where() const { return doc.where(path); }
  bool given() const { return doc.has(path); }
  InputError error(const std::string& message) const { return doc.error_at(path, message); }
};

// When a setter runs: kAlways with the file's value or the schema default; kGiven only where the
// file (or a --set) gives the key, leaving the target's own value otherwise (a preset's).
enum class SetWhen { kAlways, kGiven };

template <typename Target>
class KeyBindings {
 public:
  using Setter = std::function<void(const ConfigDocument&, const std::string& path, Target&)>;
  struct Binding {
    std::string path;  // as the schema declares it, "a.b" or "a.b[].c"
    SetWhen when;
    Setter set;
  };

  void add(std::string path, SetWhen when, Setter set) {
    for (const Binding& b : bindings_) {
      if (b.path == path) throw InternalError("key " + path + " bound twice");
    }
    bindings_.push_back(Binding{std::move(path), when, std::move(set)});
  }
  // Applies the setters of the keys directly under `prefix` (declared "prefix" + name, elements of
  // a list under "a.b[]."), in declaration order, to `target`. InputErrors the setters throw pass.
  // The setters of the keys of a section section_when_given() declared run only where the file
  // gives that section.
  void apply(const ConfigDocument& doc, Target& target, const std::string& prefix = "") const {
    for (const Binding& b : bindings_) {
      if (!b.path.starts_with(prefix)) continue;
      const std::string path = b.path.substr(prefix.size());
      if (path.find("[]") != std::string::npos) continue;  // applied by its list's setter
      if (b.when == SetWhen::kGiven && !doc.has(path)) continue;
      bool absent_section = false;
      for (const std::string& section : conditional_sections_) {
        if (path.starts_with(section + ".") && !doc.has(section)) absent_section = true;
      }
      if (!absent_section) b.set(doc, path, target);
    }
  }
  // apply() for the keys of the top-level sections (or top-level keys) `sections` only, at the root:
  // for a loader that reads a file section by section, so that an error in an early section is
  // the one reported.
  void apply_sections(const ConfigDocument& doc, Target& target, const std::vector<std::string>& sections) const {
    for (const Binding& b : bindings_) {
      const std::string top = b.path.substr(0, b.path.find_first_of(".["));
      if (std::find(sections.begin(), sections.end(), top) == sections.end()) continue;
      if (b.when == SetWhen::kGiven && !doc.has(b.path)) continue;
      bool absent_section = false;
      for (const std::string& section : conditional_sections_) {
        if (b.path.starts_with(section + ".") && !doc.has(section)) absent_section = true;
      }
      if (!absent_section) b.set(doc, b.path, target);
    }
  }
  void add_conditional_section(std::string path) { conditional_sections_.push_back(std::move(path)); }
  const std::vector<Binding>& bindings() const { return bindings_; }
  // Records an element key of a section list, whose setter the list's own applies.
  void add_element(std::string path) { element_paths_.push_back(std::move(path)); }
  // Every key with a setter: the bindings' and the lists' element keys, in declaration order.
  std::vector<std::string> bound_paths() const {
    std::vector<std::string> out;
    for (const Binding& b : bindings_) out.push_back(b.path);
    out.insert(out.end(), element_paths_.begin(), element_paths_.end());
    return out;
  }

 private:
  std::vector<Binding> bindings_;
  std::vector<std::string> element_paths_;
  std::vector<std::string> conditional_sections_;  // relative to the document's root
};

namespace key_binding_detail {

template <typename V>
V read(const ConfigDocument& doc, const std::string& path) {
  if constexpr (std::is_same_v<V, int64_t>)
    return doc.get_int(path);
  else if constexpr (std::is_same_v<V, double>)
    return doc.get_real(path);
  else if constexpr (std::is_same_v<V, bool>)
    return doc.get_bool(path);
  else if constexpr (std::is_same_v<V, std::string>)
    return doc.get_string(path);
  else if constexpr (std::is_same_v<V, Duration>)
    return doc.get_duration(path);
  else if constexpr (std::is_same_v<V, Bytes>)
    return doc.get_bytes(path);
  else if constexpr (std::is_same_v<V, Bandwidth>)
    return doc.get_bandwidth(path);
  else if constexpr (std::is_same_v<V, FlopRate>)
    return doc.get_flop_rate(path);
  else if constexpr (std::is_same_v<V, Power>)
    return doc.get_power(path);
  else if constexpr (std::is_same_v<V, std::vector<int64_t>>)
    return doc.get_int_list(path);
  else if constexpr (std::is_same_v<V, std::vector<std::string>>)
    return doc.get_string_list(path);
  else
    static_assert(sizeof(V) == 0, "no ConfigDocument getter for this setter's value type");
}

// Whether a setter taking V can hold a value of `type`.
template <typename V>
bool reads(const KeyDef& def) {
  switch (def.type) {
    case ValueType::kInt:
      // An integer key that also takes words (choices): its setter parses the text.
      return std::is_same_v<V, int64_t> || (std::is_same_v<V, std::string> && !def.choices.empty());
    case ValueType::kReal:
      return std::is_same_v<V, double>;
    case ValueType::kBool:
      return std::is_same_v<V, bool>;
    case ValueType::kString:
    case ValueType::kEnum:
      return std::is_same_v<V, std::string>;
    case ValueType::kDuration:
      return std::is_same_v<V, Duration>;
    case ValueType::kBytes:
      return std::is_same_v<V, Bytes>;
    case ValueType::kBandwidth:
      return std::is_same_v<V, Bandwidth>;
    case ValueType::kFlopRate:
      return std::is_same_v<V, FlopRate>;
    case ValueType::kPower:
      return std::is_same_v<V, Power>;
    case ValueType::kIntList:
      return std::is_same_v<V, std::vector<int64_t>>;
    case ValueType::kStringList:
      return std::is_same_v<V, std::vector<std::string>>;
    case ValueType::kSection:
    case ValueType::kSectionList:
      return false;
  }
  return false;
}

// The value parameter of a setter lambda: (Target&, V) or (Target&, V, const KeyRef&).
template <typename F>
struct setter_traits : setter_traits<decltype(&F::operator())> {};
template <typename C, typename T, typename V>
struct setter_traits<void (C::*)(T&, V) const> {
  using value = std::remove_cvref_t<V>;
  static constexpr bool with_key = false;
};
template <typename C, typename T, typename V>
struct setter_traits<void (C::*)(T&, V, const KeyRef&) const> {
  using value = std::remove_cvref_t<V>;
  static constexpr bool with_key = true;
};

}  // namespace key_binding_detail

// Declares keys into a Schema and their setters into KeyBindings<Root>; at(prefix, project) makes
// a binder for the keys under `prefix` whose setters write into a part of the root (the model keys
// into Scenario::model).
template <typename Root, typename Target = Root>
class KeyBinder {
 public:
  using Projection = std::function<Target&(Root&)>;
  KeyBinder(Schema& schema, KeyBindings<Root>& bindings, std::string prefix = "", Projection project = {})
      : schema_(schema), bindings_(bindings), prefix_(std::move(prefix)), project_(std::move(project)) {}

  const std::string& prefix() const { return prefix_; }

  // Declares `def` (its path under the binder's prefix) with `setter`, run as `when` says.
  // Throws InternalError where the setter's value type does not read the key's type.
  template <typename F>
  KeyBinder& key(KeyDef def, F setter, SetWhen when = SetWhen::kAlways) {
    using Traits = key_binding_detail::setter_traits<F>;
    using V = typename Traits::value;
    def.path = prefix_ + def.path;
    if (!key_binding_detail::reads<V>(def)) throw InternalError("key " + def.path + ": setter of the wrong type");
    bindings_.add(def.path, when,
                  [setter, project = project_](const ConfigDocument& doc, const std::string& path, Root& root) {
                    Target& target = project_target(project, root);
                    V value = key_binding_detail::read<V>(doc, path);
                    if constexpr (Traits::with_key) {
                      setter(target, std::move(value), KeyRef{doc, path});
                    } else {
                      setter(target, std::move(value));
                    }
                  });
    schema_.key(std::move(def));
    return *this;
  }
  template <typename F>
  KeyBinder& given(KeyDef def, F setter) {
    return key(std::move(def), std::move(setter), SetWhen::kGiven);
  }

  KeyBinder& section(const std::string& path, const std::string& description) {
    schema_.section(prefix_ + path, description);
    return *this;
  }
  // A section whose keys' setters run only where the file gives it: `present(target, section)`
  // first, then theirs.
  KeyBinder& section_when_given(const std::string& path, const std::string& description,
                                std::function<void(Target&, const KeyRef&)> present) {
    const std::string full = prefix_ + path;
    schema_.section(full, description);
    bindings_.add_conditional_section(full);
    bindings_.add(full, SetWhen::kGiven,
                  [present, project = project_](const ConfigDocument& doc, const std::string& p, Root& root) {
                    present(project_target(project, root), KeyRef{doc, p});
                  });
    return *this;
  }

  // Declares the section list `path`; `elements(target)` is the list its elements are appended to,
  // each built by the setters `declare(KeyBinder<Element>&)` declares, from one element of the
  // list; `finish(element, element_doc, target)` runs on each before it is appended.
  template <typename Element, typename Elements, typename Declare, typename Finish>
  KeyBinder& section_list(const std::string& path, const std::string& description, Elements elements, Declare declare,
                          Finish finish) {
    const std::string full = prefix_ + path;
    schema_.section_list(full, description);
    auto element_bindings = std::make_shared<KeyBindings<Element>>();
    KeyBinder<Element> element_binder(schema_, *element_bindings, full + "[].");
    declare(element_binder);
    for (const std::string& p : element_bindings->bound_paths()) bindings_.add_element(p);
    bindings_.add(full, SetWhen::kGiven,
                  [element_bindings, elements, finish, full, project = project_](
                      const ConfigDocument& doc, const std::string& list_path, Root& root) {
                    Target& target = project_target(project, root);
                    for (const ConfigDocument& e : doc.get_sections(list_path)) {
                      Element element;
                      element_bindings->apply(e, element, full + "[].");
                      finish(element, e, target);
                      elements(target).push_back(std::move(element));
                    }
                  });
    return *this;
  }

  // The binder of this one's keys whose setters take the root itself: for a key of a part whose
  // setter also records something in the root (the scenario's model.make_vocab_size_divisible_by,
  // whose being given a later rule reads).
  KeyBinder<Root, Root> at_root() { return KeyBinder<Root, Root>(schema_, bindings_, prefix_); }

  // The binder of the keys under `prefix` (appended to this one's) that set `project(target)`.
  template <typename Part>
  KeyBinder<Root, Part> at(const std::string& prefix, std::function<Part&(Target&)> project) {
    auto outer = project_;
    return KeyBinder<Root, Part>(schema_, bindings_, prefix_ + prefix, [outer, project](Root& root) -> Part& {
      return project(project_target(outer, root));
    });
  }

 private:
  static Target& project_target(const Projection& project, Root& root) {
    if constexpr (std::is_same_v<Root, Target>) {
      if (!project) return root;
    }
    return project(root);
  }

  Schema& schema_;
  KeyBindings<Root>& bindings_;
  std::string prefix_;
  Projection project_;
};

}  // namespace clustersim
