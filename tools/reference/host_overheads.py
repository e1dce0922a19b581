#!/usr/bin/env python3
"""Host-side overheads of PyTorch's Python layer on one GPU, with autograd recording on: the
nn.Module call, view-like tensor ops that launch no kernel, nn.Linear / nn.LayerNorm modules
against their functional forms (Linear under autocast), an autocast region's entry and exit, and
the backward of a chain of nn.Linear modules under autocast per launched kernel.

  python3 host_overheads.py --out DIR

Writes DIR/host_overheads.jsonl (one JSON line per measurement; a failed measurement is a line
with "error") and DIR/meta.txt (torch, CUDA, nvidia-smi, lscpu, date).

Method (as host_costs.py): a long torch.cuda._sleep kernel keeps the GPU busy so the host runs
ahead and its time is dispatch cost alone; host time with time.perf_counter_ns; an event recorded
right after the sleep is queried when the timed region ends ("gpu_busy_throughout"). Each
repetition times CALLS calls in a plain `for _ in range(CALLS)` loop written out per case (no
lambda in the loop); medians of REPS repetitions after WARMUP warm-up ones. The empty loop is
measured too ("loop_empty"), and "net" figures subtract its per-iteration time. Inputs are 4 x 1024
bf16 on the GPU with requires_grad=True unless said; results are dropped at once, so the per-call
time includes freeing the output (and its autograd node). Launches are counted with torch.profiler
(CPU + CUDA) over one extra, untimed repetition of the same loop.

Cases:
  loop_empty, size_last, shape_attr           Python-level baselines
  module_call, module_forward                 m(x) and m.forward(x) of a module whose forward is
                                              `return x`; their difference is __call__'s overhead
  view, transpose, reshape, split, chunk, unsqueeze   host-only tensor ops
  linear_module_autocast_distinct   CALLS distinct nn.Linear(1024, 1024) modules, fp32 weights,
                                    each called once inside one autocast(bf16) region (the weight
                                    and bias casts happen on every call, as in a model's forward)
  linear_module_autocast_same       one module called CALLS times in one region (autocast caches
                                    the cast of a leaf weight, so only the first call casts)
  linear_module_autocast_per_call   `with autocast: m(x)` per call (region entry/exit included)
  linear_functional_bf16            F.linear(x, W, b), W and b bf16 with requires_grad, no autocast
  layernorm_module_fp32, layernorm_functional_fp32   nn.LayerNorm(1024) against F.layer_norm with
                                    the same fp32 weight and bias, fp32 4 x 1024 input
  autocast_enter_exit               `with torch.autocast("cuda", dtype=torch.bfloat16): pass`
  linear_chain_backward             N_CHAIN nn.Linear(1024, 1024) modules under autocast, fp32
                                    weights, loss = y.float().sum(); forward and backward host
                                    time, per layer and per launched kernel
Exit codes: 0 ok, 1 a measurement failed (recorded in its line).
"""

import argparse
import contextlib
import gc
import json
import os
import sys
import time

CALLS = 200
REPS = 7
WARMUP = 2
N_CHAIN = 50
SLEEP_S = 0.05

from host_timing import emit, med, profile_counts, write_meta  # noqa: E402  (tools/reference/host_timing.py)
import host_timing  # noqa: E402


def sleep_gpu(torch, seconds=SLEEP_S):
    """Queue a long kernel; return an event that completes when it ends."""
    return host_timing.sleep_gpu(torch, seconds)


# ---------------------------------------------------------------------------------------------
# Per-call cases: each builder returns (desc, body, ctx); body() runs CALLS calls in a plain loop;
# ctx() (optional) gives a context manager entered before the timer starts and left after it stops.

def build_cases(torch):
    nn, F = torch.nn, torch.nn.functional
    dev, bf = "cuda", torch.bfloat16
    R = range(CALLS)
    g = torch.Generator(device=dev)
    g.manual_seed(1234)
    x = torch.randn(4, 1024, device=dev, generator=g).to(bf).requires_grad_()
    x32 = torch.randn(4, 1024, device=dev, generator=g).requires_grad_()
    autocast = lambda: torch.autocast("cuda", dtype=torch.bfloat16)  # noqa: E731

    class Ident(nn.Module):
        def forward(self, x):
            return x

    cases = {}

    def add(name, desc, ctx=None):
        def deco(body):
            cases[name] = (desc, body, ctx)
            return body
        return deco

    @add("loop_empty", "for _ in range(200): pass (loop baseline)")
    def _():
        for _ in R:
            pass

    @add("size_last", "x.size(-1)")
    def _():
        for _ in R:
            x.size(-1)

    @add("shape_attr", "x.shape")
    def _():
        for _ in R:
            x.shape

    m_id = Ident().to(dev)

    @add("module_call", "m(x), nn.Module whose forward is `return x`, no hooks")
    def _():
        for _ in R:
            m_id(x)

    @add("module_forward", "m.forward(x), same module")
    def _():
        for _ in R:
            m_id.forward(x)

    @add("view", "x.view(4, 8, 128)")
    def _():
        for _ in R:
            x.view(4, 8, 128)

    @add("transpose", "x.transpose(0, 1)")
    def _():
        for _ in R:
            x.transpose(0, 1)

    @add("reshape", "x.reshape(4, 8, 128), x contiguous (a view, no copy)")
    def _():
        for _ in R:
            x.reshape(4, 8, 128)

    @add("split", "x.split(256, dim=-1), 4 pieces")
    def _():
        for _ in R:
            x.split(256, dim=-1)

    @add("chunk", "x.chunk(2, dim=-1), 2 pieces")
    def _():
        for _ in R:
            x.chunk(2, dim=-1)

    @add("unsqueeze", "x.unsqueeze(0)")
    def _():
        for _ in R:
            x.unsqueeze(0)

    lin_mods = [nn.Linear(1024, 1024, bias=True).to(dev) for _ in range(CALLS)]

    @add("linear_module_autocast_distinct",
         "200 distinct nn.Linear(1024,1024,bias) fp32 modules, each m(x) once inside one "
         "autocast(cuda, bf16) region entered outside the timer (weight and bias cast every call)",
         ctx=autocast)
    def _():
        for m in lin_mods:
            m(x)

    lin = lin_mods[0]

    @add("linear_module_autocast_same",
         "one nn.Linear(1024,1024,bias) fp32 module, m(x) 200 times inside one autocast region "
         "entered outside the timer (autocast's cast cache: only the first call casts)", ctx=autocast)
    def _():
        for _ in R:
            lin(x)

    @add("linear_module_autocast_per_call",
         "with torch.autocast('cuda', dtype=torch.bfloat16): m(x), per call (region entry/exit and "
         "the casts every call)")
    def _():
        for _ in R:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                lin(x)

    w_bf = (torch.randn(1024, 1024, device=dev, generator=g) * 1024 ** -0.5).to(bf).requires_grad_()
    b_bf = torch.zeros(1024, device=dev, dtype=bf).requires_grad_()

    @add("linear_functional_bf16", "F.linear(x, W, b), W 1024x1024 and b bf16 with requires_grad, no autocast")
    def _():
        for _ in R:
            F.linear(x, w_bf, b_bf)

    ln = nn.LayerNorm(1024).to(dev)

    @add("layernorm_module_fp32", "nn.LayerNorm(1024) fp32 module on fp32 4x1024 input with requires_grad")
    def _():
        for _ in R:
            ln(x32)

    ln_w, ln_b = ln.weight, ln.bias

    @add("layernorm_functional_fp32", "F.layer_norm(x32, (1024,), ln.weight, ln.bias, 1e-5), same tensors")
    def _():
        for _ in R:
            F.layer_norm(x32, (1024,), ln_w, ln_b, 1e-5)

    @add("autocast_enter_exit", "with torch.autocast('cuda', dtype=torch.bfloat16): pass")
    def _():
        for _ in R:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                pass

    return cases


def measure_case(torch, name, desc, body, ctx):
    ctx = ctx or contextlib.nullcontext
    host, busy = [], []
    for rep in range(WARMUP + REPS):
        gc.collect()
        torch.cuda.synchronize()
        with ctx():
            done = sleep_gpu(torch)
            t0 = time.perf_counter_ns()
            body()
            t1 = time.perf_counter_ns()
            b = not done.query()
        torch.cuda.synchronize()
        if rep < WARMUP:
            continue
        host.append((t1 - t0) / 1e3 / CALLS)
        busy.append(b)
    rec = {"kind": "per_call", "op": name, "desc": desc, "calls_per_rep": CALLS, "reps": REPS,
           "warmup": WARMUP, "host_us_per_call": med(host),
           "host_us_per_call_min": min(host), "host_us_per_call_max": max(host),
           "gpu_busy_throughout": all(busy), "samples_host_us_per_call": [round(v, 4) for v in host]}
    try:
        def prof_body():
            with ctx():
                body()
        p = profile_counts(torch, prof_body)
        rec["profile"] = p
        rec["launches_per_call"] = (p["launch_calls"] + p["copy_memset_calls"]) / CALLS
        rec["gpu_kernels_per_call"] = (p["gpu_kernels"] + p["gpu_copies_memsets"]) / CALLS
    except Exception as e:
        rec["profile_error"] = f"{type(e).__name__}: {e}"
    return rec


# ---------------------------------------------------------------------------------------------
# Backward of a chain of nn.Linear modules under autocast

def measure_linear_chain(torch):
    nn = torch.nn
    dev, n = "cuda", N_CHAIN
    torch.manual_seed(4321)
    mods = [nn.Linear(1024, 1024, bias=True).to(dev) for _ in range(n)]
    x = torch.randn(4, 1024, device=dev).to(torch.bfloat16).requires_grad_()

    def clear():
        x.grad = None
        for m in mods:
            m.weight.grad = None
            m.bias.grad = None

    def forward():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = x
            for m in mods:
                y = m(y)
        return y.float().sum()

    fwd, bwd, busy_f, busy_b = [], [], [], []
    for rep in range(WARMUP + REPS):
        clear()
        gc.collect()
        torch.cuda.synchronize()
        done = sleep_gpu(torch)
        t0 = time.perf_counter_ns()
        loss = forward()
        t1 = time.perf_counter_ns()
        bf = not done.query()
        torch.cuda.synchronize()
        done = sleep_gpu(torch)
        t2 = time.perf_counter_ns()
        loss.backward()
        t3 = time.perf_counter_ns()
        bb = not done.query()
        torch.cuda.synchronize()
        del loss
        if rep < WARMUP:
            continue
        fwd.append((t1 - t0) / 1e3)
        bwd.append((t3 - t2) / 1e3)
        busy_f.append(bf)
        busy_b.append(bb)
    rec = {"kind": "chain", "op": "linear_chain_backward",
           "desc": f"{n} nn.Linear(1024,1024,bias) fp32 modules under autocast(cuda, bf16), x 4x1024 bf16 "
                   "requires_grad, loss = y.float().sum() (the sum and the float cast inside the timed "
                   "forward); grads set to None before every forward",
           "n_layers": n, "reps": REPS, "warmup": WARMUP,
           "fwd_host_us_total": med(fwd), "fwd_host_us_per_layer": med(fwd) / n,
           "bwd_host_us_total": med(bwd), "bwd_host_us_per_layer": med(bwd) / n,
           "bwd_host_us_min": min(bwd), "bwd_host_us_max": max(bwd),
           "gpu_busy_throughout": {"fwd": all(busy_f), "bwd": all(busy_b)},
           "samples_fwd_host_us": [round(v, 1) for v in fwd], "samples_bwd_host_us": [round(v, 1) for v in bwd]}
    try:
        clear()
        holder = {}
        fp = profile_counts(torch, lambda: holder.__setitem__("loss", forward()))
        loss = holder.pop("loss")
        torch.cuda.synchronize()
        bp = profile_counts(torch, lambda: loss.backward())
        del loss
        fk = fp["launch_calls"] + fp["copy_memset_calls"]
        bk = bp["launch_calls"] + bp["copy_memset_calls"]
        rec.update({"fwd_profile": fp, "bwd_profile": bp,
                    "fwd_launches_total": fk, "fwd_launches_per_layer": fk / n,
                    "bwd_launches_total": bk, "bwd_launches_per_layer": bk / n,
                    "fwd_host_us_per_launch": med(fwd) / fk if fk else None,
                    "bwd_host_us_per_launch": med(bwd) / bk if bk else None})
    except Exception as e:
        rec["profile_error"] = f"{type(e).__name__}: {e}"
    clear()
    return rec


# ---------------------------------------------------------------------------------------------

def summary(path):
    print("\n=== summary (host us per call; net = minus the empty loop's per-iteration time) ===")
    recs = [json.loads(line) for line in open(path)]
    base = next((r["host_us_per_call"] for r in recs if r.get("op") == "loop_empty" and "error" not in r), 0.0)
    by = {r.get("op"): r for r in recs}
    for r in recs:
        if "error" in r:
            print(f"ERROR {r.get('kind')} {r.get('op')}: {r['error']}")
        elif r["kind"] == "per_call":
            print(f"{r['op']:34s} {r['host_us_per_call']:8.3f} us  net {r['host_us_per_call'] - base:8.3f}  "
                  f"[{r['host_us_per_call_min']:.3f}-{r['host_us_per_call_max']:.3f}]  "
                  f"launches/call {r.get('launches_per_call')}  busy {r['gpu_busy_throughout']}")
        elif r["kind"] == "chain":
            print(f"{r['op']}: fwd {r['fwd_host_us_per_layer']:.2f} us/layer, bwd {r['bwd_host_us_per_layer']:.2f} "
                  f"us/layer, launches/layer fwd {r.get('fwd_launches_per_layer')} bwd {r.get('bwd_launches_per_layer')}, "
                  f"bwd us/launch {r.get('bwd_host_us_per_launch')}, busy {r['gpu_busy_throughout']}")
    if "module_call" in by and "module_forward" in by and "error" not in by["module_call"] \
            and "error" not in by["module_forward"]:
        print(f"__call__ overhead: {by['module_call']['host_us_per_call'] - by['module_forward']['host_us_per_call']:.3f} us")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output folder")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "host_overheads.jsonl")
    open(path, "w").close()
    import torch
    torch.manual_seed(0)
    failures = 0
    try:
        write_meta(args.out, torch)
    except Exception as e:
        print(f"meta failed: {e}", file=sys.stderr)
    emit(path, {"kind": "host_info", "torch": torch.__version__, "cuda": torch.version.cuda,
                "device": torch.cuda.get_device_name(0), "calls_per_rep": CALLS, "reps": REPS,
                "warmup": WARMUP, "n_chain": N_CHAIN, "sleep_s": SLEEP_S,
                "grad_enabled": torch.is_grad_enabled()})
    try:
        cases = build_cases(torch)
    except Exception as e:
        failures += 1
        emit(path, {"kind": "per_call", "op": "build_cases", "error": f"{type(e).__name__}: {e}"})
        cases = {}
    for name, (desc, body, ctx) in cases.items():
        try:
            emit(path, measure_case(torch, name, desc, body, ctx))
        except Exception as e:
            failures += 1
            emit(path, {"kind": "per_call", "op": name, "desc": desc, "error": f"{type(e).__name__}: {e}"})
    del cases
    gc.collect()
    torch.cuda.empty_cache()
    try:
        emit(path, measure_linear_chain(torch))
    except Exception as e:
        failures += 1
        emit(path, {"kind": "chain", "op": "linear_chain_backward", "error": f"{type(e).__name__}: {e}"})
    summary(path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
