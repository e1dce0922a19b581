#include "cost_models/precision_policy.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/excerpt.h"

namespace clustersim {

std::string_view name_of(OptimizerKind optimizer) {
  switch (optimizer) {
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kSgd:
      return "sgd";
  }
  throw InternalError("unknown OptimizerKind value");
}

OptimizerKind parse_optimizer(std::string_view text) {
  if (text == "adam") return OptimizerKind::kAdam;
  if (text == "sgd") return OptimizerKind::kSgd;
  throw InputError(fmt::format("unknown optimizer \"{}\" (valid: adam, sgd)", excerpt(text)));
}

int optimizer_state_count(OptimizerKind optimizer) { return optimizer == OptimizerKind::kAdam ? 2 : 1; }

PrecisionPolicy PrecisionPolicy::megatron_mixed(DataType param_dtype) {
  PrecisionPolicy p;
  p.param_dtype = param_dtype;
  p.grad_dtype = DataType::kFp32;
  p.master_weights = true;
  p.fp32_grad_copy = false;
  p.optimizer_state_dtype = DataType::kFp32;
  return p;
}

PrecisionPolicy PrecisionPolicy::deepspeed_mixed(DataType param_dtype, bool fp32_grad_copy) {
  PrecisionPolicy p;
  p.param_dtype = param_dtype;
  p.grad_dtype = param_dtype;
  p.master_weights = true;
  p.fp32_grad_copy = fp32_grad_copy;
  p.optimizer_state_dtype = DataType::kFp32;
  return p;
}

PrecisionPolicy PrecisionPolicy::pure_fp32() {
  PrecisionPolicy p;
  p.param_dtype = DataType::kFp32;
  p.grad_dtype = DataType::kFp32;
  p.master_weights = false;
  p.fp32_grad_copy = false;
  p.optimizer_state_dtype = DataType::kFp32;
  return p;
}

void PrecisionPolicy::validate() const {
  if (param_dtype == DataType::kFp8 || param_dtype == DataType::kTf32) {
    throw InputError(
        fmt::format("training.params_dtype \"{}\" is not a storage format for weights (valid: bf16, fp16, fp32; fp8 "
                    "training keeps 16-bit weights and casts them per GEMM)",
                    name_of(param_dtype)))
        .about({"training.params_dtype"});
  }
  if (grad_dtype == DataType::kFp8 || grad_dtype == DataType::kTf32) {
    throw InputError(
        fmt::format("training.grads_dtype \"{}\" is not valid (valid: bf16, fp16, fp32)", name_of(grad_dtype)))
        .about({"training.grads_dtype"});
  }
  if (master_weights && param_dtype == DataType::kFp32) {
    throw InputError(
        "training.master_weights is on but training.params_dtype is fp32: an fp32 master copy of fp32 "
        "weights is redundant (set training.master_weights: false, or use bf16/fp16 parameters)")
        .about({"training.master_weights", "training.params_dtype"});
  }
  if (optimizer_state_dtype == DataType::kFp8 || optimizer_state_dtype == DataType::kTf32) {
    throw InputError(fmt::format("training.optimizer_state_dtype \"{}\" is not valid (valid: fp32, bf16, fp16)",
                                 name_of(optimizer_state_dtype)))
        .about({"training.optimizer_state_dtype"});
  }
}

int64_t PrecisionPolicy::param_bytes() const { return bytes_per_element(param_dtype); }

int64_t PrecisionPolicy::grad_bytes() const { return bytes_per_element(grad_dtype); }

int64_t PrecisionPolicy::optimizer_bytes(OptimizerKind optimizer) const {
  return (master_weights ? 4 : 0) + (fp32_grad_copy ? 4 : 0) +
         optimizer_state_count(optimizer) * bytes_per_element(optimizer_state_dtype);
}

}  // namespace clustersim
