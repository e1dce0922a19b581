#!/usr/bin/env python3
"""PyTorch kernel rates for clustersim's pytorch-eager framework model, in the raw-sample format.

clustersim-calibrate (CUDA C++) measures cuBLASLt GEMMs, copies, launches and NCCL. A PyTorch
training step also runs PyTorch's own kernels, whose rates depend on which launch path PyTorch's
TensorIterator takes (aten/src/ATen/native/cuda/CUDALoops.cuh): contiguous operands of one dtype
take the vectorized path; a dtype conversion on contiguous operands the unrolled path (except
float→bfloat16 copies, which Copy.cu vectorizes); broadcast or strided (non-contiguous) operands the
generic offset-calculator path. Normalisation, reduction, softmax, concatenation, the fused AdamW
and the SDPA flash-attention kernels are kernels of their own. This script times each kind once at
a size well above the L2 cache and writes:

  framework.csv   kind `framework`: test, path, dtype, elements, bytes_moved, median_us, bandwidth_gbps
  attention.csv   kind `attention`: test, batch, heads, kv_heads, seq, head_dim, causal, direction,
                  median_us, tflops (causal FLOPs: forward 2·b·heads·s²·d, backward 2.5 × forward)

Bytes moved count each operand read and each result written once. Times: CUDA events around
batches of calls after a warm-up, median over batches. Usage: python3 framework_benchmark.py OUTDIR
"""
import datetime
import os
import socket
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BATCHES = 12


def timed(fn, calls=None):
    """Median per-call time in µs of `fn` (CUDA events around batches of calls)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    if calls is None:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        once = start.elapsed_time(end) * 1e3
        calls = max(1, min(50, int(2000 / max(once, 1.0))))
    times = []
    for _ in range(BATCHES):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(times)


def metadata(kind):
    p = torch.cuda.get_device_properties(0)
    return [("format", "1"), ("kind", kind), ("gpu_name", torch.cuda.get_device_name(0)),
            ("sm_count", str(p.multi_processor_count)), ("torch", torch.__version__),
            ("cuda_runtime", str(torch.version.cuda)), ("hostname", socket.gethostname()),
            ("date_utc", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")),
            ("command", "tools/calibrator/framework_benchmark.py")]


def write(path, kind, columns, rows):
    with open(path, "w") as f:
        f.write("# clustersim-calibrate raw samples\n")
        for k, v in metadata(kind):
            f.write(f"# {k}: {v}\n")
        f.write(",".join(columns) + "\n")
        for r in rows:
            f.write(",".join(str(c) for c in r) + "\n")
        f.write("# complete: true\n")


def framework_rows():
    dev = "cuda"
    T, H = 16384, 4096  # a [T, H] activation: 64 Mi elements (128 MiB in bf16)
    n = T * H
    bf = torch.bfloat16
    x16 = torch.randn(T, H, device=dev, dtype=bf)
    y16 = torch.randn(T, H, device=dev, dtype=bf)
    x32 = torch.randn(T, H, device=dev)
    y32 = torch.randn(T, H, device=dev)
    bias32 = torch.randn(H, device=dev)
    wide = torch.randn(T, 2 * H, device=dev, dtype=bf)  # a fused gate/up output [T, 2H]
    gate, up = wide.chunk(2, dim=-1)
    s16 = F.silu(gate)
    w_ln = torch.ones(H, device=dev)
    b_ln = torch.zeros(H, device=dev)
    rows = []

    def add(test, path, dtype, elements, nbytes, fn):
        us = timed(fn)
        rows.append((test, path, dtype, elements, nbytes, f"{us:.4f}", f"{nbytes / us * 1e-3:.2f}"))
        print(rows[-1], flush=True)

    add("copy_bf16", "vectorized", "bf16", n, 4 * n, lambda: y16.copy_(x16))
    add("add_bf16", "vectorized", "bf16", n, 6 * n, lambda: x16 + y16)
    add("add_fp32", "vectorized", "fp32", n, 12 * n, lambda: x32 + y32)
    add("gelu_tanh_bf16", "vectorized", "bf16", n, 4 * n, lambda: F.gelu(x16, approximate="tanh"))
    add("cast_fp32_to_bf16", "vectorized", "fp32>bf16", n, 6 * n, lambda: x32.to(bf))
    add("cast_bf16_to_fp32", "casting", "bf16>fp32", n, 6 * n, lambda: x16.float())
    add("add_bf16_fp32", "casting", "bf16+fp32>fp32", n, 10 * n, lambda: x16 + y32)
    add("add_bias_bf16_fp32", "strided", "bf16+fp32>fp32", n, 6 * n, lambda: x16 + bias32)
    add("silu_chunk_bf16", "strided", "bf16", n, 4 * n, lambda: F.silu(gate))
    add("mul_chunk_bf16", "strided", "bf16", n, 6 * n, lambda: s16 * up)
    add("cat_halves_bf16", "concatenation", "bf16", n, 4 * n,
        lambda: torch.cat((x16[:, : H // 2], x16[:, H // 2:]), dim=-1))
    add("layer_norm_fp32", "normalization", "fp32", n, 8 * n, lambda: F.layer_norm(x32, (H,), w_ln, b_ln))
    add("rms_norm_fp32", "normalization", "fp32", n, 8 * n, lambda: F.rms_norm(x32, (H,), w_ln))
    xr = x32.clone().requires_grad_()
    out = F.layer_norm(xr, (H,), w_ln, b_ln)
    add("layer_norm_backward_fp32", "normalization", "fp32", n, 12 * n,
        lambda: torch.autograd.grad(out, xr, y32, retain_graph=True))
    add("sum_rows_fp32", "reduction", "fp32", n, 4 * n, lambda: x32.sum(dim=0))
    V = 50304
    logits = torch.randn(8192, V, device=dev)
    add("log_softmax_fp32", "softmax", "fp32", 8192 * V, 8 * 8192 * V, lambda: torch.log_softmax(logits, dim=-1))
    del logits
    # Fused AdamW (torch.optim.AdamW(fused=True)) over 32 fp32 tensors of 8 Mi parameters:
    # reads param, grad, exp_avg, exp_avg_sq and writes param, exp_avg, exp_avg_sq: 28 B/param.
    params = [torch.randn(8 << 20, device=dev, requires_grad=True) for _ in range(32)]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.1, fused=True)
    total = sum(p.numel() for p in params)
    add("adamw_fused_fp32", "fused_optimizer", "fp32", total, 28 * total, opt.step)
    return rows


def attention_rows():
    rows = []
    # (batch, heads, kv_heads, seq, head_dim): the reference configurations of
    # tools/reference/configs.json and a few more.
    shapes = [(8, 16, 16, 2048, 64), (4, 16, 16, 2048, 96), (4, 16, 16, 2048, 128), (4, 16, 16, 4096, 128),
              (2, 32, 8, 4096, 64), (2, 32, 32, 2048, 80), (2, 24, 8, 4096, 128), (1, 32, 32, 2048, 128),
              (1, 32, 32, 4096, 128), (1, 32, 32, 8192, 128), (8, 32, 32, 1024, 128), (4, 32, 8, 2048, 128),
              (1, 64, 8, 8192, 128), (16, 16, 16, 1024, 64)]
    for b, heads, kv, s, d in shapes:
        # [b, s, heads, d] storage viewed as [b, heads, s, d], as a QKV projection produces it.
        q = torch.randn(b, s, heads, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
        k = torch.randn(b, s, kv, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
        v = torch.randn(b, s, kv, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
        gqa = {"enable_gqa": True} if kv != heads else {}
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            fwd = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa))
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
            grad = torch.randn_like(out)
            bwd = timed(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True))
        flops = 2.0 * b * heads * s * s * d
        for direction, us, f in (("forward", fwd, flops), ("backward", bwd, 2.5 * flops)):
            rows.append(("sdpa_flash", b, heads, kv, s, d, "true", direction, f"{us:.3f}", f"{f / us * 1e-6:.1f}"))
            print(rows[-1], flush=True)
    return rows


def gemm_diagnostic():
    """F.linear of one shape: uniform data back to back (as clustersim-calibrate), training-like data
    (inputs N(0, 1), weights N(0, 0.02)), and uniform data with a 512 MiB copy between GEMMs."""
    dev = "cuda"
    big_a = torch.empty(1 << 28, device=dev, dtype=torch.bfloat16)
    big_b = torch.empty_like(big_a)
    for tokens, d_in, d_out in ((2048, 4096, 12288), (8192, 2048, 8192), (2048, 4096, 11008 * 2)):
        xu = torch.rand(tokens, d_in, device=dev, dtype=torch.bfloat16) * 2 - 1
        wu = torch.rand(d_out, d_in, device=dev, dtype=torch.bfloat16) * 2 - 1
        xn = torch.randn(tokens, d_in, device=dev, dtype=torch.bfloat16)
        wn = torch.randn(d_out, d_in, device=dev, dtype=torch.bfloat16) * 0.02
        uniform = timed(lambda: F.linear(xu, wu))
        normal = timed(lambda: F.linear(xn, wn))
        times = []
        for _ in range(20):
            big_b.copy_(big_a)
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            F.linear(xu, wu)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        inter = statistics.median(times)
        times = []
        for _ in range(20):
            big_b.copy_(big_a)
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            F.linear(xn, wn)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        inter_n = statistics.median(times)
        print(f"gemm T={tokens} in={d_in} out={d_out}: uniform {uniform:.1f} us, normal {normal:.1f} us, "
              f"uniform after copy {inter:.1f} us, normal after copy {inter_n:.1f} us", flush=True)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    torch.manual_seed(0)
    write(os.path.join(out, "framework.csv"), "framework",
          ["test", "path", "dtype", "elements", "bytes_moved", "median_us", "bandwidth_gbps"], framework_rows())
    torch.cuda.empty_cache()
    write(os.path.join(out, "attention.csv"), "attention",
          ["test", "batch", "heads", "kv_heads", "seq", "head_dim", "causal", "direction", "median_us", "tflops"],
          attention_rows())
    torch.cuda.empty_cache()
    gemm_diagnostic()
    return 0


if __name__ == "__main__":
    sys.exit(main())
