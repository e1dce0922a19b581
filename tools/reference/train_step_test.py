"""Tests of train_step.py that need no GPU and no torch: parameter counts against published model
sizes, the memory arithmetic, configs.json, and input validation. Run by ctest
(reference_train_step_test) or `python3 -m unittest discover -s tools/reference -p '*_test.py'`."""

import json
import os
import unittest

import train_step as ts

HERE = os.path.dirname(os.path.abspath(__file__))
# NVIDIA H200: 143771 MiB reported by nvidia-smi on the calibration machine (KINDS.md of the device
# machine; the datasheet's 141 GB); the CUDA context and allocator slack need some of it.
H200_USABLE_BYTES = 140 * ts.GIB


def config(**overrides):
    raw = {"name": "t", "layers": 2, "hidden": 64, "heads": 4, "ffn_hidden": 256, "vocab": 100,
           "seq_len": 16}
    raw.update(overrides)
    return ts.make_config(raw, "test")


class ParameterCountTest(unittest.TestCase):
    def test_gpt2_medium(self):
        # GPT-2 medium (Radford et al. 2019; Hugging Face gpt2-medium): 354,823,168 parameters with
        # 1024 learned positions, biases, tied embeddings. Per layer 12h² + 13h.
        cfg = config(layers=24, hidden=1024, heads=16, ffn_hidden=4096, vocab=50257, seq_len=1024)
        h = 1024
        self.assertEqual(ts.parameter_count(cfg)["per_layer"], 12 * h * h + 13 * h)
        self.assertEqual(ts.parameter_count(cfg)["total"], 354_823_168)

    def test_llama2_7b(self):
        # Llama 2 7B (Touvron et al. 2023; Hugging Face Llama-2-7b-hf): 6,738,415,616 parameters.
        cfg = config(layers=32, hidden=4096, heads=32, kv_heads=32, ffn_hidden=11008, vocab=32000, seq_len=4096,
                     mlp="swiglu", norm="rmsnorm", positions="rope", bias=False, tie_embeddings=False)
        self.assertEqual(ts.parameter_count(cfg)["total"], 6_738_415_616)

    def test_llama32_1b_gqa(self):
        # Llama 3.2 1B (Meta; Hugging Face Llama-3.2-1B): 1,235,814,400 parameters, 8 KV heads, tied.
        cfg = config(layers=16, hidden=2048, heads=32, kv_heads=8, ffn_hidden=8192, vocab=128256, seq_len=4096,
                     mlp="swiglu", norm="rmsnorm", positions="rope", bias=False, tie_embeddings=True)
        self.assertEqual(ts.parameter_count(cfg)["total"], 1_235_814_400)


class MemoryEstimateTest(unittest.TestCase):
    def test_static_is_16_bytes_per_parameter(self):
        cfg = config()
        n = ts.parameter_count(cfg)["total"]
        m = ts.memory_estimate(cfg)
        self.assertEqual(m["static"], 16 * n)  # fp32 weight 4 + fp32 grad 4 + Adam m, v 8
        self.assertEqual(m["logits"], 10 * cfg.seq_len * cfg.micro_batch * cfg.vocab)
        # 34·s·b·h bytes of activations per layer at a 4h two-matrix MLP (Korthikanti et al. 2022
        # without the attention-score terms that flash attention does not store).
        self.assertEqual(m["activations"], cfg.layers * 34 * cfg.seq_len * cfg.micro_batch * cfg.hidden)

    def test_recompute_keeps_layer_inputs_and_one_layer(self):
        cfg = config(recompute=True)
        per_layer = 34 * cfg.seq_len * cfg.micro_batch * cfg.hidden
        expected = cfg.layers * 2 * cfg.seq_len * cfg.micro_batch * cfg.hidden + per_layer
        self.assertEqual(ts.memory_estimate(cfg)["activations"], expected)


class ShippedConfigsTest(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(HERE, "configs.json")) as f:
            raw = json.load(f)
        self.configs = [ts.make_config(r, f"configs.json[{i}]") for i, r in enumerate(raw)]

    def test_cover_what_validation_needs(self):
        names = [c.name for c in self.configs]
        self.assertEqual(len(names), len(set(names)))
        self.assertGreaterEqual(len(self.configs), 8)
        params = [ts.parameter_count(c)["total"] for c in self.configs]
        self.assertLess(min(params), 0.4e9)
        self.assertGreater(max(params), 6.5e9)
        self.assertTrue(any(c.kv == c.heads for c in self.configs))  # MHA
        self.assertTrue(any(c.kv < c.heads for c in self.configs))   # GQA
        self.assertTrue(any(c.recompute for c in self.configs))
        self.assertTrue(any(not c.recompute for c in self.configs))
        self.assertEqual({c.seq_len for c in self.configs}, {2048, 4096})

    def test_each_fits_one_h200(self):
        for c in self.configs:
            with self.subTest(c.name):
                self.assertLess(ts.memory_estimate(c)["total"], H200_USABLE_BYTES)


class ValidationTest(unittest.TestCase):
    def assert_rejected(self, parts, **overrides):
        with self.assertRaises(ts.ConfigError) as ctx:
            config(**overrides)
        for part in parts:
            self.assertIn(part, str(ctx.exception))

    def test_rejects_bad_values_naming_the_key(self):
        self.assert_rejected(["mlp", "'relu'", "gelu, swiglu"], mlp="relu")
        self.assert_rejected(["hidden 65", "heads 4"], hidden=65)
        self.assert_rejected(["heads 4", "kv_heads 3"], kv_heads=3)
        self.assert_rejected(["layers", "0"], layers=0)
        self.assert_rejected(["microbatches", "pp"], microbatches=4)
        self.assert_rejected(["recompute", "true or false"], recompute="yes")
        self.assert_rejected(["unknown key", "dropout"], dropout=0.1)

    def test_missing_key(self):
        with self.assertRaises(ts.ConfigError) as ctx:
            ts.make_config({"name": "x", "layers": 2}, "test")
        self.assertIn("hidden", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
