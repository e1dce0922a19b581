#include "workloads/op.h"

#include "core/error.h"

namespace clustersim {

std::string_view name_of(OpCost cost) {
  switch (cost) {
    case OpCost::kGemm:
      return "gemm";
    case OpCost::kFlashAttention:
      return "flash_attention";
    case OpCost::kMemoryBound:
      return "memory_bound";
    case OpCost::kCommunication:
      return "communication";
  }
  throw InternalError("unknown OpCost value");
}

std::string_view name_of(Pass pass) {
  switch (pass) {
    case Pass::kForward:
      return "forward";
    case Pass::kBackward:
      return "backward";
    case Pass::kRecompute:
      return "recompute";
  }
  throw InternalError("unknown Pass value");
}

std::string_view name_of(CommKind kind) {
  switch (kind) {
    case CommKind::kNone:
      return "none";
    case CommKind::kTpAllReduce:
      return "tp_all_reduce";
    case CommKind::kTpAllGather:
      return "tp_all_gather";
    case CommKind::kTpReduceScatter:
      return "tp_reduce_scatter";
    case CommKind::kCpKvExchange:
      return "cp_kv_exchange";
    case CommKind::kCpAllToAll:
      return "cp_all_to_all";
    case CommKind::kEpAllToAll:
      return "ep_all_to_all";
    case CommKind::kEpAllGather:
      return "ep_all_gather";
    case CommKind::kEpReduceScatter:
      return "ep_reduce_scatter";
    case CommKind::kEtpAllGather:
      return "etp_all_gather";
    case CommKind::kEtpReduceScatter:
      return "etp_reduce_scatter";
  }
  throw InternalError("unknown CommKind value");
}

}  // namespace clustersim
