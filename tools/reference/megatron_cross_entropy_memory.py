#!/usr/bin/env python3
"""Memory of Megatron-Core's cross-entropy loss per logit, between forward and backward and at its
backward's peak, on one GPU (tensor parallel 1).

The measurement behind Transformer::logits_bytes() (workloads/transformer.h): the bytes per logit
the loss keeps from its forward to its backward, and the most it holds while its backward runs.
Megatron-Core's `vocab_parallel_cross_entropy` (megatron/core/tensor_parallel/cross_entropy.py)
casts the bf16 logits to fp32, computes the softmax in place in that copy and saves it; its
backward turns the saved softmax into the gradient in place, and autograd casts that fp32 gradient
to the bf16 logits' dtype. `fused_vocab_parallel_cross_entropy`
(megatron/core/fusions/fused_cross_entropy.py, --cross-entropy-loss-fusion) is measured too where
it imports.

Per case (tokens T, vocabulary V): the bf16 logits [T, 1, V] are a leaf that requires grad (their
own 2 bytes per logit are outside every figure below); then
  kept  = torch.cuda.memory_allocated() after the loss's forward − before it, per logit;
  peak  = torch.cuda.max_memory_allocated() during torch.autograd.grad(loss.sum(), logits) − the
          allocation before the forward, per logit (the returned bf16 gradient included).

Megatron-LM is not installed: `--megatron DIR` names a folder holding `megatron/core` (a checkout of
the public repository; no build step). World size 1 through NCCL (one process).

Writes JSON lines to OUT/results.jsonl (a 'meta' line, then one line per case); prints a table.

Usage: megatron_cross_entropy_memory.py --megatron DIR --out OUT
"""

import argparse
import json
import os
import sys

CASES = [(4096, 128256), (8192, 128256), (16384, 128256), (8192, 50304), (8192, 32000)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--megatron", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from megatron_moe_layer import import_megatron, STUBS  # the same import path and stubs

    import_megatron(args.megatron)
    import torch
    import torch.distributed as dist
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.cross_entropy import vocab_parallel_cross_entropy

    fused = None
    fused_error = None
    try:
        from megatron.core.fusions.fused_cross_entropy import fused_vocab_parallel_cross_entropy as fused
    except Exception as e:  # noqa: BLE001 (report why, measure the rest)
        fused_error = f"{type(e).__name__}: {e}"

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)
    parallel_state.initialize_model_parallel(1, 1)
    tp_group = parallel_state.get_tensor_model_parallel_group()

    meta = {"kind": "meta", "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "stubbed_modules": list(STUBS), "fused_import_error": fused_error}
    rows = [meta]

    def measure(name, loss_fn, T, V):
        torch.cuda.empty_cache()
        logits = torch.randn(T, 1, V, device="cuda", dtype=torch.bfloat16).requires_grad_()
        target = torch.randint(0, V, (T, 1), device="cuda")
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        loss = loss_fn(logits, target)
        torch.cuda.synchronize()
        after_forward = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        (grad,) = torch.autograd.grad(loss.sum(), logits)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        n = T * V
        row = {"kind": "case", "loss": name, "tokens": T, "vocab": V, "logits": n,
               "kept_bytes": after_forward - before, "peak_bytes": peak - before,
               "kept_per_logit": (after_forward - before) / n, "peak_per_logit": (peak - before) / n,
               "grad_dtype": str(grad.dtype)}
        del loss, grad, logits, target
        return row

    for T, V in CASES:
        rows.append(measure("vocab_parallel_cross_entropy", lambda x, t: vocab_parallel_cross_entropy(x, t), T, V))
        if fused is not None:
            try:
                rows.append(measure("fused_vocab_parallel_cross_entropy", lambda x, t: fused(x, t, tp_group), T, V))
            except Exception as e:  # noqa: BLE001
                rows.append({"kind": "error", "loss": "fused_vocab_parallel_cross_entropy", "tokens": T,
                             "vocab": V, "error": f"{type(e).__name__}: {e}"})
    with open(os.path.join(args.out, "results.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(json.dumps(meta))
    print(f"{'loss':<36} {'T':>6} {'V':>7} {'kept B/logit':>13} {'peak B/logit':>13}")
    for r in rows:
        if r["kind"] == "case":
            print(f"{r['loss']:<36} {r['tokens']:>6} {r['vocab']:>7} {r['kept_per_logit']:>13.3f} "
                  f"{r['peak_per_logit']:>13.3f}")
        elif r["kind"] == "error":
            print(f"{r['loss']:<36} {r['tokens']:>6} {r['vocab']:>7} error: {r['error']}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
