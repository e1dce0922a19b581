#include "workloads/shard_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/units.h"

namespace clustersim {

std::string_view name_of(MoeDispatcher dispatcher) {
  switch (dispatcher) {
    case MoeDispatcher::kAllToAll: return "alltoall";
    case MoeDispatcher::kAllGather: return "allgather";
    case MoeDispatcher::kDeepEp: return "deepep";
  }
  return "?";
}

std::string_view name_of(ContextParallelComm comm) { return comm == ContextParallelComm::kRing ? "p2p" : "a2a"; }

MoeDispatcher parse_moe_dispatcher(std::string_view text) {
  if (text == "alltoall") return MoeDispatcher::kAllToAll;
  if (text == "allgather") return MoeDispatcher::kAllGather;
  if (text == "deepep") return MoeDispatcher::kDeepEp;
  throw InputError(fmt::format("unknown parallelism.moe_dispatcher \"{}\" (valid: alltoall, allgather, deepep)", text))
      .about({"parallelism.moe_dispatcher"});
}

ContextParallelComm parse_context_parallel_comm(std::string_view text) {
  if (text == "p2p") return ContextParallelComm::kRing;
  if (text == "a2a") return ContextParallelComm::kAllToAll;
  throw InputError(
      fmt::format("unknown parallelism.cp_comm \"{}\" (valid: p2p = ring attention, a2a = Ulysses all-to-all)", text))
      .about({"parallelism.cp_comm"});
}

int64_t padded_vocab_size(int64_t vocab, int64_t divisible_by, int64_t tp) {
  if (vocab <= 0 || divisible_by <= 0 || tp <= 0) {
    throw InputError(fmt::format("vocabulary padding needs positive vocab ({}), make_vocab_size_divisible_by ({}) "
                                 "and tp ({})",
                                 vocab, divisible_by, tp));
  }
  const int64_t multiple = checked_mul(divisible_by, tp, "vocabulary padding multiple");
  return checked_mul((vocab + multiple - 1) / multiple, multiple, "padded vocabulary");
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

namespace {

void validate_expert_sharding(const ModelSpec& model, const ShardSpec& shard) {
  if (shard.ep <= 0 || shard.etp <= 0) {
    throw InputError(fmt::format("parallelism.ep = {} and etp = {} must be positive integers", shard.ep, shard.etp))
        .about({"parallelism.ep"});
  }
  if (!model.moe.enabled()) {
    if (shard.dispatcher != MoeDispatcher::kAllToAll) {
      throw InputError(fmt::format("parallelism.moe_dispatcher = {}: model \"{}\" has no experts; leave the key out "
                                   "(alltoall) for a dense model",
                                   name_of(shard.dispatcher), model.name))
          .about({"parallelism.moe_dispatcher"});
    }
    if (shard.ep > 1 || shard.etp > 1) {
      throw InputError(fmt::format("parallelism.ep = {}, etp = {}: model \"{}\" has no experts; use ep = 1 and etp = 1",
                                   shard.ep, shard.etp, model.name))
          .about({"parallelism.ep"});
    }
    return;
  }
  const MoeSpec& moe = model.moe;
  if (moe.num_experts % shard.ep != 0) {
    throw InputError(fmt::format("parallelism.ep = {}: {} experts do not split evenly; valid ep: {}", shard.ep,
                                 moe.num_experts, fmt::join(divisors(moe.num_experts), ", ")))
        .about({"parallelism.ep"});
  }
  if (moe.moe_ffn_hidden % shard.etp != 0) {
    throw InputError(fmt::format("parallelism.etp = {} does not divide model.moe.moe_ffn_hidden = {} (valid etp: {})",
                                 shard.etp, moe.moe_ffn_hidden, fmt::join(divisors(moe.moe_ffn_hidden), ", ")))
        .about({"parallelism.etp", "model.moe.moe_ffn_hidden"});
  }
  if (moe.shared_ffn() % shard.tp != 0) {
    throw InputError(fmt::format("parallelism.tp = {} does not divide the shared experts' intermediate size {}",
                                 shard.tp, moe.shared_ffn()))
        .about({"parallelism.tp"});
  }
  if (shard.tp > 1 && !shard.sequence_parallel) {
    // Megatron-Core's MoELayer raises "performance may degrade if MoE and tensor parallelism are
    // enabled without also enabling sequence parallelism" (megatron/core/transformer/moe/moe_layer.py).
    throw InputError(fmt::format("parallelism.tp = {} with mixture-of-experts layers needs "
                                 "parallelism.sequence_parallel: true (Megatron-Core requires it for MoE with tensor "
                                 "parallelism)",
                                 shard.tp))
        .about({"parallelism.tp", "parallelism.sequence_parallel"});
  }
}

}  // namespace

ShardedDims shard_model(const ModelSpec& model, const ShardSpec& shard) {
  model.validate();
  if (shard.tp <= 0)
    throw InputError(fmt::format("parallelism.tp must be a positive integer (got {})", shard.tp))
        .about({"parallelism.tp"});
  if (shard.cp <= 0)
    throw InputError(fmt::format("parallelism.cp must be a positive integer (got {})", shard.cp))
        .about({"parallelism.cp"});
  const int64_t tp = shard.tp;
  const int64_t heads = model.heads;
  const int64_t kv = model.kv_head_count();
  if (heads % tp != 0) {
    throw InputError(fmt::format("parallelism.tp = {} does not divide model.heads = {} (valid tp for {} heads: {})", tp,
                                 heads, heads, fmt::join(divisors(heads), ", ")))
        .about({"parallelism.tp", "model.heads"});
  }
  if (kv % tp != 0 && tp % kv != 0) {
    std::vector<int64_t> valid;
    for (int64_t t : divisors(heads)) {
      if (kv % t == 0 || t % kv == 0) valid.push_back(t);
    }
    throw InputError(
        fmt::format(
            "parallelism.tp = {} and model.kv_heads = {} do not nest: each rank must hold whole KV heads, so tp must "
            "divide kv_heads or be a multiple of it (each KV head then replicated tp/kv_heads times); valid tp: {}",
            tp, kv, fmt::join(valid, ", ")))
        .about({"parallelism.tp", "model.kv_heads"});
  }
  if (model.dense_layer_count() > 0 && model.ffn_hidden % tp != 0) {
    std::vector<int64_t> valid;
    for (int64_t t : divisors(heads)) {
      if (model.ffn_hidden % t == 0 && (kv % t == 0 || t % kv == 0)) valid.push_back(t);
    }
    throw InputError(fmt::format("parallelism.tp = {} does not divide model.ffn_hidden = {} (valid tp: {})", tp,
                                 model.ffn_hidden, fmt::join(valid, ", ")))
        .about({"parallelism.tp", "model.ffn_hidden"});
  }
  validate_expert_sharding(model, shard);
  if (shard.cp_comm == ContextParallelComm::kAllToAll && shard.cp > 1) {
    const int64_t q = heads / tp;
    const int64_t k = kv >= tp ? kv / tp : 1;
    if (q % shard.cp != 0 || k % shard.cp != 0) {
      throw InputError(
          fmt::format(
              "parallelism.cp = {} with cp_comm a2a (Ulysses) scatters attention heads over the context-parallel "
              "ranks, "
              "but a tensor-parallel rank holds {} query and {} KV heads; cp must divide both (or use cp_comm p2p)",
              shard.cp, q, k))
          .about({"parallelism.cp"});
    }
  }
  ShardedDims d;
  d.tp = tp;
  d.cp = shard.cp;
  d.ep = shard.ep;
  d.etp = shard.etp;
  d.dispatcher = shard.dispatcher;
  d.ep_ranks_per_node = shard.ep_ranks_per_node;
  d.gpu_sm_count = shard.gpu_sm_count;
  d.cp_comm = shard.cp_comm;
  d.sequence_parallel = shard.sequence_parallel && tp > 1;
  d.head_dim = model.v_head_size();
  d.qk_head_dim = model.qk_head_size();
  d.heads_per_rank = heads / tp;
  d.kv_heads_per_rank = kv >= tp ? kv / tp : 1;
  d.kv_replication = kv >= tp ? 1 : tp / kv;
  d.ffn_per_rank = model.ffn_hidden / tp;
  d.padded_vocab = padded_vocab_size(model.vocab, model.make_vocab_size_divisible_by, tp);
  d.vocab_per_rank = d.padded_vocab / tp;
  if (model.moe.enabled()) {
    d.experts_per_rank = model.moe.num_experts / shard.ep;
    d.expert_ffn_per_rank = model.moe.moe_ffn_hidden / shard.etp;
    d.shared_ffn_per_rank = model.moe.shared_ffn() / tp;
  }
  return d;
}

void validate_sharding(const ModelSpec& model, const TrainingSpec& training, const ShardSpec& shard) {
  const ShardedDims d = shard_model(model, shard);
  training.validate(model);
  if (d.cp > 1 && training.seq_len % (2 * d.cp) != 0) {
    const int64_t chunk = 2 * d.cp;
    throw InputError(
        fmt::format("training.seq_len = {} cannot be cut into 2·cp = {} equal chunks for load-balanced causal context "
                    "parallelism (parallelism.cp = {}); use seq_len {} or {}",
                    training.seq_len, chunk, d.cp, training.seq_len / chunk * chunk,
                    (training.seq_len / chunk + 1) * chunk))
        .about({"training.seq_len", "parallelism.cp"});
  }
  if (d.cp > 1 && model.sliding_window > 0) {
    throw InputError(fmt::format("parallelism.cp = {} with model.sliding_window = {} is not modelled (context "
                                 "parallelism's attention would skip the key blocks outside each window); use cp: 1",
                                 d.cp, model.sliding_window))
        .about({"parallelism.cp", "model.sliding_window"});
  }
  if (d.cp > 1 && training.attention == AttentionKernel::kNaive) {
    throw InputError(fmt::format("parallelism.cp = {} needs training.attention: flash (context parallelism runs "
                                 "the fused attention kernel over ring steps)",
                                 d.cp))
        .about({"parallelism.cp", "training.attention"});
  }
  if (d.cp > 1 && training.flash_kernel == FusedAttentionKernel::kSdpaFlash) {
    throw InputError(fmt::format("parallelism.cp = {} needs training.flash_kernel: cudnn (the ring's attention steps "
                                 "are priced by their FLOPs; sdpa-flash prices whole calls by shape)",
                                 d.cp))
        .about({"parallelism.cp", "training.flash_kernel"});
  }
  const int64_t local_seq = training.seq_len / d.cp;
  if (d.sequence_parallel && local_seq % d.tp != 0) {
    throw InputError(fmt::format("sequence parallelism splits the sequence over parallelism.tp = {} ranks, but "
                                 "training.seq_len / cp = {} is not a multiple of {}",
                                 d.tp, local_seq, d.tp))
        .about({"parallelism.tp", "training.seq_len"});
  }
}

}  // namespace clustersim
