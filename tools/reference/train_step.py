#!/usr/bin/env python3
"""Reference training step of a GPT/Llama-style decoder, measured on real GPUs.

clustersim predicts step time and peak memory; this script measures them for the same model so
that `clustersim validate` can compare. It prints one JSON line per configuration (README.md in
this folder lists the fields and exactly what each measures).

The step: AMP (torch.autocast, bf16) with fp32 master weights (the parameters themselves are fp32),
random tokens, cross-entropy over the vocabulary, backward, fused AdamW
(torch.optim.AdamW(fused=True)), zero_grad(set_to_none=True). Attention is
F.scaled_dot_product_attention(is_causal=True) restricted to the flash backend on CUDA. Optional
full recompute checkpoints every layer (torch.utils.checkpoint, non-reentrant).

Parallel variants under torchrun (one process per GPU):
  none  one GPU (also the only variant on a single GPU)
  ddp   torch.nn.parallel.DistributedDataParallel, one micro-batch per rank
  tp    tensor parallel as Megatron-LM (Shoeybi et al. 2019, section 3): column-parallel QKV and
        first MLP projection, row-parallel attention output and second MLP projection, an
        all-reduce after each row-parallel layer in forward and before each column-parallel layer
        in backward; embeddings, norms and the LM head are replicated (Megatron splits the
        vocabulary; this simplification costs memory, see README.md)
  pp    pipeline parallel, GPipe schedule (Huang et al. 2019): layers split into contiguous
        stages, all forward micro-batches then all backward ones, activations and their
        gradients passed with batched torch.distributed isend/irecv (as Megatron-LM does)

Usage:
  python3 train_step.py --configs configs.json [--only NAME,...] [--steps N] [--warmup N]
  python3 train_step.py --name x --layers 2 --hidden 256 --heads 4 --ffn-hidden 1024 --vocab 1000
  torchrun --nproc_per_node 8 train_step.py --configs configs.json --parallel tp
  python3 train_step.py --configs configs.json --plan      # parameter and memory arithmetic only
Exit codes: 0 ok, 2 bad input, 1 failure.
"""

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass
from typing import List, Optional

GIB = 1024 ** 3
# --verify passes when the parallel model's loss and embedding gradient match the one-GPU model's
# to this relative error (fp32 arithmetic summed in a different order: ~1e-6 expected).
VERIFY_TOLERANCE = 1e-4


class ConfigError(ValueError):
    """Bad input: names the key, the value and what is valid (exit code 2)."""


@dataclass
class ModelConfig:
    """One reference configuration. Keys of configs.json entries and of the command line."""

    name: str
    layers: int
    hidden: int
    heads: int
    ffn_hidden: int
    vocab: int
    seq_len: int
    micro_batch: int = 1
    kv_heads: Optional[int] = None  # None: = heads (MHA); fewer: grouped-query attention
    mlp: str = "gelu"  # gelu (2 matrices) | swiglu (3 matrices, gate and up fused)
    norm: str = "layernorm"  # layernorm | rmsnorm
    positions: str = "learned"  # learned (embedding table) | rope (rotary, no parameters)
    bias: bool = True  # biases in linear layers and LayerNorm
    tie_embeddings: bool = True  # LM head shares the input embedding
    recompute: bool = False  # full recompute: checkpoint every layer
    parallel: str = "none"  # none | ddp | tp | pp
    microbatches: int = 1  # micro-batches per step (pp only; others must be 1)
    notes: str = ""

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv(self) -> int:
        return self.kv_heads if self.kv_heads is not None else self.heads


CHOICES = {
    "mlp": ("gelu", "swiglu"),
    "norm": ("layernorm", "rmsnorm"),
    "positions": ("learned", "rope"),
    "parallel": ("none", "ddp", "tp", "pp"),
}


def make_config(raw: dict, where: str) -> ModelConfig:
    """Builds a ModelConfig from a dict, rejecting unknown keys and invalid values."""
    fields = {f.name: f for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; valid keys: {sorted(fields)}")
    missing = [n for n, f in fields.items()
               if f.default is dataclasses.MISSING and n not in raw]
    if missing:
        raise ConfigError(f"{where}: missing key(s) {missing}")
    cfg = ModelConfig(**raw)
    validate(cfg, where)
    return cfg


def validate(cfg: ModelConfig, where: str) -> None:
    def positive_int(key):
        v = getattr(cfg, key)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ConfigError(f"{where}: {key} = {v!r} must be a positive integer")

    for key in ("layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_len", "micro_batch",
                "microbatches"):
        positive_int(key)
    if cfg.kv_heads is not None:
        positive_int("kv_heads")
    for key, valid in CHOICES.items():
        if getattr(cfg, key) not in valid:
            raise ConfigError(f"{where}: {key} = {getattr(cfg, key)!r}; valid: {', '.join(valid)}")
    for key in ("bias", "tie_embeddings", "recompute"):
        if not isinstance(getattr(cfg, key), bool):
            raise ConfigError(f"{where}: {key} = {getattr(cfg, key)!r} must be true or false")
    if cfg.hidden % cfg.heads != 0:
        raise ConfigError(f"{where}: hidden {cfg.hidden} must be a multiple of heads {cfg.heads}")
    if cfg.heads % cfg.kv != 0:
        raise ConfigError(f"{where}: heads {cfg.heads} must be a multiple of kv_heads {cfg.kv}")
    if cfg.positions == "rope" and cfg.head_dim % 2 != 0:
        raise ConfigError(f"{where}: rope needs an even head dimension, got {cfg.head_dim}")
    if cfg.parallel != "pp" and cfg.microbatches != 1:
        raise ConfigError(f"{where}: microbatches = {cfg.microbatches} needs parallel = pp "
                          "(other variants run one micro-batch per step)")


# ---------------------------------------------------------------------------------------------
# Arithmetic that needs no GPU: parameter counts and a memory estimate (used by --plan and by
# README.md's fit check).

def parameter_count(cfg: ModelConfig) -> dict:
    """Exact parameter count of the model this script builds (no tensor parallelism)."""
    h, f, v, hd = cfg.hidden, cfg.ffn_hidden, cfg.vocab, cfg.head_dim
    qkv_out = (cfg.heads + 2 * cfg.kv) * hd
    b = 1 if cfg.bias else 0
    attn = h * qkv_out + b * qkv_out + h * h + b * h
    mlp_in = 2 * f if cfg.mlp == "swiglu" else f
    mlp = h * mlp_in + b * mlp_in + f * h + b * h
    norm = h * (2 if (cfg.norm == "layernorm" and cfg.bias) else 1)
    per_layer = attn + mlp + 2 * norm
    embedding = v * h + (cfg.seq_len * h if cfg.positions == "learned" else 0)
    head = 0 if cfg.tie_embeddings else v * h
    total = embedding + cfg.layers * per_layer + norm + head
    return {"total": total, "per_layer": per_layer, "embedding": embedding, "head": head,
            "non_embedding": total - embedding - head}


def memory_estimate(cfg: ModelConfig) -> dict:
    """Rough single-GPU peak memory in bytes, to check that a configuration fits.

    Static: fp32 weights 4 + fp32 gradients 4 + AdamW moments 8 = 16 B per parameter.
    Activations (bf16, flash attention so no s² term; Korthikanti et al. 2022 eq. 1 without the
    attention-score terms: 34·s·b·h bytes per layer with a 4h MLP; scaled by the MLP width),
    or with full recompute 2·s·b·h per layer (the checkpointed layer input) plus one layer's
    activations during its recomputation. Logits: bf16 logits, their fp32 copy for the loss and its
    fp32 gradient, 10 bytes per element of [b, s, V]. The autocast cache of bf16 weight copies
    (2 B per parameter, forward only) is not added: gradients do not exist yet during the forward.
    """
    n = parameter_count(cfg)["total"]
    s, b, h, v = cfg.seq_len, cfg.micro_batch, cfg.hidden, cfg.vocab
    mlp_scale = (cfg.ffn_hidden * (3 if cfg.mlp == "swiglu" else 2)) / (8 * h)
    per_layer = s * b * h * (18 + 16 * mlp_scale)  # 34·s·b·h at a 4h two-matrix MLP
    if cfg.recompute:
        activations = cfg.layers * 2 * s * b * h + per_layer
    else:
        activations = cfg.layers * per_layer
    logits = 10 * s * b * v
    static = 16 * n
    return {"static": static, "activations": int(activations), "logits": logits,
            "total": int(static + activations + logits)}


def plan(configs: List[ModelConfig]) -> None:
    for cfg in configs:
        p = parameter_count(cfg)
        m = memory_estimate(cfg)
        print(json.dumps({"name": cfg.name, "params": p["total"], "params_b": round(p["total"] / 1e9, 3),
                          "static_gib": round(m["static"] / GIB, 1),
                          "activations_gib": round(m["activations"] / GIB, 1),
                          "logits_gib": round(m["logits"] / GIB, 1),
                          "estimate_gib": round(m["total"] / GIB, 1)}))


# ---------------------------------------------------------------------------------------------
# The model (imports torch lazily so that --plan runs without it).

def build_model_classes(torch):
    import torch.utils.checkpoint  # noqa: F401  (a submodule: not loaded by `import torch`)
    nn = torch.nn
    F = torch.nn.functional
    dist = torch.distributed

    def all_reduce_sum_(t, group):
        """In-place sum over the group. gloo (CPU test runs) has no bf16 sum: reduce an fp32 copy."""
        if t.dtype == torch.bfloat16 and dist.get_backend(group) == "gloo":
            wide = t.float()
            dist.all_reduce(wide, group=group)
            t.copy_(wide)
        else:
            dist.all_reduce(t, group=group)
        return t

    class _CopyToTensorParallel(torch.autograd.Function):
        """Identity forward, all-reduce of the gradient backward (Megatron's f)."""

        @staticmethod
        def forward(ctx, x, group):
            ctx.group = group
            return x

        @staticmethod
        def backward(ctx, grad):
            return all_reduce_sum_(grad.contiguous(), ctx.group), None

    class _ReduceFromTensorParallel(torch.autograd.Function):
        """All-reduce forward, identity backward (Megatron's g)."""

        @staticmethod
        def forward(ctx, x, group):
            return all_reduce_sum_(x.contiguous(), group)

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    class ColumnParallelLinear(nn.Module):
        """y = x·Wᵀ + b with W split by output rows over the tensor-parallel group."""

        def __init__(self, d_in, d_out, bias, tp_size, tp_group):
            super().__init__()
            assert d_out % tp_size == 0
            self.linear = nn.Linear(d_in, d_out // tp_size, bias=bias)
            self.tp_group = tp_group

        def forward(self, x):
            if self.tp_group is not None:
                x = _CopyToTensorParallel.apply(x, self.tp_group)
            return self.linear(x)

    class RowParallelLinear(nn.Module):
        """y = Σ_ranks x_r·W_rᵀ + b with W split by input columns; the bias is added once."""

        def __init__(self, d_in, d_out, bias, tp_size, tp_group):
            super().__init__()
            assert d_in % tp_size == 0
            self.linear = nn.Linear(d_in // tp_size, d_out, bias=False)
            self.bias = nn.Parameter(torch.zeros(d_out)) if bias else None
            self.tp_group = tp_group

        def forward(self, x):
            y = self.linear(x)
            if self.tp_group is not None:
                y = _ReduceFromTensorParallel.apply(y, self.tp_group)
            return y + self.bias if self.bias is not None else y

    class RMSNorm(nn.Module):
        """x / sqrt(mean(x²) + eps) · weight (Zhang & Sennrich 2019), for torch without nn.RMSNorm."""

        def __init__(self, dim, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            x32 = x.float()
            return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)) * self.weight

    class Fp32Norm(nn.Module):
        """The normalisation in fp32 on an fp32 copy of its input, as CUDA autocast runs
        layer_norm; explicit so that RMSNorm and CPU runs behave the same. Output fp32."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x.float())

    def make_norm(cfg):
        if cfg.norm == "layernorm":
            try:
                inner = nn.LayerNorm(cfg.hidden, bias=cfg.bias)
            except TypeError:  # torch before 2.1: LayerNorm always has a bias
                inner = nn.LayerNorm(cfg.hidden)
        else:
            inner = nn.RMSNorm(cfg.hidden) if hasattr(nn, "RMSNorm") else RMSNorm(cfg.hidden)
        return Fp32Norm(inner)

    def rotary_tables(cfg, device):
        """cos/sin [seq_len, head_dim/2] of RoPE (Su et al. 2021), base 10000."""
        half = cfg.head_dim // 2
        inv_freq = 1.0 / (10000 ** (torch.arange(0, half, device=device, dtype=torch.float32) / half))
        angles = torch.outer(torch.arange(cfg.seq_len, device=device, dtype=torch.float32), inv_freq)
        return angles.cos(), angles.sin()

    def apply_rotary(x, cos, sin):
        """Rotates pairs (x[..., i], x[..., i + d/2]) by the position's angle; x [b, heads, s, d]."""
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        cos = cos.to(x.dtype)
        sin = sin.to(x.dtype)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def causal_attention(q, k, v, gqa_native):
        """Causal attention of q [b, heads, s, d] over k, v [b, kv_heads, s, d].

        F.scaled_dot_product_attention(is_causal=True); grouped-query attention through its
        enable_gqa where the backend takes it, else with k and v repeated per query head. Torch
        before 2.0 has no SDPA: there (CPU logic tests only) the explicit softmax(QKᵀ/√d + mask)·V.
        """
        if k.shape[1] != q.shape[1] and not gqa_native:
            repeat = q.shape[1] // k.shape[1]
            k = k.repeat_interleave(repeat, dim=1)
            v = v.repeat_interleave(repeat, dim=1)
        if hasattr(F, "scaled_dot_product_attention"):
            if k.shape[1] != q.shape[1]:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        s = q.shape[-2]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        future = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        return scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v

    class Attention(nn.Module):
        def __init__(self, cfg, tp_size, tp_group, gqa_native):
            super().__init__()
            self.cfg = cfg
            self.local_heads = cfg.heads // tp_size
            self.local_kv = cfg.kv // tp_size
            hd = cfg.head_dim
            self.qkv = ColumnParallelLinear(cfg.hidden, (cfg.heads + 2 * cfg.kv) * hd, cfg.bias, tp_size, tp_group)
            self.proj = RowParallelLinear(cfg.heads * hd, cfg.hidden, cfg.bias, tp_size, tp_group)
            self.gqa_native = gqa_native

        def forward(self, x, rotary):
            b, s, _ = x.shape
            hd = self.cfg.head_dim
            qkv = self.qkv(x)  # [b, s, (heads + 2·kv)·hd / tp]
            q, k, v = qkv.split([self.local_heads * hd, self.local_kv * hd, self.local_kv * hd], dim=-1)
            q = q.view(b, s, self.local_heads, hd).transpose(1, 2)  # [b, heads, s, hd]
            k = k.view(b, s, self.local_kv, hd).transpose(1, 2)
            v = v.view(b, s, self.local_kv, hd).transpose(1, 2)
            if rotary is not None:
                q = apply_rotary(q, *rotary)
                k = apply_rotary(k, *rotary)
            out = causal_attention(q, k, v, self.gqa_native)
            out = out.transpose(1, 2).reshape(b, s, self.local_heads * hd)
            return self.proj(out)

    class Mlp(nn.Module):
        def __init__(self, cfg, tp_size, tp_group):
            super().__init__()
            self.swiglu = cfg.mlp == "swiglu"
            width = 2 * cfg.ffn_hidden if self.swiglu else cfg.ffn_hidden
            self.fc1 = ColumnParallelLinear(cfg.hidden, width, cfg.bias, tp_size, tp_group)
            self.fc2 = RowParallelLinear(cfg.ffn_hidden, cfg.hidden, cfg.bias, tp_size, tp_group)

        def forward(self, x):
            y = self.fc1(x)
            if self.swiglu:
                gate, up = y.chunk(2, dim=-1)  # each shard holds its own gate and up halves
                y = F.silu(gate) * up
            else:
                y = F.gelu(y, approximate="tanh")
            return self.fc2(y)

    class Block(nn.Module):
        """Pre-norm decoder layer: x + attn(norm(x)), then x + mlp(norm(x))."""

        def __init__(self, cfg, tp_size, tp_group, gqa_native):
            super().__init__()
            self.norm1 = make_norm(cfg)
            self.attn = Attention(cfg, tp_size, tp_group, gqa_native)
            self.norm2 = make_norm(cfg)
            self.mlp = Mlp(cfg, tp_size, tp_group)

        def forward(self, x, rotary):
            x = x + self.attn(self.norm1(x), rotary)
            return x + self.mlp(self.norm2(x))

    class DecoderStage(nn.Module):
        """Layers [first_layer, last_layer) of the decoder; the first stage embeds tokens, the last
        computes the loss. A single stage is the whole model."""

        def __init__(self, cfg, first_layer, last_layer, is_first, is_last, tp_size, tp_group, gqa_native,
                     compute_dtype):
            super().__init__()
            self.cfg = cfg
            self.is_first = is_first
            self.is_last = is_last
            self.compute_dtype = compute_dtype
            if is_first:
                self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
                self.pos = nn.Embedding(cfg.seq_len, cfg.hidden) if cfg.positions == "learned" else None
            self.layers = nn.ModuleList(Block(cfg, tp_size, tp_group, gqa_native)
                                        for _ in range(first_layer, last_layer))
            if is_last:
                self.final_norm = make_norm(cfg)
                tied = cfg.tie_embeddings and is_first
                self.head = None if tied else nn.Linear(cfg.hidden, cfg.vocab, bias=False)
            self.rotary_cache = None
            self.apply(self._init_weights)

        @staticmethod
        def _init_weights(module):
            """Normal(0, 0.02) weights and zero biases (GPT-2; Megatron-LM's init_method_normal)."""
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, RowParallelLinear) and module.bias is not None:
                nn.init.zeros_(module.bias)

        def rotary(self, device):
            if self.cfg.positions != "rope":
                return None
            if self.rotary_cache is None:
                self.rotary_cache = rotary_tables(self.cfg, device)
            return self.rotary_cache

        def forward(self, x, targets=None):
            """x: tokens [b, s] (int64) on the first stage, else activations [b, s, h].
            Returns the mean cross-entropy on the last stage, else activations [b, s, h]."""
            if self.is_first:
                tokens = x
                x = self.embed(tokens)
                if self.pos is not None:
                    x = x + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
                # The residual stream in the compute type, as Megatron-LM keeps it (bf16).
                x = x.to(self.compute_dtype)
            rotary = self.rotary(x.device)
            for layer in self.layers:
                if self.cfg.recompute:
                    x = torch.utils.checkpoint.checkpoint(layer, x, rotary, use_reentrant=False)
                else:
                    x = layer(x, rotary)
            if not self.is_last:
                return x
            x = self.final_norm(x)
            weight = self.embed.weight if self.head is None else self.head.weight
            logits = F.linear(x, weight)  # [b, s, V] in bf16 under autocast
            # cross_entropy runs in fp32 under autocast (its autocast policy).
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))

    return DecoderStage


# ---------------------------------------------------------------------------------------------
# Running a configuration.

class Runtime:
    """Process-wide setup: device, distributed group, capabilities of the installed torch."""

    def __init__(self, torch, device_kind: str):
        self.torch = torch
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if device_kind == "cuda" and not torch.cuda.is_available():
            raise ConfigError("--device cuda: no CUDA device is visible to torch")
        if device_kind == "cuda":
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cpu")
        if self.world > 1:
            backend = "nccl" if device_kind == "cuda" else "gloo"
            kwargs = {"device_id": self.device} if device_kind == "cuda" else {}
            try:
                torch.distributed.init_process_group(backend=backend, **kwargs)
            except TypeError:
                torch.distributed.init_process_group(backend=backend)
        self.gqa_native = self._probe_gqa()

    def _probe_gqa(self) -> bool:
        """Whether SDPA takes enable_gqa on the backend used here (flash on CUDA)."""
        torch = self.torch
        q = torch.randn(1, 4, 16, 64, device=self.device, dtype=self.compute_dtype)
        k = torch.randn(1, 2, 16, 64, device=self.device, dtype=self.compute_dtype)
        try:
            with self.attention_backend():
                torch.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
            return True
        except (TypeError, RuntimeError, AttributeError):
            return False

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def compute_dtype(self):
        return self.torch.bfloat16

    def attention_backend(self):
        """Flash attention only, on CUDA (an error rather than a silent fallback to the math
        kernel, whose memory grows with s²); the default choice elsewhere."""
        import contextlib
        if self.is_cuda:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            return sdpa_kernel([SDPBackend.FLASH_ATTENTION])
        return contextlib.nullcontext()

    def autocast(self):
        return self.torch.autocast(device_type=self.device.type, dtype=self.compute_dtype)


class PhaseTimer:
    """CUDA events at phase boundaries (host clock on CPU). Events measure the device timeline;
    nothing synchronises between steps, as in a training loop."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self.marks = []  # per step: list of (phase name, event)

    def mark(self, name):
        torch = self.rt.torch
        if self.rt.is_cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
        else:
            import time
            ev = time.perf_counter()
        self.marks.append((name, ev))

    def elapsed_ms(self, a, b) -> float:
        if self.rt.is_cuda:
            return a.elapsed_time(b)
        return (b - a) * 1e3


def make_stage_model(cfg: ModelConfig, rt: Runtime, DecoderStage, compute_dtype=None):
    """The part of the model this rank holds, on the device, fp32 parameters; the residual stream
    in `compute_dtype` (default bf16)."""
    compute_dtype = compute_dtype or rt.compute_dtype
    torch = rt.torch
    tp_size, tp_group = 1, None
    first, last = 0, cfg.layers
    is_first = is_last = True
    if cfg.parallel == "tp":
        tp_size, tp_group = rt.world, torch.distributed.group.WORLD
        if cfg.heads % tp_size or cfg.kv % tp_size or cfg.ffn_hidden % tp_size:
            raise ConfigError(f"{cfg.name}: tensor parallel {tp_size} must divide heads {cfg.heads}, "
                              f"kv_heads {cfg.kv} and ffn_hidden {cfg.ffn_hidden}")
    if cfg.parallel == "pp":
        if cfg.layers < rt.world:
            raise ConfigError(f"{cfg.name}: pipeline of {rt.world} stages needs layers >= stages, got {cfg.layers}")
        # Contiguous stages; the first `layers mod stages` stages get one layer more.
        per, extra = divmod(cfg.layers, rt.world)
        first = rt.rank * per + min(rt.rank, extra)
        last = first + per + (1 if rt.rank < extra else 0)
        is_first, is_last = rt.rank == 0, rt.rank == rt.world - 1
    # Same seed on every rank: replicated parameters (embeddings, norms, head) start identical.
    torch.manual_seed(1234)
    if rt.is_cuda and hasattr(torch, "device") and hasattr(torch.device("cpu"), "__enter__"):
        with rt.device:  # parameters are created and initialised on the GPU directly
            model = DecoderStage(cfg, first, last, is_first, is_last, tp_size, tp_group, rt.gqa_native,
                                 compute_dtype)
    else:
        model = DecoderStage(cfg, first, last, is_first, is_last, tp_size, tp_group, rt.gqa_native,
                             compute_dtype).to(rt.device)
    model.tied_group = None
    if cfg.parallel == "pp" and cfg.tie_embeddings:
        # Tied input embedding and LM head on different stages (Megatron-LM's approach): the last
        # stage holds a copy, made equal at start and kept equal by summing the two gradients.
        group = torch.distributed.new_group([0, rt.world - 1])
        if is_first or is_last:
            weight = model.embed.weight if is_first else model.head.weight
            with torch.no_grad():
                torch.distributed.broadcast(weight, src=0, group=group)
            model.tied_group = group
    return model, {"first_layer": first, "last_layer": last}


def run_config(cfg: ModelConfig, rt: Runtime, steps: int, warmup: int, DecoderStage) -> dict:
    torch = rt.torch
    dist = torch.distributed
    if cfg.parallel != "none" and rt.world < 2:
        raise ConfigError(f"{cfg.name}: parallel = {cfg.parallel} needs torchrun with 2 or more processes")
    if cfg.parallel == "none" and rt.world > 1:
        raise ConfigError(f"{cfg.name}: parallel = none under torchrun with {rt.world} processes; "
                          "use --parallel ddp|tp|pp")
    if rt.is_cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    model, span = make_stage_model(cfg, rt, DecoderStage)
    local_params = sum(p.numel() for p in model.parameters())
    train_model = model
    if cfg.parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        train_model = DistributedDataParallel(model, device_ids=[rt.local_rank] if rt.is_cuda else None)
    # Fused AdamW on CUDA (one multi-tensor kernel per step); the plain one elsewhere.
    fused = {"fused": True} if rt.is_cuda else {}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, **fused)

    # Random tokens, made before timing. DDP ranks draw different data; TP ranks the same.
    generator = torch.Generator(device=rt.device)
    generator.manual_seed(4321 + (rt.rank if cfg.parallel == "ddp" else 0))
    total_steps = warmup + steps
    batches = [torch.randint(0, cfg.vocab, (cfg.microbatches, cfg.micro_batch, cfg.seq_len + 1),
                             device=rt.device, generator=generator) for _ in range(total_steps)]

    timer = PhaseTimer(rt)
    losses = []
    peak_after_warmup = None
    with rt.attention_backend():
        for step in range(total_steps):
            if step == warmup:
                if rt.is_cuda:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                timer.marks.clear()
            tokens = batches[step]
            timer.mark("start")
            if cfg.parallel == "pp":
                loss = pipeline_step(cfg, rt, model, tokens, timer)
            else:
                with rt.autocast():
                    loss = train_model(tokens[0, :, :-1], tokens[0, :, 1:])
                timer.mark("forward_end")
                loss.backward()
                timer.mark("backward_end")
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            timer.mark("optimizer_end")
            losses.append(loss)
        timer.mark("start")  # the start of a next step closes the last step's period
        if rt.is_cuda:
            torch.cuda.synchronize()
            peak_after_warmup = torch.cuda.max_memory_allocated()
            reserved = torch.cuda.max_memory_reserved()

    # Per step: period (start → next start), busy (start → optimizer end) and phases.
    starts = [i for i, (n, _) in enumerate(timer.marks) if n == "start"]
    period, busy, fwd, bwd, opt = [], [], [], [], []
    for a, b in zip(starts, starts[1:]):
        marks = dict(timer.marks[a:b])
        t0 = timer.marks[a][1]
        period.append(timer.elapsed_ms(t0, timer.marks[b][1]))
        busy.append(timer.elapsed_ms(t0, marks["optimizer_end"]))
        fwd.append(timer.elapsed_ms(t0, marks["forward_end"]))
        bwd.append(timer.elapsed_ms(marks["forward_end"], marks["backward_end"]))
        opt.append(timer.elapsed_ms(marks["backward_end"], marks["optimizer_end"]))
    med = {k: statistics.median(v) for k, v in
           (("step", period), ("busy", busy), ("forward", fwd), ("backward", bwd), ("optimizer", opt))}
    last_loss = float(losses[-1].detach().float().item()) if losses[-1] is not None else 0.0
    if cfg.parallel == "pp":  # the loss exists on the last stage only
        t = torch.tensor([last_loss], dtype=torch.float64, device=rt.device)
        dist.broadcast(t, src=rt.world - 1)
        last_loss = float(t.item())

    result = {
        "name": cfg.name,
        "config": dataclasses.asdict(cfg),
        "params": parameter_count(cfg)["total"],
        "params_local": local_params,
        "world_size": rt.world,
        "stage_layers": [span["first_layer"], span["last_layer"]] if cfg.parallel == "pp" else None,
        "device": torch.cuda.get_device_name(rt.device) if rt.is_cuda else "cpu",
        "torch": torch.__version__,
        "gqa": ("native" if rt.gqa_native else "expanded") if cfg.kv != cfg.heads else "mha",
        "attention": "sdpa-flash" if rt.is_cuda else "sdpa-default",
        "warmup_steps": warmup,
        "timed_steps": steps,
        "step_time_ms": round(med["step"], 3),
        "step_busy_ms": round(med["busy"], 3),
        "forward_ms": round(med["forward"], 3),
        "backward_ms": round(med["backward"], 3),
        "optimizer_ms": round(med["optimizer"], 3),
        "step_times_ms": [round(x, 3) for x in period],
        "peak_allocated_bytes": peak_after_warmup,
        "peak_allocated_gib": round(peak_after_warmup / GIB, 3) if peak_after_warmup else None,
        "peak_reserved_bytes": reserved if rt.is_cuda else None,
        "loss": last_loss,
    }
    tokens_per_step = cfg.micro_batch * cfg.seq_len * cfg.microbatches * (rt.world if cfg.parallel == "ddp" else 1)
    result["tokens_per_step"] = tokens_per_step
    if rt.world > 1:
        # The slowest rank sets the pace; memory is reported per rank.
        t = torch.tensor([med["step"]], dtype=torch.float64, device=rt.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        result["step_time_ms_max_rank"] = round(float(t.item()), 3)
        peaks = [None] * rt.world
        dist.all_gather_object(peaks, peak_after_warmup)
        result["peak_allocated_bytes_per_rank"] = peaks
        step_ms = float(t.item())
    else:
        step_ms = med["step"]
    result["tokens_per_s"] = round(tokens_per_step / (step_ms * 1e-3), 1)

    del optimizer, train_model, model, batches, losses
    if rt.is_cuda:
        torch.cuda.empty_cache()
    return result


def p2p(rt: Runtime, send=None, recv=None) -> None:
    """One transfer between neighbouring pipeline stages, `send` or `recv` = (tensor, peer rank),
    issued as a batched operation (torch.distributed.batch_isend_irecv, as Megatron-LM's
    p2p_communication does) and waited for.

    Both sides of a transfer use the same shape and dtype: NCCL send/recv of unequal byte counts
    does not fail, it waits (a backward receive in the stage output's fp32 against a bf16 send
    hung the gpt-1.3b GPipe steps on two H200s, tools/data/h200x2-2026-11-29/README.md)."""
    dist = rt.torch.distributed
    ops = []
    if send is not None:
        ops.append(dist.P2POp(dist.isend, send[0], send[1]))
    if recv is not None:
        ops.append(dist.P2POp(dist.irecv, recv[0], recv[1]))
    for request in dist.batch_isend_irecv(ops):
        request.wait()


def pipeline_step(cfg: ModelConfig, rt: Runtime, stage, tokens, timer, dtype=None, use_autocast=True):
    """One GPipe step: every micro-batch forward through this stage, then every one backward.
    tokens [microbatches, micro_batch, seq_len + 1]; activations travel in `dtype` (default bf16).
    Returns the mean loss on the last stage (None elsewhere)."""
    import contextlib
    dtype = dtype or rt.compute_dtype
    torch = rt.torch
    dist = torch.distributed
    prev_rank = rt.rank - 1 if rt.rank > 0 else None
    next_rank = rt.rank + 1 if rt.rank < rt.world - 1 else None
    shape = (cfg.micro_batch, cfg.seq_len, cfg.hidden)
    saved = []
    total_loss = None
    for mb in range(cfg.microbatches):
        if prev_rank is None:
            x = tokens[mb, :, :-1]
        else:
            x = torch.empty(shape, dtype=dtype, device=rt.device)
            p2p(rt, recv=(x, prev_rank))
            x.requires_grad_()
        with rt.autocast() if use_autocast else contextlib.nullcontext():
            out = stage(x, tokens[mb, :, 1:] if next_rank is None else None)
        if next_rank is not None:
            p2p(rt, send=(out.detach().to(dtype).contiguous(), next_rank))
        else:
            total_loss = out.detach() if total_loss is None else total_loss + out.detach()
        saved.append((x, out))
    if timer is not None:
        timer.mark("forward_end")
    for x, out in reversed(saved):
        if next_rank is None:
            (out / cfg.microbatches).backward()
        else:
            # The next stage sends the gradient of its input, which has the dtype activations
            # travel in; this stage's output may be wider (the first stage's fp32 residual stream
            # under autocast), so receive in `dtype` and widen (NCCL needs equal counts and types).
            grad = torch.empty(shape, dtype=dtype, device=rt.device)
            p2p(rt, recv=(grad, next_rank))
            out.backward(grad.to(out.dtype))
        if prev_rank is not None:
            p2p(rt, send=(x.grad.contiguous(), prev_rank))
    if stage.tied_group is not None:
        weight = stage.embed.weight if stage.is_first else stage.head.weight
        dist.all_reduce(weight.grad, group=stage.tied_group)
    if timer is not None:
        timer.mark("backward_end")
    return None if total_loss is None else total_loss / cfg.microbatches


def copy_full_weights(full, stage, cfg: ModelConfig, rt: Runtime, first_layer: int) -> None:
    """Loads the weights of the one-GPU model `full` into this rank's `stage`: its layers for a
    pipeline stage, its shards for tensor parallelism (QKV rows per head group, gate/up halves per
    shard, row-parallel columns)."""
    torch = rt.torch
    tp = rt.world if cfg.parallel == "tp" else 1
    r = rt.rank if tp > 1 else 0

    def rows(t, n_shards):  # this rank's block of the first dimension
        size = t.shape[0] // n_shards
        return t[r * size:(r + 1) * size]

    with torch.no_grad():
        if stage.is_first:
            stage.embed.weight.copy_(full.embed.weight)
            if stage.pos is not None:
                stage.pos.weight.copy_(full.pos.weight)
        if stage.is_last:
            stage.final_norm.load_state_dict(full.final_norm.state_dict())
            if stage.head is not None:
                stage.head.weight.copy_(full.head.weight if full.head is not None else full.embed.weight)
        hd = cfg.head_dim
        for i, layer in enumerate(stage.layers):
            src = full.layers[first_layer + i]
            if tp == 1:
                layer.load_state_dict(src.state_dict())
                continue
            layer.norm1.load_state_dict(src.norm1.state_dict())
            layer.norm2.load_state_dict(src.norm2.state_dict())
            for name in ("weight", "bias"):
                t = getattr(src.attn.qkv.linear, name)
                if t is None:
                    continue
                q, k, v = t.split([cfg.heads * hd, cfg.kv * hd, cfg.kv * hd])
                getattr(layer.attn.qkv.linear, name).copy_(torch.cat([rows(q, tp), rows(k, tp), rows(v, tp)]))
                t = getattr(src.mlp.fc1.linear, name)
                if cfg.mlp == "swiglu":
                    gate, up = t.chunk(2)
                    t = torch.cat([rows(gate, tp), rows(up, tp)])
                else:
                    t = rows(t, tp)
                getattr(layer.mlp.fc1.linear, name).copy_(t)
            for dst, srcl in ((layer.attn.proj, src.attn.proj), (layer.mlp.fc2, src.mlp.fc2)):
                dst.linear.weight.copy_(rows(srcl.linear.weight.t(), tp).t())
                if dst.bias is not None:
                    dst.bias.copy_(srcl.bias)


def verify_parallel(cfg: ModelConfig, rt: Runtime, DecoderStage) -> dict:
    """Checks this rank's part of the parallel model against the one-GPU model with the same
    weights, in fp32 without autocast: the loss, and the gradient of the first-stage embedding
    (which every pipeline stage's backward and every tensor-parallel all-reduce feed). Returns the
    relative errors; both should be near fp32 rounding (< 1e-4)."""
    torch = rt.torch
    dist = torch.distributed
    full_cfg = dataclasses.replace(cfg, parallel="none", microbatches=1)
    torch.manual_seed(1234)
    full = DecoderStage(full_cfg, 0, cfg.layers, True, True, 1, None, rt.gqa_native, torch.float32).to(rt.device)
    stage, span = make_stage_model(cfg, rt, DecoderStage, compute_dtype=torch.float32)
    copy_full_weights(full, stage, cfg, rt, span["first_layer"])
    generator = torch.Generator(device=rt.device)
    generator.manual_seed(99)
    tokens = torch.randint(0, cfg.vocab, (1, cfg.micro_batch, cfg.seq_len + 1), device=rt.device,
                           generator=generator)
    loss_full = full(tokens[0, :, :-1], tokens[0, :, 1:])
    loss_full.backward()
    if cfg.parallel == "pp":
        one = dataclasses.replace(cfg, microbatches=1)
        loss = pipeline_step(one, rt, stage, tokens, None, dtype=torch.float32, use_autocast=False)
    else:
        loss = stage(tokens[0, :, :-1], tokens[0, :, 1:])
        loss.backward()
    # The loss lives on the last rank; every rank reports the last rank's value.
    value = torch.tensor([loss.item() if loss is not None else 0.0], dtype=torch.float64, device=rt.device)
    if rt.world > 1:
        dist.broadcast(value, src=rt.world - 1)
    loss_err = abs(float(value.item()) - float(loss_full.item())) / abs(float(loss_full.item()))
    grad_err = 0.0
    if stage.is_first:
        ref = full.embed.weight.grad
        grad_err = float((stage.embed.weight.grad - ref).norm() / ref.norm())
    result = {"loss_rel_err": loss_err, "embedding_grad_rel_err": grad_err}
    del full, stage
    return result


# ---------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", help="JSON file: a list of configurations (keys of ModelConfig)")
    p.add_argument("--only", help="comma list of configuration names to run")
    p.add_argument("--steps", type=int, default=5, help="timed steps per configuration (default 5)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--parallel", choices=CHOICES["parallel"], help="override every configuration's variant")
    p.add_argument("--microbatches", type=int, help="override micro-batches per step (pp)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cpu runs the same code with the gloo backend, for testing the logic")
    p.add_argument("--out", help="also append the JSON lines to this file")
    p.add_argument("--plan", action="store_true", help="print parameter counts and memory estimates only")
    p.add_argument("--verify", action="store_true",
                   help="before timing, check the parallel variant against the one-GPU model with the same "
                        "weights (builds a full fp32 copy on every rank: small configurations only)")
    for f in dataclasses.fields(ModelConfig):
        if f.name in ("parallel", "microbatches"):
            continue
        flag = "--" + f.name.replace("_", "-")
        if f.type in (bool, "bool"):
            p.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), metavar="true|false")
        elif f.type in (str, "str"):
            p.add_argument(flag)
        else:
            p.add_argument(flag, type=int)
    return p.parse_args(argv)


def load_configs(args) -> List[ModelConfig]:
    raws = []
    if args.configs:
        try:
            with open(args.configs) as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"--configs {args.configs}: {e}")
        if not isinstance(data, list):
            raise ConfigError(f"--configs {args.configs}: expected a JSON list of configurations")
        for i, raw in enumerate(data):
            if not isinstance(raw, dict):
                raise ConfigError(f"{args.configs}[{i}]: expected an object")
            raws.append((raw, f"{args.configs}[{i}]"))
    if args.name:
        raw = {f.name: getattr(args, f.name) for f in dataclasses.fields(ModelConfig)
               if hasattr(args, f.name) and getattr(args, f.name) is not None}
        raws.append((raw, "command line"))
    if not raws:
        raise ConfigError("no configuration: give --configs FILE or --name with the model keys")
    configs = []
    for raw, where in raws:
        raw = dict(raw)
        if args.parallel:
            raw["parallel"] = args.parallel
        if args.microbatches:
            raw["microbatches"] = args.microbatches
        configs.append(make_config(raw, where))
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in {c.name for c in configs}]
        if unknown:
            raise ConfigError(f"--only: unknown configuration(s) {unknown}; known: {[c.name for c in configs]}")
        configs = [c for c in configs if c.name in wanted]
    return configs


def main(argv) -> int:
    # CLUSTERSIM_REFERENCE_WATCHDOG_S=N: print every thread's Python stack and exit after N seconds
    # (where a hung collective waits), instead of being killed silently by a time limit.
    watchdog = os.environ.get("CLUSTERSIM_REFERENCE_WATCHDOG_S")
    if watchdog:
        import faulthandler
        faulthandler.dump_traceback_later(float(watchdog), exit=True)
    try:
        args = parse_args(argv)
        if args.steps < 1 or args.warmup < 1:
            raise ConfigError(f"--steps {args.steps} and --warmup {args.warmup} must be >= 1")
        configs = load_configs(args)
        if args.plan:
            plan(configs)
            return 0
        import torch
        rt = Runtime(torch, args.device)
        DecoderStage = build_model_classes(torch)
        failures = 0
        for cfg in configs:
            try:
                check = verify_parallel(cfg, rt, DecoderStage) if args.verify else None
                result = run_config(cfg, rt, args.steps, args.warmup, DecoderStage)
                if check is not None:
                    result["verify"] = check
                    if max(check.values()) > VERIFY_TOLERANCE:
                        failures += 1
            except torch.cuda.OutOfMemoryError as e:
                result = {"name": cfg.name, "error": "out of memory", "detail": str(e).split("\n")[0]}
                failures += 1
                torch.cuda.empty_cache()
            if rt.rank == 0:
                line = json.dumps(result)
                print(line, flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(line + "\n")
        if rt.world > 1:
            torch.distributed.destroy_process_group()
        return 1 if failures else 0
    except ConfigError as e:
        print(f"train_step.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
