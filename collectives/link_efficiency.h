#pragma once

// How much of a link's datasheet bandwidth NCCL's transports actually move, by link type. These
// are the documented defaults; a calibration profile replaces the resulting times.
//
//   NVLink: NCCL's topology model gives each NVLink link a usable bandwidth per GPU generation
//     (NCCL src/graph/topo.h: SM70/SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW
//     40.1 GB/s) against a datasheet 25 GB/s per link per direction (50 GB/s for NVLink 5). On
//     H100/H200 that is 18 × 20.6 = 370.8 of 450 GB/s, matching the 363–367 GB/s ring busbw
//     measured on 8 × H200 (stas00/ml-engineering, docs/validation/published/collectives.csv).
//   Network: NCCL's ring/tree search uses 12 GB/s for a 100 Gb/s NIC (topo.h NET_BW) and per-channel
//     speeds of 24 and 48 GB/s for 200 and 400 Gb/s (search.cc speedArrayInter), i.e. 0.96 of the
//     line rate; 8 × 200 Gb/s DGX A100 nodes measure 192 GB/s ring busbw (NVIDIA GTC24 S62129).
//   NVLS: the switch's reduction runs below the link rate: NCCL tuning.cc nvlsEfficiency 0.85
//     (Hopper) and 0.74 (Blackwell); GPUs without NVLink SHARP get 0.
//   PCIe: NCCL's topology model gives a PCIe Gen3 x16 link 12 GB/s (topo.h PCI_BW) against a line
//     rate of 8 GT/s × 16 lanes × 128/130 ÷ 8 = 15.75 GB/s per direction: 0.76. The presets give
//     line rates; 8 PCIe Gen4 GPUs measure 24 GB/s ring busbw on 31.5 GB/s links (GTC24 S62129).

#include "core/gpu_spec.h"

namespace clustersim {

// NCCL's usable NVLink rate per link over the datasheet rate per link (nvlink_bandwidth /
// nvlink_links), capped at 1. The generation is recognised from the GPU name (A100/A800 Ampere,
// H100/H200/H800/H20 Hopper, B100/B200/B300/GB200/GB300 Blackwell); other GPUs get 0.8, the
// Volta/Ampere ratio 20/25. Returns 1 for a GPU without NVLink.
double nvlink_efficiency(const GpuSpec& gpu);

// NCCL nvlsEfficiency for the GPU's generation; 0 when the GPU does not support NVLS.
double nvls_efficiency(const GpuSpec& gpu);

// NCCL's ceilings on one tree channel pair (graph channel: the two trees of one NIC) of all_reduce,
// in its tree bus-bandwidth convention (algbw = busBw / 2): perChMaxTreeBws (Simple and LL) and
// perChMaxTreeLL128Bws (LL128) of NCCL src/graph/tuning.cc ncclTopoTuneModel ("busBw =
// std::min(busBw*.92, nChannels*perChMaxTreeBw)"), by GPU generation (Ampere / Hopper and later) and
// node count (1, 2, more; GroupLayout applies them from 3 nodes on, group_layout_builder.cc). Measured kernel ceilings (a channel's reduce and broadcast run by one
// thread block with its network proxy), not link rates. Zero: none known (a GPU generation_of does
// not name, e.g. a consumer card; NCCL picks its row by compute capability, which GpuSpec lacks).
struct TreeChannelCeilings {
  Bandwidth simple;
  Bandwidth ll128;
};
TreeChannelCeilings tree_channel_ceilings(const GpuSpec& gpu, int nodes);

// Bandwidth factor of NCCL's tree all_reduce against the links it streams on (tuning.cc, same line:
// busBw*.92), for every protocol.
inline constexpr double kTreeEfficiency = 0.92;

// Fraction of a NIC's line rate NCCL's network transport reaches (12 GB/s per 100 Gb/s).
inline constexpr double kNicEfficiency = 12.0 / 12.5;

// Fraction of a PCIe link's line rate NCCL's transports reach (PCI_BW 12 GB/s of 15.75 GB/s).
inline constexpr double kPcieEfficiency = 12.0 / (8.0 * 16.0 * 128.0 / 130.0 / 8.0);

}  // namespace clustersim
