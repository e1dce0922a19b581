#include "collectives/link_efficiency.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace clustersim {
namespace {

enum class Generation { kUnknown, kAmpere, kHopper, kBlackwell };

Generation generation_of(const GpuSpec& gpu) {
  const std::string_view name = gpu.name;
  const auto mentions = [name](std::string_view token) { return name.find(token) != std::string_view::npos; };
  constexpr std::array<std::string_view, 5> kBlackwell = {"B100", "B200", "B300", "GB200", "GB300"};
  constexpr std::array<std::string_view, 4> kHopper = {"H100", "H200", "H800", "H20"};
  constexpr std::array<std::string_view, 2> kAmpere = {"A100", "A800"};
  if (std::any_of(kBlackwell.begin(), kBlackwell.end(), mentions)) return Generation::kBlackwell;
  if (std::any_of(kHopper.begin(), kHopper.end(), mentions)) return Generation::kHopper;
  if (std::any_of(kAmpere.begin(), kAmpere.end(), mentions)) return Generation::kAmpere;
  return Generation::kUnknown;
}

}  // namespace

double nvlink_efficiency(const GpuSpec& gpu) {
  if (gpu.nvlink_links <= 0 || !gpu.nvlink_bandwidth.is_positive()) return 1.0;
  const double datasheet_per_link = gpu.nvlink_bandwidth.gigabytes_per_second() / gpu.nvlink_links;
  double usable_per_link = 0;  // NCCL src/graph/topo.h, GB/s
  switch (generation_of(gpu)) {
    case Generation::kAmpere:
      usable_per_link = 20.0;  // SM80_NVLINK_BW
      break;
    case Generation::kHopper:
      usable_per_link = 20.6;  // SM90_NVLINK_BW
      break;
    case Generation::kBlackwell:
      usable_per_link = 40.1;  // SM100_NVLINK_BW
      break;
    case Generation::kUnknown:
      return 0.8;  // SM70/SM80_NVLINK_BW 20.0 over 25 GB/s
  }
  return std::min(1.0, usable_per_link / datasheet_per_link);
}

double nvls_efficiency(const GpuSpec& gpu) {
  if (!gpu.supports_nvls) return 0.0;
  switch (generation_of(gpu)) {
    case Generation::kBlackwell:
      return 0.74;
    case Generation::kHopper:
    case Generation::kAmpere:   // no NVLS hardware; a spec claiming it gets the Hopper value
    case Generation::kUnknown:
      return 0.85;
  }
  return 0.85;
}

TreeChannelCeilings tree_channel_ceilings(const GpuSpec& gpu, int nodes) {
  // NCCL src/graph/tuning.cc (2.19 – 2.21) perChMaxTreeBws and perChMaxTreeLL128Bws
  // [compCap][N1/N2/N4], GB/s; NCCL takes the Hopper row for every compute capability >= 9.0.
  constexpr double kAmpere[3] = {24.0, 23.6, 17.8};
  constexpr double kHopper[3] = {38.7, 41.4, 36.0};
  constexpr double kAmpereLL128[3] = {20.0, 20.0, 20.0};
  constexpr double kHopperLL128[3] = {36.7, 36.7, 29.0};
  const size_t column = nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
  switch (generation_of(gpu)) {
    case Generation::kHopper:
    case Generation::kBlackwell:
      return {Bandwidth::gigabytes_per_s(kHopper[column]), Bandwidth::gigabytes_per_s(kHopperLL128[column])};
    case Generation::kAmpere:
      return {Bandwidth::gigabytes_per_s(kAmpere[column]), Bandwidth::gigabytes_per_s(kAmpereLL128[column])};
    case Generation::kUnknown:
      break;
  }
  return {};
}

}  // namespace clustersim
