#include "collectives/collective.h"

#include <array>
#include <fmt/format.h>
#include <utility>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {
namespace {

constexpr std::array<std::pair<CollectiveOp, std::string_view>, 7> kOpNames = {{
    {CollectiveOp::kAllReduce, "all_reduce"},
    {CollectiveOp::kAllGather, "all_gather"},
    {CollectiveOp::kReduceScatter, "reduce_scatter"},
    {CollectiveOp::kBroadcast, "broadcast"},
    {CollectiveOp::kReduce, "reduce"},
    {CollectiveOp::kAllToAll, "all_to_all"},
    {CollectiveOp::kSendRecv, "send_recv"},
}};

constexpr std::array<std::pair<CollectiveAlgorithm, std::string_view>, 6> kAlgorithmNames = {{
    {CollectiveAlgorithm::kAuto, "auto"},
    {CollectiveAlgorithm::kRing, "ring"},
    {CollectiveAlgorithm::kTree, "tree"},
    {CollectiveAlgorithm::kNvls, "nvls"},
    {CollectiveAlgorithm::kHierarchical, "hierarchical"},
    {CollectiveAlgorithm::kPairwise, "pairwise"},
}};

constexpr std::array<std::pair<Protocol, std::string_view>, 4> kProtocolNames = {{
    {Protocol::kAuto, "auto"},
    {Protocol::kLL, "LL"},
    {Protocol::kLL128, "LL128"},
    {Protocol::kSimple, "Simple"},
}};

template <typename Enum, size_t N>
std::string_view lookup_name(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum value) {
  for (const auto& [key, name] : table) {
    if (key == value) return name;
  }
  throw InternalError("enum value without a name");
}

template <typename Enum, size_t N>
Enum lookup_value(const std::array<std::pair<Enum, std::string_view>, N>& table, std::string_view text,
                  std::string_view what) {
  for (const auto& [key, name] : table) {
    if (name == text) return key;
  }
  std::string valid;
  for (const auto& [key, name] : table) {
    if (!valid.empty()) valid += ", ";
    valid += name;
  }
  throw InputError(fmt::format("unknown {} \"{}\"; valid: {}", what, excerpt(text), valid));
}

}  // namespace

std::string_view name_of(CollectiveOp op) { return lookup_name(kOpNames, op); }
std::string_view name_of(CollectiveAlgorithm algorithm) { return lookup_name(kAlgorithmNames, algorithm); }
std::string_view name_of(Protocol protocol) { return lookup_name(kProtocolNames, protocol); }

CollectiveOp parse_collective_op(std::string_view text) { return lookup_value(kOpNames, text, "collective"); }

CollectiveAlgorithm parse_collective_algorithm(std::string_view text) {
  return lookup_value(kAlgorithmNames, text, "collective algorithm");
}

Protocol parse_protocol(std::string_view text) { return lookup_value(kProtocolNames, text, "protocol"); }

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  if (ranks < 1) throw InputError(fmt::format("a collective needs at least one rank (got {})", ranks));
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return (n - 1.0) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  throw InternalError("unhandled collective op");
}

}  // namespace clustersim
