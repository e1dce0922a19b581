#!/usr/bin/env python3
"""Kernel-level profile of the reference training steps (tools/reference/train_step.py), for
locating where clustersim's step model differs from a measured step.

For each configuration: builds the reference model, runs three warm-up steps, then one step under
torch.profiler (CUDA activity) and writes, in the raw-sample format of tools/calibrator/README.md
(kind `reference_kernels`), the GPU time per phase and kernel family:

  config, phase (forward | backward | optimizer), kernel (the kernel's name up to its template
  arguments), count, total_us

plus torch.cuda memory statistics per phase as metadata (`<config>_<moment>_bytes`: step start,
forward peak, after forward, backward peak, after backward, optimizer peak). The forward phase is a
record_function range; the optimizer is the trailing multi-tensor kernels; the backward is the rest.
The profiled step runs a little slower than an unprofiled one (the profiler's own overhead).

Usage (GPU machine):  python3 tools/calibrator/profile_reference.py OUT.csv [CONFIG,...]
Summarise saved traces (no GPU):  python3 tools/calibrator/profile_reference.py --from-traces OUT.csv TRACE.json.gz...
"""
import collections
import datetime
import gzip
import json
import os
import re
import sys


def summarize(name, events):
    """Rows (config, phase, kernel, count, total_us) of one step's GPU events, sorted by phase and time."""
    forward = [e for e in events if e["c"] == "gpu_user_annotation" and e["n"] == "phase_forward"][0]
    kernels = [e for e in events if e["c"] != "gpu_user_annotation"]
    forward_end = forward["ts"] + forward["d"]
    i = len(kernels) - 1
    while i >= 0 and ("multi_tensor_apply" in kernels[i]["n"] or kernels[i]["c"] == "gpu_memset"):
        i -= 1
    optimizer_start = kernels[i + 1]["ts"] if i + 1 < len(kernels) else float("inf")
    totals = collections.defaultdict(lambda: [0, 0.0])
    for k in kernels:
        phase = "forward" if k["ts"] < forward_end else ("optimizer" if k["ts"] >= optimizer_start else "backward")
        family = re.sub(r"\(anonymous namespace\)::", "", k["n"])
        family = re.sub(r"[<(].*", "", family).replace("void ", "").replace(",", ";").strip()[:80]
        totals[(phase, family)][0] += 1
        totals[(phase, family)][1] += k["d"]
    order = {"forward": 0, "backward": 1, "optimizer": 2}
    return [(name, p, f, c, round(t, 1)) for (p, f), (c, t) in
            sorted(totals.items(), key=lambda x: (order[x[0][0]], -x[1][1]))]


def write(path, rows, metadata):
    with open(path, "w") as f:
        f.write("# clustersim-calibrate raw samples\n# format: 1\n# kind: reference_kernels\n")
        for k, v in metadata:
            f.write(f"# {k}: {v}\n")
        f.write("config,phase,kernel,count,total_us\n")
        for r in rows:
            f.write(",".join(str(c) for c in r) + "\n")
        f.write("# complete: true\n")


def profile(names):
    """Profiles each configuration; returns (rows, metadata)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
    import torch
    import train_step as ts
    from torch.profiler import ProfilerActivity, profile as torch_profile, record_function

    configs = {c["name"]: c for c in json.load(open(os.path.join(os.path.dirname(__file__), "..", "reference",
                                                                  "configs.json")))}
    rt = ts.Runtime(torch, "cuda")
    decoder = ts.build_model_classes(torch)
    rows, metadata = [], [("gpu_name", torch.cuda.get_device_name(0)), ("torch", torch.__version__),
                          ("date_utc", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))]
    for name in names or list(configs):
        cfg = ts.make_config(dict(configs[name]), name)
        torch.cuda.empty_cache()
        model, _ = ts.make_stage_model(cfg, rt, decoder)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)
        g = torch.Generator(device=rt.device)
        g.manual_seed(1)
        tokens = torch.randint(0, cfg.vocab, (1, cfg.micro_batch, cfg.seq_len + 1), device=rt.device, generator=g)
        memory = {}

        def step(record=False):
            def mark(moment, peak=False):
                if record:
                    torch.cuda.synchronize()
                    memory[moment] = torch.cuda.max_memory_allocated() if peak else torch.cuda.memory_allocated()
            if record:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            mark("start")
            with record_function("phase_forward"):
                with rt.autocast():
                    loss = model(tokens[0, :, :-1], tokens[0, :, 1:])
            mark("forward_peak", True)
            mark("after_forward")
            if record:
                torch.cuda.reset_peak_memory_stats()
            loss.backward()
            mark("backward_peak", True)
            mark("after_backward")
            if record:
                torch.cuda.reset_peak_memory_stats()
            opt.step()
            opt.zero_grad(set_to_none=True)
            mark("optimizer_peak", True)

        with rt.attention_backend():
            for _ in range(3):
                step()
            step(record=True)
            torch.cuda.synchronize()
            with torch_profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
                step()
                torch.cuda.synchronize()
        trace = f"/tmp/{name}.trace.json"
        prof.export_chrome_trace(trace)
        events = [{"c": e.get("cat", ""), "n": e["name"], "ts": e["ts"], "d": e["dur"]}
                  for e in json.load(open(trace))["traceEvents"]
                  if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")]
        events.sort(key=lambda e: e["ts"])
        rows += summarize(name, events)
        metadata += [(f"{name.replace('-', '_').replace('.', '_')}_{k}_bytes", v) for k, v in memory.items()]
        del model, opt, prof
        torch.cuda.empty_cache()
    return rows, metadata


def main(argv):
    if len(argv) >= 2 and argv[0] == "--from-traces":
        rows = []
        metadata = [("source", "saved traces " + " ".join(os.path.basename(p) for p in argv[2:]))]
        moments = {"m_start": "start", "m_fwd_peak": "forward_peak", "m_after_fwd": "after_forward",
                   "m_bwd_peak": "backward_peak", "m_after_bwd": "after_backward", "m_opt_peak": "optimizer_peak"}
        for path in argv[2:]:
            data = json.load(gzip.open(path, "rt"))
            rows += summarize(data["name"], data["events"])
            key = data["name"].replace("-", "_").replace(".", "_")
            metadata += [(f"{key}_{moments[k]}_bytes", v) for k, v in data.get("mem", {}).items() if k in moments]
        write(argv[1], rows, metadata)
        return 0
    if not argv:
        print(__doc__)
        return 2
    rows, metadata = profile(argv[1].split(",") if len(argv) > 1 else [])
    write(argv[0], rows, metadata)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
