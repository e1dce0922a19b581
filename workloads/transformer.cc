#include "workloads/transformer.h"

#include <fmt/format.h>

#include "core/error.h"
#include "workloads/pytorch_eager_ops.h"

namespace clustersim {

namespace {

// What a forward op list saves for backward.
enum class SavePolicy {
  kAll,        // no recompute
  kSelective,  // attention-core s² tensors dropped (recomputed)
  kInputOnly,  // full recompute: only the layer input
  kNothing,    // a recompute pass: what it re-materialises is transient
};

// Appends ops with the shapes and sizes of one rank. All sizes are element counts × bytes.
class OpListBuilder {
 public:
  OpListBuilder(std::vector<Op>& ops, Pass pass) : ops_(ops), pass_(pass) {}

  Op& gemm(std::string_view name, int64_t m, int64_t n, int64_t k, DataType dtype, int64_t saved_bytes = 0,
           int64_t batch = 1, bool a_transposed = false) {
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

  Op& memory(std::string_view name, int64_t read_bytes, int64_t written_bytes, int64_t saved_bytes = 0) {
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

  void comm(std::string_view name, CommKind kind, int64_t bytes, int64_t steps = 1) {
    Op op;
    op.name = name;
    op.cost = OpCost::kCommunication;
    op.pass = pass_;
    op.comm = kind;
    op.comm_bytes = Bytes::of(bytes);
    op.comm_steps = steps;
    ops_.push_back(op);
  }

 private:
  std::vector<Op>& ops_;
  Pass pass_;
};

// Per-rank sizes shared by the builders.
struct Sizes {
  int64_t b, s, s_q, tokens, seq_tokens;  // seq_tokens: tokens in the sequence-parallel regions
  int64_t h, d, heads, q, kv, ffn, fc1_out, vocab;
  int64_t e;             // activation element bytes
  DataType act;          // activation dtype
  DataType gemm;         // linear-layer GEMM dtype
  bool tp, sp, cp, flash, rope, swiglu, learned;
  bool hidden_mask, attention_mask;
  int64_t cp_size;

  int64_t hidden_tokens() const { return seq_tokens * h * e; }  // a [T(/tp), h] activation in bytes
  int64_t full_hidden() const { return tokens * h * e; }        // a [T, h] activation in bytes
  int64_t scores() const { return b * heads * s_q * s; }        // elements of the s×s tensors per rank
};

Sizes sizes_of(const ModelSpec& model, const TrainingSpec& training, const ShardedDims& dims) {
  Sizes z{};
  z.b = training.micro_batch;
  z.s = training.seq_len;
  z.cp_size = dims.cp;
  z.s_q = training.seq_len / dims.cp;
  z.tokens = z.b * z.s_q;
  z.sp = dims.sequence_parallel;
  z.seq_tokens = z.sp ? z.tokens / dims.tp : z.tokens;
  z.h = model.hidden;
  z.d = dims.head_dim;
  z.heads = dims.heads_per_rank;
  z.q = dims.heads_per_rank * dims.head_dim;
  z.kv = dims.kv_heads_per_rank * dims.head_dim;
  z.ffn = dims.ffn_per_rank;
  z.swiglu = model.mlp == MlpKind::kSwiglu;
  z.fc1_out = z.ffn * (z.swiglu ? 2 : 1);
  z.vocab = dims.vocab_per_rank;
  z.act = training.activation_dtype();
  z.gemm = training.compute_dtype;
  z.e = bytes_per_element(z.act);
  z.tp = dims.tp > 1;
  z.cp = dims.cp > 1;
  z.flash = training.attention == AttentionKernel::kFlash;
  z.rope = model.position_embedding == PositionEmbedding::kRope;
  z.learned = !z.rope;
  z.hidden_mask = training.hidden_dropout > 0;
  z.attention_mask = training.attention_dropout > 0;
  return z;
}

// Forward attention-core ops (used by the layer forward and by selective recompute).
void attention_core_forward(OpListBuilder& add, const Sizes& z, SavePolicy policy) {
  const bool keep_inputs = policy == SavePolicy::kAll || policy == SavePolicy::kSelective;
  const bool keep_scores = policy == SavePolicy::kAll;
  const double core_flops = 4.0 * static_cast<double>(z.b) * static_cast<double>(z.s_q) *
                            static_cast<double>(z.s) * static_cast<double>(z.q);
  if (z.flash) {
    Op& op = add.memory("flash_attention", z.tokens * (z.q + 2 * z.kv) * z.e, z.tokens * z.q * z.e,
                        keep_inputs ? z.tokens * (z.q + 2 * z.kv) * z.e : 0);
    op.cost = OpCost::kFlashAttention;
    op.gemm.dtype = z.act;
    op.flops = core_flops;
    op.kernel_flops = core_flops / 2;  // causal: the kernel skips the masked upper triangle
    op.attention_core = true;
    return;
  }
  // Naive: K and V expanded to every query head (grouped-query attention repeats them).
  const int64_t batch = z.b * z.heads;
  Op& scores = add.gemm("attention_scores", z.s_q, z.s, z.d, z.act, keep_inputs ? 2 * z.tokens * z.q * z.e : 0, batch);
  scores.attention_core = true;
  Op& softmax = add.memory("softmax", z.scores() * z.e, z.scores() * z.e, keep_scores ? z.scores() * z.e : 0);
  softmax.attention_core = true;
  if (z.attention_mask) {
    Op& dropout =
        add.memory("attention_dropout", z.scores() * z.e, z.scores() * (z.e + 1), keep_scores ? z.scores() : 0);
    dropout.attention_core = true;
  }
  const int64_t values_saved =
      (keep_inputs ? z.tokens * z.q * z.e : 0) + (keep_scores && z.attention_mask ? z.scores() * z.e : 0);
  Op& values = add.gemm("attention_values", z.s_q, z.d, z.s, z.act, values_saved, batch);
  values.attention_core = true;
}

void attention_core_backward(OpListBuilder& add, const Sizes& z) {
  const double core_flops = 4.0 * static_cast<double>(z.b) * static_cast<double>(z.s_q) *
                            static_cast<double>(z.s) * static_cast<double>(z.q);
  if (z.flash) {
    // Reads Q, K, V, O, dO; writes dQ, dK, dV.
    Op& op = add.memory("flash_attention.backward", z.tokens * (3 * z.q + 2 * z.kv) * z.e,
                        z.tokens * (z.q + 2 * z.kv) * z.e);
    op.cost = OpCost::kFlashAttention;
    op.gemm.dtype = z.act;
    op.flops = 2 * core_flops;
    op.kernel_flops = 2.5 * (core_flops / 2);  // FlashAttention's benchmark: backward = 2.5 × forward
    op.attention_core = true;
    return;
  }
  const int64_t batch = z.b * z.heads;
  add.gemm("attention_values.dgrad", z.s_q, z.s, z.d, z.act, 0, batch).attention_core = true;  // dP = dO·Vᵀ
  add.gemm("attention_values.wgrad", z.s, z.d, z.s_q, z.act, 0, batch, true).attention_core = true;  // dV = Pᵀ·dO
  if (z.attention_mask) {
    add.memory("attention_dropout.backward", z.scores() * (z.e + 1), z.scores() * z.e).attention_core = true;
  }
  add.memory("softmax.backward", 2 * z.scores() * z.e, z.scores() * z.e).attention_core = true;
  add.gemm("attention_scores.dgrad", z.s_q, z.d, z.s, z.act, 0, batch).attention_core = true;  // dQ = dS·K
  add.gemm("attention_scores.wgrad", z.s, z.d, z.s_q, z.act, 0, batch, true).attention_core = true;  // dK = dSᵀ·Q
}

std::vector<Op> layer_forward_ops(const Sizes& z, Pass pass, SavePolicy policy) {
  std::vector<Op> ops;
  ops.reserve(24);
  OpListBuilder add(ops, pass);
  const bool all = policy == SavePolicy::kAll || policy == SavePolicy::kSelective;
  const int64_t seq_hidden = z.hidden_tokens();
  // Inputs of column-parallel GEMMs: with sp the saved copy is the sequence-sharded one.
  const int64_t column_input = z.sp ? seq_hidden : z.full_hidden();
  const int64_t mask = z.seq_tokens * z.h;

  add.memory("input_norm", seq_hidden, seq_hidden, policy == SavePolicy::kNothing ? 0 : seq_hidden);
  if (z.sp) add.comm("attention.tp_all_gather", CommKind::kTpAllGather, z.full_hidden());
  add.gemm("qkv", z.tokens, z.q + 2 * z.kv, z.h, z.gemm, all ? column_input : 0);
  if (z.rope) add.memory("rope", z.tokens * (z.q + z.kv) * z.e, z.tokens * (z.q + z.kv) * z.e);
  if (z.cp) {
    add.comm("attention.cp_kv_exchange", CommKind::kCpKvExchange, 2 * z.tokens * z.kv * z.e, z.cp_size - 1);
  }
  attention_core_forward(add, z, policy);
  add.gemm("proj", z.tokens, z.h, z.q, z.gemm, all ? z.tokens * z.q * z.e : 0);
  if (z.tp) {
    add.comm(z.sp ? "attention.tp_reduce_scatter" : "attention.tp_all_reduce",
             z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
  }
  add.memory("attention_residual", 2 * seq_hidden, seq_hidden + (z.hidden_mask ? mask : 0),
             all && z.hidden_mask ? mask : 0);
  add.memory("post_attention_norm", seq_hidden, seq_hidden, all ? seq_hidden : 0);
  if (z.sp) add.comm("mlp.tp_all_gather", CommKind::kTpAllGather, z.full_hidden());
  add.gemm("fc1", z.tokens, z.fc1_out, z.h, z.gemm, all ? column_input : 0);
  add.memory("activation", z.tokens * z.fc1_out * z.e, z.tokens * z.ffn * z.e, all ? z.tokens * z.fc1_out * z.e : 0);
  add.gemm("fc2", z.tokens, z.h, z.ffn, z.gemm, all ? z.tokens * z.ffn * z.e : 0);
  if (z.tp) {
    add.comm(z.sp ? "mlp.tp_reduce_scatter" : "mlp.tp_all_reduce",
             z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
  }
  add.memory("mlp_residual", 2 * seq_hidden, seq_hidden + (z.hidden_mask ? mask : 0), all && z.hidden_mask ? mask : 0);
  return ops;
}

std::vector<Op> layer_backward_ops(const Sizes& z) {
  std::vector<Op> ops;
  ops.reserve(32);
  OpListBuilder add(ops, Pass::kBackward);
  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t mask = z.hidden_mask ? z.seq_tokens * z.h : 0;
  const int64_t qkv_out = z.q + 2 * z.kv;

  add.memory("mlp_residual.backward", seq_hidden + mask, seq_hidden);
  if (z.sp) add.comm("mlp.tp_all_gather.backward", CommKind::kTpAllGather, z.full_hidden());
  add.gemm("fc2.dgrad", z.tokens, z.ffn, z.h, z.gemm);
  add.gemm("fc2.wgrad", z.h, z.ffn, z.tokens, z.gemm, 0, 1, true);
  add.memory("activation.backward", z.tokens * (z.ffn + z.fc1_out) * z.e, z.tokens * z.fc1_out * z.e);
  add.gemm("fc1.dgrad", z.tokens, z.h, z.fc1_out, z.gemm);
  if (z.sp) add.comm("fc1.input_all_gather", CommKind::kTpAllGather, z.full_hidden());
  add.gemm("fc1.wgrad", z.fc1_out, z.h, z.tokens, z.gemm, 0, 1, true);
  if (z.tp) {
    add.comm(z.sp ? "mlp.tp_reduce_scatter.backward" : "mlp.tp_all_reduce.backward",
             z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
  }
  // Norm backward reads its input and output gradient and adds the residual branch's gradient.
  add.memory("post_attention_norm.backward", 3 * seq_hidden, seq_hidden);
  add.memory("attention_residual.backward", seq_hidden + mask, seq_hidden);
  if (z.sp) add.comm("attention.tp_all_gather.backward", CommKind::kTpAllGather, z.full_hidden());
  add.gemm("proj.dgrad", z.tokens, z.q, z.h, z.gemm);
  add.gemm("proj.wgrad", z.h, z.q, z.tokens, z.gemm, 0, 1, true);
  attention_core_backward(add, z);
  if (z.cp) {
    // K, V and their gradients travel the ring in backward.
    add.comm("attention.cp_kv_exchange.backward", CommKind::kCpKvExchange, 4 * z.tokens * z.kv * z.e, z.cp_size - 1);
  }
  if (z.rope) add.memory("rope.backward", z.tokens * (z.q + z.kv) * z.e, z.tokens * (z.q + z.kv) * z.e);
  add.gemm("qkv.dgrad", z.tokens, z.h, qkv_out, z.gemm);
  if (z.sp) add.comm("qkv.input_all_gather", CommKind::kTpAllGather, z.full_hidden());
  add.gemm("qkv.wgrad", qkv_out, z.h, z.tokens, z.gemm, 0, 1, true);
  if (z.tp) {
    add.comm(z.sp ? "attention.tp_reduce_scatter.backward" : "attention.tp_all_reduce.backward",
             z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
  }
  add.memory("input_norm.backward", 3 * seq_hidden, seq_hidden);
  return ops;
}

Bytes sum_saved(const std::vector<Op>& ops) {
  Bytes total;
  for (const Op& op : ops) total += op.saved;
  return total;
}

}  // namespace

Transformer::Transformer(ModelSpec model, TrainingSpec training, ShardSpec shard)
    : model_(std::move(model)), training_(std::move(training)), shard_(shard) {
  validate_sharding(model_, training_, shard_);
  dims_ = shard_model(model_, shard_);
  if (dims_.cp > 1 && training_.attention == AttentionKernel::kNaive) {
    throw InputError(fmt::format("parallelism.cp = {} needs training.attention: flash (context parallelism runs "
                                 "the fused attention kernel over ring steps)",
                                 dims_.cp));
  }
  parameters_ = count_parameters(model_, shard_);
  const Sizes z = sizes_of(model_, training_, dims_);
  tokens_ = z.tokens;

  if (training_.framework == Framework::kPytorchEager) {
    PytorchEagerOps ops = pytorch_eager_ops(model_, training_, dims_);
    layer_forward_ = std::move(ops.layer_forward);
    layer_recompute_ = std::move(ops.layer_recompute);
    layer_backward_ = std::move(ops.layer_backward);
    embedding_forward_ = std::move(ops.embedding_forward);
    embedding_backward_ = std::move(ops.embedding_backward);
    head_forward_ = std::move(ops.head_forward);
    head_backward_ = std::move(ops.head_backward);
    layer_activation_bytes_ = sum_saved(layer_forward_);
    embedding_activation_bytes_ = sum_saved(embedding_forward_);
    head_activation_bytes_ = sum_saved(head_forward_);
    return;
  }

  // Layer: forward with the recompute policy's savings; the recompute pass; backward.
  SavePolicy policy = SavePolicy::kAll;
  if (training_.recompute == Recompute::kFull) policy = SavePolicy::kInputOnly;
  if (training_.recompute == Recompute::kSelective && !z.flash) policy = SavePolicy::kSelective;
  layer_forward_ = layer_forward_ops(z, Pass::kForward, policy);
  if (training_.recompute == Recompute::kFull) {
    layer_recompute_ = layer_forward_ops(z, Pass::kRecompute, SavePolicy::kNothing);
  } else if (policy == SavePolicy::kSelective) {
    OpListBuilder add(layer_recompute_, Pass::kRecompute);
    attention_core_forward(add, z, SavePolicy::kNothing);
  }
  layer_backward_ = layer_backward_ops(z);
  layer_activation_bytes_ = sum_saved(layer_forward_);

  const int64_t seq_hidden = z.hidden_tokens();
  const int64_t mask = z.hidden_mask ? z.seq_tokens * z.h : 0;
  {
    // Vocabulary-parallel lookup: each rank gathers the rows of its vocabulary shard, then the
    // partial embeddings are summed over tp (reduce-scattered along the sequence with sp).
    OpListBuilder add(embedding_forward_, Pass::kForward);
    add.memory("embedding", z.tokens * (z.h * z.e + 8), z.full_hidden());
    if (z.tp) {
      add.comm(z.sp ? "embedding.tp_reduce_scatter" : "embedding.tp_all_reduce",
               z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
    }
    add.memory("embedding_dropout", (z.learned ? 2 : 1) * seq_hidden, seq_hidden + mask, mask);
    OpListBuilder back(embedding_backward_, Pass::kBackward);
    back.memory("embedding_dropout.backward", seq_hidden + mask, seq_hidden);
    if (z.sp) back.comm("embedding.tp_all_gather.backward", CommKind::kTpAllGather, z.full_hidden());
    // Dense gradient of the [vocab/tp, h] table, accumulated into the main gradient.
    const int64_t table = z.vocab * z.h;
    back.memory("embedding.backward", z.full_hidden() + table * training_.precision.grad_bytes(),
                table * (z.e + training_.precision.grad_bytes()));
    embedding_activation_bytes_ = sum_saved(embedding_forward_);
  }
  {
    OpListBuilder add(head_forward_, Pass::kForward);
    add.memory("final_norm", seq_hidden, seq_hidden, seq_hidden);
    if (z.sp) add.comm("head.tp_all_gather", CommKind::kTpAllGather, z.full_hidden());
    add.gemm("lm_head", z.tokens, z.vocab, z.h, z.act, z.sp ? seq_hidden : z.full_hidden());
    // Cast to fp32, max, exp, sum, log; saves the fp32 softmax (counted in logits_bytes()).
    const int64_t logits = z.tokens * z.vocab;
    add.memory("cross_entropy", logits * (z.e + 8), logits * 8);
    if (z.tp) {
      for (std::string_view name : {"cross_entropy.max_all_reduce", "cross_entropy.target_all_reduce",
                                    "cross_entropy.sum_all_reduce"}) {
        add.comm(name, CommKind::kTpAllReduce, z.tokens * 4);
      }
    }
    OpListBuilder back(head_backward_, Pass::kBackward);
    back.memory("cross_entropy.backward", logits * 8, logits * (4 + z.e));
    back.gemm("lm_head.dgrad", z.tokens, z.h, z.vocab, z.act);
    if (z.sp) back.comm("head.input_all_gather", CommKind::kTpAllGather, z.full_hidden());
    back.gemm("lm_head.wgrad", z.vocab, z.h, z.tokens, z.act, 0, 1, true);
    if (z.tp) {
      back.comm(z.sp ? "head.tp_reduce_scatter.backward" : "head.tp_all_reduce.backward",
                z.sp ? CommKind::kTpReduceScatter : CommKind::kTpAllReduce, z.full_hidden());
    }
    back.memory("final_norm.backward", 2 * seq_hidden, seq_hidden);
    head_activation_bytes_ = sum_saved(head_forward_);
  }
}

Bytes Transformer::logits_bytes() const { return Bytes::of(tokens_ * dims_.vocab_per_rank * 8); }

std::vector<Op> optimizer_step_ops(int64_t params, const TrainingSpec& training) {
  if (training.framework == Framework::kPytorchEager) return pytorch_eager_optimizer_ops(params);
  return optimizer_step_ops(params, training.precision, training.optimizer);
}

std::vector<Op> optimizer_step_ops(int64_t params, const PrecisionPolicy& precision, OptimizerKind optimizer) {
  if (params < 0) throw InputError(fmt::format("optimizer shard cannot hold a negative parameter count ({})", params));
  std::vector<Op> ops;
  OpListBuilder add(ops, Pass::kForward);
  const int64_t p = precision.param_bytes();
  const int64_t g = precision.grad_bytes();
  const int64_t states = optimizer_state_count(optimizer) * bytes_per_element(precision.optimizer_state_dtype);
  int64_t grad_read = g;
  if (precision.fp32_grad_copy) {
    add.memory("optimizer.grad_copy", checked_mul(params, g, "optimizer bytes"), checked_mul(params, 4, "optimizer bytes"));
    grad_read = 4;
  }
  add.memory("optimizer.grad_norm", checked_mul(params, grad_read, "optimizer bytes"), 0);
  const int64_t master = precision.master_weights ? 4 : 0;
  // With a master copy the 16-bit weights are only written; without one they are read and written.
  const int64_t read = grad_read + states + (master > 0 ? master : p);
  const int64_t written = states + p + master;
  add.memory("optimizer.step", checked_mul(params, read, "optimizer bytes"),
             checked_mul(params, written, "optimizer bytes"));
  return ops;
}

}  // namespace clustersim
