#include "collectives/collective_profile.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace clustersim {
namespace collective_profile_test {

constexpr const char* kProfile = R"({
  "name": "test",
  "fits": [{"op": "all_reduce", "algorithm": "ring", "protocol": "Simple", "ranks": 8, "nodes": 1,
            "segments": [{"min_size": "0 B", "max_size": "1 MiB", "latency": "20 us", "bandwidth": "100 GB/s"},
                         {"min_size": "1048577 B", "max_size": "16 GiB", "latency": "40 us", "bandwidth": "200 GB/s"}]}]
})";

TEST(CollectiveProfile, LookupUsesTheSegmentOfTheSize) {
  const CollectiveProfile profile = parse_collective_profile(kProfile);
  EXPECT_EQ(profile.name, "test");
  const Bytes small = Bytes::kibibytes(64);
  EXPECT_EQ(profile.lookup(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, Protocol::kSimple, 8, 1, small),
            Duration::microseconds(20) + transfer_time(small, Bandwidth::gigabytes_per_s(100)));
  const Bytes large = Bytes::gibibytes(1);
  EXPECT_EQ(profile.lookup(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, Protocol::kSimple, 8, 1, large),
            Duration::microseconds(40) + transfer_time(large, Bandwidth::gigabytes_per_s(200)));
  // Other keys, or sizes beyond the segments, are not covered.
  EXPECT_FALSE(profile.lookup(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, Protocol::kSimple, 16, 1, large));
  EXPECT_FALSE(profile.lookup(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, Protocol::kSimple, 8, 1, large));
  EXPECT_FALSE(profile.lookup(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, Protocol::kSimple, 8, 2, large));
  EXPECT_FALSE(
      profile.lookup(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, Protocol::kSimple, 8, 1, Bytes::gibibytes(17)));
}

TEST(CollectiveProfile, AutoFitsPriceEveryCandidateAndExactFitsWin) {
  // An nccl-tests sweep without NCCL_ALGO/NCCL_PROTO: NCCL's own choice, measured.
  const CollectiveProfile profile = parse_collective_profile(R"({"fits": [
      {"op": "all_reduce", "algorithm": "auto", "protocol": "auto", "ranks": 16, "nodes": 2,
       "segments": [{"min_size": "0 B", "max_size": "8 GiB", "latency": "120 us", "bandwidth": "180 GB/s"}]},
      {"op": "all_reduce", "algorithm": "tree", "protocol": "LL", "ranks": 16, "nodes": 2,
       "segments": [{"min_size": "0 B", "max_size": "8 GiB", "latency": "30 us", "bandwidth": "1 GB/s"}]}]})");
  const Bytes size = Bytes::mebibytes(64);
  const Duration measured = Duration::microseconds(120) + transfer_time(size, Bandwidth::gigabytes_per_s(180));
  EXPECT_EQ(profile.lookup(CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, Protocol::kSimple, 16, 2, size),
            measured);
  EXPECT_EQ(profile.lookup(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, Protocol::kLL, 16, 2, size),
            Duration::microseconds(30) + transfer_time(size, Bandwidth::gigabytes_per_s(1)));
  EXPECT_FALSE(profile.lookup(CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, Protocol::kSimple, 16, 2, size));
}

TEST(CollectiveProfile, JsonRoundTripIsExact) {
  CollectiveProfile profile = parse_collective_profile(kProfile);
  profile.fits.front().segments.front().bandwidth = Bandwidth::bytes_per_s(123456789.123456789);
  profile.fits.front().segments.front().latency = Duration::picoseconds(12'345'678);
  const CollectiveProfile again = parse_collective_profile(to_json(profile));
  ASSERT_EQ(again.fits.size(), 1u);
  ASSERT_EQ(again.fits[0].segments.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& a = profile.fits[0].segments[i];
    const auto& b = again.fits[0].segments[i];
    EXPECT_EQ(a.min_size, b.min_size);
    EXPECT_EQ(a.max_size, b.max_size);
    EXPECT_EQ(a.latency, b.latency);
    EXPECT_EQ(a.bandwidth, b.bandwidth);
  }
  EXPECT_EQ(again.fits[0].nodes, 1);
  EXPECT_EQ(again.fits[0].ranks, 8);
}

void expect_error(const std::string& json, const std::vector<std::string>& parts) {
  try {
    parse_collective_profile(json);
    FAIL() << "expected InputError for " << json;
  } catch (const InputError& error) {
    for (const auto& part : parts) EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
  }
}

TEST(CollectiveProfile, BadInputNamesTheKey) {
  expect_error("{", {"not valid JSON"});
  expect_error(R"({"fits": [], "extra": 1})", {"unknown key \"extra\"", "fits, name"});
  const std::string fit = R"({"fits": [{"op": "all_reduce", "algorithm": "ring", "protocol": "Simple", "ranks": 8,
      "segments": [{"min_size": "0 B", "max_size": "1 MiB", "latency": LAT, "bandwidth": BW}]}]})";
  const auto with = [&fit](const std::string& latency, const std::string& bandwidth) {
    std::string json = fit;
    json.replace(json.find("LAT"), 3, latency);
    json.replace(json.find("BW"), 2, bandwidth);
    return json;
  };
  expect_error(with("20", "\"100 GB/s\""), {"fits[0].segments[0].latency", "unit"});
  expect_error(with("\"20 us\"", "\"0 GB/s\""), {"fits[0].segments[0].bandwidth", "greater than zero"});
  expect_error(with("\"20 parsecs\"", "\"1 GB/s\""), {"fits[0].segments[0].latency", "parsecs"});
  expect_error(R"({"fits": [{"op": "allreduce", "algorithm": "ring", "protocol": "Simple", "ranks": 8, "segments": []}]})",
               {"fits[0].op", "allreduce"});
  expect_error(R"({"fits": [{"op": "all_reduce", "algorithm": "ring", "protocol": "Simple", "ranks": 0, "segments": []}]})",
               {"fits[0].ranks", ">= 1"});
}

}  // namespace collective_profile_test
}  // namespace clustersim
