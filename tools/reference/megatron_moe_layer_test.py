"""What of megatron_moe_layer.py and megatron_moe_analyze.py runs without a GPU, torch or Megatron."""

import json
import os
import tempfile
import unittest

import megatron_moe_analyze as analyze
import megatron_moe_layer as moe


def X(cat, name, ts, dur, tid=1, corr=None):
    e = dict(ph="X", cat=cat, name=name, ts=ts, dur=dur, tid=tid)
    if corr is not None:
        e["args"] = dict(correlation=corr)
    return e


class TraceTest(unittest.TestCase):
    def events(self):
        return [
            X("user_annotation", "moe_step", 100, 1000),
            X("user_annotation", "moe_fwd", 100, 400),
            X("cpu_op", "aten::mm", 110, 20),
            X("cpu_op", "aten::addmm", 112, 5),          # nested in aten::mm: not top-level
            X("cuda_runtime", "cudaLaunchKernel", 115, 3, corr=1),
            X("cuda_runtime", "cudaEventSynchronize", 300, 50, corr=2),
            X("cuda_runtime", "cudaMemcpyAsync", 320, 4, corr=5),
            X("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 600, 50, tid=2),
            X("cuda_driver", "cuLaunchKernel", 610, 3, tid=2, corr=3),
            X("kernel", "sm90_xmma_gemm_bf16", 130, 100, corr=1),
            X("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 240, 2, corr=5),
            X("kernel", "triton_poi_fused", 640, 10, corr=3),
            X("kernel", "outside_the_step", 2000, 10, corr=99),   # launch not in the window
            X("cuda_runtime", "cudaDeviceSynchronize", 1200, 10, corr=7),  # after the step
        ]

    def test_counts_and_timeline(self):
        r = moe.analyze_trace(self.events())
        self.assertEqual(r["kernels"], 2)
        self.assertEqual((r["kernels_fwd"], r["kernels_bwd"]), (1, 1))
        self.assertEqual(r["launch_calls"], 2)
        self.assertEqual(r["sync_calls"], 1)
        self.assertEqual(r["sync_calls_detail"][0]["phase"], "fwd")
        self.assertEqual(r["memcpys"], {"Memcpy DtoH (Device -> Pinned)": 1})
        self.assertEqual(r["top_level_ops_fwd"], 1)
        self.assertEqual(r["autograd_nodes"], 1)
        self.assertEqual(r["gemm_kernel_us"], 100)
        # GPU: [130, 230], [240, 242], [640, 650] -> busy 112 of a 520 us span
        self.assertEqual(r["gpu_span_us"], 520)
        self.assertAlmostEqual(r["gpu_busy_us"], 112)
        self.assertAlmostEqual(r["gpu_idle_us"], 408)
        self.assertEqual(r["largest_gaps"][0]["us"], 398)
        self.assertEqual(r["host_to_first_gpu_us"], 30)

    def test_no_step(self):
        self.assertIn("error", moe.analyze_trace([X("kernel", "k", 0, 1, corr=1)]))


class CasesTest(unittest.TestCase):
    def test_names_unique_and_models_known(self):
        cases = moe.all_cases()
        names = [c["name"] for c in cases]
        self.assertEqual(len(names), len(set(names)))
        for c in cases:
            self.assertIn(c["model"], moe.MODELS)
            self.assertIn(c["dispatcher"], ("alltoall", "allgather"))
        # every shape at every token count with the alltoall dispatcher, one checked case each
        for m in moe.MODELS:
            for t in moe.TOKENS:
                self.assertIn(f"{m}:alltoall:{t}", names)
            self.assertEqual(sum(1 for c in cases if c["model"] == m and c.get("check")), 1)

    def test_flops(self):
        # Mixtral, 1 token: 2 experts x 3 matrices of 4096 x 14336, router 4096 x 8; x3 for fwd+bwd
        spec = moe.MODELS["mixtral-8x7b"]
        self.assertEqual(moe.flops_of(spec, 1), 3 * (2 * 2 * 4096 * 3 * 14336 + 2 * 4096 * 8))


class AnalyzeTest(unittest.TestCase):
    def test_fit(self):
        a, b = analyze.fit([8, 16, 32], [10 + 0.5 * 8, 10 + 0.5 * 16, 10 + 0.5 * 32])
        self.assertAlmostEqual(a, 10)
        self.assertAlmostEqual(b, 0.5)

    def test_load_and_rows(self):
        prof = dict(kernels_fwd=3, kernels_bwd=6, memcpys={"Memcpy DtoD": 1}, memsets=0,
                    gpu_busy_us=50.0, gpu_span_us=1000.0)
        lines = [dict(kind="meta", torch="x"),
                 dict(kind="case", name="a:alltoall:1024", gpu_ms=1.0, gpu_ms_min=0.9, gpu_ms_max=1.2,
                      host_ms=1.0, host_fwd_ms=0.4, host_bwd_ms=0.5, blocked_ms=0.01, syncs=1,
                      tflops=3.0, profile=prof),
                 dict(kind="case", name="b:alltoall:1024", error="boom"),
                 dict(kind="micro", name="m", host_us=1.0, host_us_min=1.0, host_us_max=1.0)]
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "results.jsonl"), "w") as f:
                for line in lines:
                    f.write(json.dumps(line) + "\n")
            meta, cases, micro = analyze.load(d)
        self.assertEqual(meta["torch"], "x")
        self.assertEqual(len(micro), 1)
        rows = analyze.case_rows(cases)
        self.assertIn("95 %", rows[0])
        self.assertIn("boom", rows[1])


if __name__ == "__main__":
    unittest.main()
