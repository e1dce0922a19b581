"""Shared helpers of the host-cost measurements (host_costs.py, host_overheads.py): JSON-lines output,
medians, a long GPU kernel that keeps the GPU busy while the host is timed, and launch counts from
torch.profiler. Imported from the scripts' own folder."""

import datetime
import json
import os
import statistics
import subprocess
import sys

MAX_SM_HZ = 1.98e9  # for torch.cuda._sleep's cycle count; a lower clock only makes the sleep longer
LAUNCH_SUBSTR = "Launch"          # cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel(Ex), ...
COPY_NAMES = ("cudaMemcpyAsync", "cudaMemsetAsync", "cudaMemcpy", "cudaMemset", "cuMemcpyAsync",
              "cuMemsetD8Async", "cuMemsetD32Async")


def emit(path, rec):
    line = json.dumps(rec)
    print(line if len(line) < 700 else line[:700] + " ...", flush=True)
    with open(path, "a") as f:
        f.write(line + "\n")


def med(xs):
    return statistics.median(xs) if xs else None


def sleep_gpu(torch, seconds):
    """Queue a long kernel; return an event that completes when it ends."""
    torch.cuda._sleep(int(seconds * MAX_SM_HZ))
    e = torch.cuda.Event()
    e.record()
    return e


def profile_counts(torch, fn):
    """Run fn under torch.profiler; count host launch calls and GPU-side kernels / copies."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    by_name, gpu_kernels, gpu_copies, kernel_names = {}, 0, 0, {}
    for e in prof.events():
        name = e.name
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            if name.startswith("Memcpy") or name.startswith("Memset") or "memcpy" in name.lower()[:12] \
                    or "memset" in name.lower()[:12]:
                gpu_copies += 1
            else:
                gpu_kernels += 1
                key = name[:70]
                kernel_names[key] = kernel_names.get(key, 0) + 1
        elif LAUNCH_SUBSTR in name or name in COPY_NAMES:
            by_name[name] = by_name.get(name, 0) + 1
    launches = sum(v for k, v in by_name.items() if LAUNCH_SUBSTR in k)
    copies = sum(v for k, v in by_name.items() if k in COPY_NAMES)
    top = sorted(kernel_names.items(), key=lambda kv: -kv[1])[:8]
    return {"launch_calls": launches, "copy_memset_calls": copies, "runtime_calls_by_name": by_name,
            "gpu_kernels": gpu_kernels, "gpu_copies_memsets": gpu_copies, "top_kernels": top}


def write_meta(out_dir, torch, extra=None):
    """DIR/meta.txt: date, Python, torch, CUDA, device, cuDNN (and `extra()`'s lines), CPU count,
    nvidia-smi's static fields, lscpu."""
    lines = [f"date: {datetime.datetime.now(datetime.timezone.utc).isoformat()}",
             f"python: {sys.version.split()[0]}"]
    try:
        lines += [f"torch: {torch.__version__}", f"torch.version.cuda: {torch.version.cuda}",
                  f"device: {torch.cuda.get_device_name(0)}",
                  f"cudnn: {torch.backends.cudnn.version()}"]
        if extra is not None:
            lines += extra()
    except Exception as e:
        lines.append(f"torch info error: {e}")
    lines.append(f"os.cpu_count: {os.cpu_count()}")
    for title, cmd in (("nvidia-smi", "nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,"
                                      "clocks.sm,temperature.gpu --format=csv"),
                       ("lscpu | head -20", "lscpu | head -20"),
                       ("date", "date -u")):
        try:
            r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30)
            lines += [f"--- {title}", (r.stdout + r.stderr).rstrip()]
        except Exception as e:
            lines += [f"--- {title}", f"error: {e}"]
    with open(os.path.join(out_dir, "meta.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
