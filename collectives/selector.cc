#include "collectives/selector.h"

#include <array>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "collectives/protocol.h"
#include "core/error.h"

namespace clustersim {
namespace {

constexpr std::array<Protocol, 3> kProtocols = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

std::string algorithms_for(const CollectiveRequest& request, const GroupLayout& layout) {
  std::string names = "auto";
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    if (entry.supports(request.op, layout, nullptr)) names += fmt::format(", {}", name_of(entry.algorithm));
  }
  return names;
}

std::string protocols_for(const AlgorithmEntry& entry, const GroupLayout& layout) {
  std::string names = "auto";
  for (Protocol protocol : kProtocols) {
    if (protocol_supported(entry.algorithm, protocol, layout)) names += fmt::format(", {}", name_of(protocol));
  }
  return names;
}

}  // namespace

Duration closed_form_time(const CollectiveRequest& request, const GroupLayout& layout, const AlgorithmEntry& entry,
                          Protocol protocol) {
  return entry.estimate(request, layout, step_costs(entry.algorithm, protocol, layout));
}

Selection select_algorithm(const CollectiveRequest& request, const GroupLayout& layout,
                           const CandidatePricing& price) {
  std::vector<const AlgorithmEntry*> algorithms;
  if (request.algorithm != CollectiveAlgorithm::kAuto) {
    const AlgorithmEntry& entry = algorithm_entry(request.algorithm);
    std::string why;
    if (!entry.supports(request.op, layout, &why)) {
      throw InputError(fmt::format("algorithm \"{}\" cannot run {} on this group ({}); valid algorithms: {}",
                                   name_of(request.algorithm), name_of(request.op), why,
                                   algorithms_for(request, layout)));
    }
    if (request.protocol != Protocol::kAuto && !protocol_supported(entry.algorithm, request.protocol, layout)) {
      throw InputError(fmt::format("protocol \"{}\" cannot run algorithm {} on this group; valid protocols: {}",
                                   name_of(request.protocol), name_of(entry.algorithm), protocols_for(entry, layout)));
    }
    algorithms.push_back(&entry);
  } else {
    for (const AlgorithmEntry& entry : algorithm_registry()) {
      if (entry.automatic && entry.supports(request.op, layout, nullptr)) algorithms.push_back(&entry);
    }
  }

  bool found = false;
  Selection best;
  for (const AlgorithmEntry* entry : algorithms) {
    for (Protocol protocol : kProtocols) {
      if (request.protocol != Protocol::kAuto && protocol != request.protocol) continue;
      if (!protocol_supported(entry->algorithm, protocol, layout)) continue;
      const Duration time = price(*entry, protocol);
      if (!found || time < best.time) {
        found = true;
        best.time = time;
        best.choice = {entry->algorithm, protocol, entry->channels(layout)};
      }
    }
  }
  if (!found) {
    throw InputError(fmt::format("no algorithm can run {} with protocol \"{}\" on this group; valid algorithms: {}",
                                 name_of(request.op), name_of(request.protocol), algorithms_for(request, layout)));
  }
  return best;
}

}  // namespace clustersim
