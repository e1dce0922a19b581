#include "collectives/transfer_plan.h"

#include "core/error.h"

namespace clustersim {

int32_t TransferPlan::add(const Transfer& transfer, std::span<const int32_t> after) {
  const auto index = static_cast<int32_t>(transfers_.size());
  for (int32_t dependency : after) {
    check_invariant(dependency >= 0 && dependency < index, "a transfer may only depend on earlier transfers");
    dependencies_.push_back(dependency);
  }
  transfers_.push_back(transfer);
  dependency_begin_.push_back(static_cast<int32_t>(dependencies_.size()));
  return index;
}

std::span<const int32_t> TransferPlan::dependencies(size_t index) const {
  const auto begin = static_cast<size_t>(dependency_begin_[index]);
  const auto end = static_cast<size_t>(dependency_begin_[index + 1]);
  return std::span<const int32_t>(dependencies_).subspan(begin, end - begin);
}

Bytes TransferPlan::bytes_sent_by(int32_t rank) const {
  Bytes total;
  for (const Transfer& t : transfers_) {
    if (t.src == rank && t.dst != rank) total += t.size;
  }
  return total;
}

Bytes TransferPlan::bytes_received_by(int32_t rank) const {
  Bytes total;
  for (const Transfer& t : transfers_) {
    if (t.dst == rank && t.src != rank) total += t.size;
  }
  return total;
}

}  // namespace clustersim
