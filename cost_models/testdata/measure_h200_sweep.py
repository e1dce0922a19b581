"""Measures the samples of h200_pytorch_sweep.json on one GPU through PyTorch.

GEMM kernel times (bf16 torch.matmul / torch.bmm, fp8 torch._scaled_mm), device-to-device copy
bandwidth and kernel-launch overhead (eager and inside a CUDA graph), written in the calibration
profile format of cost_models/calibration_profile.md.

Method: inputs are random normal; each shape is captured 20 times into a CUDA graph with inputs
rotated over enough copies to exceed the L2 cache (so the cache does not flatter the result); the
graph is replayed 5 times after a warm-up and the median replay time / 20 is the kernel time.
Usage: python3 measure_h200_sweep.py OUT.json
"""
import datetime
import json
import statistics
import subprocess
import sys

import torch

L2_BYTES = 64 << 20
REPS = 20


def rotated_inputs(make, bytes_per_set):
    copies = max(2, min(16, (4 * L2_BYTES) // max(1, bytes_per_set) + 1))
    return [make() for _ in range(copies)]


def time_graph(fn_list):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for fn in fn_list[:3]:
            fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for fn in fn_list:
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / len(fn_list))  # us per kernel
    return statistics.median(times)


def gemm_bf16(m, n, k, batch=1):
    dt = torch.bfloat16
    size = (batch * (m * k + k * n + m * n)) * 2
    if batch == 1:
        sets = rotated_inputs(lambda: (torch.randn(m, k, device="cuda", dtype=dt),
                                       torch.randn(k, n, device="cuda", dtype=dt),
                                       torch.empty(m, n, device="cuda", dtype=dt)), size)
        fns = [(lambda s=s: torch.matmul(s[0], s[1], out=s[2])) for s in sets]
    else:
        sets = rotated_inputs(lambda: (torch.randn(batch, m, k, device="cuda", dtype=dt),
                                       torch.randn(batch, k, n, device="cuda", dtype=dt),
                                       torch.empty(batch, m, n, device="cuda", dtype=dt)), size)
        fns = [(lambda s=s: torch.bmm(s[0], s[1], out=s[2])) for s in sets]
    seq = [fns[i % len(fns)] for i in range(REPS)]
    return time_graph(seq)


def gemm_fp8(m, n, k):
    size = m * k + k * n + 2 * m * n
    one = torch.tensor(1.0, device="cuda")

    def make():
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()  # column-major k x n
        return a, b

    sets = rotated_inputs(make, size)
    fns = [(lambda s=s: torch._scaled_mm(s[0], s[1], scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
           for s in sets]
    seq = [fns[i % len(fns)] for i in range(REPS)]
    return time_graph(seq)


def copy_bandwidth():
    n = 2 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return 2 * n / statistics.median(times)  # bytes read + written per second


def launch_overhead():
    x = torch.zeros(1, device="cuda")
    for _ in range(100):
        x.add_(1)
    torch.cuda.synchronize()
    import time
    count = 2000
    t0 = time.perf_counter()
    for _ in range(count):
        x.add_(1)
    torch.cuda.synchronize()
    eager = (time.perf_counter() - t0) / count * 1e6
    graph_us = time_graph([(lambda: x.add_(1))] * 200)
    return eager, graph_us


def main():
    out_path = sys.argv[1]
    props = torch.cuda.get_device_properties(0)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout.strip()
    driver, sm_clock, mem_clock = [s.strip() for s in smi.split(",")]
    try:
        from importlib.metadata import version
        cublas = version("nvidia-cublas")
    except Exception:  # noqa: BLE001
        cublas = "unknown"
    samples = []

    def add(dtype, m, n, k, batch, us):
        samples.append({"dtype": dtype, "m": m, "n": n, "k": k, "batch": batch, "time": f"{us:.6f} us"})
        flops = 2.0 * m * n * k * batch
        print(f"{dtype} {m}x{n}x{k} b{batch}: {us:.3f} us {flops / us / 1e6:.1f} TFLOP/s", flush=True)

    shapes = []
    for s in (256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384):
        shapes.append((s, s, s))
    shapes += [(4091, 4091, 4091), (4095, 4095, 4095), (4100, 4100, 4100), (4096, 50257, 4096),
               (4096, 50304, 4096), (4091, 4096, 4096), (4096, 4091, 4096), (4096, 4096, 4091),
               (8192, 8192, 4100), (2048, 2052, 2048)]
    h, f, v = 4096, 11008, 32000
    for tokens in (4096, 16384):
        for tp in (1, 2, 4, 8):
            shapes += [(tokens, 3 * h // tp, h), (tokens, h, h // tp), (tokens, 2 * f // tp, h),
                       (tokens, h, f // tp), (3 * h // tp, h, tokens), (f // tp, h, tokens)]
        shapes.append((tokens, v, h))
    g = 12288
    shapes += [(2048, 3 * g // 8, g), (2048, g, g // 8), (2048, 4 * g // 8, g), (2048, g, 4 * g // 8),
               (4 * g // 8, g, 2048), (g, g // 8, 2048)]
    for m in (16, 64, 128, 256, 512):
        shapes += [(m, 4096, 4096), (m, 14336, 4096)]
    seen = set()
    for m, n, k in shapes:
        if (m, n, k) in seen:
            continue
        seen.add((m, n, k))
        add("bf16", m, n, k, 1, gemm_bf16(m, n, k))
    for b, s, d in ((32, 2048, 128), (32, 4096, 128), (8, 4096, 128)):
        add("bf16", s, s, d, b, gemm_bf16(s, s, d, b))
        add("bf16", s, d, s, b, gemm_bf16(s, d, s, b))
    for m, n, k in ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                    (4096, 14336, 4096), (8192, 8192, 1024), (4096, 4096, 16384), (16384, 3072, 4096)):
        add("fp8", m, n, k, 1, gemm_fp8(m, n, k))
    bw = copy_bandwidth()
    eager, graph_us = launch_overhead()
    print(f"copy {bw / 1e9:.1f} GB/s, launch eager {eager:.2f} us graph {graph_us:.2f} us")
    profile = {
        "format": "clustersim-calibration-profile",
        "version": 1,
        "name": "h200-pytorch-sweep",
        "machine": {
            "gpu": props.name, "sm_count": props.multi_processor_count, "sm_clock_mhz": int(float(sm_clock)),
            "memory_clock_mhz": int(float(mem_clock)), "driver": driver, "cuda": torch.version.cuda,
            "cublas": cublas, "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()),
            "date": datetime.date.today().isoformat(),
            "method": f"PyTorch {torch.__version__}: torch.matmul/torch.bmm (bf16), torch._scaled_mm (fp8 e4m3, "
                      "bf16 out); CUDA-graph replay of 20 kernels on rotated random inputs, median of 5 replays",
        },
        "gemm_samples": samples,
        "memory": {"copy_bandwidth": f"{bw / 1e9:.1f} GB/s"},
        "launch_overhead": {"eager": f"{eager:.3f} us", "graph": f"{graph_us:.3f} us"},
    }
    with open(out_path, "w") as fh:
        json.dump(profile, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
