#include "network/flow_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

#include "core/error.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace flow_network_test {

// Runs flows started at time zero and records when each one completes.
class Recorder {
 public:
  Recorder(Simulator& sim, FlowNetwork& network) : sim_(sim), network_(network) {}
  FlowId start(GpuId src, GpuId dst, Bytes size, uint64_t flow_hash = 0) {
    const size_t index = done_.size();
    done_.push_back(Time::max());
    return network_.start_flow(src, dst, size, [this, index] { done_[index] = sim_.now(); }, flow_hash);
  }
  Time done(size_t index) const { return done_[index]; }
  const std::vector<Time>& all() const { return done_; }

 private:
  Simulator& sim_;
  FlowNetwork& network_;
  std::vector<Time> done_;
};

Time at(Duration d) { return Time::zero() + d; }

ClusterSpec two_dgx(FabricType fabric = FabricType::kRailOptimized) {
  return test_specs::cluster(test_specs::nvswitch_node(), 2, test_specs::fabric(fabric));
}

// Batched rate updates (FlowNetworkOptions) on a crowded network: an all-to-all of 64 GPUs over a
// fat-tree with spines (8 nodes, 16-port leaves: 4,032 flows of 1-8 MB whose sizes and ECMP routes
// give them different rates and finish times). Batching every finish (threshold 0) changes no flow's completion by
// more than 1 % against the exact computation, never makes one earlier, and needs far fewer rate
// updates (measured by simulated events). (Max-min rates are not monotone in the flow set, so a
// batched completion can also come slightly earlier.)
TEST(FlowNetwork, BatchedUpdatesStayWithinOnePercentOfExact) {
  const Cluster cluster(test_specs::cluster(test_specs::nvswitch_node(), 8, test_specs::fabric(FabricType::kFatTree, 16)));
  const int n = cluster.gpu_count();
  auto run = [&](FlowNetworkOptions options, uint64_t* events) {
    Simulator sim;
    FlowNetwork network(sim, cluster, options);
    Recorder flows(sim, network);
    for (int src = 0; src < n; ++src) {
      for (int dst = 0; dst < n; ++dst) {
        // Block sizes of 1-8 MB (skewed routing), so that finishes spread over many instants.
        const double mb = 1 + (src * 7 + dst * 13) % 8;
        if (src != dst) flows.start(src, dst, Bytes::megabytes(mb), static_cast<uint64_t>(src * n + dst));
      }
    }
    sim.run();
    *events = sim.events_executed();
    return flows.all();
  };
  uint64_t exact_events = 0, batched_events = 0;
  FlowNetworkOptions exact;
  exact.batch_above_flows = SIZE_MAX;
  FlowNetworkOptions batched;
  batched.batch_above_flows = 0;
  batched.batch_fraction = 0.002;
  const std::vector<Time> a = run(exact, &exact_events);
  const std::vector<Time> b = run(batched, &batched_events);
  ASSERT_EQ(a.size(), b.size());
  Time last_a, last_b;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double delta = std::abs((b[i] - a[i]).to_seconds());
    worst = std::max(worst, delta / (a[i] - Time::zero()).to_seconds());
    last_a = std::max(last_a, a[i]);
    last_b = std::max(last_b, b[i]);
  }
  EXPECT_LE(worst, 0.01);
  EXPECT_LE(std::abs((last_b - last_a).to_seconds()), 0.005 * (last_a - Time::zero()).to_seconds());
  EXPECT_LT(batched_events, exact_events);
  std::cout << "worst delay " << 100 * worst << " %, events " << exact_events << " -> " << batched_events << "\n";
  Simulator sim;
  EXPECT_THROW(FlowNetwork(sim, cluster, FlowNetworkOptions{8, -1.0}), InputError);
}

// One flow alone: latency + size / bottleneck.
TEST(FlowNetwork, OneFlowGetsTheBottleneckBandwidth) {
  const Cluster cluster(two_dgx());
  Simulator sim;
  FlowNetwork network(sim, cluster);
  Recorder flows(sim, network);
  const Bytes size = Bytes::megabytes(64);
  flows.start(0, 8, size);
  flows.start(1, 2, size);
  sim.run();
  EXPECT_EQ(flows.done(0), at(cluster.route(0, 8).latency + transfer_time(size, cluster.bottleneck(0, 8))));
  EXPECT_EQ(flows.done(1), at(cluster.route(1, 2).latency + transfer_time(size, cluster.bottleneck(1, 2))));
  EXPECT_EQ(network.active_flows(), 0U);
}

// start_flow_sent reports the last byte sent, not its arrival: the route latency earlier than
// start_flow_on's completion for the same flow, with the same sharing (two flows out of GPU 0 over
// its NIC, one of each kind); a zero-byte flow reports at once, in an event of its own.
TEST(FlowNetwork, SentFlowsReportTheirLastByteSentWithoutTheRouteLatency) {
  const Cluster cluster(two_dgx());
  Simulator sim;
  FlowNetwork network(sim, cluster);
  const Bytes size = Bytes::megabytes(64);
  const Route& route = cluster.route(0, 8);
  Time arrived = Time::max(), sent = Time::max(), empty = Time::max();
  network.start_flow_on(route, size, [&] { arrived = sim.now(); });
  network.start_flow_sent(route, size, [&] { sent = sim.now(); });
  network.start_flow_sent(route, Bytes::zero(), [&] { empty = sim.now(); });
  EXPECT_EQ(empty, Time::max());  // not nested in the call
  sim.run();
  const Duration shared = transfer_time(size, cluster.bottleneck(0, 8) / 2);
  EXPECT_EQ(arrived, at(route.latency + shared));
  EXPECT_EQ(sent, at(shared));
  EXPECT_EQ(empty, Time::zero());
  EXPECT_EQ(network.active_flows(), 0U);
}

// k flows out of one GPU share its NVLink uplink: each gets B/k.
TEST(FlowNetwork, KFlowsOnOneLinkGetOneKthEach) {
  const Cluster cluster(two_dgx());
  const Bandwidth nvlink = cluster.node_spec(0).gpu.nvlink_bandwidth;
  const Bytes size = Bytes::megabytes(100);
  for (int k = 1; k <= 7; ++k) {
    Simulator sim;
    FlowNetwork network(sim, cluster);
    Recorder flows(sim, network);
    std::vector<FlowId> ids;
    for (int j = 1; j <= k; ++j) ids.push_back(flows.start(0, j, size));
    sim.run_until(at(Duration::picoseconds(1)));
    for (FlowId id : ids) EXPECT_EQ(network.current_rate(id), nvlink / k);
    sim.run();
    for (int j = 0; j < k; ++j) {
      EXPECT_EQ(flows.done(j), at(cluster.route(0, j + 1).latency + transfer_time(size, nvlink / k)));
    }
  }
}

// The classic 3-flows-2-links example on a one-socket PCIe node with 100 GB/s switch links and a
// 60 GB/s host bridge. A: GPU0 → GPU1 (below switch 0: link1 = GPU0→switch0 only shared with C);
// B: GPU1 → GPU5 and C: GPU0 → GPU4 both cross link2 = switch0→CPU (and CPU→switch1, also 60).
// Link shares: link1 100/2 = 50, link2 60/2 = 30 → B = C = 30 GB/s; A = 100 − 30 = 70 GB/s.
// A finishes first, but C stays limited by link2, so nobody's rate changes afterwards.
TEST(FlowNetwork, ThreeFlowsTwoLinksMaxMin) {
  NodeSpec node = test_specs::pcie_node(true);
  node.pcie.sockets = 1;
  node.pcie.switch_link = Bandwidth::gigabytes_per_s(100);
  node.pcie.host_bridge = Bandwidth::gigabytes_per_s(60);
  const Cluster cluster(test_specs::cluster(node, 1, test_specs::fabric(FabricType::kSingleSwitch)));
  Simulator sim;
  FlowNetwork network(sim, cluster);
  Recorder flows(sim, network);
  const Bytes size = Bytes::gigabytes(1);
  const FlowId a = flows.start(0, 1, size);
  const FlowId b = flows.start(1, 5, size);
  const FlowId c = flows.start(0, 4, size);
  sim.run_until(at(Duration::picoseconds(1)));
  const Bandwidth b_rate = node.pcie.host_bridge / 2;
  const Bandwidth a_rate = Bandwidth::bytes_per_s(node.pcie.switch_link.bytes_per_second() - b_rate.bytes_per_second());
  EXPECT_EQ(network.current_rate(a), a_rate);
  EXPECT_EQ(network.current_rate(b), b_rate);
  EXPECT_EQ(network.current_rate(c), b_rate);
  sim.run();
  EXPECT_EQ(flows.done(0), at(cluster.route(0, 1).latency + transfer_time(size, a_rate)));
  EXPECT_EQ(flows.done(1), at(cluster.route(1, 5).latency + transfer_time(size, b_rate)));
  EXPECT_EQ(flows.done(2), at(cluster.route(0, 4).latency + transfer_time(size, b_rate)));
}

// The two directions of a link are independent.
TEST(FlowNetwork, OppositeDirectionsDoNotInterfere) {
  const Cluster cluster(two_dgx());
  Simulator sim;
  FlowNetwork network(sim, cluster);
  Recorder flows(sim, network);
  const Bytes size = Bytes::megabytes(256);
  flows.start(0, 8, size);
  flows.start(8, 0, size);
  flows.start(3, 4, size);
  flows.start(4, 3, size);
  sim.run();
  for (auto [i, src, dst] : {std::tuple{0, 0, 8}, {1, 8, 0}, {2, 3, 4}, {3, 4, 3}}) {
    EXPECT_EQ(flows.done(i), at(cluster.route(src, dst).latency + transfer_time(size, cluster.bottleneck(src, dst))));
  }
}

// Two flows of S and 3S share GPU0's uplink B: both run at B/2 until the short one has sent S at
// t1 = S / (B/2); the long one then has 2S left at the full B: t2 = t1 + 2S / B.
TEST(FlowNetwork, AFinishingFlowFreesBandwidth) {
  const Cluster cluster(two_dgx());
  const Bandwidth nvlink = cluster.node_spec(0).gpu.nvlink_bandwidth;
  Simulator sim;
  FlowNetwork network(sim, cluster);
  Recorder flows(sim, network);
  const Bytes s = Bytes::megabytes(90);
  flows.start(0, 1, s);
  const FlowId long_flow = flows.start(0, 2, s * 3);
  sim.run();
  const Duration t1 = transfer_time(s, nvlink / 2);
  const Duration t2 = t1 + transfer_time(s * 2, nvlink);
  EXPECT_EQ(flows.done(0), at(t1 + cluster.route(0, 1).latency));
  EXPECT_EQ(flows.done(1), at(t2 + cluster.route(0, 2).latency));
  EXPECT_EQ(network.current_rate(long_flow), Bandwidth());
}

// A flow joining later: A alone at B for t0, then A and B at B/2 each. A has S − B·t0 left at t0,
// finishing at t0 + (S − B·t0)/(B/2); B has sent as much by then and finishes its rest at full B.
TEST(FlowNetwork, AFlowJoiningLaterSlowsTheFirst) {
  const Cluster cluster(two_dgx());
  const Bandwidth nvlink = cluster.node_spec(0).gpu.nvlink_bandwidth;
  Simulator sim;
  FlowNetwork network(sim, cluster);
  Recorder flows(sim, network);
  const Bytes s = Bytes::megabytes(450);
  const Duration t0 = transfer_time(Bytes::megabytes(150), nvlink);  // A has sent 150 MB
  flows.start(0, 1, s);
  sim.schedule_at(at(t0), [&] { flows.start(0, 2, s); });
  sim.run();
  const Duration ta = t0 + transfer_time(Bytes::megabytes(300), nvlink / 2);  // both send 300 MB
  const Duration tb = ta + transfer_time(Bytes::megabytes(150), nvlink);      // B's last 150 MB
  EXPECT_EQ(flows.done(0), at(ta + cluster.route(0, 1).latency));
  EXPECT_EQ(flows.done(1), at(tb + cluster.route(0, 2).latency));
}

// All-pairs traffic inside one NVSwitch node never touches a NIC, PCIe or fabric link.
TEST(FlowNetwork, IntraNodeFlowsNeverTouchNics) {
  const Cluster cluster(two_dgx());
  Simulator sim;
  FlowNetwork network(sim, cluster);
  const Bytes size = Bytes::megabytes(8);
  int completed = 0;
  for (GpuId a = 0; a < 8; ++a) {
    for (GpuId b = 0; b < 8; ++b) {
      if (a != b) network.start_flow(a, b, size, [&] { ++completed; });
    }
  }
  sim.run();
  EXPECT_EQ(completed, 56);
  int64_t nvlink_bytes = 0;
  for (LinkId l = 0; l < static_cast<LinkId>(cluster.link_count()); ++l) {
    const Link& link = cluster.link(l);
    if (link.kind == LinkKind::kNvLink) {
      nvlink_bytes += network.bytes_carried(l).count();
    } else {
      EXPECT_EQ(network.bytes_carried(l), Bytes::zero()) << cluster.link_name(l);
    }
  }
  EXPECT_EQ(nvlink_bytes, size.count() * 56 * 2);  // every flow crosses two NVLink hops
}

// GPUs 0 and 1 share NIC 0 (4 NICs for 8 GPUs): sending to the next node at once, each gets half
// the NIC's bandwidth (the NIC, 50 GB/s, is narrower than the PCIe link they also share, 64 GB/s).
TEST(FlowNetwork, GpusSharingANicHalveEachOther) {
  const NodeSpec node = test_specs::nvswitch_node(8, 4);
  const Cluster cluster(test_specs::cluster(node, 2, test_specs::fabric(FabricType::kRailOptimized)));
  ASSERT_EQ(cluster.nic_of(0), cluster.nic_of(1));
  Simulator sim;
  FlowNetwork network(sim, cluster);
  Recorder flows(sim, network);
  const Bytes size = Bytes::megabytes(500);
  flows.start(0, 8, size);
  flows.start(1, 9, size);
  flows.start(2, 10, size);  // NIC 1: alone
  sim.run();
  const Bandwidth half = std::min(node.nic.bandwidth, node.pcie.switch_link) / 2;
  EXPECT_EQ(flows.done(0), at(cluster.route(0, 8).latency + transfer_time(size, half)));
  EXPECT_EQ(flows.done(1), at(cluster.route(1, 9).latency + transfer_time(size, half)));
  EXPECT_EQ(flows.done(2), at(cluster.route(2, 10).latency + transfer_time(size, node.nic.bandwidth)));
}

// Fat-tree, 2 ports per leaf, oversubscription 2: one spine trunk of 2 × NIC / 2 = NIC bandwidth.
// Two cross-leaf flows (all downlinks of leaf 0 busy) share it: NIC / 2 each. One alone: full NIC.
TEST(FlowNetwork, OversubscribedFatTreeHalvesCrossLeafBandwidth) {
  const NodeSpec node = test_specs::nvswitch_node(1, 1);
  const Cluster cluster(test_specs::cluster(node, 4, test_specs::fabric(FabricType::kFatTree, 2, 2.0)));
  const Bytes size = Bytes::megabytes(200);
  {
    Simulator sim;
    FlowNetwork network(sim, cluster);
    Recorder flows(sim, network);
    flows.start(0, 2, size);
    flows.start(1, 3, size);
    sim.run();
    EXPECT_EQ(flows.done(0), at(cluster.route(0, 2).latency + transfer_time(size, node.nic.bandwidth / 2)));
    EXPECT_EQ(flows.done(1), at(cluster.route(1, 3).latency + transfer_time(size, node.nic.bandwidth / 2)));
  }
  {
    Simulator sim;
    FlowNetwork network(sim, cluster);
    Recorder flows(sim, network);
    flows.start(0, 2, size);
    flows.start(1, 0, size);  // same leaf: does not use the trunk
    sim.run();
    EXPECT_EQ(flows.done(0), at(cluster.route(0, 2).latency + transfer_time(size, node.nic.bandwidth)));
    EXPECT_EQ(flows.done(1), at(cluster.route(1, 0).latency + transfer_time(size, node.nic.bandwidth)));
  }
}

// PCIe node without peer-to-peer: GPU↔GPU data crosses the CPU; across sockets it also crosses
// the inter-socket link, which two such flows then share (40 GB/s / 2 each).
TEST(FlowNetwork, PcieWithoutPeerToPeerGoesThroughTheCpu) {
  const NodeSpec node = test_specs::pcie_node(false);
  const Cluster cluster(test_specs::cluster(node, 1, test_specs::fabric(FabricType::kSingleSwitch)));
  Simulator sim;
  FlowNetwork network(sim, cluster);
  Recorder flows(sim, network);
  const Bytes size = Bytes::megabytes(100);
  flows.start(0, 4, size);
  flows.start(1, 5, size);
  sim.run();
  const Bandwidth share = std::min({node.pcie.switch_link, node.pcie.host_bridge / 2, node.pcie.inter_socket / 2});
  EXPECT_EQ(flows.done(0), at(cluster.route(0, 4).latency + transfer_time(size, share)));
  int64_t inter_socket_bytes = 0;
  int64_t host_bridge_bytes = 0;
  for (LinkId l = 0; l < static_cast<LinkId>(cluster.link_count()); ++l) {
    const Link& link = cluster.link(l);
    if (link.kind == LinkKind::kInterSocket) inter_socket_bytes += network.bytes_carried(l).count();
    if (cluster.vertex_kind(link.to) == VertexKind::kCpu && link.kind == LinkKind::kPcie) {
      host_bridge_bytes += network.bytes_carried(l).count();
    }
  }
  EXPECT_EQ(inter_socket_bytes, 2 * size.count());
  EXPECT_EQ(host_bridge_bytes, 2 * size.count());
  // Same switch, still through the CPU: up and down the host bridge.
  Recorder more(sim, network);
  more.start(0, 1, size);
  const Time start = sim.now();
  sim.run();
  EXPECT_EQ(more.done(0), start + cluster.route(0, 1).latency + transfer_time(size, node.pcie.switch_link));
}

// Case C5: a 9,839,837,184-byte transfer starting at 3,000,000,000 ns stays exact in int64 ps.
TEST(FlowNetwork, LargeNumbersStayExact) {
  const Cluster cluster(two_dgx());
  Simulator sim;
  FlowNetwork network(sim, cluster);
  Recorder flows(sim, network);
  const Bytes size = Bytes::of(9'839'837'184);
  const Time start = at(Duration::nanoseconds(3'000'000'000.0));
  sim.schedule_at(start, [&] { flows.start(0, 8, size); });
  sim.run();
  EXPECT_EQ(start.ps(), int64_t{3'000'000'000} * 1000);  // ns → ps
  EXPECT_EQ(flows.done(0), start + cluster.route(0, 8).latency + transfer_time(size, cluster.bottleneck(0, 8)));
  EXPECT_EQ(network.bytes_carried(cluster.route(0, 8).links.front()), size);
}

// Zero bytes: only the latency. Same GPU: at once.
TEST(FlowNetwork, ZeroByteAndLocalFlows) {
  const Cluster cluster(two_dgx());
  Simulator sim;
  FlowNetwork network(sim, cluster);
  Recorder flows(sim, network);
  const FlowId empty = flows.start(0, 9, Bytes::zero());
  const FlowId local = flows.start(3, 3, Bytes::megabytes(1));
  EXPECT_NE(empty, local);
  EXPECT_EQ(network.active_flows(), 0U);
  sim.run();
  EXPECT_EQ(flows.done(0), at(cluster.route(0, 9).latency));
  EXPECT_EQ(flows.done(1), Time::zero());
  EXPECT_THROW(flows.start(0, 99, Bytes::megabytes(1)), InputError);
}

// Same flows → same completion times and the same event fingerprint.
TEST(FlowNetwork, Deterministic) {
  const Cluster cluster(test_specs::cluster(test_specs::nvswitch_node(), 4, test_specs::fabric(FabricType::kFatTree, 8)));
  auto run = [&] {
    Simulator sim;
    FlowNetwork network(sim, cluster);
    Recorder flows(sim, network);
    for (int i = 0; i < 200; ++i) {
      const GpuId src = (i * 7) % 32;
      const GpuId dst = (i * 13 + 5) % 32;
      if (src == dst) continue;
      sim.schedule_at(at(Duration::nanoseconds(i % 17 * 100)),
                      [&flows, src, dst, i] { flows.start(src, dst, Bytes::kilobytes(100 + 37 * i), i); });
    }
    sim.run();
    return std::pair{flows.all(), sim.fingerprint()};
  };
  const auto first = run();
  const auto second = run();
  EXPECT_EQ(first.first, second.first);
  EXPECT_EQ(first.second, second.second);
  for (Time t : first.first) EXPECT_LT(t, Time::max());
}

}  // namespace flow_network_test
}  // namespace clustersim
