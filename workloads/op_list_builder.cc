// OpListBuilder (workloads/op_list_builder.h): the ops of both op models, filled in one place.

#include "workloads/op_list_builder.h"

namespace clustersim {

Op& OpListBuilder::gemm(std::string_view name, int64_t m, int64_t n, int64_t k, DataType dtype, int64_t saved_bytes,
                        int64_t batch, bool a_transposed) {
  if (casts_ == Fp8Casts::kTransformerEngine && dtype == DataType::kFp8 && !a_transposed) fp8_cast(m * k * batch);
  Op op;
  op.name = name;
  op.cost = OpCost::kGemm;
  op.pass = pass_;
  op.gemm = GemmShape{m, n, k, batch, dtype, a_transposed};
  op.flops = op.gemm.flops();
  op.kernel_flops = op.flops;
  const int64_t e = bytes_per_element(dtype);
  op.bytes_read = Bytes::of((m * k + k * n) * batch * e);
  op.bytes_written = Bytes::of(m * n * batch * e);
  op.saved = Bytes::of(saved_bytes);
  ops_.push_back(op);
  return ops_.back();
}

Op& OpListBuilder::memory(std::string_view name, int64_t read_bytes, int64_t written_bytes, int64_t saved_bytes) {
  Op op;
  op.name = name;
  op.cost = OpCost::kMemoryBound;
  op.pass = pass_;
  op.bytes_read = Bytes::of(read_bytes);
  op.bytes_written = Bytes::of(written_bytes);
  op.saved = Bytes::of(saved_bytes);
  ops_.push_back(op);
  return ops_.back();
}

Op& OpListBuilder::memory(std::string_view name, MemoryAccess access, int64_t read_bytes, int64_t written_bytes,
                          int64_t saved_bytes) {
  Op& op = memory(name, read_bytes, written_bytes, saved_bytes);
  op.access = access;
  return op;
}

Op& OpListBuilder::fused_attention(std::string_view name, int64_t read_bytes, int64_t written_bytes,
                                   int64_t saved_bytes, DataType dtype, double flops, double kernel_flops) {
  Op& op = memory(name, read_bytes, written_bytes, saved_bytes);
  op.cost = OpCost::kFlashAttention;
  op.gemm.dtype = dtype;
  op.flops = flops;
  op.kernel_flops = kernel_flops;
  op.attention_core = true;
  return op;
}

Op& OpListBuilder::comm(std::string_view name, CommKind kind, int64_t bytes, int64_t steps) {
  Op op;
  op.name = name;
  op.cost = OpCost::kCommunication;
  op.pass = pass_;
  op.comm = kind;
  op.comm_bytes = Bytes::of(bytes);
  op.comm_steps = steps;
  ops_.push_back(op);
  return ops_.back();
}

void OpListBuilder::fp8_cast(int64_t elements) {
  constexpr int64_t kSourceBytes = 2;  // bf16 activations (fp8 recipes keep 16-bit activations)
  if (!ops_.empty() && ops_.back().cost == OpCost::kCommunication && ops_.back().comm == CommKind::kTpAllGather) {
    Op gather = ops_.back();
    ops_.pop_back();
    const int64_t shard = elements / tp_;
    memory("fp8_cast", shard * kSourceBytes, 2 * shard);
    gather.comm_bytes = gather.comm_bytes.divided_ceil(kSourceBytes);
    ops_.push_back(gather);
    return;
  }
  memory("fp8_cast", elements * kSourceBytes, 2 * elements);
}

}  // namespace clustersim
