#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/data_type.h"
#include "core/units.h"

namespace clustersim {

// Which fused attention kernel runs. kCudnn: cuDNN's fused attention, the backend of Transformer
// Engine on Hopper that Megatron-LM uses (ComputeDefaults' efficiencies). kSdpaFlash:
// torch.nn.functional.scaled_dot_product_attention restricted to its flash backend (PyTorch's
// FlashAttention-2 kernels), as the PyTorch reference step runs it. kFlashV1: Dao's first
// FlashAttention (flash-attn 1.x), priced as kCudnn at half its rate: FlashAttention-2 is "around
// 2× faster" than it (Dao 2023, arXiv:2307.08691, abstract; ComputeDefaults::kFlashV1Slowdown).
enum class FusedAttentionKernel { kCudnn, kSdpaFlash, kFlashV1 };

// "cudnn", "sdpa-flash", "flash-v1" (the `kernel` of a profile's attention samples).
std::string_view name_of(FusedAttentionKernel kernel);
// The inverse of name_of(); throws InputError naming the text and the valid names.
FusedAttentionKernel parse_fused_attention_kernel(std::string_view text);

// One fused causal attention call: q [batch, heads, seq, head_dim], k and v [batch, kv_heads, seq,
// head_dim] (grouped-query attention when kv_heads < heads).
struct AttentionShape {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t seq = 0;
  int64_t head_dim = 0;
  DataType dtype = DataType::kBf16;

  // FLOPs a causal kernel executes, in FlashAttention's benchmark convention: forward
  // 4·b·heads·s²·d / 2 (the masked half skipped), backward 2.5 × forward.
  double forward_flops() const;
  double backward_flops() const { return 2.5 * forward_flops(); }
  friend bool operator==(const AttentionShape&, const AttentionShape&) = default;
};

// A measured fused attention kernel: forward time and backward time (the whole backward call:
// PyTorch's flash backward runs a dot(dO, O) kernel, the dQ/dK/dV kernel and a dQ conversion).
struct AttentionSample {
  std::string kernel;  // which implementation, e.g. "sdpa-flash" (PyTorch SDPA, flash backend)
  AttentionShape shape;
  Duration forward;
  Duration backward;
};

// Predicts fused attention kernel durations from measured samples of one kernel.
//
// The achieved fraction of the dense peak (efficiency = kernel FLOPs / (time × peak)) is
// interpolated, in log space, over the k = 6 nearest samples with Gaussian weights exp(-d²/2),
// where d is the distance over (log2(batch·heads), log2(seq), head_dim / 32, log2(heads/kv_heads)):
// one octave of parallelism or sequence, 32 of head dimension (FlashAttention-2 kernels are
// templated per head dimension and their tiles change with it) or a doubling of the GQA ratio
// count as one unit. A shape equal to a sample returns its measured time.
class AttentionPredictor {
 public:
  enum class Direction { kForward, kBackward };

  // `peak`: the dense peak of the samples' dtype on the GPU they were measured on. Throws
  // InputError for a sample with a non-positive dimension or time, or heads not a multiple of
  // kv_heads.
  AttentionPredictor(std::vector<AttentionSample> samples, FlopRate peak);

  bool empty() const { return samples_.empty(); }
  Duration predict(const AttentionShape& shape, Direction direction) const;
  // predict() as if sample `excluded` were absent (leave-one-out evaluation).
  Duration predict_without(const AttentionShape& shape, Direction direction, size_t excluded) const;
  const std::vector<AttentionSample>& samples() const { return samples_; }

 private:
  std::vector<AttentionSample> samples_;
  FlopRate peak_;
};

// Throws InputError naming `where` for non-positive dimensions or heads not divisible by kv_heads.
void validate_attention_shape(const AttentionShape& shape, const std::string& where);

}  // namespace clustersim
