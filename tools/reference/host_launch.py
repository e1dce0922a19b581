#!/usr/bin/env python3
"""The host side of PyTorch on one GPU: what an eager op and a graph-replayed kernel cost, how many
launches the queue takes behind a long kernel, and launch-bound training steps, eager and as one
CUDA graph.

  python3 host_launch.py ops --out FILE.jsonl
  python3 host_launch.py step --config NAME --out FILE.jsonl [--steps 30] [--warmup 10]
  python3 host_launch.py list

`ops` (one JSON line per measurement, "kind" says which):
  op     for each tiny op: host µs per call from Python with the GPU idle at the start (the GPU then
         runs at the host's pace), host µs per call while a long kernel keeps the GPU busy (pure
         dispatch cost), GPU µs per op for the queued ops once the long kernel ends (the GPU's own
         pace), and the same ops captured in a CUDA graph: GPU µs per replayed kernel and host µs
         per replay call; kernels per call counted with torch.profiler.
  queue  host ns per launch call for 8,192 launches enqueued behind a ~300 ms torch.cuda._sleep:
         the index of the first call that blocks (> 1 ms) is the launch-queue depth.
`step`: one launch-bound reference step (train_step.py's model, AdamW fused) eager through
  train_step.run_config; the same step in a loop of our own with autocast's cache off (as graph
  capture needs) with host and GPU periods; one profiled eager step (launches per phase, GPU busy
  time); and the whole step (forward, backward, AdamW(fused, capturable)) captured as one CUDA graph
  and replayed back to back.
Exit codes: 0 ok, 1 a measurement failed (recorded in its line), 2 bad input.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import host_timing  # noqa: E402  (tools/reference/host_timing.py)
from host_timing import emit  # noqa: E402

# Launch-bound configurations: 100–400 M parameters at short sequences and micro-batches of 1–2.
# Shapes: GPT-3 Small / Medium (Brown et al. 2020, Table 2.1) with the GPT-2 vocabulary, and a
# small Llama-style GQA decoder.
GPT_125M = {"layers": 12, "hidden": 768, "heads": 12, "ffn_hidden": 3072, "vocab": 50257, "mlp": "gelu",
            "norm": "layernorm", "positions": "learned", "bias": True, "tie_embeddings": True}
GPT_350M = {"layers": 24, "hidden": 1024, "heads": 16, "ffn_hidden": 4096, "vocab": 50257, "mlp": "gelu",
            "norm": "layernorm", "positions": "learned", "bias": True, "tie_embeddings": True}
LLAMA_220M = {"layers": 16, "hidden": 1024, "heads": 16, "kv_heads": 4, "ffn_hidden": 2816, "vocab": 32000,
              "mlp": "swiglu", "norm": "rmsnorm", "positions": "rope", "bias": False, "tie_embeddings": True}
STEP_CONFIGS = {
    "gpt-125m-s256-b1": dict(GPT_125M, seq_len=256, micro_batch=1),
    "gpt-125m-s512-b2": dict(GPT_125M, seq_len=512, micro_batch=2),
    "gpt-350m-s256-b1": dict(GPT_350M, seq_len=256, micro_batch=1),
    "gpt-350m-s512-b2": dict(GPT_350M, seq_len=512, micro_batch=2),
    "llama-220m-s512-b1": dict(LLAMA_220M, seq_len=512, micro_batch=1),
}
N_OPS = 400
REPS = 7
def sleep_cycles(seconds):
    """torch.cuda._sleep's cycle count for `seconds` at the maximum SM clock (host_timing.MAX_SM_HZ)."""
    return int(seconds * host_timing.MAX_SM_HZ)


# ---------------------------------------------------------------------------------------------

def tiny_ops(torch):
    F = torch.nn.functional
    dev = "cuda"
    x = torch.randn(256, device=dev)
    y = torch.randn(256, device=dev)
    z = torch.empty(256, device=dev)
    a = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    b = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    h = torch.randn(4, 1024, device=dev)
    w = torch.randn(1024, 1024, device=dev)
    lst = [torch.randn(256, device=dev) for _ in range(32)]
    ops = {
        "mul_inplace": (lambda: x.mul_(0.999), None),
        "add_out": (lambda: torch.add(x, y, out=z), None),
        "add_alloc": (lambda: x + y, None),
        "mm_64_bf16": (lambda: torch.mm(a, b), None),
        "layer_norm_4x1024": (lambda: F.layer_norm(h, (1024,)), None),
        "linear_4x1024_autocast": (lambda: F.linear(h, w), "autocast"),
        "foreach_mul_32": (lambda: torch._foreach_mul_(lst, 0.999), None),
        "cuda_sleep_0": (lambda: torch.cuda._sleep(0), None),
    }
    return ops


def ctx_for(torch, kind):
    import contextlib
    if kind == "autocast":
        return torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False)
    return contextlib.nullcontext()


def kernels_per_call(torch, fn, ctx, calls=20):
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            with ctx:
                for _ in range(calls):
                    fn()
            torch.cuda.synchronize()
        n = sum(1 for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA"))
        return n / calls
    except Exception as e:
        return f"n/a ({type(e).__name__}: {e})"


def measure_op(torch, name, fn, kind):
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    rec = {"kind": "op", "op": name, "n": N_OPS, "reps": REPS}
    with ctx_for(torch, kind):
        for _ in range(100):
            fn()
    torch.cuda.synchronize()
    idle_host, idle_gpu, ahead_host, queued_gpu = [], [], [], []
    for _ in range(REPS):
        # GPU idle at the start: the GPU follows the host.
        torch.cuda.synchronize()
        a, b = ev(), ev()
        with ctx_for(torch, kind):
            t0 = time.perf_counter()
            a.record()
            for _ in range(N_OPS):
                fn()
            b.record()
            t1 = time.perf_counter()
        torch.cuda.synchronize()
        idle_host.append((t1 - t0) / N_OPS * 1e6)
        idle_gpu.append(a.elapsed_time(b) / N_OPS * 1e3)
        # Behind a long kernel: the host only enqueues; afterwards the GPU runs the queue at its pace.
        torch.cuda.synchronize()
        torch.cuda._sleep(sleep_cycles(0.03))
        a, b = ev(), ev()
        with ctx_for(torch, kind):
            a.record()
            t0 = time.perf_counter()
            for _ in range(N_OPS):
                fn()
            t1 = time.perf_counter()
            b.record()
        torch.cuda.synchronize()
        ahead_host.append((t1 - t0) / N_OPS * 1e6)
        queued_gpu.append(a.elapsed_time(b) / N_OPS * 1e3)
    rec.update({"host_us_per_call_gpu_idle": statistics.median(idle_host),
                "gpu_us_per_call_gpu_idle": statistics.median(idle_gpu),
                "host_us_per_call_gpu_busy": statistics.median(ahead_host),
                "gpu_us_per_call_queued": statistics.median(queued_gpu),
                "samples_host_us_gpu_busy": [round(v, 3) for v in ahead_host],
                "samples_gpu_us_queued": [round(v, 3) for v in queued_gpu]})
    rec["kernels_per_call"] = kernels_per_call(torch, fn, ctx_for(torch, kind))
    # CUDA graph of N_OPS calls.
    try:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            with ctx_for(torch, kind):
                for _ in range(3):
                    fn()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            with ctx_for(torch, kind):
                for _ in range(N_OPS):
                    fn()
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        rep_gpu, rep_host, rep_queued = [], [], []
        for _ in range(REPS):
            torch.cuda.synchronize()
            a, b = ev(), ev()
            t0 = time.perf_counter()
            a.record()
            g.replay()
            b.record()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            rep_gpu.append(a.elapsed_time(b) * 1e3)
            rep_host.append((t1 - t0) * 1e6)
            torch.cuda._sleep(sleep_cycles(0.01))
            a, b = ev(), ev()
            a.record()
            g.replay()
            b.record()
            torch.cuda.synchronize()
            rep_queued.append(a.elapsed_time(b) * 1e3)
        kpc = rec["kernels_per_call"] if isinstance(rec["kernels_per_call"], float) and rec["kernels_per_call"] > 0 else 1.0
        rec.update({"graph_gpu_us_per_call": statistics.median(rep_gpu) / N_OPS,
                    "graph_gpu_us_per_call_queued": statistics.median(rep_queued) / N_OPS,
                    "graph_gpu_us_per_kernel_queued": statistics.median(rep_queued) / N_OPS / kpc,
                    "graph_host_us_per_replay": statistics.median(rep_host),
                    "graph_replay_gpu_us_total": statistics.median(rep_gpu)})
        del g
    except Exception as e:
        rec["graph_error"] = f"{type(e).__name__}: {e}"
    return rec


def measure_queue(torch, name, fn, n=8192, sleep_s=0.3):
    torch.cuda.synchronize()
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    dts = [0] * n
    torch.cuda._sleep(sleep_cycles(sleep_s))
    t_start = time.perf_counter_ns()
    for i in range(n):
        t = time.perf_counter_ns()
        fn()
        dts[i] = time.perf_counter_ns() - t
    t_enq = time.perf_counter_ns()
    torch.cuda.synchronize()
    t_end = time.perf_counter_ns()
    block = next((i for i, d in enumerate(dts) if d > 1_000_000), None)
    before = dts[:block] if block else dts
    after = dts[block + 1:] if block is not None else []
    rec = {"kind": "queue", "op": name, "launches": n, "sleep_s_requested": sleep_s,
           "first_blocking_index": block, "queue_depth": block,
           "blocking_call_ms": dts[block] / 1e6 if block is not None else None,
           "calls_over_1ms": sum(1 for d in dts if d > 1_000_000),
           "host_us_per_launch_before_block_median": statistics.median(before) / 1e3 if before else None,
           "host_us_per_launch_after_block_median": statistics.median(after) / 1e3 if after else None,
           "enqueue_all_ms": (t_enq - t_start) / 1e6, "until_sync_ms": (t_end - t_start) / 1e6,
           "dt_us": [round(d / 1e3, 1) for d in dts]}
    return rec


def cmd_ops(args):
    import torch
    torch.manual_seed(0)
    info = {"kind": "host_info", "torch": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "python": sys.version.split()[0],
            "cpu": _cpu_model(), "cores": os.cpu_count(), "n_ops": N_OPS, "reps": REPS}
    emit(args.out, info)
    failures = 0
    ops = tiny_ops(torch)
    for name, (fn, kind) in ops.items():
        try:
            emit(args.out, measure_op(torch, name, fn, kind))
        except Exception as e:
            failures += 1
            emit(args.out, {"kind": "op", "op": name, "error": f"{type(e).__name__}: {e}"})
    for name in ("cuda_sleep_0", "mul_inplace", "foreach_mul_32"):
        fn, kind = ops[name]
        for rep in range(2):
            try:
                rec = measure_queue(torch, name, fn)
                rec["rep"] = rep
                emit(args.out, rec)
            except Exception as e:
                failures += 1
                emit(args.out, {"kind": "queue", "op": name, "error": f"{type(e).__name__}: {e}"})
    return 1 if failures else 0


def _cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


# ---------------------------------------------------------------------------------------------

def cmd_step(args):
    sys.path.insert(0, HERE)
    import train_step as ts
    import torch
    if args.config not in STEP_CONFIGS:
        print(f"host_launch.py: error: --config {args.config!r}; known: {', '.join(STEP_CONFIGS)}", file=sys.stderr)
        return 2
    cfg = ts.make_config(dict(STEP_CONFIGS[args.config], name=args.config), f"STEP_CONFIGS[{args.config}]")
    rt = ts.Runtime(torch, "cuda")
    DecoderStage = ts.build_model_classes(torch)
    rec = {"kind": "step", "config": args.config, "params": ts.parameter_count(cfg)["total"],
           "model": STEP_CONFIGS[args.config], "torch": torch.__version__, "cpu": _cpu_model(),
           "tokens_per_step": cfg.micro_batch * cfg.seq_len}
    failures = 0
    # 1. Eager, exactly as the reference step measures it.
    try:
        r = ts.run_config(cfg, rt, args.steps, args.warmup, DecoderStage)
        rec["eager_reference"] = {k: r[k] for k in ("step_time_ms", "step_busy_ms", "forward_ms", "backward_ms",
                                                    "optimizer_ms", "step_times_ms", "peak_allocated_gib", "loss")}
    except Exception as e:
        failures += 1
        rec["eager_reference_error"] = f"{type(e).__name__}: {e}"
    # 2–4. Our own loop (autocast cache off, as capture needs), profiled step, graph.
    try:
        rec.update(own_loops(torch, ts, rt, cfg, DecoderStage, args))
    except Exception as e:
        import traceback
        traceback.print_exc()
        failures += 1
        rec["own_loop_error"] = f"{type(e).__name__}: {e}"
    emit(args.out, rec)
    return 1 if failures else 0


def own_loops(torch, ts, rt, cfg, DecoderStage, args):
    out = {}
    torch.cuda.empty_cache()
    model, _ = ts.make_stage_model(cfg, rt, DecoderStage)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(4321)
    n = args.warmup + args.steps
    batches = [torch.randint(0, cfg.vocab, (cfg.micro_batch, cfg.seq_len + 1), device="cuda", generator=gen)
               for _ in range(n)]
    ac = lambda: torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False)  # noqa: E731
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731

    # Eager loop, no sync between steps; host time at each step start.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)

    def eager_step(tokens, marks=None):
        with ac():
            loss = model(tokens[:, :-1], tokens[:, 1:])
        if marks is not None:
            marks.append(("forward_end", time.perf_counter()))
        loss.backward()
        if marks is not None:
            marks.append(("backward_end", time.perf_counter()))
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    with rt.attention_backend():
        for i in range(args.warmup):
            eager_step(batches[i])
        torch.cuda.synchronize()
        evs, host = [], []
        host_marks = []
        for i in range(args.steps):
            e = ev()
            e.record()
            evs.append(e)
            host.append(time.perf_counter())
            eager_step(batches[args.warmup + i], host_marks if i == args.steps - 1 else None)
        e = ev()
        e.record()
        evs.append(e)
        host.append(time.perf_counter())
        torch.cuda.synchronize()
        t_sync = time.perf_counter()
    gpu_period = [evs[i].elapsed_time(evs[i + 1]) for i in range(args.steps)]
    host_period = [(host[i + 1] - host[i]) * 1e3 for i in range(args.steps)]
    out["eager_nocache"] = {"step_time_ms": statistics.median(gpu_period),
                            "host_period_ms": statistics.median(host_period),
                            "step_times_ms": [round(x, 3) for x in gpu_period],
                            "host_lead_at_end_ms": (t_sync - host[-1]) * 1e3,
                            "last_step_host_phases_ms": {k: round((t - host[-2]) * 1e3, 3) for k, t in host_marks}}

    # One profiled eager step: launches per phase (host clock), kernels and GPU busy time.
    try:
        out["eager_profile"] = profile_step(torch, eager_step, batches[0], rt)
    except Exception as e:
        out["eager_profile_error"] = f"{type(e).__name__}: {e}"

    # Whole step as one CUDA graph: AdamW(fused, capturable); grads allocated inside the capture.
    try:
        del opt
        opt_g = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True, capturable=True)
        static = batches[0].clone()
        with rt.attention_backend():
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for i in range(3):
                    opt_g.zero_grad(set_to_none=True)
                    with ac():
                        loss = model(static[:, :-1], static[:, 1:])
                    loss.backward()
                    opt_g.step()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            opt_g.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            with torch.cuda.graph(g):
                with ac():
                    static_loss = model(static[:, :-1], static[:, 1:])
                static_loss.backward()
                opt_g.step()
            t_capture = time.perf_counter() - t0
            for i in range(args.warmup):
                static.copy_(batches[i])
                g.replay()
            torch.cuda.synchronize()
            evs, host = [], []
            for i in range(args.steps):
                e = ev()
                e.record()
                evs.append(e)
                t = time.perf_counter()
                static.copy_(batches[args.warmup + i])
                g.replay()
                host.append(time.perf_counter() - t)
            e = ev()
            e.record()
            evs.append(e)
            torch.cuda.synchronize()
            loss_val = float(static_loss.float().item())
        period = [evs[i].elapsed_time(evs[i + 1]) for i in range(args.steps)]
        out["graph"] = {"step_time_ms": statistics.median(period), "step_times_ms": [round(x, 3) for x in period],
                        "host_us_per_step_copy_and_replay": statistics.median(host) * 1e6,
                        "capture_s": t_capture, "loss": loss_val}
        try:
            out["graph"]["nodes"] = g.num_nodes() if hasattr(g, "num_nodes") else None
        except Exception:
            pass
    except Exception as e:
        import traceback
        traceback.print_exc()
        out["graph_error"] = f"{type(e).__name__}: {e}"
    return out


LAUNCH_NAMES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                "cudaMemcpyAsync", "cudaMemsetAsync", "cudaLaunchCooperativeKernel")


def profile_step(torch, step_fn, tokens, rt):
    from torch.profiler import ProfilerActivity, profile, record_function
    torch.cuda.synchronize()
    with rt.attention_backend():
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with record_function("phase_step"):
                step_fn(tokens)
            torch.cuda.synchronize()
    events = list(prof.events())
    launches = [e for e in events if e.name in LAUNCH_NAMES]
    kernels = [e for e in events if str(getattr(e, "device_type", "")).endswith("CUDA")]
    runtime_names = {}
    for e in launches:
        runtime_names[e.name] = runtime_names.get(e.name, 0) + 1
    busy = _union_us([(e.time_range.start, e.time_range.end) for e in kernels])
    span = (max(e.time_range.end for e in kernels) - min(e.time_range.start for e in kernels)) if kernels else None
    kernel_names = {}
    for e in kernels:
        key = e.name[:60]
        kernel_names[key] = kernel_names.get(key, 0) + 1
    top = sorted(kernel_names.items(), key=lambda kv: -kv[1])[:15]
    host_launch_us = [e.time_range.end - e.time_range.start for e in launches]
    return {"launch_calls": len(launches), "launch_calls_by_name": runtime_names, "gpu_kernels_and_copies": len(kernels),
            "gpu_busy_ms": busy / 1e3, "gpu_span_ms": span / 1e3 if span else None,
            "launch_api_us_median": statistics.median(host_launch_us) if host_launch_us else None,
            "top_kernels": top, "note": "one step under torch.profiler (its own overhead included in the span)"}


def _union_us(intervals):
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("ops")
    o.add_argument("--out", required=True)
    s = sub.add_parser("step")
    s.add_argument("--config", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--steps", type=int, default=30)
    s.add_argument("--warmup", type=int, default=10)
    sub.add_parser("list")
    args = p.parse_args(argv)
    if args.cmd == "list":
        sys.path.insert(0, HERE)
        import train_step as ts
        for name, c in STEP_CONFIGS.items():
            cfg = ts.make_config(dict(c, name=name), name)
            print(f"{name:22s} {ts.parameter_count(cfg)['total'] / 1e6:7.1f} M params  seq {cfg.seq_len} mb {cfg.micro_batch}")
        return 0
    if args.cmd == "ops":
        return cmd_ops(args)
    if args.steps < 1 or args.warmup < 1:
        print("host_launch.py: error: --steps and --warmup must be >= 1", file=sys.stderr)
        return 2
    return cmd_step(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
