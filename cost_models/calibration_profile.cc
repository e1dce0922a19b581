#include "cost_models/calibration_profile.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/excerpt.h"
#include "core/input_file.h"

namespace clustersim {

namespace {

using nlohmann::json;

constexpr std::string_view kFormat = "clustersim-calibration-profile";
constexpr int kVersion = 1;

// Context for error messages: the source file and the key path being read.
struct Reader {
  std::string_view source;

  [[noreturn]] void fail(std::string_view key, const std::string& why) const {
    throw InputError(fmt::format("{}: {}: {}", source, key, why));
  }

  void reject_unknown_keys(const json& object, std::string_view where, const std::set<std::string>& allowed) const {
    for (const auto& item : object.items()) {
      if (!allowed.contains(item.key())) {
        std::string valid;
        for (const auto& k : allowed) valid += (valid.empty() ? "" : ", ") + k;
        fail(fmt::format("{}{}", where, item.key()), fmt::format("unknown key (valid keys: {})", valid));
      }
    }
  }

  const json& require(const json& object, const std::string& key, std::string_view where) const {
    auto it = object.find(key);
    if (it == object.end()) fail(fmt::format("{}{}", where, key), "required key is missing");
    return *it;
  }

  std::string string_of(const json& value, std::string_view key) const {
    if (!value.is_string()) fail(key, fmt::format("expected a string, got {}", value.dump()));
    return value.get<std::string>();
  }

  int64_t positive_integer(const json& value, std::string_view key) const {
    if (!value.is_number_integer() || value.get<int64_t>() <= 0) {
      fail(key, fmt::format("expected a positive integer, got {}", value.dump()));
    }
    return value.get<int64_t>();
  }

  // Dimensioned values carry their unit ("12.5 us", "4180 GB/s"), as in scenario files.
  template <typename Parse>
  auto quantity(const json& value, std::string_view key, Parse parse) const {
    const std::string text = string_of(value, key);
    try {
      return parse(text);
    } catch (const InputError& e) {
      fail(key, e.what());
    }
  }
};

ProfilePower parse_power_section(const Reader& r, const json& section) {
  if (!section.is_object()) r.fail("power", "expected an object of power measurements");
  std::set<std::string> keys{"source", "power_limit", "idle_power", "held_power", "window", "memory_clock_share"};
  for (const char* k : ProfilePower::kClassKeys) keys.emplace(k);
  r.reject_unknown_keys(section, "power.", keys);
  ProfilePower p;
  if (auto s = section.find("source"); s != section.end()) p.source = r.string_of(*s, "power.source");
  auto power = [&](const json& object, const std::string& where, const char* key) {
    const std::string path = where + key;
    const Power w = r.quantity(r.require(object, key, where), path, parse_power);
    if (!std::isfinite(w.in_watts()) || !(w > Power::zero())) r.fail(path, "expected a positive, finite power");
    return w;
  };
  auto fraction = [&](const json& object, const std::string& where, const char* key, bool zero_ok) {
    const std::string path = where + key;
    const json& v = r.require(object, key, where);
    if (!v.is_number()) r.fail(path, fmt::format("expected a number, got {}", v.dump()));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x > 1 || (zero_ok ? x < 0 : x <= 0)) {
      r.fail(path, fmt::format("expected a number in {}0, 1], got {}", zero_ok ? "[" : "(", v.dump()));
    }
    return x;
  };
  p.power_limit = power(section, "power.", "power_limit");
  p.idle_power = power(section, "power.", "idle_power");
  p.held_power = power(section, "power.", "held_power");
  if (p.held_power > p.power_limit) r.fail("power.held_power", "must not exceed power.power_limit");
  if (!(p.idle_power < p.held_power)) r.fail("power.idle_power", "must be below power.held_power");
  p.window = r.quantity(r.require(section, "window", "power."), "power.window", parse_duration);
  if (p.window.ps() <= 0) r.fail("power.window", "expected a positive duration");
  p.memory_clock_share = fraction(section, "power.", "memory_clock_share", true);
  for (size_t i = 0; i < std::size(ProfilePower::kClassKeys); ++i) {
    const char* name = ProfilePower::kClassKeys[i];
    const std::string where = fmt::format("power.{}.", name);
    const json& c = r.require(section, name, "power.");
    if (!c.is_object()) r.fail(where.substr(0, where.size() - 1), "expected an object (full_rate, settled_ratio, settled_power)");
    r.reject_unknown_keys(c, where, {"full_rate", "settled_ratio", "settled_power"});
    ProfilePowerClass& pc = *p.power_class(i);
    const std::string rate_key = where + "full_rate";
    const std::string rate_text = r.string_of(r.require(c, "full_rate", where), rate_key);
    try {
      pc.full_rate = std::string_view(name) == "copy" ? parse_bandwidth(rate_text).bytes_per_second()
                                                      : parse_flop_rate(rate_text).flop_per_second();
    } catch (const InputError& e) {
      r.fail(rate_key, e.what());
    }
    if (!std::isfinite(pc.full_rate) || !(pc.full_rate > 0)) r.fail(rate_key, "expected a positive, finite rate");
    pc.settled_ratio = fraction(c, where, "settled_ratio", false);
    pc.settled_power = power(c, where, "settled_power");
    if (!(pc.settled_power > p.idle_power)) r.fail(where + "settled_power", "must be above power.idle_power");
  }
  return p;
}

}  // namespace

CalibrationProfile parse_calibration_profile(std::string_view json_text, std::string_view source) {
  Reader r{source};
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {  // parse errors, and numbers beyond a double (406)
    throw InputError(fmt::format("{}: not valid JSON: {}", source, excerpt(e.what(), 300)));
  }
  if (!doc.is_object()) r.fail("(top level)", "expected a JSON object");
  r.reject_unknown_keys(doc, "",
                        {"format", "version", "name", "machine", "gemm_samples", "memory", "launch_overhead",
                         "host_costs", "power", "attention_samples", "collectives"});
  const std::string format = r.string_of(r.require(doc, "format", ""), "format");
  if (format != kFormat) r.fail("format", fmt::format("expected \"{}\", got \"{}\"", kFormat, format));
  const json& version = r.require(doc, "version", "");
  if (!version.is_number_integer() || version.get<int>() != kVersion) {
    r.fail("version", fmt::format("unsupported version {} (this build reads version {})", version.dump(), kVersion));
  }

  CalibrationProfile profile;
  profile.name = r.string_of(r.require(doc, "name", ""), "name");

  const json& machine = r.require(doc, "machine", "");
  if (!machine.is_object()) r.fail("machine", "expected an object");
  r.reject_unknown_keys(machine, "machine.",
                        {"gpu", "sm_count", "sm_clock_mhz", "memory_clock_mhz", "driver", "cuda", "cublas", "nccl",
                         "date", "method"});
  MachineDescription& m = profile.machine;
  m.gpu = r.string_of(r.require(machine, "gpu", "machine."), "machine.gpu");
  m.sm_count = static_cast<int>(r.positive_integer(r.require(machine, "sm_count", "machine."), "machine.sm_count"));
  auto optional_int = [&](const char* key, int& out) {
    if (auto it = machine.find(key); it != machine.end()) {
      out = static_cast<int>(r.positive_integer(*it, fmt::format("machine.{}", key)));
    }
  };
  auto optional_string = [&](const char* key, std::string& out) {
    if (auto it = machine.find(key); it != machine.end()) out = r.string_of(*it, fmt::format("machine.{}", key));
  };
  optional_int("sm_clock_mhz", m.sm_clock_mhz);
  optional_int("memory_clock_mhz", m.memory_clock_mhz);
  optional_string("driver", m.driver);
  optional_string("cuda", m.cuda);
  optional_string("cublas", m.cublas);
  optional_string("nccl", m.nccl);
  optional_string("date", m.date);
  optional_string("method", m.method);

  if (auto it = doc.find("gemm_samples"); it != doc.end()) {
    if (!it->is_array()) r.fail("gemm_samples", "expected an array of samples");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& s = (*it)[i];
      const std::string where = fmt::format("gemm_samples[{}].", i);
      if (!s.is_object()) r.fail(where, "expected an object {dtype, m, n, k, batch, a_transposed, time}");
      r.reject_unknown_keys(s, where, {"dtype", "m", "n", "k", "batch", "a_transposed", "time"});
      GemmSample sample;
      const std::string dtype = r.string_of(r.require(s, "dtype", where), where + "dtype");
      try {
        sample.shape.dtype = parse_data_type(dtype);
      } catch (const InputError& e) {
        r.fail(where + "dtype", e.what());
      }
      sample.shape.m = r.positive_integer(r.require(s, "m", where), where + "m");
      sample.shape.n = r.positive_integer(r.require(s, "n", where), where + "n");
      sample.shape.k = r.positive_integer(r.require(s, "k", where), where + "k");
      if (auto b = s.find("batch"); b != s.end()) sample.shape.batch = r.positive_integer(*b, where + "batch");
      if (auto t = s.find("a_transposed"); t != s.end()) {
        if (!t->is_boolean()) r.fail(where + "a_transposed", "expected true or false");
        sample.shape.a_transposed = t->get<bool>();
      }
      sample.time = r.quantity(r.require(s, "time", where), where + "time", parse_duration);
      if (sample.time.ps() <= 0) r.fail(where + "time", "a GEMM time must be positive");
      profile.gemm_samples.push_back(sample);
    }
  }

  if (auto it = doc.find("memory"); it != doc.end()) {
    if (!it->is_object()) r.fail("memory", "expected an object {copy_bandwidth, kernels}");
    r.reject_unknown_keys(*it, "memory.", {"copy_bandwidth", "kernels"});
    if (auto bw = it->find("copy_bandwidth"); bw != it->end()) {
      profile.copy_bandwidth = r.quantity(*bw, "memory.copy_bandwidth", parse_bandwidth);
    }
    if (auto kernels = it->find("kernels"); kernels != it->end()) {
      if (!kernels->is_object()) r.fail("memory.kernels", "expected an object {<memory access kind>: <bandwidth>}");
      for (const auto& item : kernels->items()) {
        const std::string key = "memory.kernels." + item.key();
        MemoryAccess access = MemoryAccess::kStream;
        try {
          access = parse_memory_access(item.key());
        } catch (const InputError& e) {
          r.fail(key, e.what());
        }
        const Bandwidth bw = r.quantity(item.value(), key, parse_bandwidth);
        if (!bw.is_positive()) r.fail(key, "a kernel bandwidth must be positive");
        profile.kernel_bandwidths[access] = bw;
      }
    }
  }
  if (auto it = doc.find("attention_samples"); it != doc.end()) {
    if (!it->is_array()) r.fail("attention_samples", "expected an array of samples");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& s = (*it)[i];
      const std::string where = fmt::format("attention_samples[{}].", i);
      if (!s.is_object()) {
        r.fail(where, "expected an object {kernel, dtype, batch, heads, kv_heads, seq, head_dim, forward, backward}");
      }
      r.reject_unknown_keys(s, where,
                            {"kernel", "dtype", "batch", "heads", "kv_heads", "seq", "head_dim", "forward", "backward"});
      AttentionSample sample;
      sample.kernel = r.string_of(r.require(s, "kernel", where), where + "kernel");
      if (auto d = s.find("dtype"); d != s.end()) {
        try {
          sample.shape.dtype = parse_data_type(r.string_of(*d, where + "dtype"));
        } catch (const InputError& e) {
          r.fail(where + "dtype", e.what());
        }
      }
      sample.shape.batch = r.positive_integer(r.require(s, "batch", where), where + "batch");
      sample.shape.heads = r.positive_integer(r.require(s, "heads", where), where + "heads");
      sample.shape.kv_heads = r.positive_integer(r.require(s, "kv_heads", where), where + "kv_heads");
      sample.shape.seq = r.positive_integer(r.require(s, "seq", where), where + "seq");
      sample.shape.head_dim = r.positive_integer(r.require(s, "head_dim", where), where + "head_dim");
      if (sample.shape.heads % sample.shape.kv_heads != 0) {
        r.fail(where + "kv_heads", fmt::format("heads {} must be a multiple of kv_heads {}", sample.shape.heads,
                                               sample.shape.kv_heads));
      }
      sample.forward = r.quantity(r.require(s, "forward", where), where + "forward", parse_duration);
      sample.backward = r.quantity(r.require(s, "backward", where), where + "backward", parse_duration);
      if (sample.forward.ps() <= 0) r.fail(where + "forward", "an attention time must be positive");
      if (sample.backward.ps() <= 0) r.fail(where + "backward", "an attention time must be positive");
      profile.attention_samples.push_back(sample);
    }
  }
  if (auto it = doc.find("launch_overhead"); it != doc.end()) {
    if (!it->is_object()) r.fail("launch_overhead", "expected an object {eager, graph}");
    r.reject_unknown_keys(*it, "launch_overhead.", {"eager", "graph"});
    if (auto e = it->find("eager"); e != it->end()) {
      profile.launch_eager = r.quantity(*e, "launch_overhead.eager", parse_duration);
    }
    if (auto g = it->find("graph"); g != it->end()) {
      profile.launch_graph = r.quantity(*g, "launch_overhead.graph", parse_duration);
    }
  }
  if (auto it = doc.find("host_costs"); it != doc.end()) {
    if (!it->is_object()) r.fail("host_costs", "expected an object of host times per call");
    std::set<std::string> keys{"source"};
    for (const char* k : ProfileHostCosts::kKeys) keys.emplace(k);
    r.reject_unknown_keys(*it, "host_costs.", keys);
    ProfileHostCosts host;
    if (auto s = it->find("source"); s != it->end()) host.source = r.string_of(*s, "host_costs.source");
    for (size_t i = 0; i < std::size(ProfileHostCosts::kKeys); ++i) {
      const std::string key = std::string("host_costs.") + ProfileHostCosts::kKeys[i];
      const Duration d = r.quantity(r.require(*it, ProfileHostCosts::kKeys[i], "host_costs."), key, parse_duration);
      if (d.ps() < 0) r.fail(key, "a host time must be at least 0");
      *host.field(i) = d;
    }
    profile.host_costs = host;
  }
  if (auto it = doc.find("power"); it != doc.end()) profile.power = parse_power_section(r, *it);
  if (auto it = doc.find("collectives"); it != doc.end()) profile.collectives_json = it->dump();
  return profile;
}

ProfilePower parse_profile_power(std::string_view json_text, std::string_view source) {
  const Reader r{source};
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", source, excerpt(e.what(), 300)));
  }
  return parse_power_section(r, doc);
}

CalibrationProfile load_calibration_profile(const std::string& path) {
  return parse_calibration_profile(read_input_file(path, "calibration profile"), path);
}

namespace {
// µs with 6 decimals is exact to the picosecond, so a written profile reads back identically.
std::string duration_text(Duration d) {
  const int64_t ps = d.ps();
  return fmt::format("{}.{:06d} us", ps / 1'000'000, ps % 1'000'000);
}
}  // namespace

std::string to_json(const CalibrationProfile& profile) {
  json doc = json::object();
  doc["format"] = kFormat;
  doc["version"] = kVersion;
  doc["name"] = profile.name;
  const MachineDescription& m = profile.machine;
  json machine = {{"gpu", m.gpu}, {"sm_count", m.sm_count}};
  if (m.sm_clock_mhz > 0) machine["sm_clock_mhz"] = m.sm_clock_mhz;
  if (m.memory_clock_mhz > 0) machine["memory_clock_mhz"] = m.memory_clock_mhz;
  for (const auto& [key, value] : {std::pair{"driver", &m.driver}, std::pair{"cuda", &m.cuda},
                                   std::pair{"cublas", &m.cublas}, std::pair{"nccl", &m.nccl},
                                   std::pair{"date", &m.date}, std::pair{"method", &m.method}}) {
    if (!value->empty()) machine[key] = *value;
  }
  doc["machine"] = machine;
  json samples = json::array();
  for (const GemmSample& s : profile.gemm_samples) {
    json j = {{"dtype", std::string(name_of(s.shape.dtype))},
              {"m", s.shape.m},
              {"n", s.shape.n},
              {"k", s.shape.k},
              {"batch", s.shape.batch}};
    if (s.shape.a_transposed) j["a_transposed"] = true;
    j["time"] = duration_text(s.time);
    samples.push_back(j);
  }
  doc["gemm_samples"] = samples;
  if (profile.copy_bandwidth || !profile.kernel_bandwidths.empty()) {
    json memory = json::object();
    if (profile.copy_bandwidth) {
      memory["copy_bandwidth"] = fmt::format("{:.17g} B/s", profile.copy_bandwidth->bytes_per_second());
    }
    if (!profile.kernel_bandwidths.empty()) {
      json kernels = json::object();
      for (const auto& [access, bw] : profile.kernel_bandwidths) {
        kernels[std::string(name_of(access))] = fmt::format("{:.17g} B/s", bw.bytes_per_second());
      }
      memory["kernels"] = kernels;
    }
    doc["memory"] = memory;
  }
  if (profile.launch_eager || profile.launch_graph) {
    json launch = json::object();
    if (profile.launch_eager) launch["eager"] = duration_text(*profile.launch_eager);
    if (profile.launch_graph) launch["graph"] = duration_text(*profile.launch_graph);
    doc["launch_overhead"] = launch;
  }
  if (profile.power) {
    const ProfilePower& p = *profile.power;
    json section = json::object();
    if (!p.source.empty()) section["source"] = p.source;
    section["power_limit"] = fmt::format("{} W", p.power_limit.in_watts());
    section["idle_power"] = fmt::format("{} W", p.idle_power.in_watts());
    section["held_power"] = fmt::format("{} W", p.held_power.in_watts());
    section["window"] = duration_text(p.window);
    section["memory_clock_share"] = p.memory_clock_share;
    for (size_t i = 0; i < std::size(ProfilePower::kClassKeys); ++i) {
      const ProfilePowerClass& c = *p.power_class(i);
      const bool copy = std::string_view(ProfilePower::kClassKeys[i]) == "copy";
      section[ProfilePower::kClassKeys[i]] = {
          {"full_rate", copy ? fmt::format("{} B/s", c.full_rate) : fmt::format("{} FLOP/s", c.full_rate)},
          {"settled_ratio", c.settled_ratio},
          {"settled_power", fmt::format("{} W", c.settled_power.in_watts())}};
    }
    doc["power"] = section;
  }
  if (profile.host_costs) {
    ProfileHostCosts host = *profile.host_costs;
    json section = json::object();
    if (!host.source.empty()) section["source"] = host.source;
    for (size_t i = 0; i < std::size(ProfileHostCosts::kKeys); ++i) {
      section[ProfileHostCosts::kKeys[i]] = duration_text(*host.field(i));
    }
    doc["host_costs"] = section;
  }
  if (!profile.attention_samples.empty()) {
    json samples_json = json::array();
    for (const AttentionSample& s : profile.attention_samples) {
      samples_json.push_back({{"kernel", s.kernel},
                              {"dtype", std::string(name_of(s.shape.dtype))},
                              {"batch", s.shape.batch},
                              {"heads", s.shape.heads},
                              {"kv_heads", s.shape.kv_heads},
                              {"seq", s.shape.seq},
                              {"head_dim", s.shape.head_dim},
                              {"forward", duration_text(s.forward)},
                              {"backward", duration_text(s.backward)}});
    }
    doc["attention_samples"] = samples_json;
  }
  if (!profile.collectives_json.empty()) doc["collectives"] = json::parse(profile.collectives_json);
  return doc.dump(1) + "\n";
}

void save_calibration_profile(const CalibrationProfile& profile, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError(fmt::format("cannot write calibration profile \"{}\"", path));
  out << to_json(profile);
  check_written(out, fmt::format("calibration profile \"{}\"", path));
}

}  // namespace clustersim
