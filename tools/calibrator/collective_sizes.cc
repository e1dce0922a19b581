#include "tools/calibrator/collective_sizes.h"

#include <array>
#include <string>

#include "core/error.h"

namespace clustersim::calibrate {

namespace {

struct CollectiveName {
  Collective collective;
  std::string_view name;
};
constexpr std::array kCollectiveNames{
    CollectiveName{Collective::kAllReduce, "all_reduce"},
    CollectiveName{Collective::kAllGather, "all_gather"},
    CollectiveName{Collective::kReduceScatter, "reduce_scatter"},
    CollectiveName{Collective::kBroadcast, "broadcast"},
    CollectiveName{Collective::kAllToAll, "all_to_all"},
    CollectiveName{Collective::kSendRecv, "send_recv"}};

void check_nranks(int nranks) {
  if (nranks < 1) throw InputError("rank count " + std::to_string(nranks) + " must be >= 1");
}

}  // namespace

std::vector<Collective> all_collectives() {
  std::vector<Collective> collectives;
  for (const auto& entry : kCollectiveNames) collectives.push_back(entry.collective);
  return collectives;
}

std::string_view collective_name(Collective collective) {
  for (const auto& entry : kCollectiveNames) {
    if (entry.collective == collective) return entry.name;
  }
  throw InternalError("collective_name: collective outside the table");
}

Collective parse_collective(std::string_view text) {
  std::string valid;
  for (const auto& entry : kCollectiveNames) {
    if (entry.name == text) return entry.collective;
    if (!valid.empty()) valid += ", ";
    valid += entry.name;
  }
  throw InputError("unknown collective '" + std::string(text) + "'; valid: " + valid);
}

CollectiveCounts collective_counts(Collective collective, int64_t size_bytes, int64_t element_bytes,
                                   int nranks) {
  check_nranks(nranks);
  if (size_bytes < 0 || element_bytes <= 0) {
    throw InputError("collective size " + std::to_string(size_bytes) + " B with elements of " +
                     std::to_string(element_bytes) + " B: need size >= 0 and element size > 0");
  }
  const int64_t count = size_bytes / element_bytes;
  const int64_t per_rank = count / nranks;
  CollectiveCounts counts;
  switch (collective) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      counts = {count, count, count, count * element_bytes};
      break;
    case Collective::kAllGather:
      counts = {per_rank, per_rank * nranks, per_rank, per_rank * nranks * element_bytes};
      break;
    case Collective::kReduceScatter:
      counts = {per_rank * nranks, per_rank, per_rank, per_rank * nranks * element_bytes};
      break;
    case Collective::kAllToAll:
      counts = {per_rank * nranks, per_rank * nranks, per_rank, per_rank * nranks * element_bytes};
      break;
  }
  return counts;
}

double bus_bandwidth_factor(Collective collective, int nranks) {
  check_nranks(nranks);
  const double n = static_cast<double>(nranks);
  switch (collective) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (n - 1.0) / n;
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      return 1.0;
  }
  throw InternalError("bus_bandwidth_factor: collective outside the table");
}

}  // namespace clustersim::calibrate
