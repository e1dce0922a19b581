#include "network/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "network/max_min_fair_share.h"

namespace clustersim {

namespace {

// Rates are recomputed in an event at the very end of an instant, after every flow start and
// finish of that instant (events run in priority order at equal times).
constexpr int32_t kRateUpdatePriority = EventQueue::kMaxPriority;

// A remaining amount within this many bytes of an integer is that integer: it absorbs the rounding
// of rate × elapsed time in doubles (relative error ~1e-16 of sizes up to 1e13 bytes).
constexpr double kByteSlack = 1e-3;

// Rates within this relative difference are the same rate: the flow keeps its completion event.
constexpr double kSameRate = 1e-12;

// How many flows ahead the component search asks for a flow's data (a few memory latencies of
// the loop's work per flow).
constexpr size_t kLookAhead = 8;

}  // namespace

class FlowNetwork::Impl {
 public:
  Impl(Simulator& sim, const Cluster& cluster, FlowNetworkOptions options)
      : sim_(sim),
        cluster_(cluster),
        options_(options),
        links_(cluster.link_count()) {
    for (size_t link = 0; link < cluster.link_count(); ++link) {
      links_[link].capacity = cluster.link(static_cast<LinkId>(link)).bandwidth.bytes_per_second();
    }
  }

  FlowId start_flow(GpuId src, GpuId dst, Bytes size, Completion on_complete, uint64_t flow_hash) {
    if (src == dst) {
      cluster_.node_of(src);  // validates the id
      if (on_complete) sim_.schedule_after(Duration::zero(), std::move(on_complete));
      return retired_id();
    }
    return start_flow_on(cluster_.route(src, dst, flow_hash), size, std::move(on_complete));
  }

  FlowId start_flow_on(const Route& route, Bytes size, Completion on_complete, bool when_sent = false) {
    if (size == Bytes::zero()) {
      if (on_complete) sim_.schedule_after(when_sent ? Duration::zero() : route.latency, std::move(on_complete));
      return retired_id();
    }
    // The links' states lie scattered: ask for them while the flow is set up.
    for (LinkId link : route.links) __builtin_prefetch(&links_[link], 1);
    const uint32_t slot = allocate();
    Flow& flow = flows_[slot];
    if (active_ == options_.batch_above_flows) crowded_since_ = sim_.now();
    flow.active = true;
    flow.latency = route.latency;
    flow.when_sent = when_sent;
    store_links(slot, route.links);
    flow.size = size.count();
    flow.remaining = static_cast<double>(size.count());
    flow.updated = sim_.now();
    flow.rate = 0;
    flow.on_complete = std::move(on_complete);
    for (LinkId link : route.links) {
      links_[link].flows.push_back(slot);
      dirty_links_.push_back(link);
    }
    ++active_;
    request_update();
    return id_of(slot);
  }

  size_t active_flows() const { return active_; }

  Bytes bytes_carried(LinkId link) const {
    if (link < 0 || static_cast<size_t>(link) >= links_.size()) {
      throw InputError(fmt::format("link {} is out of range; valid links are 0..{}", link, links_.size() - 1));
    }
    double in_flight = 0;
    for (uint32_t slot : links_[link].flows) {
      const Flow& flow = flows_[slot];
      if (!flow.active) continue;  // finished, its bytes counted; leaves the list at the next update
      in_flight += static_cast<double>(flow.size) - remaining_at(flow, sim_.now());
    }
    return Bytes::of(checked_add(links_[link].carried, checked_round(in_flight, "bytes carried"), "bytes carried"));
  }

  Bandwidth current_rate(FlowId id) const {
    const uint32_t slot = static_cast<uint32_t>(id & 0xffffffffU);
    const uint32_t generation = static_cast<uint32_t>(static_cast<uint64_t>(id) >> 32);
    if (id < 0 || slot >= flows_.size()) return Bandwidth();
    const Flow& flow = flows_[slot];
    if (!flow.active || flow.generation != generation) return Bandwidth();
    return Bandwidth::bytes_per_s(flow.rate);
  }

 private:
  struct Flow {
    uint32_t generation = 0;
    bool active = false;
    Duration latency;  // its route's: from the last byte sent to delivery
    bool when_sent = false;  // on_complete runs when the last byte is sent (start_flow_sent)
    int64_t size = 0;
    double remaining = 0;  // bytes still to send at time `updated`
    Time updated;
    double rate = 0;  // bytes/s since `updated`
    EventId done;     // when the last byte leaves at `rate`
    Completion on_complete;
  };

  FlowId id_of(uint32_t slot) const {
    return static_cast<FlowId>((static_cast<uint64_t>(flows_[slot].generation) << 32) | slot);
  }

  uint32_t allocate() {
    if (!free_slots_.empty()) {
      const uint32_t slot = free_slots_.back();
      free_slots_.pop_back();
      return slot;
    }
    check_invariant(flows_.size() < std::numeric_limits<uint32_t>::max(), "FlowNetwork: too many flows");
    flows_.emplace_back();
    flow_mark_.push_back(0);
    link_counts_.push_back(0);
    slot_links_.resize(flows_.size() * links_stride_);
    return static_cast<uint32_t>(flows_.size() - 1);
  }

  void release(uint32_t slot) {
    Flow& flow = flows_[slot];
    flow.active = false;
    link_counts_[slot] = 0;
    flow.on_complete = nullptr;
    flow.done = EventId{};
    flow.generation = flow.generation == std::numeric_limits<uint32_t>::max() >> 1 ? 0 : flow.generation + 1;
    free_slots_.push_back(slot);
  }

  // Copies a flow's route links into its row of slot_links_, widening every row first if the
  // route is longer than a row.
  void store_links(uint32_t slot, const std::vector<LinkId>& links) {
    if (links.size() > links_stride_) {
      const size_t stride = std::max(links.size(), 2 * links_stride_);
      std::vector<LinkId> wider(flows_.size() * stride);
      for (size_t f = 0; f < flows_.size(); ++f) {
        std::copy_n(slot_links_.begin() + static_cast<std::ptrdiff_t>(f * links_stride_), link_counts_[f],
                    wider.begin() + static_cast<std::ptrdiff_t>(f * stride));
      }
      slot_links_ = std::move(wider);
      links_stride_ = stride;
    }
    std::copy(links.begin(), links.end(), slot_links_.begin() + static_cast<std::ptrdiff_t>(slot * links_stride_));
    link_counts_[slot] = static_cast<uint32_t>(links.size());
  }
  std::span<const LinkId> links_of(uint32_t slot) const {
    return {slot_links_.data() + slot * links_stride_, link_counts_[slot]};
  }

  // An id for a flow that needs no bandwidth (local copy, zero bytes): unique, never active.
  FlowId retired_id() {
    const uint32_t slot = allocate();
    const FlowId id = id_of(slot);
    release(slot);
    return id;
  }

  static double remaining_at(const Flow& flow, Time now) {
    const double sent = flow.rate * (now - flow.updated).to_seconds();
    return std::max(0.0, flow.remaining - sent);
  }

  // Schedules the rate update: at the end of this instant, or, for a finish while the network is
  // crowded (FlowNetworkOptions), up to batch_fraction of the crowded time later; an update
  // already due sooner stands.
  void request_update(bool finish = false) {
    Duration delay = Duration::zero();
    if (finish && active_ > options_.batch_above_flows) {
      delay = (sim_.now() - crowded_since_).scaled(options_.batch_fraction);
    }
    const Time at = sim_.now() + delay;
    if (update_pending_) {
      if (pending_at_ <= at) return;
      sim_.cancel(pending_event_);
    }
    update_pending_ = true;
    pending_at_ = at;
    pending_event_ = sim_.schedule_after(delay, [this] { update_rates(); }, kRateUpdatePriority);
  }

  // Recomputes the rates of every flow connected, through shared links, to a link whose set of
  // flows changed during this instant; reschedules the completions whose rate changed. The
  // component is handed to the solver as it is found: links in the order first reached, flows in
  // the order found (the solver's results depend only on that order).
  void update_rates() {
    update_pending_ = false;
    // Finished flows leave the lists of the links they shared (each such link is dirty), in one
    // pass per list that keeps the others' order; then their slots can be used again.
    for (LinkId link : dirty_links_) {
      LinkState& state = links_[link];
      if (!state.finished) continue;  // or already taken out: a link is dirty once per change
      std::erase_if(state.flows, [this](uint32_t slot) { return !flows_[slot].active; });
      state.finished = false;
    }
    for (uint32_t slot : retiring_) release(slot);
    retiring_.clear();
    ++mark_;
    component_links_.clear();
    component_flows_.clear();
    solver_.reset();
    for (LinkId link : dirty_links_) visit_link(link);
    dirty_links_.clear();
    for (size_t i = 0; i < component_links_.size(); ++i) {  // grows while it is walked
      const std::vector<uint32_t>& on_link = links_[component_links_[i]].flows;
      for (size_t j = 0; j < on_link.size(); ++j) {
        // The flows of a link lie anywhere in the slot arrays: ask for a later one's stamp and
        // links while this one is handled.
        if (j + kLookAhead < on_link.size()) {
          const uint32_t later = on_link[j + kLookAhead];
          __builtin_prefetch(&flow_mark_[later]);
          __builtin_prefetch(&slot_links_[later * links_stride_]);
        }
        const uint32_t slot = on_link[j];
        if (flow_mark_[slot] == mark_) continue;
        flow_mark_[slot] = mark_;
        component_flows_.push_back(slot);
        local_links_.clear();
        for (LinkId link : links_of(slot)) {
          visit_link(link);
          local_links_.push_back(links_[link].index);
        }
        solver_.add_flow(local_links_);
      }
    }
    if (component_flows_.empty()) return;

    const std::vector<double>& rates = solver_.solve();
    const Time now = sim_.now();
    for (size_t i = 0; i < component_flows_.size(); ++i) {
      const uint32_t slot = component_flows_[i];
      Flow& flow = flows_[slot];
      const double rate = rates[i];
      if (flow.done.valid() && std::abs(rate - flow.rate) <= kSameRate * flow.rate) continue;
      flow.remaining = remaining_at(flow, now);
      flow.updated = now;
      flow.rate = rate;
      if (flow.done.valid()) sim_.cancel(flow.done);
      const double whole = std::max(0.0, std::ceil(flow.remaining - kByteSlack));
      const Duration left = transfer_time(Bytes::of(static_cast<int64_t>(whole)), Bandwidth::bytes_per_s(rate));
      flow.done = sim_.schedule_after(left, [this, slot] { finish(slot); });
    }
  }

  // Adds `link` to the component (and to the solver) unless it is there already.
  void visit_link(LinkId link) {
    LinkState& state = links_[link];
    if (state.mark == mark_) return;
    state.mark = mark_;
    component_links_.push_back(link);
    state.index = solver_.add_link(state.capacity);
  }

  // The flow's last byte has left the sender: free its links now, deliver after the route latency.
  // A link it shared keeps it in its list, inactive, until the rate update this finish asks for
  // (update_rates) takes it out with the other finished flows, and its slot is not used again
  // before then; a link it had alone is cleared now.
  void finish(uint32_t slot) {
    Flow& flow = flows_[slot];
    bool shared = false;
    // The links' states lie scattered: ask for them all before walking them one by one.
    for (LinkId link : links_of(slot)) __builtin_prefetch(&links_[link]);
    for (LinkId link : links_of(slot)) {
      LinkState& state = links_[link];
      std::vector<uint32_t>& on_link = state.flows;
      state.carried += flow.size;
      if (on_link.size() == 1) {
        on_link.clear();  // this flow alone
      } else {
        dirty_links_.push_back(link);
        state.finished = true;
        shared = true;
      }
    }
    flow.active = false;
    --active_;
    Completion on_complete = std::move(flow.on_complete);
    flow.on_complete = nullptr;
    const Duration latency = flow.latency;
    const bool when_sent = flow.when_sent;
    if (shared) {
      retiring_.push_back(slot);
    } else {
      release(slot);
    }
    if (on_complete && !when_sent) sim_.schedule_after(latency, std::move(on_complete));
    if (!dirty_links_.empty()) request_update(/*finish=*/true);
    if (on_complete && when_sent) on_complete();  // last: it may start flows
  }

  Simulator& sim_;
  const Cluster& cluster_;
  FlowNetworkOptions options_;
  Time crowded_since_;  // when active_ last rose above options_.batch_above_flows
  std::vector<Flow> flows_;
  // By flow slot, apart from Flow so that the component search reads only these: the search
  // stamp and a copy of the route's links in one array (rows of links_stride_, link_counts_ of
  // them used), where the routes themselves lie scattered in the cluster's route cache.
  std::vector<uint32_t> flow_mark_;
  std::vector<LinkId> slot_links_;
  std::vector<uint32_t> link_counts_;
  size_t links_stride_ = 8;
  std::vector<uint32_t> free_slots_;
  std::vector<uint32_t> retiring_;  // finished flows still in a shared link's list (finish)
  // What the flows' events touch of a link, in one cache line: a finish reads and writes one line
  // per link of its route, the rate update one per link of its component.
  struct alignas(64) LinkState {
    std::vector<uint32_t> flows;  // flows on the link (finished ones until the next update)
    int64_t carried = 0;          // bytes of finished flows
    double capacity = 0;          // bandwidth in bytes/s
    uint32_t mark = 0;            // the component search's stamp
    int index = -1;               // solver index, valid for the links of the current component
    bool finished = false;        // flows holds finished flows (taken out at the next update)
  };
  std::vector<LinkState> links_;
  size_t active_ = 0;

  // Rate update state.
  bool update_pending_ = false;
  Time pending_at_;
  EventId pending_event_;
  std::vector<LinkId> dirty_links_;
  uint32_t mark_ = 0;
  std::vector<LinkId> component_links_;
  std::vector<uint32_t> component_flows_;
  std::vector<int> local_links_;
  MaxMinFairShare solver_;
};

FlowNetwork::FlowNetwork(Simulator& sim, const Cluster& cluster, FlowNetworkOptions options) {
  if (!std::isfinite(options.batch_fraction) || options.batch_fraction < 0) {
    throw InputError(fmt::format("flow network: batch_fraction {} must be a finite number >= 0", options.batch_fraction));
  }
  impl_ = std::make_unique<Impl>(sim, cluster, options);
}
FlowNetwork::~FlowNetwork() = default;

FlowId FlowNetwork::start_flow(GpuId src, GpuId dst, Bytes size, Completion on_complete, uint64_t flow_hash) {
  return impl_->start_flow(src, dst, size, std::move(on_complete), flow_hash);
}

FlowId FlowNetwork::start_flow_on(const Route& route, Bytes size, Completion on_complete) {
  return impl_->start_flow_on(route, size, std::move(on_complete));
}
FlowId FlowNetwork::start_flow_sent(const Route& route, Bytes size, Completion on_sent) {
  return impl_->start_flow_on(route, size, std::move(on_sent), /*when_sent=*/true);
}
size_t FlowNetwork::active_flows() const { return impl_->active_flows(); }
Bytes FlowNetwork::bytes_carried(LinkId link) const { return impl_->bytes_carried(link); }
Bandwidth FlowNetwork::current_rate(FlowId flow) const { return impl_->current_rate(flow); }

}  // namespace clustersim
