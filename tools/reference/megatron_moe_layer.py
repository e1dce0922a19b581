#!/usr/bin/env python3
"""Forward + backward of Megatron-Core's own MoE layer on one GPU.

The measurement behind the cost per local expert of docs/validation/error_budget.md, section 7
(Megatron-Bridge mixture-of-experts rows); its results are in tools/data/h200-2026-12-01-moe/.

Builds `MoELayer` from Megatron-Core's local (non-Transformer-Engine) layer spec
(`get_gpt_layer_local_submodules(num_experts=E, moe_grouped_gemm=False).mlp`: TopKRouter,
SequentialMLP experts of ColumnParallelLinear/RowParallelLinear, SharedExpertMLP where the model
has one) with the 'alltoall' token dispatcher (and 'allgather' for a few cases), world size 1
(expert, tensor and pipeline parallel 1), bf16 parameters and activations, and measures per case:

- GPU time of one forward + backward (CUDA events, median over the timed repeats);
- host time: CPU wall time of `layer(x)` and of `out.backward(dy)` until each returns, and the time
  spent blocked in device-to-host synchronisations (torch.cuda.Event.synchronize, and .cpu(),
  .item(), .tolist() on CUDA tensors: the dropless dispatchers' token-count reads);
- under torch.profiler (one profiled step after one profiler warm-up step): kernels, copies and
  memsets per layer, launch and synchronisation API calls, GPU busy time (union of the GPU
  intervals), GPU idle time inside the step and its largest gaps, top-level eager ops in the
  forward and autograd nodes in the backward.

Megatron-LM is not installed: `--megatron DIR` names a folder holding `megatron/core` (a checkout of
the public repository; no build step). A module that Megatron-Core imports unguarded and that the
machine lacks is replaced by an empty stub module (reported in the meta line); none is expected.

Writes JSON lines to OUT/results.jsonl (a 'meta' line, then one line per case) and, for the cases
marked so, gzipped Chrome traces OUT/traces/*.json.gz. Prints a table at the end.

Usage: megatron_moe_layer.py --megatron DIR --out OUT [--cases SUBSTR,...] [--budget-s S]
"""

import argparse
import gc
import gzip
import json
import math
import os
import statistics
import sys
import time
import traceback
import types

# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------

# Expert shapes (per layer). 'fusion': Megatron's bias_activation_fusion as its training
# arguments set it for that model (--swiglu implies bias_swiglu_fusion=True unless
# --no-bias-swiglu-fusion; examples/gptoss/02_train.sh uses --quick-geglu with
# --no-bias-gelu-fusion, i.e. the unfused GLU path).
MODELS = {
    "qwen3-30b-a3b": dict(hidden=2048, ffn=768, experts=128, topk=8, act="swiglu",
                          bias=False, lb="aux_loss", aux=1e-3, fusion=True),
    "mixtral-8x7b": dict(hidden=4096, ffn=14336, experts=8, topk=2, act="swiglu",
                         bias=False, lb="aux_loss", aux=1e-2, fusion=True),
    "deepseek-v3": dict(hidden=7168, ffn=2048, experts=256, topk=8, act="swiglu",
                        bias=False, lb="seq_aux_loss", aux=1e-4, fusion=True,
                        shared=2048, score="sigmoid", expert_bias=True,
                        groups=8, group_topk=4, scaling=2.5),
    "gpt-oss-120b": dict(hidden=2880, ffn=2880, experts=128, topk=4, act="quick_geglu",
                         bias=True, lb="aux_loss", aux=1e-3, fusion=False,
                         clamp=7.0, glu_offset=1.0, explicit_expert_comm=True),
}
# explicit_expert_comm: the expert linears take the branch an expert-parallel rank (EP > 1) takes,
# skipping the tensor-parallel identity functions (_CopyToModelParallelRegion,
# _ReduceFromModelParallelRegion) that world size 1 otherwise goes through. Needed for experts
# with biases: at EP = TP = 1, RowParallelLinear returns the output of
# _ReduceFromModelParallelRegion (its input, as-is: a view), and MLP.forward's in-place
# `output += output_bias * per_token_scale` then fails in autograd ("Output 0 of
# _ReduceFromModelParallelRegionBackward is a view and is being modified inplace").

TOKENS = (1024, 4096, 16384)


def all_cases():
    cases = []
    # 1. every model, alltoall, three token counts (the 1024-token case is checked against an
    #    fp32 reference; the 4096-token case keeps its trace)
    for m in MODELS:
        for t in TOKENS:
            cases.append(dict(model=m, tokens=t, dispatcher="alltoall",
                              check=(t == 1024), trace=(t == 4096)))
    # 2. allgather dispatcher at 4096 tokens
    for m in MODELS:
        cases.append(dict(model=m, tokens=4096, dispatcher="allgather", trace=(m == "qwen3-30b-a3b")))
    # 3. number of experts, Qwen3 expert shape, top-8, 4096 tokens (32768 expert rows whatever E):
    #    the host and GPU cost per local expert
    for e in (8, 16, 32, 64):
        cases.append(dict(model="qwen3-30b-a3b", tokens=4096, dispatcher="alltoall",
                          override=dict(experts=e), tag=f"E{e}"))
    for e in (8, 16, 32, 64):
        cases.append(dict(model="qwen3-30b-a3b", tokens=1024, dispatcher="alltoall",
                          override=dict(experts=e), tag=f"E{e}"))
    # 4. the unfused GLU (--no-bias-swiglu-fusion) for the two many-expert SwiGLU shapes
    for m in ("qwen3-30b-a3b", "deepseek-v3"):
        cases.append(dict(model=m, tokens=4096, dispatcher="alltoall",
                          override=dict(fusion=False), tag="nofusion"))
    # 5. the expert-parallel rank's branch of the expert linears (see explicit_expert_comm)
    cases.append(dict(model="qwen3-30b-a3b", tokens=4096, dispatcher="alltoall",
                      override=dict(explicit_expert_comm=True), tag="epbranch"))
    for c in cases:
        c["name"] = f"{c['model']}:{c['dispatcher']}:{c['tokens']}" + (f":{c['tag']}" if c.get("tag") else "")
    return cases


# ---------------------------------------------------------------------------------------------
# Importing Megatron-Core
# ---------------------------------------------------------------------------------------------

STUBS = []


class _StubModule(types.ModuleType):
    """Stands in for a module Megatron-Core imports unguarded but this machine lacks."""

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return type(attr, (), {})


def import_megatron(path):
    sys.path.insert(0, os.path.abspath(path))
    last = None
    for _ in range(20):
        try:
            from megatron.core import parallel_state  # noqa: F401
            from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_submodules  # noqa: F401
            from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed  # noqa: F401
            from megatron.core.transformer.moe.moe_layer import MoELayer  # noqa: F401
            from megatron.core.transformer.transformer_config import TransformerConfig  # noqa: F401
            from megatron.core.fusions.fused_bias_geglu import quick_gelu  # noqa: F401
            return
        except ModuleNotFoundError as e:
            name = e.name
            if not name or name.split(".")[0] == "megatron" or name == last:
                raise
            last = name
            stub = _StubModule(name)
            stub.__path__ = []
            sys.modules[name] = stub
            STUBS.append(name)
            print(f"[import] stubbed missing module {name!r}: {e}", flush=True)
            for k in [k for k in sys.modules if k.split(".")[0] == "megatron"]:
                del sys.modules[k]
    raise RuntimeError("could not import Megatron-Core")


# ---------------------------------------------------------------------------------------------
# Blocking device-to-host reads, counted in the unprofiled steps
# ---------------------------------------------------------------------------------------------

class SyncStats:
    def __init__(self):
        self.reset()

    def reset(self):
        self.n = 0
        self.s = 0.0
        self.kinds = {}

    def add(self, kind, dt):
        self.n += 1
        self.s += dt
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


SYNC = SyncStats()


def install_sync_probes(torch):
    perf = time.perf_counter
    ev_sync = torch.cuda.Event.synchronize

    def event_synchronize(self):
        t = perf()
        ev_sync(self)
        SYNC.add("event.synchronize", perf() - t)

    torch.cuda.Event.synchronize = event_synchronize

    for meth in ("cpu", "item", "tolist"):
        orig = getattr(torch.Tensor, meth)

        def make(orig, meth):
            def probe(self, *a, **k):
                if self.is_cuda:
                    t = perf()
                    r = orig(self, *a, **k)
                    SYNC.add(meth, perf() - t)
                    return r
                return orig(self, *a, **k)
            return probe

        setattr(torch.Tensor, meth, make(orig, meth))


# ---------------------------------------------------------------------------------------------
# Building the layer
# ---------------------------------------------------------------------------------------------

def make_config(torch, spec, dispatcher):
    import torch.nn.functional as F
    from megatron.core.fusions.fused_bias_geglu import quick_gelu
    from megatron.core.transformer.transformer_config import TransformerConfig

    h = spec["hidden"]
    heads = 64 if h % 128 else h // 128
    kw = dict(
        num_layers=1,
        hidden_size=h,
        num_attention_heads=heads,
        ffn_hidden_size=spec["ffn"],
        moe_ffn_hidden_size=spec["ffn"],
        num_moe_experts=spec["experts"],
        moe_router_topk=spec["topk"],
        moe_token_dispatcher_type=dispatcher,
        moe_grouped_gemm=False,
        moe_permute_fusion=False,   # TE kernels
        moe_router_fusion=False,    # TE kernels
        moe_router_load_balancing_type=spec["lb"],
        moe_aux_loss_coeff=spec["aux"],
        moe_router_dtype="fp32",
        add_bias_linear=spec["bias"],
        gated_linear_unit=True,
        activation_func=(F.silu if spec["act"] == "swiglu" else quick_gelu),
        bias_activation_fusion=spec["fusion"],
        bf16=True,
        params_dtype=torch.bfloat16,
        pipeline_dtype=torch.bfloat16,
        transformer_impl="local",
        use_cpu_initialization=False,
        perform_initialization=True,
        gradient_accumulation_fusion=False,  # needs apex/TE's fused wgrad kernel
        hidden_dropout=0.0,
        attention_dropout=0.0,
        sequence_parallel=False,
        tensor_model_parallel_size=1,
        pipeline_model_parallel_size=1,
        expert_model_parallel_size=1,
        init_method_std=0.02,
    )
    if spec.get("shared"):
        kw["moe_shared_expert_intermediate_size"] = spec["shared"]
    if spec.get("score"):
        kw["moe_router_score_function"] = spec["score"]
    if spec.get("expert_bias"):
        kw["moe_router_enable_expert_bias"] = True
    if spec.get("groups"):
        kw["moe_router_num_groups"] = spec["groups"]
        kw["moe_router_group_topk"] = spec["group_topk"]
    if spec.get("scaling"):
        kw["moe_router_topk_scaling_factor"] = spec["scaling"]
    if spec.get("clamp"):
        kw["activation_func_clamp_value"] = spec["clamp"]
    if spec.get("glu_offset"):
        kw["glu_linear_offset"] = spec["glu_offset"]
    return TransformerConfig(**kw)


def build_layer(torch, cfg, num_experts, explicit_expert_comm=False):
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_submodules
    from megatron.core.transformer.spec_utils import build_module

    mlp = get_gpt_layer_local_submodules(num_experts=num_experts, moe_grouped_gemm=False).mlp
    if hasattr(mlp, "module"):           # a ModuleSpec (older releases)
        layer = build_module(mlp, config=cfg, layer_number=1)
    else:                               # a builder: partial(MoELayer, submodules=...)
        layer = mlp(config=cfg, layer_number=1)
    if explicit_expert_comm:
        for expert in layer.experts.local_experts:
            expert.linear_fc1.explicit_expert_comm = True
            expert.linear_fc2.explicit_expert_comm = True
    layer.cuda()
    layer.train()
    return layer


# ---------------------------------------------------------------------------------------------
# Reference (fp32, from the layer's own weights and routing)
# ---------------------------------------------------------------------------------------------

def reference_check(torch, layer, x, spec):
    import torch.nn.functional as F
    with torch.no_grad():
        out, _ = layer(x)
        probs, rmap = layer.router(x)
        h = spec["hidden"]
        x2 = x.detach().reshape(-1, h).float()
        ref = torch.zeros_like(x2)
        clamp = spec.get("clamp")
        off = spec.get("glu_offset", 0.0)

        def act(a):
            return F.silu(a) if spec["act"] == "swiglu" else a * torch.sigmoid(1.702 * a)

        def mlp(xe, fc1, fc2, p):
            y = xe @ fc1.weight.float().t()
            if getattr(fc1, "bias", None) is not None:
                y = y + fc1.bias.float()
            a, lin = y.chunk(2, dim=-1)
            if clamp:
                a = a.clamp(max=clamp)
                lin = lin.clamp(min=-clamp, max=clamp)
            m = act(a) * (lin + off)
            if p is not None:
                m = m * p
            o = m @ fc2.weight.float().t()
            if getattr(fc2, "bias", None) is not None:
                o = o + fc2.bias.float() * (p if p is not None else 1.0)
            return o

        for e, expert in enumerate(layer.experts.local_experts):
            idx = rmap[:, e].nonzero().squeeze(1)
            if idx.numel() == 0:
                continue
            p = probs[idx, e].float().unsqueeze(1)
            ref.index_add_(0, idx, mlp(x2[idx], expert.linear_fc1, expert.linear_fc2, p))
        if layer.shared_experts is not None:
            se = layer.shared_experts
            ref += mlp(x2, se.linear_fc1, se.linear_fc2, None)
        o2 = out.reshape(-1, h).float()
        err = (o2 - ref).norm() / ref.norm()
        return dict(rel_err=float(err), finite=bool(torch.isfinite(o2).all()),
                    out_dtype=str(out.dtype))


# ---------------------------------------------------------------------------------------------
# Trace analysis
# ---------------------------------------------------------------------------------------------

LAUNCH_NAMES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                "cudaLaunchCooperativeKernel")
SYNC_NAMES = ("cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize")
GEMM_HINTS = ("gemm", "cutlass", "xmma", "nvjet", "cublas", "sm90_", "wgmma")


def _union(intervals):
    total = 0.0
    gaps = []
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        if cur_e is None:
            cur_s, cur_e = s, e
        elif s > cur_e:
            total += cur_e - cur_s
            gaps.append((s - cur_e, cur_e))
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total, gaps


def analyze_trace(events, step_name="moe_step", fwd_name="moe_fwd"):
    """Counts and GPU timeline of one profiled step (times in microseconds)."""
    def find(name):
        for e in events:
            if e.get("ph") == "X" and e.get("name") == name and e.get("cat") == "user_annotation":
                return e
        return None

    step = find(step_name)
    if step is None:
        return {"error": "no step annotation in trace"}
    s0, s1 = step["ts"], step["ts"] + step["dur"]
    fwd = find(fwd_name)
    f1 = fwd["ts"] + fwd["dur"] if fwd else s1

    cpu_cats = ("cpu_op", "cuda_runtime", "cuda_driver")
    gpu_cats = ("kernel", "gpu_memcpy", "gpu_memset")
    launches = {"fwd": 0, "bwd": 0}
    syncs = []
    memcpy_calls = []
    corr_phase = {}
    runtime_counts = {}
    top = {"fwd": 0, "bwd": 0}
    autograd_nodes = 0
    ops_by_tid = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in cpu_cats:
            continue
        ts = e["ts"]
        if ts < s0 or ts > s1:
            continue
        phase = "fwd" if ts <= f1 else "bwd"
        name = e.get("name", "")
        cat = e["cat"]
        if cat == "cpu_op":
            ops_by_tid.setdefault(e.get("tid"), []).append(e)
            if name.startswith("autograd::engine::evaluate_function"):
                autograd_nodes += 1
            continue
        runtime_counts[name] = runtime_counts.get(name, 0) + 1
        corr = (e.get("args") or {}).get("correlation")
        if corr is not None:
            corr_phase[corr] = phase
        if name in LAUNCH_NAMES:
            launches[phase] += 1
        if name in SYNC_NAMES:
            syncs.append(dict(name=name, phase=phase, t_us=round(ts - s0, 1), dur_us=round(e["dur"], 1)))
        if name.startswith("cudaMemcpy"):
            memcpy_calls.append(dict(name=name, phase=phase, t_us=round(ts - s0, 1), dur_us=round(e["dur"], 1)))

    # top-level eager ops per thread (an op not nested in an earlier one of the same thread)
    for tid, ops in ops_by_tid.items():
        ops.sort(key=lambda e: (e["ts"], -e["dur"]))
        end = -1.0
        for e in ops:
            if e["ts"] >= end:
                top["fwd" if e["ts"] <= f1 else "bwd"] += 1
                end = e["ts"] + e["dur"]

    gpu = []
    kern = {"fwd": 0, "bwd": 0}
    copies = {}
    memsets = 0
    by_name = {}
    gemm_us = 0.0
    kern_us = 0.0
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in gpu_cats:
            continue
        corr = (e.get("args") or {}).get("correlation")
        if corr not in corr_phase:
            continue
        phase = corr_phase[corr]
        gpu.append((e["ts"], e["ts"] + e["dur"], phase, e["cat"]))
        if e["cat"] == "kernel":
            kern[phase] += 1
            n = e.get("name", "")
            kern_us += e["dur"]
            if any(hint in n.lower() for hint in GEMM_HINTS):
                gemm_us += e["dur"]
            short = n[:90]
            c, d = by_name.get(short, (0, 0.0))
            by_name[short] = (c + 1, d + e["dur"])
        elif e["cat"] == "gpu_memcpy":
            copies[e.get("name", "memcpy")] = copies.get(e.get("name", "memcpy"), 0) + 1
        else:
            memsets += 1
    res = dict(
        step_cpu_us=round(step["dur"], 1),
        fwd_cpu_us=round(f1 - s0, 1),
        kernels=kern["fwd"] + kern["bwd"], kernels_fwd=kern["fwd"], kernels_bwd=kern["bwd"],
        memcpys=copies, memsets=memsets,
        launch_calls=launches["fwd"] + launches["bwd"], launch_calls_fwd=launches["fwd"],
        launch_calls_bwd=launches["bwd"],
        sync_calls=len(syncs), sync_calls_detail=syncs[:20],
        sync_us=round(sum(s["dur_us"] for s in syncs), 1),
        memcpy_calls=memcpy_calls[:20], memcpy_call_us=round(sum(m["dur_us"] for m in memcpy_calls), 1),
        runtime_calls=dict(sorted(runtime_counts.items(), key=lambda kv: -kv[1])[:20]),
        top_level_ops_fwd=top["fwd"], top_level_ops_bwd_threads=top["bwd"], autograd_nodes=autograd_nodes,
        kernel_us=round(kern_us, 1), gemm_kernel_us=round(gemm_us, 1),
        top_kernels=[dict(name=k, n=c, us=round(d, 1)) for k, (c, d) in
                     sorted(by_name.items(), key=lambda kv: -kv[1][1])[:12]],
    )
    if gpu:
        g0 = min(g[0] for g in gpu)
        g1 = max(g[1] for g in gpu)
        busy, gaps = _union([(g[0], g[1]) for g in gpu])
        fwd_gpu = [(g[0], g[1]) for g in gpu if g[2] == "fwd"]
        bwd_gpu = [(g[0], g[1]) for g in gpu if g[2] == "bwd"]
        fb, _ = _union(fwd_gpu)
        bb, _ = _union(bwd_gpu)
        gaps.sort(reverse=True)
        res.update(
            gpu_span_us=round(g1 - g0, 1), gpu_busy_us=round(busy, 1),
            gpu_idle_us=round(g1 - g0 - busy, 1),
            gpu_busy_fwd_us=round(fb, 1), gpu_busy_bwd_us=round(bb, 1),
            gpu_fwd_span_us=round(max(e for _, e in fwd_gpu) - min(s for s, _ in fwd_gpu), 1) if fwd_gpu else None,
            host_to_first_gpu_us=round(g0 - s0, 1),
            gaps_over_5us=sum(1 for g, _ in gaps if g > 5), idle_in_gaps_over_5us=round(sum(g for g, _ in gaps if g > 5), 1),
            largest_gaps=[dict(us=round(g, 1), at_us=round(t - g0, 1)) for g, t in gaps[:5]],
        )
    return res


# ---------------------------------------------------------------------------------------------
# One case
# ---------------------------------------------------------------------------------------------

def flops_of(spec, tokens):
    h, f, k, e = spec["hidden"], spec["ffn"], spec["topk"], spec["experts"]
    rows = tokens * k
    fwd = 2 * rows * h * 3 * f + 2 * tokens * h * e
    if spec.get("shared"):
        fwd += 2 * tokens * h * 3 * spec["shared"]
    return 3 * fwd


def run_case(torch, case, args, tdir):
    spec = dict(MODELS[case["model"]])
    spec.update(case.get("override", {}))
    T = case["tokens"]
    res = dict(kind="case", name=case["name"], model=case["model"], tokens=T,
               dispatcher=case["dispatcher"], spec=spec)
    t_build = time.perf_counter()
    cfg = make_config(torch, spec, case["dispatcher"])
    layer = build_layer(torch, cfg, spec["experts"], spec.get("explicit_expert_comm", False))
    torch.cuda.synchronize()
    res["build_s"] = round(time.perf_counter() - t_build, 2)
    params = [p for p in layer.parameters()]
    res["params"] = sum(p.numel() for p in params)
    res["param_dtypes"] = sorted({str(p.dtype) for p in params})
    res["experts_class"] = type(layer.experts).__name__
    res["dispatcher_class"] = type(layer.token_dispatcher).__name__
    res["shared_experts"] = layer.shared_experts is not None

    g = torch.Generator(device="cuda").manual_seed(1234 + T)
    x = torch.randn(T, 1, spec["hidden"], device="cuda", dtype=torch.bfloat16, generator=g)
    x.requires_grad_(True)
    dy = torch.randn(T, 1, spec["hidden"], device="cuda", dtype=torch.bfloat16, generator=g)

    def zero():
        x.grad = None
        for p in params:
            p.grad = None

    perf = time.perf_counter
    # warm-up (first call compiles the torch.compile'd activation functions)
    warm = []
    for i in range(args.warmup):
        zero()
        torch.cuda.synchronize()
        t0 = perf()
        out, _ = layer(x)
        out.backward(dy)
        torch.cuda.synchronize()
        warm.append(round((perf() - t0) * 1e3, 2))
    res["warmup_ms"] = warm

    # routing of this input (the router is deterministic for fixed weights and input)
    with torch.no_grad():
        _, rmap = layer.router(x)
        tpe = rmap.sum(dim=0)
        res["tokens_per_expert"] = dict(min=int(tpe.min()), max=int(tpe.max()),
                                        mean=round(float(tpe.float().mean()), 1),
                                        zero=int((tpe == 0).sum()))

    step_est = max(statistics.median(warm[1:]) if len(warm) > 1 else warm[-1], 0.1)
    n = int(min(args.max_iters, max(args.min_iters, args.target_s * 1e3 / step_est)))
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    e2 = torch.cuda.Event(enable_timing=True)
    rows = []
    gc.collect()
    for i in range(n):
        zero()
        torch.cuda.synchronize()
        SYNC.reset()
        e0.record()
        t0 = perf()
        out, _ = layer(x)
        t1 = perf()
        sf_n, sf_s = SYNC.n, SYNC.s
        e1.record()
        out.backward(dy)
        t2 = perf()
        e2.record()
        torch.cuda.synchronize()
        t3 = perf()
        rows.append(dict(gpu=e0.elapsed_time(e2), gpu_fwd=e0.elapsed_time(e1),
                         host_fwd=(t1 - t0) * 1e3, host_bwd=(t2 - t1) * 1e3, host=(t2 - t0) * 1e3,
                         wall=(t3 - t0) * 1e3, syncs=SYNC.n, syncs_fwd=sf_n,
                         blocked=SYNC.s * 1e3, blocked_fwd=sf_s * 1e3, kinds=dict(SYNC.kinds)))
        del out

    def med(key):
        return round(statistics.median(r[key] for r in rows), 3)

    res.update(iters=n, gpu_ms=med("gpu"), gpu_fwd_ms=med("gpu_fwd"), host_ms=med("host"),
               host_fwd_ms=med("host_fwd"), host_bwd_ms=med("host_bwd"), wall_ms=med("wall"),
               blocked_ms=med("blocked"), blocked_fwd_ms=med("blocked_fwd"),
               syncs=rows[-1]["syncs"], syncs_fwd=rows[-1]["syncs_fwd"], sync_kinds=rows[-1]["kinds"],
               gpu_ms_min=round(min(r["gpu"] for r in rows), 3),
               gpu_ms_max=round(max(r["gpu"] for r in rows), 3),
               host_ms_min=round(min(r["host"] for r in rows), 3),
               host_ms_max=round(max(r["host"] for r in rows), 3))
    res["host_unblocked_ms"] = round(statistics.median(r["host"] - r["blocked"] for r in rows), 3)
    res["flop"] = flops_of(spec, T)
    res["tflops"] = round(res["flop"] / (res["gpu_ms"] * 1e-3) / 1e12, 1)

    # profiled step (after one profiler warm-up step)
    try:
        from torch.profiler import ProfilerActivity, profile, record_function, schedule
        trace_path = os.path.join(tdir, case["name"].replace(":", "_") + ".json")

        def handler(p):
            p.export_chrome_trace(trace_path)

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=0, warmup=1, active=1), on_trace_ready=handler) as prof:
            for i in range(2):
                zero()
                torch.cuda.synchronize()
                with record_function("moe_step"):
                    with record_function("moe_fwd"):
                        out, _ = layer(x)
                    out.backward(dy)
                torch.cuda.synchronize()
                del out
                prof.step()
        with open(trace_path) as f:
            tr = json.load(f)
        events = tr["traceEvents"] if isinstance(tr, dict) else tr
        res["profile"] = analyze_trace(events)
        if case.get("trace"):
            with open(trace_path, "rb") as f, gzip.open(trace_path + ".gz", "wb") as o:
                o.write(f.read())
        os.remove(trace_path)
    except Exception as ex:  # noqa: BLE001
        res["profile"] = {"error": repr(ex), "tb": traceback.format_exc()[-2000:]}

    if case.get("check"):
        try:
            res["check"] = reference_check(torch, layer, x, spec)
        except Exception as ex:  # noqa: BLE001
            res["check"] = {"error": repr(ex), "tb": traceback.format_exc()[-2000:]}
        # gradients exist and are finite after one more step
        zero()
        out, _ = layer(x)
        out.backward(dy)
        bad = [nm for nm, p in layer.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
        res["check"]["params_without_finite_grad"] = bad[:10]
        res["check"]["n_params_without_finite_grad"] = len(bad)
        res["check"]["x_grad_finite"] = bool(x.grad is not None and torch.isfinite(x.grad).all())
        del out

    res["max_mem_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    del layer, params, x, dy
    return res



# ---------------------------------------------------------------------------------------------
# Host cost of the pieces of one expert, with the GPU kept busy (the host never waits)
# ---------------------------------------------------------------------------------------------

def run_micro(torch, args, out_path):
    """Host microseconds per call of the eager and Megatron pieces an expert is made of.

    A long torch.cuda._sleep kernel runs first, so every launch queues behind it and the host
    never waits for the GPU; n calls (n x kernels per call stays under the ~1,022-deep launch
    queue) are timed with the host clock, 7 repetitions, median. Shapes: one Qwen3-30B-A3B expert
    (hidden 2048, ffn 768) with 256 tokens.
    """
    import torch.nn.functional as F
    from megatron.core.fusions.fused_bias_swiglu import weighted_bias_swiglu_impl

    perf = time.perf_counter
    lines = []
    T, H, FF = 256, 2048, 768
    dev = "cuda"
    sleep_cycles = int(2.0e9 * 0.25)   # ~0.25 s at 1980 MHz

    def bench(name, fn, n, kernels_hint=None, note=None):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        per = []
        for _ in range(7):
            torch.cuda._sleep(sleep_cycles)
            t0 = perf()
            for _ in range(n):
                fn()
            t1 = perf()
            torch.cuda.synchronize()
            t2 = perf()
            per.append((t1 - t0) / n * 1e6)
            if t1 - t0 > 0.2:   # the sleep may have ended: host figures would include waits
                note = (note or "") + " host loop longer than the sleep kernel"
        r = dict(kind="micro", name=name, n=n, host_us=round(statistics.median(per), 2),
                 host_us_min=round(min(per), 2), host_us_max=round(max(per), 2))
        if note:
            r["note"] = note.strip()
        # GPU operations per call, from the profiler's trace
        try:
            import tempfile
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            with tempfile.NamedTemporaryFile(suffix=".json") as tf:
                prof.export_chrome_trace(tf.name)
                with open(tf.name) as f:
                    tr = json.load(f)
            evs = tr["traceEvents"] if isinstance(tr, dict) else tr
            r["kernels_per_call"] = sum(1 for e in evs if e.get("ph") == "X" and e.get("cat") == "kernel")
            r["copies_per_call"] = sum(1 for e in evs if e.get("ph") == "X" and e.get("cat") in ("gpu_memcpy", "gpu_memset"))
        except Exception as ex:  # noqa: BLE001
            r["kernels_per_call"] = f"error {ex!r}"[:200]
        lines.append(r)
        print(f"[micro] {name:<58} {r['host_us']:9.2f} us/call  kernels {r['kernels_per_call']}", flush=True)

    def grads_none(*ts):
        for t in ts:
            t.grad = None

    small = torch.randn(256, device=dev)
    bench("eager x.mul_(0.999), 256 floats", lambda: small.mul_(0.999), 400)

    x = torch.randn(T, H, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w1 = torch.randn(2 * FF, H, device=dev, dtype=torch.bfloat16, requires_grad=True)
    g1 = torch.randn(T, 2 * FF, device=dev, dtype=torch.bfloat16)
    bench("F.linear 256x2048 . 2048x1536 bf16, forward", lambda: F.linear(x, w1), 200)

    def lin_fb():
        grads_none(x, w1)
        F.linear(x, w1).backward(g1)
    bench("F.linear 256x2048 . 2048x1536 bf16, forward + backward", lin_fb, 100)

    y = torch.randn(T, 2 * FF, device=dev, dtype=torch.bfloat16, requires_grad=True)
    pr = torch.rand(T, 1, device=dev, dtype=torch.float32, requires_grad=True)
    gy = torch.randn(T, FF, device=dev, dtype=torch.bfloat16)
    bench("weighted_bias_swiglu_impl (torch.compile'd), forward",
          lambda: weighted_bias_swiglu_impl(y, None, pr), 200)

    def wsw_fb():
        grads_none(y, pr)
        weighted_bias_swiglu_impl(y, None, pr).backward(gy)
    bench("weighted_bias_swiglu_impl (torch.compile'd), forward + backward", wsw_fb, 100)

    def glu_eager(t, p):
        a, b = torch.chunk(t, 2, dim=-1)
        return (F.silu(a) * b * p).to(t.dtype)
    bench("eager chunk/silu/mul/mul/to (the unfused GLU), forward", lambda: glu_eager(y, pr), 100)

    def glu_fb():
        grads_none(y, pr)
        glu_eager(y, pr).backward(gy)
    bench("eager chunk/silu/mul/mul/to (the unfused GLU), forward + backward", glu_fb, 50)

    # Megatron's own expert MLP and linears (from a built Qwen3-shaped layer with 8 experts)
    for fusion, eb in ((True, False), (False, False), (True, True)):
        spec = dict(MODELS["qwen3-30b-a3b"], experts=8, fusion=fusion)
        cfg = make_config(torch, spec, "alltoall")
        layer = build_layer(torch, cfg, 8, explicit_expert_comm=eb)
        expert = layer.experts.local_experts[0]
        tag = ("fused GLU" if fusion else "unfused GLU") + (", EP-rank branch" if eb else "")
        xe = torch.randn(T, H, device=dev, dtype=torch.bfloat16, requires_grad=True)
        pe = torch.rand(T, device=dev, dtype=torch.float32, requires_grad=True)
        ge = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
        params = list(expert.parameters())
        bench(f"Megatron expert MLP ({tag}), forward", lambda: expert(xe, pe), 100)

        def mlp_fb():
            grads_none(xe, pe, *params)
            o, _ = expert(xe, pe)
            o.backward(ge)
        bench(f"Megatron expert MLP ({tag}), forward + backward", mlp_fb, 30)
        if fusion and not eb:
            fc1 = expert.linear_fc1

            def fc1_fb():
                grads_none(xe, *fc1.parameters())
                o, _ = fc1(xe)
                o.backward(g1)
            bench("Megatron ColumnParallelLinear 2048->1536 (expert), forward", lambda: fc1(xe), 200)
            bench("Megatron ColumnParallelLinear 2048->1536 (expert), forward + backward", fc1_fb, 100)
        del layer, expert, params

    # the dispatcher's split-and-cat over 128 experts (sort_chunks_by_idxs at EP = 1)
    big = torch.randn(32768, H, device=dev, dtype=torch.bfloat16)
    sizes = [256] * 128
    bench("torch.split into 128 + torch.cat (sort_chunks_by_idxs, EP 1)",
          lambda: torch.cat(torch.split(big, sizes), dim=0), 20)
    with open(out_path, "a") as f:
        for r in lines:
            f.write(json.dumps(r) + "\n")

# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--megatron", required=True, help="folder holding megatron/core")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default="", help="comma-separated substrings of case names (default: all)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--micro", action="store_true", help="also time the pieces of one expert (host cost)")
    ap.add_argument("--budget-s", type=float, default=480.0, help="start no case after this many seconds")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--min-iters", type=int, default=5)
    ap.add_argument("--max-iters", type=int, default=20)
    ap.add_argument("--target-s", type=float, default=1.5, help="timed seconds per case (about)")
    args = ap.parse_args()

    cases = all_cases()
    if args.cases:
        keys = [k for k in args.cases.split(",") if k]
        cases = [c for c in cases if any(k in c["name"] for k in keys)]
    if args.list:
        for c in cases:
            print(c["name"])
        return 0

    t_start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    tdir = os.path.join(args.out, "traces")
    os.makedirs(tdir, exist_ok=True)
    os.environ.setdefault("NO_VCS_VERSION", "1")

    import torch
    import torch.distributed as dist

    meta = dict(kind="meta", argv=sys.argv, python=sys.version.split()[0], torch=torch.__version__,
                cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                device=torch.cuda.get_device_name(0),
                env={k: os.environ.get(k) for k in ("CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_NVLS_ENABLE")})
    for mod in ("transformer_engine", "grouped_gemm", "apex", "triton", "einops"):
        try:
            m = __import__(mod)
            meta[f"have_{mod}"] = getattr(m, "__version__", "yes")
        except Exception as ex:  # noqa: BLE001
            meta[f"have_{mod}"] = f"no ({type(ex).__name__}: {ex})"[:160]
    meta["torch_grouped_mm"] = bool(hasattr(torch, "_grouped_mm") or hasattr(torch.nn.functional, "grouped_mm"))

    t_imp = time.perf_counter()
    import_megatron(args.megatron)
    meta["import_s"] = round(time.perf_counter() - t_imp, 2)
    meta["stubbed_modules"] = list(STUBS)
    from megatron.core import parallel_state
    from megatron.core import package_info
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    from megatron.core.extensions.transformer_engine import HAVE_TE
    meta["megatron_core_version"] = package_info.__version__
    meta["megatron_HAVE_TE"] = HAVE_TE

    import torch._dynamo
    torch._dynamo.config.suppress_errors = True   # a failed compile runs eager (reported below)

    torch.cuda.set_device(0)
    dist.init_process_group(backend="nccl", init_method="tcp://127.0.0.1:29517", world_size=1, rank=0)
    try:
        parallel_state.initialize_model_parallel(1, 1, expert_model_parallel_size=1,
                                                 create_gloo_process_groups=False)
    except TypeError:
        parallel_state.initialize_model_parallel(1, 1, expert_model_parallel_size=1)
    model_parallel_cuda_manual_seed(1234)
    install_sync_probes(torch)

    out_path = os.path.join(args.out, "results.jsonl")
    with open(out_path, "a") as f:
        f.write(json.dumps(meta) + "\n")
    print(json.dumps(meta), flush=True)

    results = []
    for case in cases:
        el = time.perf_counter() - t_start
        if el > args.budget_s:
            r = dict(kind="case", name=case["name"], skipped=f"time budget ({el:.0f} s > {args.budget_s:.0f} s)")
        else:
            t0 = time.perf_counter()
            try:
                r = run_case(torch, case, args, tdir)
            except Exception as ex:  # noqa: BLE001
                r = dict(kind="case", name=case["name"], error=repr(ex)[:500], tb=traceback.format_exc()[-3000:])
            r["case_s"] = round(time.perf_counter() - t0, 1)
            gc.collect()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        results.append(r)
        with open(out_path, "a") as f:
            f.write(json.dumps(r) + "\n")
        p = r.get("profile", {})
        print(f"[{time.perf_counter() - t_start:6.1f}s] {r['name']:<40} "
              + (f"gpu {r['gpu_ms']:8.3f} ms  host {r['host_ms']:8.3f} ms  blocked {r['blocked_ms']:7.3f}  "
                 f"syncs {r['syncs']}  kernels {p.get('kernels')}  idle {p.get('gpu_idle_us')} us  "
                 f"({r['case_s']} s)" if "gpu_ms" in r else (r.get("error") or r.get("skipped"))), flush=True)
        if "tb" in r:
            print(r["tb"], flush=True)

    if args.micro:
        try:
            run_micro(torch, args, out_path)
        except Exception as ex:  # noqa: BLE001
            print(f"[micro] failed: {ex!r}\n{traceback.format_exc()}", flush=True)
        gc.collect()
        torch.cuda.empty_cache()

    try:
        from torch._dynamo.utils import counters
        dyn = {k: dict(v) for k, v in counters.items() if v}
        with open(out_path, "a") as f:
            f.write(json.dumps(dict(kind="dynamo_counters", counters=dyn), default=str) + "\n")
    except Exception:  # noqa: BLE001
        pass

    print("\ncase                                     gpu ms   host ms  h.fwd   h.bwd  blocked syncs kernels launches gpu-idle-us  TFLOP/s  rel.err")
    for r in results:
        if "gpu_ms" not in r:
            continue
        p = r.get("profile", {})
        c = r.get("check", {})
        print(f"{r['name']:<40} {r['gpu_ms']:8.3f} {r['host_ms']:8.3f} {r['host_fwd_ms']:7.2f} {r['host_bwd_ms']:7.2f} "
              f"{r['blocked_ms']:7.3f} {r['syncs']:5d} {str(p.get('kernels')):>7} {str(p.get('launch_calls')):>8} "
              f"{str(p.get('gpu_idle_us')):>11} {r['tflops']:8.1f}  {c.get('rel_err', '')}")
    dist.destroy_process_group()
    print(f"total {time.perf_counter() - t_start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
