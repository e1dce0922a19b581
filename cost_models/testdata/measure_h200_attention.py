"""Times fused causal attention (torch SDPA, bf16, head dim 128) forward and backward on one GPU.

Source of the default attention efficiencies in compute_cost_model.cc. FLOPs use the causal
convention of FlashAttention's benchmarks: forward 4·b·heads·s²·d / 2, backward 2.5 × forward.
Usage: python3 measure_h200_attention.py
"""
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def bench(fn, reps=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
    for b, heads, s in ((1, 32, 4096), (4, 32, 2048), (1, 64, 8192)):
        d = 128
        q, k, v = (torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                grad = torch.randn_like(out)
                fwd = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                both = bench(lambda: torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                                         (q, k, v), grad))
        except RuntimeError as err:
            print(f"{backend}: unavailable ({str(err)[:80]})")
            break
        flops_fwd = 4.0 * b * heads * s * s * d / 2
        bwd = both - fwd
        print(f"{backend.name} b{b} h{heads} s{s}: fwd {fwd * 1e6:.1f} us {flops_fwd / fwd / 1e12:.0f} TFLOP/s, "
              f"bwd {bwd * 1e6:.1f} us {2.5 * flops_fwd / bwd / 1e12:.0f} TFLOP/s", flush=True)
