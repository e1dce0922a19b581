#!/usr/bin/env python3
"""Tables and per-expert fits from megatron_moe_layer.py's results.jsonl files (no torch needed).

    megatron_moe_analyze.py RUN_DIR [RUN_DIR ...]

Prints, in Markdown: every case of every run (GPU and host time, syncs, kernels, GPU idle time);
the runs side by side; least-squares lines of host time, GPU busy time and kernel count against
the number of experts (the Qwen3-30B-A3B expert-count sweep); the host microbenchmarks.
"""

import json
import os
import sys


def load(run_dir):
    cases, micro, meta = {}, [], None
    with open(os.path.join(run_dir, "results.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "meta":
                meta = r
            elif r.get("kind") == "case":
                cases[r["name"]] = r
            elif r.get("kind") == "micro":
                micro.append(r)
    return meta, cases, micro


def fit(xs, ys):
    """Least-squares line y = a + b x; returns (a, b)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def n_experts(r):
    return r["spec"]["experts"]


def case_rows(cases):
    out = []
    for name, r in cases.items():
        if "gpu_ms" not in r:
            out.append(f"| {name} | {r.get('error') or r.get('skipped')} |")
            continue
        p = r.get("profile", {})
        memcpy = sum(v for k, v in p.get("memcpys", {}).items())
        busy = p.get("gpu_busy_us")
        idle_frac = (1 - busy / p["gpu_span_us"]) if busy and p.get("gpu_span_us") else None
        chk = r.get("check", {}).get("rel_err")
        out.append(
            f"| {name} | {r['gpu_ms']:.1f} ({r['gpu_ms_min']:.1f}–{r['gpu_ms_max']:.1f}) "
            f"| {r['host_ms']:.1f} | {r['host_fwd_ms']:.1f} / {r['host_bwd_ms']:.1f} "
            f"| {r['blocked_ms']:.3f} | {r['syncs']} "
            f"| {p.get('kernels_fwd')} / {p.get('kernels_bwd')} | {memcpy} / {p.get('memsets')} "
            f"| {busy / 1e3:.2f} | {idle_frac * 100:.0f} % | {r['tflops']:.0f} "
            f"| {'' if chk is None else f'{chk:.1e}'} |")
    return out


def main(argv):
    runs = [(d, *load(d)) for d in argv[1:]]
    if not runs:
        print(__doc__)
        return 2
    for d, meta, cases, micro in runs:
        print(f"\n### {d}\n")
        if meta:
            print(f"torch {meta['torch']}, Megatron-Core {meta.get('megatron_core_version')}, "
                  f"stubbed modules {meta.get('stubbed_modules')}, TE {meta.get('megatron_HAVE_TE')}\n")
        print("| case | GPU ms median (min–max) | host ms | host fwd / bwd | blocked ms | syncs | kernels fwd / bwd "
              "| memcpy / memset | GPU busy ms (profiled) | GPU idle | TFLOP/s | rel. err |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for row in case_rows(cases):
            print(row)

    if len(runs) > 1:
        names = [n for n in runs[0][2] if all(n in r[2] and "gpu_ms" in r[2][n] for r in runs)]
        print("\n### GPU ms (median) per run\n")
        print("| case | " + " | ".join(os.path.basename(os.path.normpath(r[0])) for r in runs) + " |")
        print("|---|" + "---|" * len(runs))
        for n in names:
            print(f"| {n} | " + " | ".join(f"{r[2][n]['gpu_ms']:.1f}" for r in runs) + " |")

    print("\n### Per expert (Qwen3-30B-A3B expert, top-8; E = 8, 16, 32, 64, 128)\n")
    print("| run | tokens | host ms per expert (median) | (min) | intercept ms | GPU busy µs per expert | "
          "kernels per expert (fwd / bwd) | memcpy per expert |")
    print("|---|---|---|---|---|---|---|---|")
    for d, meta, cases, micro in runs:
        for t in (1024, 4096):
            pts = [r for n, r in cases.items() if r.get("model") == "qwen3-30b-a3b"
                   and r.get("dispatcher") == "alltoall" and r.get("tokens") == t and "gpu_ms" in r
                   and (n.endswith(f":{t}") or ":E" in n)]
            if len(pts) < 3:
                continue
            xs = [n_experts(r) for r in pts]
            a, b = fit(xs, [r["host_ms"] for r in pts])
            _, bmin = fit(xs, [r["host_ms_min"] for r in pts])
            _, bg = fit(xs, [r["profile"]["gpu_busy_us"] for r in pts])
            _, kf = fit(xs, [r["profile"]["kernels_fwd"] for r in pts])
            _, kb = fit(xs, [r["profile"]["kernels_bwd"] for r in pts])
            _, mc = fit(xs, [sum(r["profile"]["memcpys"].values()) for r in pts])
            print(f"| {os.path.basename(os.path.normpath(d))} | {t} | {b:.3f} | {bmin:.3f} | {a:.1f} | {bg:.1f} "
                  f"| {kf:.2f} / {kb:.2f} | {mc:.2f} |")

    for d, meta, cases, micro in runs:
        if not micro:
            continue
        print(f"\n### Host microbenchmarks, {d} (GPU kept busy; µs per call, median of 7)\n")
        print("| piece | µs per call (min–max) | kernels per call |")
        print("|---|---|---|")
        for m in micro:
            print(f"| {m['name']} | {m['host_us']:.1f} ({m['host_us_min']:.1f}–{m['host_us_max']:.1f}) "
                  f"| {m.get('kernels_per_call')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
