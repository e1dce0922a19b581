#pragma once

// Per-direction bandwidth of an x16 PCIe link by generation, from the PCI-SIG base specifications:
// Gen3 8 GT/s, Gen4 16 GT/s, Gen5 32 GT/s per lane with 128b/130b encoding; Gen6 64 GT/s (PAM4)
// in FLIT mode, 242 of every 256 bytes payload-carrying (PCIe 6.0 base spec, FLIT: 236 B TLP +
// 6 B DLP of a 256 B flit). Line rates: protocol overheads above the encoding (TLP headers, DLLPs)
// are the transports' efficiency (collectives/link_efficiency.h kPcieEfficiency), not here.

#include <string>

#include "core/error.h"
#include "core/units.h"

namespace clustersim {

// x16 line rate per direction of PCIe generation 3..6, in bytes/s (Gen4: 31.5 GB/s, Gen5: 63.0 GB/s).
// Throws InternalError for another generation (the schema bounds it to 3..6).
inline Bandwidth pcie_x16_bandwidth(int generation) {
  constexpr double kLanes = 16;
  switch (generation) {
    case 3: return Bandwidth::gigabytes_per_s(8.0 * kLanes * 128.0 / 130.0 / 8.0);
    case 4: return Bandwidth::gigabytes_per_s(16.0 * kLanes * 128.0 / 130.0 / 8.0);
    case 5: return Bandwidth::gigabytes_per_s(32.0 * kLanes * 128.0 / 130.0 / 8.0);
    case 6: return Bandwidth::gigabytes_per_s(64.0 * kLanes * 242.0 / 256.0 / 8.0);
    default: throw InternalError("PCIe generation outside 3..6");
  }
}

// "Gen4", "Gen5", ...
inline std::string pcie_generation_name(int generation) { return "Gen" + std::to_string(generation); }

// PCIe generation assumed where a node file gives none: 5 when the NIC's line rate `nic` (per
// direction) exceeds what Gen4 x16 carries (400 Gb/s = 50 GB/s NICs are Gen5 x16 cards: ConnectX-7
// and later; a GPU that feeds one at line rate is Gen5 too: H100, H200, B200), else 4 (A100 era,
// 200 Gb/s ConnectX-6).
inline int default_pcie_generation(Bandwidth nic) { return nic > pcie_x16_bandwidth(4) ? 5 : 4; }

}  // namespace clustersim
