#include "collectives/selector.h"

#include <gtest/gtest.h>

#include "collectives/test_layouts.h"
#include "core/error.h"

namespace clustersim {
namespace selector_test {

CollectiveRequest request(CollectiveOp op, Bytes size, CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto,
                          Protocol protocol = Protocol::kAuto) {
  CollectiveRequest r;
  r.op = op;
  r.size = size;
  r.algorithm = algorithm;
  r.protocol = protocol;
  return r;
}

Selection select(const CollectiveRequest& r, const GroupLayout& layout) {
  return select_algorithm(r, layout, [&](const AlgorithmEntry& entry, Protocol protocol) {
    return closed_form_time(r, layout, entry, protocol);
  });
}

// The winner is the cheapest priced candidate: check it against every valid pair.
TEST(Selector, PicksTheFastestValidPair) {
  for (const GroupLayout& layout : {test_layouts::nvswitch(1, 8, 8), test_layouts::nvswitch(4, 8, 8)}) {
    for (int64_t size : {int64_t{1024}, int64_t{1} << 20, int64_t{1} << 30}) {
      const CollectiveRequest r = request(CollectiveOp::kAllReduce, Bytes::of(size));
      const Selection chosen = select(r, layout);
      for (const AlgorithmEntry& entry : algorithm_registry()) {
        if (!entry.automatic || !entry.supports(r.op, layout, nullptr)) continue;
        for (Protocol protocol : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
          if (!protocol_supported(entry.algorithm, protocol, layout)) continue;
          EXPECT_LE(chosen.time, closed_form_time(r, layout, entry, protocol));
        }
      }
    }
  }
}

// Small messages go to LL (lowest latency), large ones to Simple (full bandwidth); on one NVLS
// node the large all_reduce goes to NVLS.
TEST(Selector, ProtocolFollowsTheMessageSize) {
  const GroupLayout layout = test_layouts::nvswitch(1, 8, 8);
  EXPECT_EQ(select(request(CollectiveOp::kAllReduce, Bytes::of(1024)), layout).choice.protocol, Protocol::kLL);
  const Selection large = select(request(CollectiveOp::kAllReduce, Bytes::gibibytes(1)), layout);
  EXPECT_EQ(large.choice.algorithm, CollectiveAlgorithm::kNvls);
  EXPECT_EQ(large.choice.protocol, Protocol::kSimple);
  const Selection gather = select(request(CollectiveOp::kAllGather, Bytes::gibibytes(1)), layout);
  EXPECT_EQ(gather.choice.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(gather.choice.protocol, Protocol::kSimple);
}

// Case C2: on exactly two DGX A100-like nodes the selector picks the tree for large all_reduce.
TEST(Selector, TreeForLargeAllReduceOnTwoNodes) {
  UniformLayoutSpec spec;
  spec.nodes = 2;
  spec.ranks_per_node = 8;
  spec.nics_per_node = 8;
  spec.intra_bandwidth = Bandwidth::gigabytes_per_s(300);
  spec.nic_bandwidth = Bandwidth::gigabits_per_s(200);
  spec.intra_efficiency = 0.8;
  spec.nic_efficiency = 0.96;
  spec.intra_latency = Duration::nanoseconds(700);
  spec.inter_latency = Duration::microseconds(3);
  const GroupLayout layout = make_uniform_layout(spec);
  for (double gib : {1.0, 4.0, 8.0}) {
    EXPECT_EQ(select(request(CollectiveOp::kAllReduce, Bytes::gibibytes(gib)), layout).choice.algorithm,
              CollectiveAlgorithm::kTree)
        << gib << " GiB";
  }
}

TEST(Selector, OverridesAreHonoured) {
  const GroupLayout layout = test_layouts::nvswitch(1, 8, 8);
  const Selection forced =
      select(request(CollectiveOp::kAllReduce, Bytes::gibibytes(1), CollectiveAlgorithm::kRing, Protocol::kLL128),
             layout);
  EXPECT_EQ(forced.choice.algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(forced.choice.protocol, Protocol::kLL128);
  // Hierarchical is never chosen automatically but runs on request.
  EXPECT_EQ(select(request(CollectiveOp::kAllReduce, Bytes::gibibytes(1), CollectiveAlgorithm::kHierarchical),
                   test_layouts::nvswitch(4, 8, 8))
                .choice.algorithm,
            CollectiveAlgorithm::kHierarchical);
}

void expect_input_error(const CollectiveRequest& r, const GroupLayout& layout, const std::vector<std::string>& parts) {
  try {
    select(r, layout);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    for (const std::string& part : parts) EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
  }
}

TEST(Selector, InvalidOverridesNameTheValidChoices) {
  expect_input_error(request(CollectiveOp::kAllGather, Bytes::mebibytes(1), CollectiveAlgorithm::kTree),
                     test_layouts::nvswitch(2, 8, 8), {"\"tree\"", "all_gather", "valid algorithms: auto, ring"});
  expect_input_error(request(CollectiveOp::kAllReduce, Bytes::mebibytes(1), CollectiveAlgorithm::kNvls),
                     test_layouts::nvswitch(2, 8, 8), {"\"nvls\"", "NVSwitch", "ring, tree"});
  expect_input_error(request(CollectiveOp::kAllReduce, Bytes::mebibytes(1), CollectiveAlgorithm::kNvls, Protocol::kLL),
                     test_layouts::nvswitch(1, 8, 8), {"\"LL\"", "nvls", "valid protocols: auto, Simple"});
}

// LL128 needs NVLink: on a PCIe-only layout it is not offered.
TEST(Selector, NoLL128OnPcie) {
  UniformLayoutSpec spec;
  spec.intra_fabric = IntraNodeFabric::kPcie;
  spec.intra_bandwidth = Bandwidth::gigabytes_per_s(24);
  spec.nic_bandwidth = Bandwidth::gigabits_per_s(200);
  const GroupLayout layout = make_uniform_layout(spec);
  EXPECT_FALSE(protocol_supported(CollectiveAlgorithm::kRing, Protocol::kLL128, layout));
  expect_input_error(request(CollectiveOp::kAllReduce, Bytes::mebibytes(1), CollectiveAlgorithm::kRing, Protocol::kLL128),
                     layout, {"LL128", "auto, LL, Simple"});
}

}  // namespace selector_test
}  // namespace clustersim
