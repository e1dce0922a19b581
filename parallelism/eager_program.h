#pragma once

// What a training.framework pytorch-eager step adds to the programs and the memory the program
// builder makes (workloads/pytorch_eager_ops.h has the op lists): the layouts it covers,
// DistributedDataParallel's bucket copies, and the peak memory of one GPU's PyTorch step or of
// each of its pipeline stages.

#include <vector>

#include "cost_models/compute_cost_model.h"
#include "parallelism/layout.h"
#include "parallelism/stage_memory.h"
#include "parallelism/step_program.h"
#include "workloads/host_costs.h"
#include "workloads/training_spec.h"
#include "workloads/transformer.h"

namespace clustersim {

// The layouts training.framework pytorch-eager covers (workloads/pytorch_eager_ops.h): tp = pp = cp
// = 1, and either ZeRO 0 with one micro-batch per GPU (alone or DistributedDataParallel) or ZeRO 3 /
// 2 (FullyShardedDataParallel FULL_SHARD / SHARD_GRAD_OP); 16-bit params_dtype only under FSDP.
// Throws InputError about the keys to blame (InputError::keys(); its message opens with the first):
// training.framework where the layout is not one it covers, training.params_dtype (then
// training.framework) where only the 16-bit parameters without FSDP refuse it. No-op for other
// frameworks.
void check_pytorch_eager_layout(const TrainingSpec& training, const Layout& layout);

// torch.nn.parallel.DistributedDataParallel's copies with its default gradient_as_bucket_view=False
// (torch/csrc/distributed/c10d/reducer.cpp): as each gradient is ready, mark_variable_ready_dense
// writes it into its bucket divided by the world size (at::mul_out: the gradient read, the bucket
// written); once every bucket is reduced, finalize_backward copies each bucket back into the
// parameters' .grad (read and written again). Each pass moves 2 × the gradient bytes on the compute
// stream; the first follows every kGradientsReady marker of the backward passes, the second runs
// after the reductions (StageProgram::after_reductions).
// `host` prices the copies' launches (HostCosts::backward_elementwise).
void add_ddp_bucket_copies(StageProgram& stage, const ComputeCostModel& cost, const PrecisionPolicy& precision,
                           const HostCosts& host);

// stage_memory() for training.framework pytorch-eager: each stage's peak memory moment
// (pytorch_eager_peak_memory) under its layout (one GPU, DDP, FSDP or pipeline stages). The layout
// must pass check_pytorch_eager_layout(), which this calls.
std::vector<StageMemory> eager_stage_memory(const Transformer& transformer, const Layout& layout);

}  // namespace clustersim
