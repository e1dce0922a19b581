#include "collectives/collective_runner.h"

#include <array>
#include <bit>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "collectives/algorithm.h"
#include "collectives/collective_profile.h"
#include "collectives/group_layout_builder.h"
#include "collectives/selector.h"
#include "core/error.h"

namespace clustersim {
namespace {

// Everything the closed forms read, flattened: two groups with the same key get the same estimates
// (a layout search prices thousands of identical data-parallel groups once).
std::vector<int64_t> shape_key(const GroupLayout& layout) {
  std::vector<int64_t> key;
  key.reserve(layout.ranks.size() * 3 + 12);
  for (const auto& place : layout.ranks) {
    key.push_back(place.node);
    key.push_back(place.local);
    key.push_back(place.nic);
  }
  key.push_back(static_cast<int64_t>(layout.intra_fabric));
  key.push_back(layout.nvls_capable ? 1 : 0);
  for (double value : {layout.intra_bandwidth.bytes_per_second(), layout.nic_bandwidth.bytes_per_second(),
                       layout.intra_efficiency, layout.nic_efficiency, layout.nvls_efficiency}) {
    key.push_back(std::bit_cast<int64_t>(value));
  }
  key.push_back(layout.intra_latency.ps());
  key.push_back(layout.inter_latency.ps());
  return key;
}

uint64_t matrix_hash(const std::vector<int64_t>& matrix) {
  uint64_t hash = 14695981039346656037ULL;  // FNV-1a
  for (int64_t value : matrix) {
    hash ^= static_cast<uint64_t>(value);
    hash *= 1099511628211ULL;
  }
  return hash;
}

// FNV-1a over a group's GPU ids, for the map from group to shape.
struct GroupHash {
  size_t operator()(const std::vector<GpuId>& group) const {
    uint64_t hash = 14695981039346656037ULL;
    for (GpuId gpu : group) {
      hash ^= static_cast<uint64_t>(static_cast<uint32_t>(gpu));
      hash *= 1099511628211ULL;
    }
    return static_cast<size_t>(hash);
  }
};

void check_request(const CollectiveRequest& request) {
  const auto n = static_cast<int64_t>(request.group.size());
  const std::string_view op = name_of(request.op);
  if (!request.all_to_all_bytes.empty()) {
    if (request.op != CollectiveOp::kAllToAll) {
      throw InputError(fmt::format("all_to_all_bytes is only valid for all_to_all (got it for {})", op));
    }
    if (static_cast<int64_t>(request.all_to_all_bytes.size()) != n * n) {
      throw InputError(fmt::format("all_to_all_bytes has {} entries; a group of {} ranks needs {} x {} = {}",
                                   request.all_to_all_bytes.size(), n, n, n, n * n));
    }
    int64_t total = 0;
    for (size_t i = 0; i < request.all_to_all_bytes.size(); ++i) {
      const int64_t value = request.all_to_all_bytes[i];
      if (value < 0) {
        throw InputError(fmt::format("all_to_all_bytes[{}][{}] is {}; byte counts must be >= 0",
                                     static_cast<int64_t>(i) / n, static_cast<int64_t>(i) % n, value));
      }
      total = checked_add(total, value, "all_to_all_bytes total");
    }
    if (total == 0) throw InputError("all_to_all_bytes is all zeros; at least one block must be at least 1 byte");
  } else if (request.size == Bytes::zero()) {
    throw InputError(fmt::format("the {} size is 0 bytes; a collective moves at least 1 byte", op));
  }
  if ((request.op == CollectiveOp::kBroadcast || request.op == CollectiveOp::kReduce) &&
      (request.root < 0 || request.root >= n)) {
    throw InputError(fmt::format("root {} of the {} is not a rank of the group; valid roots are 0..{}", request.root,
                                 op, n - 1));
  }
  if (request.op == CollectiveOp::kSendRecv && n != 2) {
    throw InputError(fmt::format("send_recv needs a group of exactly 2 GPUs (sender, receiver); got {}", n));
  }
}

}  // namespace

class CollectiveRunner::Impl {
 public:
  Impl(Simulator& sim, const Cluster& cluster, FlowNetwork* network, Fidelity fidelity,
       const CollectiveProfile* profile)
      : sim_(sim), cluster_(cluster), network_(network), fidelity_(fidelity), profile_(profile) {
    if (fidelity_ == Fidelity::kFlow && network_ == nullptr) {
      throw InternalError("flow fidelity needs a FlowNetwork");
    }
  }

  void start(const CollectiveRequest& request, Completion on_complete) {
    const PricedCall call = price_call(request);
    const Priced& priced = *call.priced;
    if (fidelity_ == Fidelity::kAnalytical) {
      sim_.schedule_after(priced.selection.time, std::move(on_complete));
      return;
    }
    const PlannedTransfers& planned = plan_for(request, priced);
    const uint64_t id = next_execution_++;
    Execution& execution = executions_[id];
    execution.planned = &planned;
    execution.group = call.group;
    execution.seed = call.entry->calls++;
    execution.on_complete = std::move(on_complete);
    begin(id, execution);
  }

  CollectiveChoice choose(const CollectiveRequest& request) { return price(request).selection.choice; }
  Duration estimate(const CollectiveRequest& request) { return price(request).selection.time; }

  size_t transfer_count(const CollectiveRequest& request) {
    const Priced& priced = price(request);
    return plan_for(request, priced).plan.size();
  }

 private:
  struct Priced {
    int shape = 0;
    Selection selection;
  };
  // A group's shape, and how many calls it has started: a transfer's ECMP choice derives from its
  // source, destination, channel and its call's number among its group's calls (Cluster::route),
  // never from the order in which different groups' calls were made, so a representative rank's
  // mirrored groups (parallelism/comm_streams.cc) take the paths their own ranks would. Each call
  // draws anew, as on a fabric whose ECMP or adaptive routing spreads a step's many calls over the
  // equal-cost paths.
  struct GroupEntry {
    int shape = 0;
    uint64_t calls = 0;
  };
  // A request's pricing and its group as shape_of_group_ keeps it (an execution points to it).
  struct PricedCall {
    const Priced* priced = nullptr;
    const std::vector<GpuId>* group = nullptr;
    GroupEntry* entry = nullptr;  // the group's
  };

  // One collective's transfers as its algorithm plans them, with their dependency graph: the same
  // for every call with the same shape, op, algorithm, protocol, size, root and matrix, so built
  // once (a step calls each data- or tensor-parallel collective thousands of times).
  struct PlannedTransfers {
    TransferPlan plan;
    std::array<double, 3> wire_scale{};          // per TransferPath: wire bytes per payload byte
    std::vector<int32_t> waiting;                // per transfer: its dependencies
    std::vector<int32_t> successor_begin{0};     // CSR offsets into successors, one past each transfer
    std::vector<int32_t> successors;
    std::vector<int32_t> roots;                  // the transfers without dependencies, in order
  };

  struct Execution {
    const PlannedTransfers* planned = nullptr;
    const std::vector<GpuId>* group = nullptr;
    uint64_t seed = 0;  // ECMP seed: the call's number among its group's calls (GroupEntry)
    Completion on_complete;
    std::vector<int32_t> waiting_on;  // per transfer: dependencies not yet complete
    std::vector<Time> ready;          // per transfer: the latest arrival of its dependencies so far
    Time last;                        // the latest arrival so far
    std::vector<const Route*> routes;  // per transfer: its route (null: a local copy)
    size_t remaining = 0;
  };

  // An execution's transfer as one word, so that the callbacks the engine and the network hold
  // ([this, ticket]: 16 bytes) fit std::function's own storage and allocate nothing.
  static constexpr int kIndexBits = 28;
  static uint64_t ticket(uint64_t id, int32_t index) { return id << kIndexBits | static_cast<uint64_t>(index); }
  static uint64_t id_of(uint64_t ticket) { return ticket >> kIndexBits; }
  static int32_t index_of(uint64_t ticket) {
    return static_cast<int32_t>(ticket & ((uint64_t{1} << kIndexBits) - 1));
  }

  using SelectionKey = std::tuple<int, CollectiveOp, CollectiveAlgorithm, Protocol, int64_t, int, uint64_t>;
  using TransferKey = SelectionKey;  // with the chosen algorithm and protocol in place of the request's

  // The planned transfers of `request` (priced as `priced`), built on first use.
  const PlannedTransfers& plan_for(const CollectiveRequest& request, const Priced& priced) {
    const TransferKey key{priced.shape, request.op, priced.selection.choice.algorithm,
                          priced.selection.choice.protocol, request.size.count(), request.root,
                          request.all_to_all_bytes.empty() ? 0 : matrix_hash(request.all_to_all_bytes)};
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
    const GroupLayout& layout = *layouts_[static_cast<size_t>(priced.shape)];
    const AlgorithmEntry& entry = algorithm_entry(priced.selection.choice.algorithm);
    const StepCosts costs = step_costs(entry.algorithm, priced.selection.choice.protocol, layout);
    auto planned = std::make_unique<PlannedTransfers>();
    planned->plan = entry.plan(request, layout, costs, options_);
    planned->wire_scale = {1.0 / (costs.efficiency * layout.intra_efficiency),
                           1.0 / (costs.efficiency * layout.nic_efficiency),
                           1.0 / (costs.efficiency * layout.intra_efficiency * layout.nvls_efficiency)};
    const size_t count = planned->plan.size();
    planned->waiting.resize(count);
    std::vector<int32_t> successor_count(count, 0);
    for (size_t i = 0; i < count; ++i) {
      const auto dependencies = planned->plan.dependencies(i);
      planned->waiting[i] = static_cast<int32_t>(dependencies.size());
      if (dependencies.empty()) planned->roots.push_back(static_cast<int32_t>(i));
      for (int32_t dependency : dependencies) ++successor_count[static_cast<size_t>(dependency)];
    }
    planned->successor_begin.resize(count + 1);
    for (size_t i = 0; i < count; ++i) planned->successor_begin[i + 1] = planned->successor_begin[i] + successor_count[i];
    planned->successors.resize(static_cast<size_t>(planned->successor_begin[count]));
    std::vector<int32_t> filled(planned->successor_begin.begin(), planned->successor_begin.end() - 1);
    // Successors in increasing order of the transfer, as the transfers were added.
    for (size_t i = 0; i < count; ++i) {
      for (int32_t dependency : planned->plan.dependencies(i)) {
        planned->successors[static_cast<size_t>(filled[static_cast<size_t>(dependency)]++)] = static_cast<int32_t>(i);
      }
    }
    return *plans_.emplace(key, std::move(planned)).first->second;
  }

  // Validates the request and returns its shape and selection, computing them once.
  const Priced& price(const CollectiveRequest& request) { return *price_call(request).priced; }

  PricedCall price_call(const CollectiveRequest& request) {
    auto group_it = shape_of_group_.find(request.group);
    if (group_it == shape_of_group_.end()) {
      GroupLayout layout = make_group_layout(cluster_, request.group);  // validates the group
      const std::vector<int64_t> key = shape_key(layout);
      auto [shape_it, inserted] = shape_of_key_.emplace(key, static_cast<int>(layouts_.size()));
      if (inserted) layouts_.push_back(std::make_unique<GroupLayout>(std::move(layout)));
      const GroupEntry entry{shape_it->second, 0};
      group_it = shape_of_group_.emplace(request.group, entry).first;
    }
    check_request(request);
    const int shape = group_it->second.shape;
    const SelectionKey key{shape,
                           request.op,
                           request.algorithm,
                           request.protocol,
                           request.size.count(),
                           request.root,
                           request.all_to_all_bytes.empty() ? 0 : matrix_hash(request.all_to_all_bytes)};
    auto it = selections_.find(key);
    if (it != selections_.end()) return {&it->second, &group_it->first, &group_it->second};
    const GroupLayout& layout = *layouts_[static_cast<size_t>(shape)];
    const CandidatePricing pricing = [&](const AlgorithmEntry& entry, Protocol protocol) {
      if (profile_ != nullptr) {
        if (auto fitted = profile_->lookup(request.op, entry.algorithm, protocol, layout.size(), layout.node_count(),
                                           request.size)) {
          return *fitted;
        }
      }
      return closed_form_time(request, layout, entry, protocol);
    };
    Priced priced{shape, select_algorithm(request, layout, pricing)};
    return {&selections_.emplace(key, priced).first->second, &group_it->first, &group_it->second};
  }

  void begin(uint64_t id, Execution& execution) {
    const PlannedTransfers& planned = *execution.planned;
    const size_t count = planned.plan.size();
    execution.remaining = count;
    execution.waiting_on = planned.waiting;
    execution.ready.assign(count, sim_.now());
    execution.last = sim_.now();
    check_invariant(count < (size_t{1} << kIndexBits) && id < (uint64_t{1} << (64 - kIndexBits)),
                    "a collective's transfers and executions fit a ticket");
    execution.routes.assign(count, nullptr);
    // Every transfer's route at once: the lookups then overlap their cache misses
    // (Cluster::routes), where one per launch waited for each.
    std::vector<Cluster::RouteRequest>& requests = route_requests_;
    std::vector<const Route*>& found = found_routes_;
    std::vector<int32_t>& indices = route_indices_;
    requests.clear();
    indices.clear();
    const std::vector<GpuId>& group = *execution.group;
    for (size_t i = 0; i < count; ++i) {
      const Transfer& transfer = planned.plan.transfer(i);
      if (transfer.src == transfer.dst) continue;
      requests.push_back({group[static_cast<size_t>(transfer.src)], group[static_cast<size_t>(transfer.dst)],
                          flow_hash(execution.seed, transfer)});
      indices.push_back(static_cast<int32_t>(i));
    }
    found.resize(requests.size());
    cluster_.routes(requests, found);
    for (size_t k = 0; k < indices.size(); ++k) execution.routes[static_cast<size_t>(indices[k])] = found[k];
    if (count == 0) {
      Completion done = std::move(execution.on_complete);
      executions_.erase(id);
      sim_.schedule_after(Duration::zero(), std::move(done));
      return;
    }
    for (int32_t root : planned.roots) launch(id, root);
  }

  // Always through the event queue, even without delay, so that completions never nest. A flow
  // starts `latency − route latency` after its dependencies have arrived: the route latency is
  // its own arrival's.
  void launch(uint64_t id, int32_t index) {
    Execution& execution = executions_.at(id);
    const Transfer& transfer = execution.planned->plan.transfer(static_cast<size_t>(index));
    Duration delay = transfer.latency;
    if (transfer.src != transfer.dst) {
      const Route* route = execution.routes[static_cast<size_t>(index)];  // looked up by begin
      delay = delay > route->latency ? delay - route->latency : Duration::zero();
    }
    sim_.schedule_at(execution.ready[static_cast<size_t>(index)] + delay,
                     [this, t = ticket(id, index)] { send(id_of(t), index_of(t)); });
  }

  // The ECMP input of a transfer (Cluster::route mixes in its source and destination): its
  // call's seed and its channel.
  static uint64_t flow_hash(uint64_t seed, const Transfer& transfer) {
    return seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(transfer.channel);
  }

  // Starts the transfer's flow on the route launch looked up.
  void send(uint64_t id, int32_t index) {
    const Execution& execution = executions_.at(id);
    const Transfer& transfer = execution.planned->plan.transfer(static_cast<size_t>(index));
    if (transfer.src == transfer.dst) {
      arrived(id, index, sim_.now());
      return;
    }
    const double scale = execution.planned->wire_scale[static_cast<size_t>(transfer.path)];
    check_invariant(scale > 0 && scale < 1e9, "a transfer's transport efficiency is positive");
    const Route* route = execution.routes[static_cast<size_t>(index)];
    check_invariant(route != nullptr, "a transfer between two GPUs has its route");
    // The flow reports its last byte sent (no event of its own for the arrival): the transfers
    // that wait for it are scheduled from its arrival, the route latency later.
    network_->start_flow_sent(*route, transfer.size.scaled(scale), [this, t = ticket(id, index)] {
      const uint64_t call = id_of(t);
      const int32_t i = index_of(t);
      arrived(call, i, sim_.now() + executions_.at(call).routes[static_cast<size_t>(i)]->latency);
    });
  }

  // Transfer `index` has arrived (or will, at `at`, with nothing else left to happen before):
  // the transfers waiting for it launch once their last dependency has, from the latest arrival;
  // the call completes at its last transfer's arrival.
  void arrived(uint64_t id, int32_t index, Time at) {
    Execution& execution = executions_.at(id);
    const PlannedTransfers& planned = *execution.planned;
    for (int32_t k = planned.successor_begin[static_cast<size_t>(index)];
         k < planned.successor_begin[static_cast<size_t>(index) + 1]; ++k) {
      const size_t next = static_cast<size_t>(planned.successors[static_cast<size_t>(k)]);
      execution.ready[next] = std::max(execution.ready[next], at);
      if (--execution.waiting_on[next] == 0) launch(id, static_cast<int32_t>(next));
    }
    execution.last = std::max(execution.last, at);
    if (--execution.remaining == 0) {
      Completion done = std::move(execution.on_complete);
      const Time last = execution.last;
      executions_.erase(id);
      if (last > sim_.now()) {
        sim_.schedule_at(last, std::move(done));
      } else {
        done();
      }
    }
  }

  Simulator& sim_;
  const Cluster& cluster_;
  FlowNetwork* network_;
  Fidelity fidelity_;
  const CollectiveProfile* profile_;
  PlanOptions options_;

  // Node-based maps: an execution points to its group's key, and the keys stay where they are.
  std::unordered_map<std::vector<GpuId>, GroupEntry, GroupHash> shape_of_group_;
  std::map<std::vector<int64_t>, int> shape_of_key_;
  std::vector<std::unique_ptr<GroupLayout>> layouts_;
  std::map<SelectionKey, Priced> selections_;
  std::map<TransferKey, std::unique_ptr<PlannedTransfers>> plans_;

  std::unordered_map<uint64_t, Execution> executions_;
  // begin()'s buffers for the batched route lookup, kept between calls.
  std::vector<Cluster::RouteRequest> route_requests_;
  std::vector<const Route*> found_routes_;
  std::vector<int32_t> route_indices_;
  uint64_t next_execution_ = 0;
};

CollectiveRunner::CollectiveRunner(Simulator& sim, const Cluster& cluster, FlowNetwork* network, Fidelity fidelity,
                                   const CollectiveProfile* profile)
    : impl_(std::make_unique<Impl>(sim, cluster, network, fidelity, profile)) {}

CollectiveRunner::~CollectiveRunner() = default;

void CollectiveRunner::start(const CollectiveRequest& request, Completion on_complete) {
  impl_->start(request, std::move(on_complete));
}

CollectiveChoice CollectiveRunner::choose(const CollectiveRequest& request) const { return impl_->choose(request); }

Duration CollectiveRunner::estimate(const CollectiveRequest& request) const { return impl_->estimate(request); }

size_t CollectiveRunner::transfer_count(const CollectiveRequest& request) const {
  return impl_->transfer_count(request);
}

}  // namespace clustersim
