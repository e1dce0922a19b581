#!/usr/bin/env python3
"""Does PyTorch's host time per op grow with the tensors? Chains of ops on a (T, 768) bf16 tensor
with requires_grad, for several token counts T: host µs per op of the forward (autograd on) and
per launched kernel of the backward, with the GPU kept busy behind a long torch.cuda._sleep so
that the host never waits (as host_costs.py). The launch-bound reference steps measured 10–15 %
more host time per launch at 1,024 tokens than at 256 (../data/h200-2026-12-01-power,
host.jsonl, eager_nocache host_period_ms / launches), which the simulator's per-op costs miss.

  python3 host_size_scaling.py --out DIR      # DIR/host_size_scaling.jsonl, DIR/meta.txt

Ops: `y * 1.001` (elementwise), `F.linear(y, W_i)` with W_i 768 x 768 bf16 requiring grad (two
GEMMs backward), `F.layer_norm(y, (768,), w_i, b_i)` (normalisation). Medians of REPS repetitions
after WARMUP; launches counted with torch.profiler in one extra run.
"""

import argparse
import os
import sys
import time

from host_timing import emit, med, profile_counts, write_meta  # noqa: E402  (tools/reference/host_timing.py)
import host_timing  # noqa: E402

N_OPS = 100
REPS = 7
WARMUP = 2
HIDDEN = 768
TOKENS = (256, 1024, 4096, 8192)
SLEEP_S = 0.2


def chain(torch, kind, tokens):
    F = torch.nn.functional
    dev, bf = "cuda", torch.bfloat16
    g = torch.Generator(device=dev)
    g.manual_seed(7)
    x = (torch.randn(tokens, HIDDEN, device=dev, generator=g) * 0.5).to(bf).requires_grad_()
    params = []
    if kind == "linear":
        params = [(torch.randn(HIDDEN, HIDDEN, device=dev, generator=g) * HIDDEN ** -0.5).to(bf).requires_grad_()
                  for _ in range(N_OPS)]
        op = lambda y, i: F.linear(y, params[i])  # noqa: E731
    elif kind == "layer_norm":
        ws = [torch.ones(HIDDEN, device=dev, dtype=bf, requires_grad=True) for _ in range(N_OPS)]
        bs = [torch.zeros(HIDDEN, device=dev, dtype=bf, requires_grad=True) for _ in range(N_OPS)]
        params = ws + bs
        op = lambda y, i: F.layer_norm(y, (HIDDEN,), ws[i], bs[i])  # noqa: E731
    else:
        op = lambda y, i: y * 1.001  # noqa: E731

    def forward():
        y = x
        for i in range(N_OPS):
            y = op(y, i)
        return y

    def clear():
        x.grad = None
        for p in params:
            p.grad = None

    return forward, clear


def measure(torch, kind, tokens):
    forward, clear = chain(torch, kind, tokens)
    fwd, bwd, busy = [], [], []
    for rep in range(WARMUP + REPS):
        clear()
        torch.cuda.synchronize()
        done = host_timing.sleep_gpu(torch, SLEEP_S)
        t0 = time.perf_counter_ns()
        y = forward()
        t1 = time.perf_counter_ns()
        loss = y.float().sum()
        b0 = not done.query()
        torch.cuda.synchronize()
        done = host_timing.sleep_gpu(torch, SLEEP_S)
        t2 = time.perf_counter_ns()
        loss.backward()
        t3 = time.perf_counter_ns()
        b1 = not done.query()
        torch.cuda.synchronize()
        del y, loss
        if rep < WARMUP:
            continue
        fwd.append((t1 - t0) / 1e3)
        bwd.append((t3 - t2) / 1e3)
        busy.append(b0 and b1)
    clear()
    holder = {}
    fp = profile_counts(torch, lambda: holder.__setitem__("y", forward()))
    loss = holder.pop("y").float().sum()
    torch.cuda.synchronize()
    bp = profile_counts(torch, lambda: loss.backward())
    fk = fp["launch_calls"] + fp["copy_memset_calls"]
    bk = bp["launch_calls"] + bp["copy_memset_calls"]
    return {"kind": "chain", "op": kind, "tokens": tokens, "hidden": HIDDEN, "n_ops": N_OPS, "reps": REPS,
            "fwd_host_us_per_op": med(fwd) / N_OPS, "bwd_host_us_total": med(bwd),
            "fwd_launches": fk, "bwd_launches": bk,
            "fwd_host_us_per_launch": med(fwd) / fk if fk else None,
            "bwd_host_us_per_launch": med(bwd) / bk if bk else None,
            "gpu_busy_throughout": all(busy),
            "samples_fwd_us": [round(v, 1) for v in fwd], "samples_bwd_us": [round(v, 1) for v in bwd]}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "host_size_scaling.jsonl")
    open(path, "w").close()
    import torch
    write_meta(args.out, torch)
    failures = 0
    for kind in ("elementwise", "linear", "layer_norm"):
        for tokens in TOKENS:
            try:
                emit(path, measure(torch, kind, tokens))
            except Exception as e:  # recorded, the other cases go on
                failures += 1
                emit(path, {"kind": "chain", "op": kind, "tokens": tokens, "error": f"{type(e).__name__}: {e}"})
    print("\n=== host us per op (forward) / per launch (backward) ===")
    import json
    for line in open(path):
        r = json.loads(line)
        if "error" in r:
            print(r["op"], r["tokens"], "ERROR", r["error"])
            continue
        print(f"{r['op']:12s} T={r['tokens']:5d}  fwd {r['fwd_host_us_per_op']:7.2f} us/op  "
              f"bwd {r['bwd_host_us_per_launch']:7.2f} us/launch ({r['bwd_launches']} launches)  "
              f"busy {r['gpu_busy_throughout']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
