#!/usr/bin/env python3
"""Host time of each forward op of train_step.py's GPT layer alone, and whether a torch.profiler
context changes the host time of later ops in the same process.

  python3 host_gpt_ops.py --out DIR

Writes DIR/host_gpt_ops.jsonl (one JSON line per measurement) and DIR/meta.txt.

Method (as host_costs.py): the GPU is kept busy behind a torch.cuda._sleep so the host never
waits (`gpu_busy_throughout`); each repetition times N calls in a plain loop with
time.perf_counter_ns; medians of REPS after WARMUP. Shapes of gpt-125m-s256-b1 (T = 256 tokens,
h = 768, ffn 3072, 12 heads of 64): fp32 parameters, autocast bf16 (cache on, one region per
repetition, as the model's forward is one region), autograd recording on. Each call has its own
module or parameter (as each layer has), results kept until the repetition ends.

  mul_first    y * 1.001 on 4 x 1024 bf16 (host_costs.py's chain op), before anything else;
  ops          the layer's forward ops, each alone: nn.Linear(768, 2304) with bias on an fp32
               input (autocast: bias, weight and input casts, addmm), nn.Linear(768, 768) without
               bias on a bf16 input (weight cast, mm), the row-parallel bias add (bf16 + fp32
               parameter -> fp32), the fp32 residual add, train_step's Fp32Norm(nn.LayerNorm(768))
               on fp32, F.gelu(tanh) on bf16 [256, 3072], and the attention block (split, views,
               transposes, SDPA flash, transpose, reshape) on a bf16 [1, 256, 2304] input;
  mul_after_*  the mul chain again after the ops (no profiler used yet), after torch.profiler
               contexts (CPU and CUDA activities) that count each op's launches, and after a
               further 5 s of ordinary work.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import host_timing  # noqa: E402
from host_timing import emit, med  # noqa: E402

N = 100
REPS = 7
WARMUP = 2


def timed(torch, name, make, call, n=N, autocast=True):
    """make(n) -> per-call state; call(state_i) -> result. Host µs per call, GPU busy."""
    states = make(n)
    samples, busy = [], []
    for rep in range(WARMUP + REPS):
        torch.cuda.synchronize()
        done = host_timing.sleep_gpu(torch, 0.1)
        keep = []
        if autocast:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                t0 = time.perf_counter_ns()
                for s in states:
                    keep.append(call(s))
                t1 = time.perf_counter_ns()
        else:
            t0 = time.perf_counter_ns()
            for s in states:
                keep.append(call(s))
            t1 = time.perf_counter_ns()
        b = not done.query()
        torch.cuda.synchronize()
        del keep
        if rep >= WARMUP:
            samples.append((t1 - t0) / 1e3 / n)
            busy.append(b)
    return {"kind": "op", "op": name, "calls": n, "host_us_per_call": med(samples),
            "samples_us": [round(x, 2) for x in samples], "gpu_busy_throughout": all(busy)}


def launches(torch, make, call, autocast=True):
    s = make(4)
    def run():
        if autocast:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return [call(x) for x in s]
        return [call(x) for x in s]
    p = host_timing.profile_counts(torch, run)
    return (p["launch_calls"] + p["copy_memset_calls"]) / 4


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "host_gpt_ops.jsonl")
    host_timing.write_meta(args.out, torch)
    dev, bf = "cuda", torch.bfloat16
    T, h, ffn, heads, hd = 256, 768, 3072, 12, 64

    class Fp32Norm(nn.Module):  # train_step.py's Fp32Norm, as written there
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x.float())

    mul_x = torch.randn(4, 1024, device=dev).to(bf).requires_grad_()

    def mul_chain(name):
        def make(n):
            return list(range(n))
        y = {"v": mul_x}
        def call(i):
            y["v"] = y["v"] * 1.001
            return None
        r = timed(torch, name, make, call, n=200, autocast=False)
        r["kind"] = "mul_chain"
        return r

    emit(path, mul_chain("mul_first"))

    x32 = torch.randn(1, T, h, device=dev, requires_grad=True)
    x16 = torch.randn(1, T, h, device=dev, dtype=bf, requires_grad=True)
    qkv16 = torch.randn(1, T, 3 * h, device=dev, dtype=bf, requires_grad=True)
    f16 = torch.randn(1, T, ffn, device=dev, dtype=bf, requires_grad=True)
    ops = {
        "linear_bias_fp32_input": (lambda n: [nn.Linear(h, 3 * h, device=dev) for _ in range(n)],
                                   lambda m: m(x32)),
        "linear_nobias_bf16_input": (lambda n: [nn.Linear(h, h, bias=False, device=dev) for _ in range(n)],
                                     lambda m: m(x16)),
        "bias_add_bf16_fp32": (lambda n: [nn.Parameter(torch.zeros(h, device=dev)) for _ in range(n)],
                               lambda b: x16 + b),
        "residual_add_fp32": (lambda n: list(range(n)), lambda i: x32 + x32),
        "fp32norm_layernorm": (lambda n: [Fp32Norm(nn.LayerNorm(h, device=dev)) for _ in range(n)],
                               lambda m: m(x32)),
        "gelu_tanh_bf16": (lambda n: list(range(n)), lambda i: F.gelu(f16, approximate="tanh")),
    }

    def attention(i):
        b, s, _ = qkv16.shape
        q, k, v = qkv16.split([h, h, h], dim=-1)
        q = q.view(b, s, heads, hd).transpose(1, 2)
        k = k.view(b, s, heads, hd).transpose(1, 2)
        v = v.view(b, s, heads, hd).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.transpose(1, 2).reshape(b, s, h)

    from torch.nn.attention import SDPBackend, sdpa_kernel
    ops["attention_block"] = (lambda n: list(range(n)), attention)
    results = {}
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        for name, (make, call) in ops.items():
            try:
                results[name] = timed(torch, name, make, call)
            except Exception as e:
                results[name] = {"kind": "op", "op": name, "error": f"{type(e).__name__}: {e}"}
        # No profiler has run in this process so far.
        emit(path, mul_chain("mul_after_ops"))
        for name, (make, call) in ops.items():
            try:
                if "error" not in results[name]:
                    results[name]["launches_per_call"] = launches(torch, make, call)
            except Exception as e:
                results[name]["profile_error"] = f"{type(e).__name__}: {e}"
            emit(path, results[name])
    # The profiler hypothesis: the mul chain before and after profiler use.
    emit(path, mul_chain("mul_after_profiler"))
    t_end = time.time() + 5
    while time.time() < t_end:
        (mul_x * 2).sum()
    torch.cuda.synchronize()
    emit(path, mul_chain("mul_after_5s_more"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
