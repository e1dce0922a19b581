#include "workloads/training_spec.h"

#include <fmt/format.h>

#include "core/error.h"

namespace clustersim {

std::string_view name_of(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  throw InternalError("unknown Recompute value");
}

std::string_view name_of(AttentionKernel attention) {
  return attention == AttentionKernel::kFlash ? "flash" : "naive";
}

Recompute parse_recompute(std::string_view text) {
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  throw InputError(fmt::format("unknown recompute \"{}\" (valid: none, selective, full)", text));
}

AttentionKernel parse_attention_kernel(std::string_view text) {
  if (text == "flash") return AttentionKernel::kFlash;
  if (text == "naive") return AttentionKernel::kNaive;
  throw InputError(fmt::format("unknown attention \"{}\" (valid: flash, naive)", text));
}

DataType TrainingSpec::activation_dtype() const {
  return compute_dtype == DataType::kFp8 ? DataType::kBf16 : compute_dtype;
}

void TrainingSpec::validate(const ModelSpec& model) const {
  auto positive = [](const char* key, int64_t value) {
    if (value <= 0) throw InputError(fmt::format("training.{} must be a positive integer (got {})", key, value));
  };
  positive("seq_len", seq_len);
  positive("global_batch", global_batch);
  positive("micro_batch", micro_batch);
  if (global_batch % micro_batch != 0) {
    throw InputError(fmt::format("training.global_batch = {} is not a multiple of training.micro_batch = {} "
                                 "(e.g. use global_batch {} or {})",
                                 global_batch, micro_batch, global_batch / micro_batch * micro_batch,
                                 (global_batch / micro_batch + 1) * micro_batch));
  }
  if (compute_dtype != DataType::kBf16 && compute_dtype != DataType::kFp16 && compute_dtype != DataType::kFp8) {
    throw InputError(fmt::format("training.precision \"{}\" is not a training compute type (valid: bf16, fp16, fp8)",
                                 name_of(compute_dtype)));
  }
  for (auto [key, p] : {std::pair{"hidden_dropout", hidden_dropout}, std::pair{"attention_dropout", attention_dropout}}) {
    if (!(p >= 0 && p < 1)) throw InputError(fmt::format("training.{} must be in [0, 1) (got {})", key, p));
  }
  precision.validate();
  if (model.position_embedding == PositionEmbedding::kLearned && seq_len > model.max_position_embeddings) {
    throw InputError(fmt::format("training.seq_len = {} exceeds model.max_position_embeddings = {} of model \"{}\" "
                                 "(learned position embeddings have one row per position)",
                                 seq_len, model.max_position_embeddings, model.name));
  }
}

}  // namespace clustersim
