#!/usr/bin/env python3
"""Host-side costs of PyTorch on one GPU that host_launch.py does not cover: autograd's backward
per op and per launched kernel, device-to-host synchronisation, an NCCL call at world size 1, and
the fused / foreach AdamW step.

  python3 host_costs.py --out DIR

Writes DIR/host_costs.jsonl (one JSON line per measurement, "kind" says which; a failed
measurement is a line with "error") and DIR/meta.txt (torch, CUDA, nvidia-smi, lscpu, date).

Method (as host_launch.py): a long torch.cuda._sleep kernel keeps the GPU busy so the host runs
ahead and its time is pure dispatch cost; host time with time.perf_counter_ns; GPU time with CUDA
events; an event recorded right after the sleep is queried when the timed region ends, so each
sample says whether the GPU was still busy throughout ("gpu_busy_throughout"). Medians over REPS
repetitions after warm-up; bf16 unless said; small tensors so the GPU work is tiny.

  chain   a chain of N_CHAIN identical ops on a leaf with requires_grad (each op with its own
          weights where it has any): forward host µs per op with autograd recording and under
          no_grad, host µs of loss.backward() (loss = y.sum()) per op and per launched kernel,
          GPU µs of the queued backward, kernels per op counted with torch.profiler in a
          separate untimed run.
  sync    t.item() on a 1-element GPU tensor and torch.cuda.synchronize(), GPU idle (and after one
          tiny kernel).
  nccl    dist.all_reduce of 1 MiB bf16 at world size 1 (tcp://127.0.0.1:29512), host µs per call
          with the GPU busy, sync and async_op=True (and work.wait()), and the idle round trip.
  optim   AdamW(fused=True) and AdamW(foreach=True) step over 100 fp32 1024x1024 parameters with
          grads set: host µs per step with the GPU busy, GPU µs of the step, kernels per step.
Exit codes: 0 ok, 1 a measurement failed (recorded in its line).
"""

import argparse
import json
import os
import sys
import time

N_CHAIN = 200
REPS = 7
WARMUP = 2
SYNC_CALLS = 200
NCCL_CALLS_PER_REP = 40   # 5 x 40 = 200 calls behind a sleep each, well inside the launch queue
NCCL_REPS = 5
OPT_PARAMS = 100
SLEEP_S = 0.1

from host_timing import emit, med, profile_counts  # noqa: E402  (tools/reference/host_timing.py)
import host_timing  # noqa: E402


def sleep_gpu(torch, seconds=SLEEP_S):
    """Queue a long kernel; return an event that completes when it ends."""
    return host_timing.sleep_gpu(torch, seconds)


def ev(torch):
    return torch.cuda.Event(enable_timing=True)


# ---------------------------------------------------------------------------------------------
# 1. Autograd chains

def make_chain(torch, kind, n):
    F = torch.nn.functional
    dev, bf = "cuda", torch.bfloat16
    g = torch.Generator(device=dev)
    g.manual_seed(1234)

    def rnd(*shape, scale=1.0):
        return (torch.randn(*shape, device=dev, dtype=torch.float32, generator=g) * scale).to(bf)

    params = []
    if kind == "mul":
        x = rnd(4, 1024)
        desc = "y = y * 1.001, 4x1024 bf16"
        op = lambda y, i: y * 1.001  # noqa: E731
    elif kind == "mm_64":
        x = rnd(64, 64)
        params = [rnd(64, 64, scale=64 ** -0.5).requires_grad_() for _ in range(n)]
        desc = "y = torch.mm(y, w_i), 64x64 bf16, own w_i per op (requires_grad)"
        op = lambda y, i: torch.mm(y, params[i])  # noqa: E731
    elif kind == "layer_norm":
        x = rnd(4, 1024)
        desc = "y = F.layer_norm(y, (1024,)), 4x1024 bf16, no affine"
        op = lambda y, i: F.layer_norm(y, (1024,))  # noqa: E731
    elif kind == "layer_norm_affine":
        x = rnd(4, 1024)
        ws = [torch.ones(1024, device=dev, dtype=bf).requires_grad_() for _ in range(n)]
        bs = [torch.zeros(1024, device=dev, dtype=bf).requires_grad_() for _ in range(n)]
        params = ws + bs
        desc = "y = F.layer_norm(y, (1024,), w_i, b_i), 4x1024 bf16, own weight and bias per op"
        op = lambda y, i: F.layer_norm(y, (1024,), ws[i], bs[i])  # noqa: E731
    elif kind == "linear":
        x = rnd(4, 1024)
        params = [rnd(1024, 1024, scale=1024 ** -0.5).requires_grad_() for _ in range(n)]
        desc = "y = F.linear(y, W_i), 4x1024 . 1024x1024 bf16, no autocast, own W_i per op, no bias"
        op = lambda y, i: F.linear(y, params[i])  # noqa: E731
    else:
        raise ValueError(kind)
    x.requires_grad_()

    def forward():
        y = x
        for i in range(n):
            y = op(y, i)
        return y

    def clear_grads():
        x.grad = None
        for p in params:
            p.grad = None

    return desc, forward, clear_grads


def measure_chain(torch, kind):
    n = N_CHAIN
    desc, forward, clear_grads = make_chain(torch, kind, n)
    rec = {"kind": "chain", "op": kind, "desc": desc, "n_ops": n, "reps": REPS, "warmup": WARMUP}
    fwd_host, fwd_nograd_host, fwd_gpu, bwd_host, bwd_gpu = [], [], [], [], []
    busy_fwd, busy_nograd, busy_bwd = [], [], []
    for rep in range(WARMUP + REPS):
        clear_grads()
        torch.cuda.synchronize()
        # Forward with autograd recording, GPU busy behind a long kernel.
        done = sleep_gpu(torch)
        a, b = ev(torch), ev(torch)
        a.record()
        t0 = time.perf_counter_ns()
        y = forward()
        t1 = time.perf_counter_ns()
        b.record()
        bf = not done.query()
        loss = y.sum()
        torch.cuda.synchronize()
        f_gpu = a.elapsed_time(b) * 1e3
        # Backward, GPU busy behind a long kernel.
        done = sleep_gpu(torch)
        c, d = ev(torch), ev(torch)
        c.record()
        t2 = time.perf_counter_ns()
        loss.backward()
        t3 = time.perf_counter_ns()
        d.record()
        bb = not done.query()
        torch.cuda.synchronize()
        b_gpu = c.elapsed_time(d) * 1e3
        del y, loss
        # Forward under no_grad, GPU busy.
        done = sleep_gpu(torch)
        with torch.no_grad():
            t4 = time.perf_counter_ns()
            y = forward()
            t5 = time.perf_counter_ns()
        bn = not done.query()
        del y
        torch.cuda.synchronize()
        if rep < WARMUP:
            continue
        fwd_host.append((t1 - t0) / 1e3)
        bwd_host.append((t3 - t2) / 1e3)
        fwd_nograd_host.append((t5 - t4) / 1e3)
        fwd_gpu.append(f_gpu)
        bwd_gpu.append(b_gpu)
        busy_fwd.append(bf)
        busy_bwd.append(bb)
        busy_nograd.append(bn)
    rec.update({
        "fwd_host_us_per_op": med(fwd_host) / n,
        "fwd_nograd_host_us_per_op": med(fwd_nograd_host) / n,
        "bwd_host_us_total": med(bwd_host),
        "bwd_host_us_per_op": med(bwd_host) / n,
        "fwd_gpu_us_per_op_queued": med(fwd_gpu) / n,
        "bwd_gpu_us_total_queued": med(bwd_gpu),
        "gpu_busy_throughout": {"fwd": all(busy_fwd), "bwd": all(busy_bwd), "fwd_nograd": all(busy_nograd)},
        "samples_fwd_host_us": [round(v, 1) for v in fwd_host],
        "samples_bwd_host_us": [round(v, 1) for v in bwd_host],
        "samples_fwd_nograd_host_us": [round(v, 1) for v in fwd_nograd_host],
        "samples_bwd_gpu_us": [round(v, 1) for v in bwd_gpu],
    })
    # Kernel counts, untimed: forward and backward separately.
    try:
        clear_grads()
        holder = {}
        rec["fwd_profile"] = profile_counts(torch, lambda: holder.__setitem__("y", forward()))
        loss = holder.pop("y").sum()
        torch.cuda.synchronize()
        bp = profile_counts(torch, lambda: loss.backward())
        rec["bwd_profile"] = bp
        del loss
        k = bp["launch_calls"] + bp["copy_memset_calls"]
        rec["bwd_launches_total"] = k
        rec["bwd_launches_per_op"] = k / n
        rec["bwd_gpu_kernels_per_op"] = (bp["gpu_kernels"] + bp["gpu_copies_memsets"]) / n
        rec["bwd_host_us_per_launch"] = med(bwd_host) / k if k else None
        fk = rec["fwd_profile"]["launch_calls"] + rec["fwd_profile"]["copy_memset_calls"]
        rec["fwd_launches_per_op"] = fk / n
        rec["fwd_host_us_per_launch"] = med(fwd_host) / fk if fk else None
    except Exception as e:
        rec["profile_error"] = f"{type(e).__name__}: {e}"
    clear_grads()
    return rec


# ---------------------------------------------------------------------------------------------
# 2. Device-to-host synchronisation

def time_calls(fn, n, pre=None):
    out = []
    for _ in range(n):
        if pre is not None:
            pre()
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1e3)
    return out


def measure_sync(torch):
    recs = []
    t = torch.ones(1, device="cuda", dtype=torch.bfloat16)
    x = torch.ones(256, device="cuda")
    cases = {
        "item_idle": (lambda: t.item(), None),
        "synchronize_idle": (lambda: torch.cuda.synchronize(), None),
        "item_after_tiny_kernel": (lambda: (t + 1).item(), None),
        "mul_then_synchronize": (lambda: (x.mul_(1.0), torch.cuda.synchronize()), None),
        "tiny_kernel_launch_only": (lambda: x.mul_(1.0), None),
    }
    for name, (fn, _) in cases.items():
        try:
            torch.cuda.synchronize()
            for _ in range(50):
                fn()
            torch.cuda.synchronize()
            per_rep, all_s = [], []
            for _ in range(5):
                s = time_calls(fn, SYNC_CALLS, pre=None)
                torch.cuda.synchronize()
                per_rep.append(med(s))
                all_s += s
            recs.append({"kind": "sync", "op": name, "calls": SYNC_CALLS, "reps": 5,
                         "host_us_median": med(all_s), "host_us_rep_medians": [round(v, 2) for v in per_rep],
                         "host_us_p10": sorted(all_s)[len(all_s) // 10],
                         "host_us_p90": sorted(all_s)[9 * len(all_s) // 10],
                         "note": "GPU idle at each call (the tiny-kernel cases launch one kernel first)"})
        except Exception as e:
            recs.append({"kind": "sync", "op": name, "error": f"{type(e).__name__}: {e}"})
    return recs


# ---------------------------------------------------------------------------------------------
# 3. NCCL at world size 1

def measure_nccl(torch):
    import torch.distributed as dist
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    recs = []
    dev = torch.device("cuda", 0)
    t_init0 = time.perf_counter_ns()
    try:
        dist.init_process_group(backend="nccl", init_method="tcp://127.0.0.1:29512", world_size=1, rank=0,
                                device_id=dev)
    except TypeError:
        dist.init_process_group(backend="nccl", init_method="tcp://127.0.0.1:29512", world_size=1, rank=0)
    t_init1 = time.perf_counter_ns()
    try:
        buf = torch.randn(512 * 1024, device=dev).to(torch.bfloat16)  # 1 MiB
        t0 = time.perf_counter_ns()
        dist.all_reduce(buf)
        torch.cuda.synchronize()
        first_ms = (time.perf_counter_ns() - t0) / 1e6
        for _ in range(50):
            dist.all_reduce(buf)
        torch.cuda.synchronize()
        info = {"kind": "nccl_info", "init_process_group_ms": (t_init1 - t_init0) / 1e6,
                "first_all_reduce_ms": first_ms, "world_size": dist.get_world_size(),
                "nccl_version": str(torch.cuda.nccl.version()) if hasattr(torch.cuda, "nccl") else None,
                "bytes": buf.numel() * buf.element_size()}
        recs.append(info)

        for mode in ("sync", "async"):
            try:
                samples, wait_samples, busy, rep_meds, gpu_us = [], [], [], [], []
                for rep in range(NCCL_REPS + 1):
                    torch.cuda.synchronize()
                    done = sleep_gpu(torch)
                    works, s = [], []
                    for _ in range(NCCL_CALLS_PER_REP):
                        t0 = time.perf_counter_ns()
                        if mode == "sync":
                            dist.all_reduce(buf)
                        else:
                            works.append(dist.all_reduce(buf, async_op=True))
                        s.append((time.perf_counter_ns() - t0) / 1e3)
                    ws = []
                    for w in works:
                        t0 = time.perf_counter_ns()
                        w.wait()
                        ws.append((time.perf_counter_ns() - t0) / 1e3)
                    b = not done.query()
                    torch.cuda.synchronize()
                    if rep == 0:
                        continue
                    samples += s
                    wait_samples += ws
                    rep_meds.append(med(s))
                    busy.append(b)
                rec = {"kind": "nccl", "op": f"all_reduce_{mode}", "bytes": buf.numel() * buf.element_size(),
                       "calls": len(samples), "host_us_median": med(samples),
                       "host_us_rep_medians": [round(v, 2) for v in rep_meds],
                       "host_us_p90": sorted(samples)[9 * len(samples) // 10],
                       "host_us_max": max(samples), "gpu_busy_throughout": all(busy)}
                if wait_samples:
                    rec["work_wait_host_us_median"] = med(wait_samples)
                recs.append(rec)
            except Exception as e:
                recs.append({"kind": "nccl", "op": f"all_reduce_{mode}", "error": f"{type(e).__name__}: {e}"})
        # Idle round trip: call + synchronize, and the GPU time of one all_reduce queued back to back.
        try:
            torch.cuda.synchronize()
            rt = time_calls(lambda: (dist.all_reduce(buf), torch.cuda.synchronize()), SYNC_CALLS)
            torch.cuda.synchronize()
            done = sleep_gpu(torch, 0.02)
            a, b = ev(torch), ev(torch)
            a.record()
            for _ in range(NCCL_CALLS_PER_REP):
                dist.all_reduce(buf)
            b.record()
            torch.cuda.synchronize()
            recs.append({"kind": "nccl", "op": "all_reduce_idle_round_trip", "calls": len(rt),
                         "host_us_median": med(rt), "host_us_p90": sorted(rt)[9 * len(rt) // 10],
                         "gpu_us_per_call_queued": a.elapsed_time(b) * 1e3 / NCCL_CALLS_PER_REP,
                         "note": "all_reduce then torch.cuda.synchronize(), GPU idle at the start; the GPU figure "
                                 "is 40 calls queued behind a sleep, between events on the current stream"})
        except Exception as e:
            recs.append({"kind": "nccl", "op": "all_reduce_idle_round_trip", "error": f"{type(e).__name__}: {e}"})
        try:
            recs.append({"kind": "nccl_profile", "op": "all_reduce_sync_x20",
                         **profile_counts(torch, lambda: [dist.all_reduce(buf) for _ in range(20)])})
        except Exception as e:
            recs.append({"kind": "nccl_profile", "error": f"{type(e).__name__}: {e}"})
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            pass
    return recs


# ---------------------------------------------------------------------------------------------
# 4. Optimizer step

def measure_optim(torch, variant):
    dev = "cuda"
    g = torch.Generator(device=dev)
    g.manual_seed(99)
    params = [torch.nn.Parameter(torch.randn(1024, 1024, device=dev, generator=g) * 0.02) for _ in range(OPT_PARAMS)]
    for p in params:
        p.grad = torch.randn(1024, 1024, device=dev, generator=g) * 1e-3
    kw = {"fused": True} if variant == "fused" else {"foreach": True, "fused": False}
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.1, **kw)
    for _ in range(3):
        opt.step()
    torch.cuda.synchronize()
    host, gpu, busy = [], [], []
    for _ in range(REPS):
        torch.cuda.synchronize()
        done = sleep_gpu(torch)
        a, b = ev(torch), ev(torch)
        a.record()
        t0 = time.perf_counter_ns()
        opt.step()
        t1 = time.perf_counter_ns()
        b.record()
        busy.append(not done.query())
        torch.cuda.synchronize()
        host.append((t1 - t0) / 1e3)
        gpu.append(a.elapsed_time(b) * 1e3)
    # Idle: host time of a step from an idle GPU (host and GPU overlap).
    idle = []
    for _ in range(REPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        opt.step()
        idle.append((time.perf_counter_ns() - t0) / 1e3)
    torch.cuda.synchronize()
    rec = {"kind": "optim", "op": f"adamw_{variant}", "params": OPT_PARAMS, "shape": [1024, 1024],
           "dtype": "float32", "options": kw, "reps": REPS,
           "host_us_median_gpu_busy": med(host), "host_us_per_param_gpu_busy": med(host) / OPT_PARAMS,
           "gpu_us_median_queued": med(gpu), "host_us_median_gpu_idle_start": med(idle),
           "gpu_busy_throughout": all(busy),
           "samples_host_us": [round(v, 1) for v in host], "samples_gpu_us": [round(v, 1) for v in gpu]}
    try:
        rec["profile"] = profile_counts(torch, lambda: opt.step())
    except Exception as e:
        rec["profile_error"] = f"{type(e).__name__}: {e}"
    del opt, params
    torch.cuda.empty_cache()
    return rec


# ---------------------------------------------------------------------------------------------

def write_meta(out_dir, torch):
    def nccl():
        try:
            return [f"nccl (torch.cuda.nccl.version): {torch.cuda.nccl.version()}"]
        except Exception as e:
            return [f"nccl: n/a ({e})"]
    host_timing.write_meta(out_dir, torch, extra=nccl)


def summary(path):
    print("\n=== summary ===")
    for line in open(path):
        r = json.loads(line)
        if "error" in r:
            print(f"ERROR {r.get('kind')} {r.get('op')}: {r['error']}")
        elif r["kind"] == "chain":
            print(f"chain {r['op']:18s} fwd {r['fwd_host_us_per_op']:6.2f} us/op (no_grad "
                  f"{r['fwd_nograd_host_us_per_op']:6.2f})  bwd {r['bwd_host_us_per_op']:6.2f} us/op  "
                  f"launches/op {r.get('bwd_launches_per_op')}  us/launch {r.get('bwd_host_us_per_launch')}  "
                  f"busy {r['gpu_busy_throughout']}")
        elif r["kind"] in ("sync", "nccl"):
            print(f"{r['kind']} {r['op']:28s} host {r['host_us_median']:8.2f} us  "
                  f"{'busy ' + str(r.get('gpu_busy_throughout')) if 'gpu_busy_throughout' in r else ''}"
                  f"{' wait ' + format(r['work_wait_host_us_median'], '.2f') if 'work_wait_host_us_median' in r else ''}")
        elif r["kind"] == "optim":
            p = r.get("profile", {})
            print(f"optim {r['op']:14s} host {r['host_us_median_gpu_busy']:8.1f} us (busy {r['gpu_busy_throughout']})  "
                  f"gpu {r['gpu_us_median_queued']:8.1f} us  launches {p.get('launch_calls')}")
        elif r["kind"] == "nccl_info":
            print(f"nccl init {r['init_process_group_ms']:.1f} ms, first all_reduce {r['first_all_reduce_ms']:.1f} ms")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--only", default="chain,sync,nccl,optim", help="comma list of sections")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "host_costs.jsonl")
    open(path, "w").close()
    import torch
    torch.manual_seed(0)
    failures = 0
    try:
        write_meta(args.out, torch)
    except Exception as e:
        print(f"meta failed: {e}", file=sys.stderr)
    emit(path, {"kind": "host_info", "torch": torch.__version__, "cuda": torch.version.cuda,
                "device": torch.cuda.get_device_name(0), "n_chain": N_CHAIN, "reps": REPS,
                "sleep_s": SLEEP_S})
    sections = set(args.only.split(","))
    if "chain" in sections:
        for kind in ("mul", "mm_64", "layer_norm", "layer_norm_affine", "linear"):
            try:
                emit(path, measure_chain(torch, kind))
            except Exception as e:
                failures += 1
                emit(path, {"kind": "chain", "op": kind, "error": f"{type(e).__name__}: {e}"})
            torch.cuda.empty_cache()
    if "sync" in sections:
        for r in measure_sync(torch):
            failures += "error" in r
            emit(path, r)
    if "optim" in sections:
        for variant in ("fused", "foreach"):
            try:
                emit(path, measure_optim(torch, variant))
            except Exception as e:
                failures += 1
                emit(path, {"kind": "optim", "op": f"adamw_{variant}", "error": f"{type(e).__name__}: {e}"})
    if "nccl" in sections:
        try:
            for r in measure_nccl(torch):
                failures += "error" in r
                emit(path, r)
        except Exception as e:
            failures += 1
            emit(path, {"kind": "nccl", "op": "init", "error": f"{type(e).__name__}: {e}"})
    summary(path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
