"""Tests of the power and host measurement scripts that need no GPU and no torch: the analysis of
power_clock_analyze.py on synthetic samples with known answers, the figures that
tools/data/h200-2026-12-01-power/README.md quotes from its data, and the scenario and
configuration tables of power_clock.py and host_launch.py. Run by ctest (reference_train_step_test)
or `python3 -m unittest discover -s tools/reference -p '*_test.py'`."""

import gzip
import json
import os
import shutil
import tempfile
import unittest

import host_launch
import power_clock
import power_clock_analyze as pa
import train_step as ts

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "calibrate", "data", "h200-2026-12-01-power")
WALL0 = 1_800_000_000.0


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_run(d, scenarios, chunks, power_w=700.0, refresh_s=0.1, span_s=3.0):
    """A measurement folder: scenario lines, chunk rows, NVML samples every 10 ms whose values
    refresh every refresh_s (as the H200's driver does), at constant power."""
    with open(os.path.join(d, "scenarios.jsonl"), "w") as f:
        f.write(json.dumps({"name": "_run", "nvml": {"max_sm_mhz": 1980}}) + "\n")
        for s in scenarios:
            f.write(json.dumps(s) + "\n")
    with gzip.open(os.path.join(d, "chunks.csv.gz"), "wt") as f:
        f.write("scenario,i,phase,t0_ms,t1_ms,work\n")
        for r in chunks:
            f.write(",".join(str(x) for x in r) + "\n")
    with open(os.path.join(d, "nvml.csv"), "w") as f:
        f.write("t_wall,sm_mhz,mem_mhz,power_w,power_instant_w,power_average_w,energy_mj,temp_c,reasons\n")
        t = WALL0 - 1.0
        while t < WALL0 + span_s + 1.0:
            held = WALL0 - 1.0 + int((t - WALL0 + 1.0) / refresh_s) * refresh_s  # value of the last refresh
            energy = int(1e9 + (held - WALL0 + 1.0) * power_w * 1000)
            f.write(f"{t:.6f},1500,3201,{power_w},{power_w},{power_w},{energy},50,0x4\n")
            t += 0.01


def gemm_chunks(name, n_ms, fast_ms, fast_rate, slow_rate):
    """1 ms chunks at fast_rate (FLOP/s) for fast_ms, then slow_rate."""
    rows = []
    for i in range(n_ms):
        rate = fast_rate if i < fast_ms else slow_rate
        rows.append((name, i, "w", float(i), float(i + 1), rate * 1e-3))
    return rows


class AnalyzeSyntheticTest(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.d)

    def test_step_response_rates_and_energy(self):
        name = "gemm_x"
        rec = {"name": name, "kind": "gemm", "wall0": WALL0, "wall1": WALL0 + 3.0, "span_ms": 3000.0}
        write_run(self.d, [rec], gemm_chunks(name, 3000, 30, 800e12, 660e12))
        _, _, windows, summaries, _ = pa.analyze(self.d)
        s = summaries[0]
        self.assertAlmostEqual(s["rate_first_10ms"] / 1e12, 800.0, places=6)
        # First 100 ms: 30 ms at 800, 70 ms at 660.
        self.assertAlmostEqual(s["rate_first_100ms"] / 1e12, (30 * 800 + 70 * 660) / 100, places=6)
        self.assertAlmostEqual(s["rate_settled"] / 1e12, 660.0, places=6)
        self.assertEqual(s["rate_drop_onset_ms"], 30.0)
        self.assertEqual(len(windows), 30)
        # Constant 700 W read through a counter refreshed every 100 ms: within one refresh step.
        self.assertAlmostEqual(s["avg_power_w"], 700.0, delta=700.0 * 0.1 / 3.0 + 1e-6)

    def test_mix_burst_profile(self):
        name = "mix_x"
        rows, t, i = [], 0.0, 0
        while t < 2900.0:  # 50 ms GEMM bursts (800 for 20 ms, then 600) between 50 ms idle gaps
            for k in range(50):
                rate = 800e12 if k < 20 else 600e12
                rows.append((name, i, "g", t, t + 1.0, rate * 1e-3))
                t += 1.0
                i += 1
            rows.append((name, i, "i", t, t + 50.0, 0.0))
            t += 50.0
            i += 1
        rec = {"name": name, "kind": "mix", "wall0": WALL0, "wall1": WALL0 + t / 1e3, "span_ms": t}
        write_run(self.d, [rec], rows)
        s = pa.analyze(self.d)[3][0]
        self.assertEqual(s["burst_drop_onset_ms"], 20.0)
        self.assertAlmostEqual(s["busy_frac"], 0.5, places=3)
        self.assertAlmostEqual(s["gemm_burst_ms_median"], 50.0, places=6)
        self.assertAlmostEqual(s["gemm_rate_burst_head"] / 1e12, 800.0, places=6)
        self.assertAlmostEqual(s["gemm_rate_burst_tail"] / 1e12, 600.0, places=6)

    def test_energy_between_interpolates(self):
        nvml = [{"t_wall": 0.0, "energy_mj": 0}, {"t_wall": 1.0, "energy_mj": 700_000}]
        self.assertAlmostEqual(pa.energy_between(nvml, 0.25, 0.75), 350.0)
        self.assertIsNone(pa.energy_between(nvml, -1.0, 0.5))  # outside the samples: unknown


@unittest.skipUnless(os.path.isdir(DATA), "no H200 power data in this checkout")
class H200DataTest(unittest.TestCase):
    """The figures the data README quotes, from the committed raw files."""

    @classmethod
    def setUpClass(cls):
        cls.run1 = {s["name"]: s for s in pa.analyze(os.path.join(DATA, "run1"))[3]}
        cls.run2 = {s["name"]: s for s in pa.analyze(os.path.join(DATA, "run2"))[3]}

    def test_idle_and_limit(self):
        self.assertAlmostEqual(self.run1["idle_noctx"]["mean_power_w"], 79.9, delta=0.1)
        self.assertAlmostEqual(self.run1["idle_ctx"]["avg_power_w"], 123.3, delta=0.1)
        run = next(r for r in read_jsonl(os.path.join(DATA, "run1", "scenarios.jsonl")) if r["name"] == "_run")
        self.assertEqual(run["nvml"]["enforced_power_limit_w"], 700.0)

    def test_gemm_first_and_settled(self):
        for name, first100, settled in (("gemm_bf16_8192", 732.2, 658.2), ("gemm_fp8_8192", 1358.4, 1197.0),
                                        ("gemm_tf32_8192", 378.7, 340.4)):
            s = self.run1[name]
            self.assertAlmostEqual(s["rate_first_100ms"] / 1e12, first100, delta=0.1, msg=name)
            self.assertAlmostEqual(s["rate_settled"] / 1e12, settled, delta=0.1, msg=name)
            self.assertEqual(s["rate_oscillation_period_s"], 1.0, msg=name)
            self.assertTrue(24.0 <= s["rate_drop_onset_ms"] <= 38.0, msg=name)

    def test_memory_bound_stays_at_full_clock(self):
        s = self.run1["copy_2gib"]
        self.assertEqual(s["settled_sm_mhz"], 1980.0)
        self.assertEqual(s["reasons_seen"], "0x0")
        self.assertAlmostEqual(s["rate_settled"] / 1e9, 4268, delta=1)

    def test_training_steps(self):
        for name, watts, joules in (("train_gpt-350m", 650.5, 98.7), ("train_gpt-1.3b", 673.7, 131.6),
                                    ("train_llama-7b-2k", 688.7, 178.1)):
            s = self.run2[name]
            self.assertAlmostEqual(s["avg_power_w"], watts, delta=0.1, msg=name)
            self.assertAlmostEqual(s["joules_per_step"], joules, delta=0.1, msg=name)

    def test_host_queue_depth_and_graph_steps(self):
        lines = read_jsonl(os.path.join(DATA, "run1", "host.jsonl"))
        depth = {(r["op"], r["rep"]): r["queue_depth"] for r in lines if r["kind"] == "queue"}
        self.assertEqual(depth[("cuda_sleep_0", 0)], 1021)
        self.assertEqual(depth[("mul_inplace", 1)], 1021)
        steps = read_jsonl(os.path.join(DATA, "run2", "host.jsonl"))
        graph = {r["config"]: r["graph"]["step_time_ms"] for r in steps if r["kind"] == "step"}
        self.assertEqual(len(graph), 5)
        self.assertAlmostEqual(graph["gpt-125m-s256-b1"], 4.833, delta=0.001)


class TablesTest(unittest.TestCase):
    def test_scenarios(self):
        names = [s[0] for s in power_clock.SCENARIOS]
        self.assertEqual(len(names), len(set(names)))
        self.assertFalse([n for n in power_clock.DEFAULT_ONLY if n.startswith("train_")])
        with open(os.path.join(HERE, "configs.json")) as f:
            configs = {c["name"] for c in json.load(f)}
        for name, kind, _, settings in power_clock.SCENARIOS:
            if kind == "train":
                self.assertIn(settings["config"], configs)

    def test_launch_bound_configs_are_small(self):
        for name, raw in host_launch.STEP_CONFIGS.items():
            cfg = ts.make_config(dict(raw, name=name), name)
            params = ts.parameter_count(cfg)["total"]
            self.assertTrue(100e6 <= params <= 400e6, f"{name}: {params}")
            self.assertIn(cfg.seq_len, (256, 512))
            self.assertIn(cfg.micro_batch, (1, 2))


if __name__ == "__main__":
    unittest.main()
