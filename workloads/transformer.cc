#include "workloads/transformer.h"

#include <fmt/format.h>

#include "core/error.h"
#include "workloads/attention_ops.h"
#include "workloads/dense_layer_ops.h"
#include "workloads/layer_kernels.h"
#include "workloads/layer_sizes.h"
#include "workloads/moe_layer_ops.h"
#include "workloads/op_list_builder.h"
#include "workloads/pytorch_eager_ops.h"

namespace clustersim {

namespace megatron {

namespace {

// One layer's ops in Megatron's order: the attention half, post_attention_norm, the MLP (dense) or
// the experts (kMoe), mlp_residual.
std::vector<Op> layer_forward_ops(const LayerSizes& z, Pass pass, SavePolicy policy, LayerKind kind) {
  std::vector<Op> ops;
  ops.reserve(40);
  OpListBuilder add(ops, pass, Fp8Casts::kTransformerEngine, z.tp_size);
  const bool all = policy == SavePolicy::kAll || policy == SavePolicy::kSelective;
  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t mask = z.seq_tokens * z.h;
  attention_forward(add, z, policy);
  norm_forward(add, z, "post_attention_norm", all ? seq_hidden : 0, all);
  if (kind == LayerKind::kMoe) {
    moe_forward(add, z, all);
  } else {
    mlp_forward(add, z, all, kDenseMlp, z.ffn, z.fc1_out);
  }
  add.memory("mlp_residual", 2 * seq_hidden, seq_hidden + (z.hidden_mask ? mask : 0), all && z.hidden_mask ? mask : 0);
  return ops;
}

std::vector<Op> layer_backward_ops(const LayerSizes& z, LayerKind kind) {
  std::vector<Op> ops;
  ops.reserve(48);
  OpListBuilder add(ops, Pass::kBackward, Fp8Casts::kTransformerEngine, z.tp_size);
  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t mask = z.hidden_mask ? z.seq_tokens * z.h : 0;
  add.memory("mlp_residual.backward", seq_hidden + mask, seq_hidden);
  if (kind == LayerKind::kMoe) {
    moe_backward(add, z);
  } else {
    mlp_backward(add, z, kDenseMlpBackward, z.ffn, z.fc1_out);
  }
  // Norm backward reads its input and output gradient and adds the residual branch's gradient.
  norm_backward(add, z, "post_attention_norm.backward", 3);
  attention_backward(add, z);
  return ops;
}

Bytes sum_saved(const std::vector<Op>& ops) {
  Bytes total;
  for (const Op& op : ops) total += op.saved;
  return total;
}

}  // namespace

}  // namespace megatron

Transformer::Transformer(ModelSpec model, TrainingSpec training, ShardSpec shard)
    : model_(std::move(model)), training_(std::move(training)), shard_(shard) {
  validate_sharding(model_, training_, shard_);
  dims_ = shard_model(model_, shard_);
  parameters_ = count_parameters(model_, shard_);
  if (training_.framework == Framework::kPytorchEager && shard_.tp > 1) {
    // train_step.py's tensor parallelism splits the layers only: each rank holds the whole
    // (unsplit) embedding and LM head (workloads/pytorch_eager_ops.h).
    const int64_t table = checked_mul(padded_vocab_size(model_.vocab, model_.make_vocab_size_divisible_by, 1),
                                      model_.hidden, "embedding parameters");
    parameters_.word_embedding = table;
    if (parameters_.lm_head != 0) parameters_.lm_head = table;
  }
  if (model_.moe.enabled()) {
    expert_rank_shares_ = clustersim::expert_rank_shares(expert_token_shares(model_, training_.moe_routing), dims_.ep);
  }
  const megatron::LayerSizes z = megatron::layer_sizes(model_, training_, dims_, expert_rank_shares_);
  tokens_ = z.tokens;
  expert_tokens_ = z.expert_tokens;

  if (training_.framework == Framework::kPytorchEager) {
    PytorchEagerOps ops = pytorch_eager_ops(model_, training_, dims_);
    dense_.forward = std::move(ops.layer_forward);
    dense_.recompute = std::move(ops.layer_recompute);
    dense_.backward = std::move(ops.layer_backward);
    embedding_forward_ = std::move(ops.embedding_forward);
    embedding_backward_ = std::move(ops.embedding_backward);
    head_forward_ = std::move(ops.head_forward);
    head_backward_ = std::move(ops.head_backward);
    dense_.activation_bytes = megatron::sum_saved(dense_.forward);
    embedding_activation_bytes_ = megatron::sum_saved(embedding_forward_);
    head_activation_bytes_ = megatron::sum_saved(head_forward_);
    return;
  }

  // Layers: forward with the recompute policy's savings; the recompute pass; backward.
  megatron::SavePolicy policy = megatron::SavePolicy::kAll;
  if (training_.recompute == Recompute::kFull) policy = megatron::SavePolicy::kInputOnly;
  if (training_.recompute == Recompute::kSelective && !z.flash) policy = megatron::SavePolicy::kSelective;
  auto build = [&](const megatron::LayerSizes& sz, LayerKind kind) {
    LayerOps ops;
    ops.forward = megatron::layer_forward_ops(sz, Pass::kForward, policy, kind);
    if (training_.recompute == Recompute::kFull) {
      ops.recompute = megatron::layer_forward_ops(sz, Pass::kRecompute, megatron::SavePolicy::kNothing, kind);
    } else if (policy == megatron::SavePolicy::kSelective) {
      OpListBuilder add(ops.recompute, Pass::kRecompute, Fp8Casts::kTransformerEngine, sz.tp_size);
      megatron::attention_core_forward(add, sz, megatron::SavePolicy::kNothing);
    }
    ops.backward = megatron::layer_backward_ops(sz, kind);
    ops.activation_bytes = megatron::sum_saved(ops.forward);
    return ops;
  };
  dense_ = build(z, LayerKind::kDense);
  if (model_.moe.enabled()) moe_ = build(z, LayerKind::kMoe);
  if (model_.sliding_window > 0) {
    // The same layers attending through the window (LayerSizes::window); parameters are unchanged.
    megatron::LayerSizes windowed = z;
    windowed.window = model_.sliding_window;
    dense_window_ = build(windowed, LayerKind::kDense);
    if (model_.moe.enabled()) moe_window_ = build(windowed, LayerKind::kMoe);
  }

  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t mask = z.hidden_mask ? z.seq_tokens * z.h : 0;
  {
    // Vocabulary-parallel lookup: each rank gathers the rows of its vocabulary shard, then the
    // partial embeddings are summed over tp (reduce-scattered along the sequence with sp).
    OpListBuilder add(embedding_forward_, Pass::kForward, Fp8Casts::kTransformerEngine);
    add.memory("embedding", z.tokens * (z.h * z.e + 8), z.full_hidden());
    if (z.tp) {
      add.comm(z.sp ? "embedding.tp_reduce_scatter" : "embedding.tp_all_reduce",
               z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
    }
    add.memory("embedding_dropout", (z.learned ? 2 : 1) * seq_hidden, seq_hidden + mask, mask);
    OpListBuilder back(embedding_backward_, Pass::kBackward, Fp8Casts::kTransformerEngine);
    back.memory("embedding_dropout.backward", seq_hidden + mask, seq_hidden);
    if (z.sp) back.comm("embedding.tp_all_gather.backward", CommKind::kTpAllGather, z.full_hidden());
    // Dense gradient of the [vocab/tp, h] table, accumulated into the main gradient.
    const int64_t table = z.vocab * z.h;
    back.memory("embedding.backward", z.full_hidden() + table * training_.precision.grad_bytes(),
                table * (z.e + training_.precision.grad_bytes()));
    embedding_activation_bytes_ = megatron::sum_saved(embedding_forward_);
  }
  {
    OpListBuilder add(head_forward_, Pass::kForward, Fp8Casts::kTransformerEngine);
    megatron::norm_forward(add, z, "final_norm", seq_hidden, true);
    if (z.sp) add.comm("head.tp_all_gather", CommKind::kTpAllGather, z.full_hidden());
    add.gemm("lm_head", z.tokens, z.vocab, z.h, z.act, z.sp ? seq_hidden : z.full_hidden());
    // Megatron-Core's vocab-parallel cross entropy (tensor_parallel/cross_entropy.py), one
    // unfused PyTorch kernel per step over the [tokens, vocab/tp] logits: .float() (read e, write
    // 4), max (read 4), in-place subtraction of the max (read 4, write 4), exp in place (read 4,
    // write 4), sum (read 4) and the in-place division into the softmax it saves for backward (read
    // 4, write 4; counted in logits_bytes()): e + 20 bytes read and 16 written per logit.
    const int64_t logits = z.tokens * z.vocab;
    add.memory("cross_entropy", logits * (z.e + 20), logits * 16);
    if (z.tp) {
      for (std::string_view name : {"cross_entropy.max_all_reduce", "cross_entropy.target_all_reduce",
                                    "cross_entropy.sum_all_reduce"}) {
        add.comm(name, CommKind::kTpAllReduce, z.tokens * 4);
      }
    }
    OpListBuilder back(head_backward_, Pass::kBackward, Fp8Casts::kTransformerEngine);
    back.memory("cross_entropy.backward", logits * 8, logits * (4 + z.e));
    back.gemm("lm_head.dgrad", z.tokens, z.h, z.vocab, z.act);
    if (z.sp) back.comm("head.input_all_gather", CommKind::kTpAllGather, z.full_hidden());
    back.gemm("lm_head.wgrad", z.vocab, z.h, z.tokens, z.act, 0, 1, true);
    if (z.tp) {
      back.comm(z.sp ? "head.tp_reduce_scatter.backward" : "head.tp_all_reduce.backward",
                z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
    }
    megatron::norm_backward(back, z, "final_norm.backward", 2);
    head_activation_bytes_ = megatron::sum_saved(head_forward_);
  }
}

const LayerOps& Transformer::layer(LayerKind kind, bool window) const {
  if (window && model_.sliding_window == 0) {
    throw InputError(fmt::format("model \"{}\" has no sliding-window layers (model.sliding_window = 0)", model_.name));
  }
  if (kind == LayerKind::kDense) return window ? dense_window_ : dense_;
  if (!model_.moe.enabled()) {
    throw InputError(fmt::format("model \"{}\" has no mixture-of-experts layers (model.moe.num_experts = 0)",
                                 model_.name));
  }
  return window ? moe_window_ : moe_;
}

const LayerOps& Transformer::layer_at(int64_t index) const {
  return layer(layer_kind(index), model_.is_window_layer(index));
}

LayerKind Transformer::layer_kind(int64_t index) const {
  return model_.is_moe_layer(index) ? LayerKind::kMoe : LayerKind::kDense;
}

Bytes Transformer::logits_bytes() const { return Bytes::of(tokens_ * dims_.vocab_per_rank * 6); }
}  // namespace clustersim
