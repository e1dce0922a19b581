#!/usr/bin/env python3
"""Where the host time of a launch-bound PyTorch eager step goes, and what the GPU does when the
same step is replayed from a CUDA graph, all in one session on one machine.

  python3 host_step_phases.py --out DIR [--configs NAME,...] [--steps 30] [--warmup 10]

Writes DIR/host_step_phases.jsonl (one JSON line per measurement, "kind" says which; a failed
measurement is a line with "error"), DIR/graph_kernels_CONFIG.tsv (every kernel of one replayed
graph step: index, start and duration in µs, the gap after the previous kernel, name) and
DIR/meta.txt.

  chain     a chain of N_CHAIN identical ops on a 4 x 1024 bf16 leaf with requires_grad, as
            host_costs.py's chains (GPU kept busy behind torch.cuda._sleep): `mul` (y * 1.001, one
            kernel per op each way: the CPU-speed reference against host_costs.py's run) and the
            ops that launch no kernel in either pass, whose backward nodes (ViewBackward0,
            TransposeBackward0, TBackward0, UnsafeViewBackward0) autograd's engine still runs:
            `view`, `transpose`, `t`, `unsafe_view` (a matmul's reshape of its 3-d output,
            aten::_unsafe_view), and `base` (no op: the loss y.float().sum(), its backward and the
            leaf's gradient alone, to subtract). Host µs per op forward and backward; launches
            counted by torch.profiler in an untimed run.
  phases    each launch-bound reference step of host_launch.py's STEP_CONFIGS (train_step.py's
            model, autocast bf16, fused AdamW, SDPA flash): (1) the host time of each phase alone
            with the GPU kept busy behind a long kernel (forward under autocast; loss.backward();
            optimizer.step(); zero_grad(set_to_none=True)), medians of REPS; (2) the step as
            train_step.run_config times it (CUDA events; median step of `steps` after `warmup`);
            (3) the same loop with host clock marks at each phase, for the host's own periods;
            the autograd graph's nodes counted by type (walked from the loss, no profiler).
  graph     the same step captured whole with torch.cuda.graph (AdamW fused and capturable,
            autocast cache off), as host_launch.py does; replays timed back to back (CUDA events),
            then GRAPH_PROFILED replays under torch.profiler: every kernel of the last one with its
            duration and the gap before it.
Exit codes: 0 ok, 1 a measurement failed (recorded in its line), 2 bad input.
"""

import argparse
import collections
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import host_timing  # noqa: E402  (tools/reference/host_timing.py)
from host_timing import emit, med, profile_counts  # noqa: E402

N_CHAIN = 200
REPS = 7
WARMUP = 2
SLEEP_S = 0.1          # behind which a phase's host time is taken (the longest phase takes < 50 ms)
GRAPH_PROFILED = 3


def sleep_gpu(torch, seconds=SLEEP_S):
    return host_timing.sleep_gpu(torch, seconds)


# ---------------------------------------------------------------------------------------------
# 1. Chains of ops that launch no kernel (and the mul chain as the reference).

def make_chain(torch, kind, n):
    dev, bf = "cuda", torch.bfloat16
    g = torch.Generator(device=dev)
    g.manual_seed(1234)
    x = torch.randn(4, 1024, device=dev, dtype=torch.float32, generator=g).to(bf)
    if kind == "base":  # no op: what the loss, its backward and the leaf's gradient cost alone
        op = None
    elif kind == "mul":
        op = lambda y, i: y * 1.001  # noqa: E731
    elif kind == "view":
        shapes = ((4, 8, 128), (4, 1024))
        op = lambda y, i: y.view(shapes[i % 2])  # noqa: E731
    elif kind == "transpose":
        op = lambda y, i: y.transpose(0, 1)  # noqa: E731
    elif kind == "t":
        op = lambda y, i: y.t()  # noqa: E731
    elif kind == "unsafe_view":
        shapes = ((4, 8, 128), (4, 1024))
        op = lambda y, i: torch.ops.aten._unsafe_view(y, shapes[i % 2])  # noqa: E731
    else:
        raise ValueError(kind)
    x.requires_grad_()

    def forward():
        y = x
        for i in range(n):
            y = op(y, i)
        return y

    def clear():
        x.grad = None

    return forward, clear


def measure_chain(torch, kind):
    n = 0 if kind == "base" else N_CHAIN
    forward, clear = make_chain(torch, kind, n)
    rec = {"kind": "chain", "op": kind, "n_ops": n, "reps": REPS, "warmup": WARMUP}
    fwd, bwd, busy = [], [], []
    for rep in range(WARMUP + REPS):
        clear()
        torch.cuda.synchronize()
        done = sleep_gpu(torch)
        t0 = time.perf_counter_ns()
        y = forward()
        t1 = time.perf_counter_ns()
        loss = y.float().sum() if kind != "mul" else y.sum()
        b1 = not done.query()
        torch.cuda.synchronize()
        done = sleep_gpu(torch)
        t2 = time.perf_counter_ns()
        loss.backward()
        t3 = time.perf_counter_ns()
        b2 = not done.query()
        torch.cuda.synchronize()
        del y, loss
        if rep >= WARMUP:
            fwd.append((t1 - t0) / 1e3)
            bwd.append((t3 - t2) / 1e3)
            busy.append(b1 and b2)
    rec.update({"fwd_host_us_total": med(fwd), "bwd_host_us_total": med(bwd),
                "fwd_host_us_per_op": med(fwd) / n if n else None,
                "bwd_host_us_per_op": med(bwd) / n if n else None, "gpu_busy_throughout": all(busy),
                "samples_fwd_host_us": [round(v, 1) for v in fwd],
                "samples_bwd_host_us": [round(v, 1) for v in bwd]})
    try:
        clear()
        holder = {}
        fp = profile_counts(torch, lambda: holder.__setitem__("y", forward()))
        y = holder.pop("y")
        loss = y.float().sum() if kind != "mul" else y.sum()
        torch.cuda.synchronize()
        bp = profile_counts(torch, lambda: loss.backward())
        rec["fwd_launches"] = fp["launch_calls"] + fp["copy_memset_calls"]
        rec["bwd_launches"] = bp["launch_calls"] + bp["copy_memset_calls"]
        rec["bwd_top_kernels"] = bp["top_kernels"]
    except Exception as e:
        rec["profile_error"] = f"{type(e).__name__}: {e}"
    clear()
    return rec


# ---------------------------------------------------------------------------------------------
# 2. The reference steps' phases.

def count_nodes(loss):
    """Autograd nodes reachable from loss.grad_fn, by type name. The Python objects are kept alive
    while walking: next_functions hands out new wrappers, and a freed one's id() would be reused."""
    seen, keep, stack, counts = set(), [], [loss.grad_fn], collections.Counter()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        keep.append(fn)
        counts[type(fn).__name__] += 1
        for nxt, _ in fn.next_functions:
            stack.append(nxt)
    return dict(counts.most_common())


def measure_phases(torch, ts, hl, name, args):
    cfg = ts.make_config(dict(hl.STEP_CONFIGS[name], name=name), f"STEP_CONFIGS[{name}]")
    rt = ts.Runtime(torch, "cuda")
    DecoderStage = ts.build_model_classes(torch)
    rec = {"kind": "phases", "config": name, "params": ts.parameter_count(cfg)["total"]}
    # (2) as the reference measures it.
    r = ts.run_config(cfg, rt, args.steps, args.warmup, DecoderStage)
    rec["reference"] = {k: r[k] for k in ("step_time_ms", "forward_ms", "backward_ms", "optimizer_ms",
                                          "step_times_ms")}
    torch.cuda.empty_cache()
    model, _ = ts.make_stage_model(cfg, rt, DecoderStage)
    tensors = sum(1 for _ in model.parameters())
    rec["parameter_tensors"] = tensors
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(4321)
    n = args.warmup + args.steps
    batches = [torch.randint(0, cfg.vocab, (cfg.micro_batch, cfg.seq_len + 1), device="cuda", generator=gen)
               for _ in range(n)]

    def fwd(tokens):
        with rt.autocast():
            return model(tokens[:, :-1], tokens[:, 1:])

    with rt.attention_backend():
        for i in range(3):
            loss = fwd(batches[i])
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        # (1) each phase alone, GPU busy.
        samples = collections.defaultdict(list)
        busy = []
        for rep in range(WARMUP + REPS):
            tokens = batches[rep % n]
            torch.cuda.synchronize()
            done = sleep_gpu(torch)
            t0 = time.perf_counter_ns()
            loss = fwd(tokens)
            t1 = time.perf_counter_ns()
            b = not done.query()
            if rep == 0:
                rec["autograd_nodes"] = count_nodes(loss)
            torch.cuda.synchronize()
            done = sleep_gpu(torch)
            t2 = time.perf_counter_ns()
            loss.backward()
            t3 = time.perf_counter_ns()
            b = b and not done.query()
            torch.cuda.synchronize()
            done = sleep_gpu(torch)
            t4 = time.perf_counter_ns()
            opt.step()
            t5 = time.perf_counter_ns()
            opt.zero_grad(set_to_none=True)
            t6 = time.perf_counter_ns()
            b = b and not done.query()
            torch.cuda.synchronize()
            del loss
            if rep < WARMUP:
                continue
            busy.append(b)
            samples["forward"].append((t1 - t0) / 1e3)
            samples["backward"].append((t3 - t2) / 1e3)
            samples["optimizer_step"].append((t5 - t4) / 1e3)
            samples["zero_grad"].append((t6 - t5) / 1e3)
        rec["busy_host_us"] = {k: med(v) for k, v in samples.items()}
        rec["busy_host_us_samples"] = {k: [round(x, 1) for x in v] for k, v in samples.items()}
        rec["gpu_busy_throughout"] = all(busy)
        # (3) the reference loop with host marks (no sync between steps).
        torch.cuda.synchronize()
        marks = []
        evs = []
        for i in range(n):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            evs.append(e)
            m = [time.perf_counter_ns()]
            loss = fwd(batches[i])
            m.append(time.perf_counter_ns())
            loss.backward()
            m.append(time.perf_counter_ns())
            opt.step()
            opt.zero_grad(set_to_none=True)
            m.append(time.perf_counter_ns())
            marks.append(m)
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        evs.append(e)
        t_end = time.perf_counter_ns()
        torch.cuda.synchronize()
        t_sync = time.perf_counter_ns()
    w = args.warmup
    starts = [m[0] for m in marks] + [t_end]
    host_period = [(starts[i + 1] - starts[i]) / 1e3 for i in range(w, n)]
    gpu_period = [evs[i].elapsed_time(evs[i + 1]) * 1e3 for i in range(w, n)]
    rec["loop"] = {
        "host_period_us": med(host_period), "gpu_period_us": med(gpu_period),
        "host_forward_us": med([(m[1] - m[0]) / 1e3 for m in marks[w:]]),
        "host_backward_us": med([(m[2] - m[1]) / 1e3 for m in marks[w:]]),
        "host_optimizer_us": med([(m[3] - m[2]) / 1e3 for m in marks[w:]]),
        "host_lead_at_end_us": (t_sync - t_end) / 1e3,
        "host_period_samples_us": [round(x) for x in host_period],
        "gpu_period_samples_us": [round(x) for x in gpu_period],
    }
    del opt, model, batches
    return rec


# ---------------------------------------------------------------------------------------------
# 3. The graph-replayed step, kernel by kernel.

def measure_graph(torch, ts, hl, name, args, out_dir):
    from torch.profiler import ProfilerActivity, profile
    cfg = ts.make_config(dict(hl.STEP_CONFIGS[name], name=name), f"STEP_CONFIGS[{name}]")
    rt = ts.Runtime(torch, "cuda")
    DecoderStage = ts.build_model_classes(torch)
    torch.cuda.empty_cache()
    model, _ = ts.make_stage_model(cfg, rt, DecoderStage)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(4321)
    batches = [torch.randint(0, cfg.vocab, (cfg.micro_batch, cfg.seq_len + 1), device="cuda", generator=gen)
               for _ in range(args.warmup + args.steps)]
    ac = lambda: torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False)  # noqa: E731
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True, capturable=True)
    static = batches[0].clone()
    rec = {"kind": "graph", "config": name}
    with rt.attention_backend():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                with ac():
                    loss = model(static[:, :-1], static[:, 1:])
                loss.backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            with ac():
                static_loss = model(static[:, :-1], static[:, 1:])
            static_loss.backward()
            opt.step()
        for i in range(args.warmup):
            static.copy_(batches[i])
            g.replay()
        torch.cuda.synchronize()
        evs = []
        for i in range(args.steps):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            evs.append(e)
            static.copy_(batches[args.warmup + i])
            g.replay()
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        evs.append(e)
        torch.cuda.synchronize()
        period = [evs[i].elapsed_time(evs[i + 1]) * 1e3 for i in range(args.steps)]
        rec["step_us"] = med(period)
        rec["step_us_samples"] = [round(x, 1) for x in period]
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(GRAPH_PROFILED):
                static.copy_(batches[i])
                g.replay()
                torch.cuda.synchronize()
                time.sleep(0.005)  # replays apart by > 5 ms: split below by the gaps
    kernels = sorted(((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                      if str(getattr(e, "device_type", "")).endswith("CUDA")), key=lambda k: k[0])
    rec["profiled_gpu_events"] = len(kernels)
    # The last replay: the events after the last gap of more than 2 ms, less its leading token copy.
    first = 0
    for i in range(1, len(kernels)):
        if kernels[i][0] - kernels[i - 1][1] > 2000:
            first = i
    last = kernels[first:]
    if last and "memcpy" in last[0][2].lower():
        rec["dropped_leading"] = last[0][2]
        last = last[1:]
    rows = []
    prev_end = None
    for i, (a, b, nm) in enumerate(last):
        gap = (a - prev_end) if prev_end is not None else 0.0
        rows.append((i, a - last[0][0], b - a, gap, nm))
        prev_end = b
    path = os.path.join(out_dir, f"graph_kernels_{name}.tsv")
    with open(path, "w") as f:
        f.write("i\tstart_us\tdur_us\tgap_us\tname\n")
        for i, a, d, gp, nm in rows:
            f.write(f"{i}\t{a:.3f}\t{d:.3f}\t{gp:.3f}\t{nm[:200]}\n")
    if rows:
        durs = [r[2] for r in rows]
        gaps = [r[3] for r in rows[1:]]
        rec["profiled_replay"] = {"kernels": len(rows), "span_us": rows[-1][1] + rows[-1][2],
                                  "kernel_us_sum": sum(durs), "gap_us_sum": sum(gaps),
                                  "gap_us_median": med(gaps), "dur_us_median": med(durs)}
    del g, opt, model
    return rec


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--configs", default="")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--skip", default="", help="comma-separated parts to skip: chain, phases, graph")
    args = p.parse_args(argv)
    import torch
    import train_step as ts
    import host_launch as hl
    names = [c for c in args.configs.split(",") if c] or list(hl.STEP_CONFIGS)
    for c in names:
        if c not in hl.STEP_CONFIGS:
            print(f"host_step_phases.py: error: --configs: {c!r}; known: {', '.join(hl.STEP_CONFIGS)}",
                  file=sys.stderr)
            return 2
    skip = set(s for s in args.skip.split(",") if s)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "host_step_phases.jsonl")
    host_timing.write_meta(args.out, torch)
    failures = 0
    t_start = time.time()
    if "chain" not in skip:
        for kind in ("mul", "base", "view", "transpose", "t", "unsafe_view"):
            try:
                emit(path, measure_chain(torch, kind))
            except Exception as e:
                failures += 1
                emit(path, {"kind": "chain", "op": kind, "error": f"{type(e).__name__}: {e}"})
    for name in names:
        if "phases" not in skip:
            try:
                emit(path, measure_phases(torch, ts, hl, name, args))
            except Exception as e:
                failures += 1
                emit(path, {"kind": "phases", "config": name, "error": f"{type(e).__name__}: {e}"})
        if "graph" not in skip:
            try:
                emit(path, measure_graph(torch, ts, hl, name, args, args.out))
            except Exception as e:
                failures += 1
                emit(path, {"kind": "graph", "config": name, "error": f"{type(e).__name__}: {e}"})
    if "chain" not in skip:  # the CPU-speed reference again at the end
        try:
            r = measure_chain(torch, "mul")
            r["op"] = "mul_end"
            emit(path, r)
        except Exception as e:
            failures += 1
    print(f"host_step_phases.py: {time.time() - t_start:.1f} s, {failures} failures", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
