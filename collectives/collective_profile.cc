#include "collectives/collective_profile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"

namespace clustersim {
namespace {

using Json = nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw InputError(fmt::format("collective profile: {}: {}", path, problem));
}

const Json& member(const Json& object, const std::string& path, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) fail(path, fmt::format("missing key \"{}\"", key));
  return *it;
}

void check_keys(const Json& object, const std::string& path, const std::set<std::string>& allowed) {
  if (!object.is_object()) fail(path, "expected an object");
  for (const auto& [key, value] : object.items()) {
    if (!allowed.contains(key)) {
      std::string valid;
      for (const auto& name : allowed) valid += (valid.empty() ? "" : ", ") + name;
      fail(path, fmt::format("unknown key \"{}\"; valid keys: {}", key, valid));
    }
  }
}

std::string text_of(const Json& value, const std::string& path) {
  if (!value.is_string()) fail(path, fmt::format("expected a string with a unit, got {}", value.dump()));
  return value.get<std::string>();
}

int positive_int(const Json& value, const std::string& path, bool allow_zero) {
  if (!value.is_number_integer()) fail(path, fmt::format("expected an integer, got {}", value.dump()));
  const auto number = value.get<int64_t>();
  if (number < (allow_zero ? 0 : 1) || number > INT32_MAX) {
    fail(path, fmt::format("must be {} (got {})", allow_zero ? ">= 0" : ">= 1", number));
  }
  return static_cast<int>(number);
}

template <typename T, typename Parse>
T parsed(const Json& value, const std::string& path, Parse parse) {
  const std::string text = text_of(value, path);
  try {
    return parse(text);
  } catch (const InputError& error) {
    fail(path, error.what());
  }
}

CollectiveFitSegment parse_segment(const Json& json, const std::string& path) {
  check_keys(json, path, {"min_size", "max_size", "latency", "bandwidth"});
  CollectiveFitSegment segment;
  segment.min_size = parsed<Bytes>(member(json, path, "min_size"), path + ".min_size", parse_bytes);
  segment.max_size = parsed<Bytes>(member(json, path, "max_size"), path + ".max_size", parse_bytes);
  segment.latency = parsed<Duration>(member(json, path, "latency"), path + ".latency", parse_duration);
  segment.bandwidth = parsed<Bandwidth>(member(json, path, "bandwidth"), path + ".bandwidth", parse_bandwidth);
  if (segment.min_size > segment.max_size) {
    fail(path, fmt::format("min_size ({} B) is larger than max_size ({} B)", segment.min_size.count(),
                           segment.max_size.count()));
  }
  return segment;
}

CollectiveFit parse_fit(const Json& json, const std::string& path) {
  check_keys(json, path, {"op", "algorithm", "protocol", "ranks", "nodes", "segments"});
  CollectiveFit fit;
  fit.op = parsed<CollectiveOp>(member(json, path, "op"), path + ".op", parse_collective_op);
  fit.algorithm =
      parsed<CollectiveAlgorithm>(member(json, path, "algorithm"), path + ".algorithm", parse_collective_algorithm);
  fit.protocol = parsed<Protocol>(member(json, path, "protocol"), path + ".protocol", parse_protocol);
  fit.ranks = positive_int(member(json, path, "ranks"), path + ".ranks", false);
  if (json.contains("nodes")) fit.nodes = positive_int(json.at("nodes"), path + ".nodes", true);
  const Json& segments = member(json, path, "segments");
  if (!segments.is_array() || segments.empty()) fail(path + ".segments", "expected a non-empty array");
  for (size_t i = 0; i < segments.size(); ++i) {
    fit.segments.push_back(parse_segment(segments[i], fmt::format("{}.segments[{}]", path, i)));
  }
  return fit;
}

}  // namespace

std::optional<Duration> CollectiveProfile::lookup(CollectiveOp op, CollectiveAlgorithm algorithm, Protocol protocol,
                                                  int ranks, int nodes, Bytes size) const {
  // Fits of the exact algorithm and protocol first, then fits measured with NCCL's own choice.
  for (const bool wildcard : {false, true}) {
    for (const CollectiveFit& fit : fits) {
      const bool automatic = fit.algorithm == CollectiveAlgorithm::kAuto || fit.protocol == Protocol::kAuto;
      if (automatic != wildcard || fit.op != op || fit.ranks != ranks) continue;
      if (fit.algorithm != CollectiveAlgorithm::kAuto && fit.algorithm != algorithm) continue;
      if (fit.protocol != Protocol::kAuto && fit.protocol != protocol) continue;
      if (fit.nodes != 0 && fit.nodes != nodes) continue;
      for (const CollectiveFitSegment& segment : fit.segments) {
        if (size >= segment.min_size && size <= segment.max_size) {
          return segment.latency + transfer_time(size, segment.bandwidth);
        }
      }
    }
  }
  return std::nullopt;
}

CollectiveProfile parse_collective_profile(std::string_view json_text) {
  Json json;
  try {
    json = Json::parse(json_text);
  } catch (const Json::exception& error) {  // parse errors, and numbers beyond a double (406)
    fail("(document)", fmt::format("not valid JSON: {}", error.what()));
  }
  check_keys(json, "(document)", {"name", "fits"});
  CollectiveProfile profile;
  if (json.contains("name")) profile.name = text_of(json.at("name"), "name");
  const Json& fits = member(json, "(document)", "fits");
  if (!fits.is_array()) fail("fits", "expected an array");
  for (size_t i = 0; i < fits.size(); ++i) profile.fits.push_back(parse_fit(fits[i], fmt::format("fits[{}]", i)));
  return profile;
}

std::string to_json(const CollectiveProfile& profile) {
  Json fits = Json::array();
  for (const CollectiveFit& fit : profile.fits) {
    Json segments = Json::array();
    for (const CollectiveFitSegment& segment : fit.segments) {
      segments.push_back({{"min_size", fmt::format("{} B", segment.min_size.count())},
                          {"max_size", fmt::format("{} B", segment.max_size.count())},
                          {"latency", fmt::format("{} ps", segment.latency.ps())},
                          {"bandwidth", fmt::format("{:.17g} B/s", segment.bandwidth.bytes_per_second())}});
    }
    Json entry = {{"op", name_of(fit.op)},
                  {"algorithm", name_of(fit.algorithm)},
                  {"protocol", name_of(fit.protocol)},
                  {"ranks", fit.ranks},
                  {"segments", segments}};
    if (fit.nodes != 0) entry["nodes"] = fit.nodes;
    fits.push_back(entry);
  }
  return Json{{"name", profile.name}, {"fits", fits}}.dump(2);
}

}  // namespace clustersim
