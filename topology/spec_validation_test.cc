#include "topology/spec_validation.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"
#include "topology/test_specs.h"

namespace clustersim {
namespace spec_validation_test {

ClusterSpec two_nodes() {
  return test_specs::cluster(test_specs::nvswitch_node(), 2, test_specs::fabric(FabricType::kRailOptimized));
}

// Applies `edit` to a valid spec and expects an InputError whose message contains every fragment.
void expect_rejected(const std::function<void(ClusterSpec&)>& edit, std::initializer_list<std::string> fragments) {
  ClusterSpec spec = two_nodes();
  edit(spec);
  try {
    validate_cluster_spec(spec);
    FAIL() << "accepted; expected an error mentioning " << *fragments.begin();
  } catch (const InputError& error) {
    const std::string message = error.what();
    for (const std::string& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message << "\nmissing: " << fragment;
    }
  }
}

TEST(SpecValidation, AcceptsTheTestSpecs) {
  EXPECT_NO_THROW(validate_cluster_spec(two_nodes()));
  EXPECT_NO_THROW(validate_cluster_spec(
      test_specs::cluster(test_specs::mesh_node(), 2, test_specs::fabric(FabricType::kFatTree))));
  EXPECT_NO_THROW(validate_cluster_spec(
      test_specs::cluster(test_specs::pcie_node(false), 2, test_specs::fabric(FabricType::kSingleSwitch))));
}

TEST(SpecValidation, RejectsEmptyAndZeroGpuClusters) {
  expect_rejected([](ClusterSpec& s) { s.nodes.clear(); }, {"cluster.nodes", "at least 1 node"});
  expect_rejected([](ClusterSpec& s) { s.nodes[1].gpus = 0; }, {"nodes[1]", "gpus = 0", "at least 1 GPU"});
  expect_rejected([](ClusterSpec& s) { s.gpus_per_node = 9; }, {"gpus_per_node = 9", "1..8"});
  expect_rejected([](ClusterSpec& s) { s.gpus_per_node = -1; }, {"gpus_per_node = -1"});
}

TEST(SpecValidation, RejectsNonPositiveBandwidths) {
  expect_rejected([](ClusterSpec& s) { s.nodes[0].gpu.nvlink_bandwidth = Bandwidth(); },
                  {"nodes[0]", "nvlink_bandwidth", "intra: pcie"});
  expect_rejected([](ClusterSpec& s) { s.nodes[0].pcie.host_bridge = Bandwidth::gigabytes_per_s(-1); },
                  {"pcie.host_bridge", "positive"});
  expect_rejected([](ClusterSpec& s) { s.nodes[1].nic.bandwidth = Bandwidth(); }, {"nodes[1]", "nic.bandwidth"});
  expect_rejected([](ClusterSpec& s) { s.nodes[0].pcie.latency = Duration::nanoseconds(-5); },
                  {"pcie.latency", "negative"});
  expect_rejected([](ClusterSpec& s) { s.fabric.nic = NicSpec{"x", Bandwidth(), Duration()}; },
                  {"fabric", "nic.bandwidth"});
}

TEST(SpecValidation, RejectsBadAffinityAndNics) {
  expect_rejected([](ClusterSpec& s) { s.nodes[0].nic_of_gpu = {0, 1, 2, 3, 4, 5, 6, 8}; },
                  {"nic_of_gpu[7] = 8", "0..7"});
  expect_rejected([](ClusterSpec& s) { s.nodes[0].nic_of_gpu = {0, 1}; }, {"nic_of_gpu has 2 entries", "(8)"});
  expect_rejected([](ClusterSpec& s) { s.nodes[0].nics = 0; }, {"nics = 0", "at least 1 NIC"});
  expect_rejected([](ClusterSpec& s) { s.nodes[0].nics = -2; }, {"nics = -2"});
}

TEST(SpecValidation, RejectsBadMeshes) {
  auto mesh = [](ClusterSpec& s) { s.nodes[0] = test_specs::mesh_node(); };
  expect_rejected([&](ClusterSpec& s) { mesh(s); s.nodes[0].mesh.push_back({3, 8, 1}); },
                  {"mesh[16]", "GPU 8", "0..7"});
  expect_rejected([&](ClusterSpec& s) { mesh(s); s.nodes[0].mesh = {{2, 2, 1}}; }, {"mesh[0]", "itself"});
  expect_rejected([&](ClusterSpec& s) { mesh(s); s.nodes[0].mesh = {{0, 1, 0}}; }, {"mesh[0].links = 0"});
  expect_rejected([&](ClusterSpec& s) { mesh(s); s.nodes[0].mesh = {{0, 1, 1}, {1, 0, 1}}; }, {"mesh[1]", "repeats"});
  expect_rejected([&](ClusterSpec& s) { mesh(s); s.nodes[0].mesh[0].links = 5; }, {"GPU 0", "NVLink links", "0..6"});
  expect_rejected([&](ClusterSpec& s) { mesh(s); s.nodes[0].nvlink_link_bandwidth = Bandwidth(); },
                  {"nvlink_link_bandwidth"});
  expect_rejected([](ClusterSpec& s) { s.nodes[0].mesh = {{0, 1, 1}}; }, {"mesh", "nvlink-mesh"});
}

TEST(SpecValidation, RejectsBadFabrics) {
  expect_rejected([](ClusterSpec& s) { s.fabric.oversubscription = 0.5; }, {"oversubscription = 0.5", ">= 1"});
  expect_rejected([](ClusterSpec& s) { s.fabric.leaf_ports = 0; }, {"leaf_ports = 0"});
  expect_rejected([](ClusterSpec& s) { s.fabric.switch_latency = Duration::nanoseconds(-1); }, {"switch_latency"});
  expect_rejected([](ClusterSpec& s) { s.nodes[0].pcie.switches = 0; }, {"pcie.switches = 0"});
  expect_rejected([](ClusterSpec& s) { s.nodes[0].pcie.sockets = 0; }, {"pcie.sockets = 0"});
}

// A three-tier fabric needs 1 .. nodes nodes per pod, a two-tier pod type and a core ratio >= 1.
TEST(SpecValidation, RejectsThreeTierPodsThatCannotBeBuilt) {
  auto three_tier = [](ClusterSpec& s) {
    s.fabric.type = FabricType::kThreeTier;
    s.fabric.pod_nodes = 1;
  };
  ClusterSpec valid = two_nodes();
  three_tier(valid);
  EXPECT_NO_THROW(validate_cluster_spec(valid));
  expect_rejected([&](ClusterSpec& s) { three_tier(s); s.fabric.pod_nodes = 0; }, {"pod_nodes = 0", "1 to 2 nodes"});
  expect_rejected([&](ClusterSpec& s) { three_tier(s); s.fabric.pod_nodes = 3; }, {"pod_nodes = 3", "1 to 2 nodes"});
  expect_rejected([&](ClusterSpec& s) { three_tier(s); s.fabric.core_oversubscription = 0.5; },
                  {"core_oversubscription = 0.5", ">= 1"});
  expect_rejected([&](ClusterSpec& s) { three_tier(s); s.fabric.pod_type = FabricType::kSingleSwitch; },
                  {"pod_type", "fat-tree or rail-optimized"});
}

}  // namespace spec_validation_test
}  // namespace clustersim
