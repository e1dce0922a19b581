#!/usr/bin/env python3
"""Times elementwise steps written in PyTorch operations, as frameworks without fused kernels run them.

clustersim prices these steps kernel by kernel (workloads/aten_kernels.h) when a scenario sets
training.fused_norm, fused_softmax (and fused_rope, fused_swiglu) to false. This script measures the
same code on a GPU, forward and backward separately, so the prediction can be checked:

  rms_norm        y = (x * rsqrt(mean(x^2) + eps)).float().type_as(x) * w   (Aleph Alpha's scaling
                  framework, src/scaling/core/nn/norm/rms_norm.py); x bf16 [tokens, hidden], w bf16
  masked_softmax  the copy of the score view, masked_fill_(causal mask, -10000) and softmax in bf16
                  (scaling's MaskedSoftmaxTorch with its defaults); scores bf16 [batch*heads, s, s]

Each case: 5 warm-up repetitions, then the median of 20 of forward (autograd recording) and of
backward (y.backward(dy)), timed with CUDA events around each. One JSON line per case on stdout.

Usage: python3 unfused_kernels.py [--reps 20]
"""

import argparse
import json
import statistics

import torch


def rms_norm(x, w, eps=1e-5):
    out = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    out = out.float().type_as(x)
    return out * w


def masked_softmax(scores, mask):
    if scores._is_view():
        scores = scores.clone()
    scores.masked_fill_(mask, -10000.0)
    return torch.nn.functional.softmax(scores, dim=-1)


def time_case(make_inputs, forward, reps):
    fwd, bwd = [], []
    for i in range(5 + reps):
        inputs = make_inputs()
        start, middle, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        torch.cuda.synchronize()
        start.record()
        y = forward(*inputs)
        middle.record()
        dy = torch.randn_like(y)
        torch.cuda.synchronize()
        middle2 = torch.cuda.Event(enable_timing=True)
        middle2.record()
        y.backward(dy)
        end.record()
        torch.cuda.synchronize()
        if i >= 5:
            fwd.append(start.elapsed_time(middle) * 1e3)
            bwd.append(middle2.elapsed_time(end) * 1e3)
    return statistics.median(fwd), statistics.median(bwd)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    device = torch.device("cuda")
    gpu = torch.cuda.get_device_name(device)
    for tokens, hidden in [(2048, 5120), (4096, 4096), (2048, 8192), (8192, 6656), (1024, 5120)]:
        def make():
            x = torch.randn(tokens, hidden, device=device, dtype=torch.bfloat16, requires_grad=True)
            w = torch.ones(hidden, device=device, dtype=torch.bfloat16, requires_grad=True)
            return x, w
        f, b = time_case(make, rms_norm, args.reps)
        print(json.dumps({"case": "rms_norm", "gpu": gpu, "tokens": tokens, "hidden": hidden, "dtype": "bf16",
                          "forward_us": round(f, 2), "backward_us": round(b, 2), "torch": torch.__version__}),
              flush=True)
    for batch_heads, seq in [(40, 2048), (32, 4096), (20, 2048), (64, 2048), (16, 8192)]:
        mask = torch.ones(seq, seq, device=device, dtype=torch.bool).triu(1)

        def make():
            raw = torch.randn(batch_heads * seq, seq, device=device, dtype=torch.bfloat16)
            scores = raw.view(batch_heads, seq, seq).requires_grad_(False)
            scores = scores.detach().requires_grad_(True)
            return scores.view(1, batch_heads, seq, seq), mask
        f, b = time_case(make, masked_softmax, args.reps)
        print(json.dumps({"case": "masked_softmax", "gpu": gpu, "batch_heads": batch_heads, "seq": seq,
                          "dtype": "bf16", "forward_us": round(f, 2), "backward_us": round(b, 2),
                          "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
