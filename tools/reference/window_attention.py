#!/usr/bin/env python3
"""Times causal attention with and without a sliding window on one GPU.

clustersim prices a sliding-window layer's fused attention by the query-key pairs the kernel
executes, w(w + 1)/2 + (s - w)·w per head, against s²/2 for full causal attention
(workloads/transformer.cc). This script measures how the time of a fused kernel falls with the
window: PyTorch's FlexAttention (torch.nn.attention.flex_attention, compiled; block-sparse over
128 × 128 tiles) with a causal mask and with causal sliding-window masks, and, as the reference for
full causal attention, torch's scaled_dot_product_attention (is_causal, its fastest backend).

Each case: compile and 5 warm-up passes, then 20 passes under torch.profiler; the time of a pass is
the sum of the CUDA kernels it ran (forward: 20 forward passes; backward: 20 forward + backward
passes less the forward), so the compiled function's host overhead (about 0.4 ms per call here,
which leaves a small kernel's GPU idle) is not counted. bf16, batch 1, grouped-query attention. One
JSON line per case on stdout.

Usage: python3 window_attention.py [--reps 20]
"""

import argparse
import json
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

SHAPES = [  # (seq, query heads, kv heads, head dim)
    (4096, 64, 8, 64),   # gpt-oss-120b at Megatron-Bridge's B200 / H100 sequence
    (8192, 64, 8, 64),   # gpt-oss-120b at its GB200 / GB300 sequence
    (8192, 32, 8, 128),  # a Llama-3-8B-shaped layer
]
WINDOWS = [128, 512, 2048, 0]  # 0: full causal


def kernel_us(work, reps):
    """Mean CUDA kernel time of one call of work(), in microseconds."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            work()
        torch.cuda.synchronize()
    total = sum(e.self_device_time_total for e in prof.key_averages())
    return total / reps


def time_pass(fn, inputs, reps):
    """Forward and backward kernel time of fn(*inputs); gradients by torch.autograd.grad, so no
    accumulation into .grad is timed."""
    grad = torch.randn_like(fn(*inputs))

    def both():
        torch.autograd.grad(fn(*inputs), inputs, grad)

    for _ in range(5):  # compile and warm up
        both()
    torch.cuda.synchronize()
    forward = kernel_us(lambda: fn(*inputs), reps)
    total = kernel_us(both, reps)
    return forward, total - forward


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    flex = torch.compile(flex_attention, dynamic=False)
    dev = torch.device("cuda")
    for s, heads, kv, d in SHAPES:
        def tensors():
            q = torch.randn(1, heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn(1, kv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(1, kv, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            return q, k, v

        inputs = tensors()

        def sdpa(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

        f, b = time_pass(sdpa, inputs, args.reps)
        print(json.dumps({"kernel": "sdpa", "s": s, "heads": heads, "kv_heads": kv, "head_dim": d, "window": 0,
                          "forward_us": round(f, 2), "backward_us": round(b, 2)}), flush=True)
        for w in WINDOWS:
            if w == 0:
                def mask(b, h, q_idx, kv_idx):
                    return q_idx >= kv_idx
            else:
                def mask(b, h, q_idx, kv_idx, w=w):
                    return (q_idx >= kv_idx) & (q_idx - kv_idx < w)
            block_mask = create_block_mask(mask, B=None, H=None, Q_LEN=s, KV_LEN=s, device=dev)

            def windowed(q, k, v, block_mask=block_mask):
                return flex(q, k, v, block_mask=block_mask, enable_gqa=True)

            try:
                f, b = time_pass(windowed, inputs, args.reps)
            except Exception as e:  # report and go on: one failing shape should not lose the others
                print(json.dumps({"kernel": "flex", "s": s, "heads": heads, "kv_heads": kv, "head_dim": d,
                                  "window": w, "error": str(e)[:300]}), flush=True)
                continue
            print(json.dumps({"kernel": "flex", "s": s, "heads": heads, "kv_heads": kv, "head_dim": d, "window": w,
                              "forward_us": round(f, 2), "backward_us": round(b, 2)}), flush=True)


if __name__ == "__main__":
    main()
