#!/usr/bin/env python3
"""Writes a list of GEMM shapes that no calibration profile sample has, for clustersim-calibrate --shapes.

The shapes test the GEMM predictor on shapes outside its profile (`clustersim validate --calibration
... --gemm-holdout`): the GEMMs of shipped scenarios whose shapes are not in the calibration list
(from `clustersim calibrate shapes`), then random shapes drawn with a fixed seed:
  dtype         uniform over bf16, fp16, fp8, tf32, fp32
  M, N, K       log-uniform in [384, 8192], rounded to a multiple of 16
  misalignment  with probability 0.3, one of M, N, K (uniform) moved by +1 .. +7
  fp32          M·N·K at most 4096³ (CUDA-core kernels: about 3 ms)
Every (M, N, K, dtype) already in the calibration list (--exclude) is dropped.

Usage: holdout_shapes.py --scenario-shapes FILE --exclude FILE [--random N] [--seed S] > OUT
"""
import argparse
import math
import random


def read_shapes(path):
    shapes = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            m, n, k, dtype = int(parts[0]), int(parts[1]), int(parts[2]), parts[3]
            label = parts[4] if len(parts) > 4 else ""
            shapes.append((m, n, k, dtype, label))
    return shapes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario-shapes", required=True, help="output of clustersim calibrate shapes")
    parser.add_argument("--exclude", required=True, help="the calibration shape list")
    parser.add_argument("--random", type=int, default=45, help="random shapes to draw")
    parser.add_argument("--seed", type=int, default=20261129)
    args = parser.parse_args()

    seen = {(m, n, k, d) for m, n, k, d, _ in read_shapes(args.exclude)}
    out = []
    for m, n, k, d, label in read_shapes(args.scenario_shapes):
        if (m, n, k, d) not in seen:
            seen.add((m, n, k, d))
            out.append((m, n, k, d, "scenario_" + label if label else "scenario"))

    rng = random.Random(args.seed)
    dtypes = ["bf16", "fp16", "fp8", "tf32", "fp32"]
    drawn = 0
    while drawn < args.random:
        dtype = rng.choice(dtypes)
        dims = [16 * round(math.exp(rng.uniform(math.log(384), math.log(8192))) / 16) for _ in range(3)]
        label = "random"
        if rng.random() < 0.3:
            dims[rng.randrange(3)] += rng.randint(1, 7)
            label = "random_misaligned"
        m, n, k = dims
        if dtype == "fp32" and m * n * k > 4096 ** 3:
            continue
        if (m, n, k, dtype) in seen:
            continue
        seen.add((m, n, k, dtype))
        out.append((m, n, k, dtype, label))
        drawn += 1

    print("# GEMM shapes outside tools/calibrator/shapes/h200-calibration.txt (tools/calibrator/holdout_shapes.py,")
    print(f"# seed {args.seed}): scenario GEMMs not in the calibration list, then {args.random} random shapes.")
    print("# M N K dtype label (cuBLAS column-major: M = output features, N = tokens)")
    for m, n, k, d, label in out:
        print(f"{m} {n} {k} {d} {label}")


if __name__ == "__main__":
    main()
