#!/usr/bin/env python3
"""Power, clock and throughput of one GPU under sustained and mixed work, measured as it is.

Sustained back-to-back GEMMs per data type and shape, memory-bound kernels, flash attention,
duty-cycle mixes of GEMM bursts with copy bursts or idle gaps, and whole reference training steps
(train_step.py). Every scenario is a stream of "chunks" (a few kernels each) with a CUDA event after
each chunk; the events are mapped to the host's wall clock (time.time()) through a reference event
recorded on an idle GPU, so that the chunk rates line up with the power and clock samples that
`sample` (NVML, every 10 ms) and the wrapper's nvidia-smi (every 50 ms) write in the same clock.
power_clock_analyze.py joins them into 100 ms windows and the summary. Nothing here changes the
card's clocks, power limit or modes: it only reads them.

Usage:
  python3 power_clock.py run --out DIR [--only NAME,...] [--scale F] [--gap S] [--device cuda|cpu]
  python3 power_clock.py sample --out FILE [--period-ms 10]     # NVML sampler (separate process)
  python3 power_clock.py list                                    # scenario names and durations

Files written by `run` into DIR: scenarios.jsonl (one line a scenario: wall-clock span, work,
chunk count, settings) and chunks.csv.gz (scenario, index, phase, t0_ms, t1_ms, work: one row a
chunk; times in ms after the scenario's reference event, work in FLOP, bytes or tokens).
Exit codes: 0 ok, 1 a scenario failed (the others still run), 2 bad input.
"""

import argparse
import gzip
import json
import math
import os
import signal
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (kind, duration_s, settings). Durations are the sustained part; `--gap` seconds of idle go
# before each scenario so that each one starts from an idle GPU (the step response).
SCENARIOS = [
    ("idle_ctx", "idle", 5, {}),
    ("gemm_bf16_8192", "gemm", 25, {"dtype": "bf16", "m": 8192, "n": 8192, "k": 8192}),
    ("gemm_bf16_4096", "gemm", 20, {"dtype": "bf16", "m": 4096, "n": 4096, "k": 4096}),
    ("gemm_fp8_8192", "gemm", 25, {"dtype": "fp8", "m": 8192, "n": 8192, "k": 8192}),
    ("gemm_fp8_4096", "gemm", 15, {"dtype": "fp8", "m": 4096, "n": 4096, "k": 4096}),
    ("gemm_tf32_8192", "gemm", 20, {"dtype": "tf32", "m": 8192, "n": 8192, "k": 8192}),
    ("gemm_tf32_4096", "gemm", 12, {"dtype": "tf32", "m": 4096, "n": 4096, "k": 4096}),
    ("gemm_fp32_8192", "gemm", 10, {"dtype": "fp32", "m": 8192, "n": 8192, "k": 8192}),
    ("copy_2gib", "copy", 20, {"bytes": 2 << 30}),
    ("add_1gib", "add", 10, {"bytes": 1 << 30}),
    ("attn_flash_bf16", "attn", 20, {"b": 4, "h": 32, "s": 4096, "d": 128}),
    ("mix_gemm_copy_1ms", "mix", 10, {"burst_ms": 1, "other": "copy"}),
    ("mix_gemm_copy_5ms", "mix", 10, {"burst_ms": 5, "other": "copy"}),
    ("mix_gemm_copy_50ms", "mix", 10, {"burst_ms": 50, "other": "copy"}),
    ("mix_gemm_copy_200ms", "mix", 10, {"burst_ms": 200, "other": "copy"}),
    ("mix_gemm_idle_1ms", "mix", 10, {"burst_ms": 1, "other": "idle"}),
    ("mix_gemm_idle_5ms", "mix", 10, {"burst_ms": 5, "other": "idle"}),
    ("mix_gemm_idle_50ms", "mix", 10, {"burst_ms": 50, "other": "idle"}),
    ("mix_gemm_idle_200ms", "mix", 10, {"burst_ms": 200, "other": "idle"}),
    # Reference training steps (tools/reference/configs.json); duration = timed steps' target time.
    ("train_gpt-350m", "train", 20, {"config": "gpt-350m"}),
    ("train_gpt-1.3b", "train", 20, {"config": "gpt-1.3b"}),
    ("train_llama-7b-2k", "train", 20, {"config": "llama-7b-2k"}),
]
DEFAULT_ONLY = [s[0] for s in SCENARIOS if s[1] != "train"]

# Mixes: GEMM bursts of bf16 4096³ products (about 0.2 ms each at full clock) against bursts of
# 256 MiB device copies (about 0.13 ms each) or idle gaps of the same length.
MIX_GEMM = 4096
MIX_COPY_BYTES = 256 << 20
CHUNK_TARGET_MS = 1.0  # an event about every millisecond of work
HOST_LEAD_CHUNKS = 48  # the host runs at most this many chunks ahead of the GPU


class ConfigError(ValueError):
    pass


# ---------------------------------------------------------------------------------------------
# NVML sampler (runs as its own process; no torch).

def nvml_sampler(path, period_ms):
    import pynvml as N
    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(0)
    fi_instant = getattr(N, "NVML_FI_DEV_POWER_INSTANT", 186)
    fi_average = getattr(N, "NVML_FI_DEV_POWER_AVERAGE", 185)

    def field_w(fid):
        try:
            v = N.nvmlDeviceGetFieldValues(h, [fid])[0]
            if v.nvmlReturn != 0:
                return ""
            member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal"}.get(v.valueType, "uiVal")
            return f"{getattr(v.value, member) / 1000.0:.3f}"  # mW
        except Exception:
            return ""

    reasons_fn = getattr(N, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        getattr(N, "nvmlDeviceGetCurrentClocksThrottleReasons", None)

    def safe(fn, *a):
        try:
            return fn(*a)
        except Exception:
            return None

    stop = {"flag": False}

    def on_term(signum, frame):
        stop["flag"] = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    f = open(path, "w")
    f.write("t_wall,sm_mhz,mem_mhz,power_w,power_instant_w,power_average_w,energy_mj,temp_c,reasons\n")
    period = period_ms / 1000.0
    nxt = time.time()
    lines = []
    last_flush = time.time()
    while not stop["flag"]:
        t0 = time.time()
        sm = safe(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_SM)
        mem = safe(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_MEM)
        p = safe(N.nvmlDeviceGetPowerUsage, h)
        pi = field_w(fi_instant)
        pa = field_w(fi_average)
        e = safe(N.nvmlDeviceGetTotalEnergyConsumption, h)
        temp = safe(N.nvmlDeviceGetTemperature, h, N.NVML_TEMPERATURE_GPU)
        rs = safe(reasons_fn, h) if reasons_fn else None
        t1 = time.time()
        lines.append(f"{(t0 + t1) / 2:.6f},{'' if sm is None else sm},{'' if mem is None else mem},"
                     f"{'' if p is None else f'{p / 1000.0:.3f}'},{pi},{pa},{'' if e is None else e},"
                     f"{'' if temp is None else temp},{'' if rs is None else hex(rs)}\n")
        if t1 - last_flush > 1.0:
            f.writelines(lines)
            f.flush()
            lines.clear()
            last_flush = t1
        nxt += period
        delay = nxt - time.time()
        if delay > 0:
            time.sleep(delay)
        else:
            nxt = time.time()
    f.writelines(lines)
    f.close()
    N.nvmlShutdown()


def nvml_static():
    """Read-only facts about the card (power limits, clocks), or {} without NVML."""
    try:
        import pynvml as N
        N.nvmlInit()
        h = N.nvmlDeviceGetHandleByIndex(0)
        out = {}
        for key, fn, args in (
                ("enforced_power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", ()),
                ("power_limit_w", "nvmlDeviceGetPowerManagementLimit", ()),
                ("default_power_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit", ()),
                ("power_limit_constraints_w", "nvmlDeviceGetPowerManagementLimitConstraints", ()),
                ("max_sm_mhz", "nvmlDeviceGetMaxClockInfo", (N.NVML_CLOCK_SM,)),
                ("max_mem_mhz", "nvmlDeviceGetMaxClockInfo", (N.NVML_CLOCK_MEM,)),
                ("app_sm_mhz", "nvmlDeviceGetApplicationsClock", (N.NVML_CLOCK_SM,)),
                ("default_app_sm_mhz", "nvmlDeviceGetDefaultApplicationsClock", (N.NVML_CLOCK_SM,)),
                ("persistence_mode", "nvmlDeviceGetPersistenceMode", ()),
                ("compute_mode", "nvmlDeviceGetComputeMode", ()),
                ("performance_state", "nvmlDeviceGetPerformanceState", ())):
            try:
                v = getattr(N, fn)(h, *args)
                if key.endswith("_w"):
                    v = [x / 1000.0 for x in v] if isinstance(v, (tuple, list)) else v / 1000.0
                out[key] = v
            except Exception as e:  # not supported on this card or driver
                out[key] = f"n/a ({type(e).__name__})"
        out["driver"] = N.nvmlSystemGetDriverVersion()
        if isinstance(out["driver"], bytes):
            out["driver"] = out["driver"].decode()
        return out
    except Exception as e:
        return {"nvml": f"unavailable: {e}"}


_NVML = {}


def energy_mj():
    """The card's energy counter (mJ since the driver loaded), or None without NVML."""
    try:
        if "h" not in _NVML:
            import pynvml as N
            N.nvmlInit()
            _NVML["N"], _NVML["h"] = N, N.nvmlDeviceGetHandleByIndex(0)
        return _NVML["N"].nvmlDeviceGetTotalEnergyConsumption(_NVML["h"])
    except Exception:
        _NVML["h"] = None
        return None


# ---------------------------------------------------------------------------------------------
# Timing: CUDA events on the GPU, host clock stand-ins on the CPU (logic tests only).

class HostEvent:
    def __init__(self):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


class Env:
    def __init__(self, torch, device):
        self.torch = torch
        self.device = torch.device(device)
        self.cuda = device == "cuda"

    def event(self):
        if self.cuda:
            return self.torch.cuda.Event(enable_timing=True)
        return HostEvent()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()


class Stream:
    """Events after each chunk of work; the host stays at most HOST_LEAD_CHUNKS ahead."""

    def __init__(self, env, name):
        self.env = env
        self.name = name
        self.phases = []
        self.works = []
        self.events = []

    def begin(self):
        self.env.sync()
        self.e_start = energy_mj()
        ev = self.env.event()
        self.wall0 = time.time()
        ev.record()
        self.ref = ev
        self.events.append(ev)
        self.phases.append("start")
        self.works.append(0.0)
        self.host0 = time.perf_counter()

    def mark(self, phase, work, lead=HOST_LEAD_CHUNKS):
        ev = self.env.event()
        ev.record()
        self.events.append(ev)
        self.phases.append(phase)
        self.works.append(work)
        n = len(self.events)
        if lead is not None and n > lead:
            self.events[n - 1 - lead].synchronize()

    def host_elapsed(self):
        return time.perf_counter() - self.host0

    def end(self):
        self.env.sync()
        self.wall1 = time.time()
        self.e_end = energy_mj()
        times = [self.ref.elapsed_time(e) for e in self.events]
        rows = []
        for i in range(1, len(times)):
            rows.append((self.name, i - 1, self.phases[i], times[i - 1], times[i], self.works[i]))
        return rows, times[-1]


# ---------------------------------------------------------------------------------------------
# Work.

def set_fp32_mode(torch, tf32: bool):
    """fp32 matrix products on the tensor cores (tf32) or in full fp32 ("ieee")."""
    m = torch.backends.cuda.matmul
    try:
        m.fp32_precision = "tf32" if tf32 else "ieee"
    except Exception:  # torch before the fp32_precision switch
        m.allow_tf32 = tf32


def make_gemm(env, s, small):
    torch = env.torch
    m, n, k = (s["m"], s["n"], s["k"]) if not small else (256, 256, 256)
    dtype = s["dtype"]
    dev = env.device
    flops = 2.0 * m * n * k
    if dtype == "fp8":
        if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
            raise ConfigError("torch._scaled_mm or float8_e4m3fn missing: fp8 skipped")
        sets = []
        for _ in range(2):
            a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major K×N
            sets.append((a, b))
        one = torch.tensor(1.0, device=dev)

        def step(i):
            a, b = sets[i & 1]
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        settings = {"scaled_mm": True, "use_fast_accum": False, "out_dtype": "bf16",
                    "inputs": "randn cast to float8_e4m3fn, scales 1"}
    else:
        tdt = {"bf16": torch.bfloat16, "tf32": torch.float32, "fp32": torch.float32}[dtype]
        if dtype in ("tf32", "fp32") and env.cuda:
            set_fp32_mode(torch, dtype == "tf32")
        sets = [(torch.randn(m, k, device=dev, dtype=tdt), torch.randn(k, n, device=dev, dtype=tdt))
                for _ in range(2)]
        c = torch.empty(m, n, device=dev, dtype=tdt)

        def step(i):
            a, b = sets[i & 1]
            return torch.mm(a, b, out=c)
        settings = {"inputs": "randn", "out": "preallocated"}
    settings.update({"m": m, "n": n, "k": k, "dtype": dtype})
    return step, flops, settings


def make_copy(env, s, small):
    torch = env.torch
    nbytes = s["bytes"] if not small else 16 << 20
    src = torch.randn(nbytes // 4, device=env.device)
    dst = torch.empty_like(src)

    def step(i):
        dst.copy_(src)
    return step, 2.0 * nbytes, {"bytes_per_buffer": nbytes, "counted": "read + write"}


def make_add(env, s, small):
    torch = env.torch
    nbytes = s["bytes"] if not small else 16 << 20
    a = torch.randn(nbytes // 4, device=env.device)
    b = torch.randn(nbytes // 4, device=env.device)
    c = torch.empty_like(a)

    def step(i):
        torch.add(a, b, out=c)
    return step, 3.0 * nbytes, {"bytes_per_buffer": nbytes, "counted": "2 reads + 1 write", "dtype": "fp32"}


def make_attn(env, s, small):
    torch = env.torch
    F = torch.nn.functional
    if not hasattr(F, "scaled_dot_product_attention"):
        raise ConfigError("no scaled_dot_product_attention in this torch: attention skipped")
    b, h, sq, d = (s["b"], s["h"], s["s"], s["d"]) if not small else (1, 2, 256, 64)
    dt = torch.bfloat16
    q, k, v = (torch.randn(b, h, sq, d, device=env.device, dtype=dt, requires_grad=True) for _ in range(3))
    dout = torch.randn(b, h, sq, d, device=env.device, dtype=dt)
    ctx = None
    if env.cuda:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        ctx = lambda: sdpa_kernel([SDPBackend.FLASH_ATTENTION])  # noqa: E731

    def step(i):
        if ctx is not None:
            with ctx():
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                torch.autograd.grad(out, (q, k, v), dout)
        else:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            torch.autograd.grad(out, (q, k, v), dout)
    fwd = 2.0 * b * h * sq * sq * d  # causal: half of 4·b·h·s²·d
    return step, fwd * 3.5, {"b": b, "h": h, "s": sq, "d": d, "causal": True, "backend": "flash",
                             "flop_count": "forward 2·b·h·s²·d, backward 2.5 × forward"}


def time_per_call(env, step, calls=20):
    for i in range(3):
        step(i)
    env.sync()
    a, b = env.event(), env.event()
    a.record()
    for i in range(calls):
        step(i)
    b.record()
    env.sync()
    return a.elapsed_time(b) / calls


def run_sustained(env, name, step, work, duration_s, settings):
    per_call_ms = time_per_call(env, step)  # also the warm-up
    per_chunk = max(1, int(round(CHUNK_TARGET_MS / max(per_call_ms, 1e-3))))
    return per_chunk, per_call_ms


def stream_sustained(env, name, step, work, duration_s, per_chunk):
    st = Stream(env, name)
    st.begin()
    i = 0
    while st.host_elapsed() < duration_s:
        for _ in range(per_chunk):
            step(i)
            i += 1
        st.mark("w", work * per_chunk)
    rows, span_ms = st.end()
    return st, rows, span_ms, i


def stream_mix(env, name, gemm_step, gemm_flops, gemm_ms, other, copy_step, copy_bytes, copy_ms,
               burst_ms, duration_s):
    n_gemm = max(1, int(round(burst_ms / gemm_ms)))
    g_chunk = max(1, int(round(CHUNK_TARGET_MS / gemm_ms)))
    n_copy = max(1, int(round(burst_ms / copy_ms)))
    c_chunk = max(1, int(round(CHUNK_TARGET_MS / copy_ms)))
    st = Stream(env, name)
    st.begin()
    i = 0
    bursts = 0
    while st.host_elapsed() < duration_s:
        done = 0
        while done < n_gemm:
            k = min(g_chunk, n_gemm - done)
            for _ in range(k):
                gemm_step(i)
                i += 1
            done += k
            st.mark("g", gemm_flops * k)
        if other == "copy":
            done = 0
            while done < n_copy:
                k = min(c_chunk, n_copy - done)
                for _ in range(k):
                    copy_step(i)
                done += k
                st.mark("c", copy_bytes * k)
        else:
            st.events[-1].synchronize()
            time.sleep(burst_ms / 1000.0)
            st.mark("i", 0.0)  # this event closes the idle gap (idle time plus the launch latency)
        bursts += 1
    rows, span_ms = st.end()
    return st, rows, span_ms, {"gemm_per_burst": n_gemm, "copies_per_burst": n_copy if other == "copy" else 0,
                               "bursts": bursts, "gemm_ms_full_clock": gemm_ms, "copy_ms_full_clock": copy_ms}


# ---------------------------------------------------------------------------------------------
# Training steps: train_step.py's run_config, with its PhaseTimer wrapped to note wall times.

def run_train(env, name, config_name, duration_s, small):
    sys.path.insert(0, HERE)
    import train_step as ts
    torch = env.torch
    configs = ts.load_configs(argparse.Namespace(configs=os.path.join(HERE, "configs.json"), name=None,
                                                 only=config_name, parallel=None, microbatches=None))
    cfg = configs[0]
    if small:
        import dataclasses
        cfg = dataclasses.replace(cfg, layers=2, hidden=128, heads=4, kv_heads=None if cfg.kv_heads is None else 2,
                                  ffn_hidden=256, vocab=1000, seq_len=64)
    # Steps for the duration: the smoke run's step times (tools/data/testdata) as a guide.
    guide_ms = {"gpt-350m": 152, "gpt-760m": 135, "gpt-1.3b": 196, "llama-1b-gqa": 179, "gpt-2.7b": 203,
                "llama-7b-2k": 254}.get(config_name, 250)
    steps = max(5, int(duration_s * 1000 / guide_ms))
    warmup = 5
    holder = {}

    class RecordingTimer(ts.PhaseTimer):
        def __init__(self, rt):
            super().__init__(rt)
            holder["timer"] = self
            self.first_wall = None

        def mark(self, name):
            super().mark(name)
            if len(self.marks) == 1:  # a step's start after marks.clear(): the GPU was synchronised
                self.first_wall = time.time()
                self.first_energy = energy_mj()

    ts.PhaseTimer = RecordingTimer
    rt = ts.Runtime(torch, "cuda" if env.cuda else "cpu")
    DecoderStage = ts.build_model_classes(torch)
    result = ts.run_config(cfg, rt, steps, warmup, DecoderStage)
    timer = holder["timer"]
    starts = [i for i, (n, _) in enumerate(timer.marks) if n == "start"]
    ref = timer.marks[starts[0]][1]
    times = [timer.elapsed_ms(ref, timer.marks[i][1]) for i in starts]
    rows = [(name, j, "step", times[j], times[j + 1], float(result["tokens_per_step"])) for j in range(len(times) - 1)]
    info = {"wall0": timer.first_wall, "wall1": timer.first_wall + times[-1] / 1e3, "span_ms": times[-1],
            "energy_start_mj": timer.first_energy, "steps": steps, "warmup": warmup,
            "train_step_result": result}
    return rows, info


# ---------------------------------------------------------------------------------------------

def run(args):
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device")
    env = Env(torch, args.device)
    by_name = {s[0]: s for s in SCENARIOS}
    only = args.only.split(",") if args.only else DEFAULT_ONLY
    unknown = [n for n in only if n not in by_name]
    if unknown:
        raise ConfigError(f"--only: unknown scenario(s) {unknown}; known: {list(by_name)}")
    os.makedirs(args.out, exist_ok=True)
    scen_path = os.path.join(args.out, "scenarios.jsonl")
    chunks = gzip.open(os.path.join(args.out, "chunks.csv.gz"), "at")
    if chunks.tell() == 0:
        chunks.write("scenario,i,phase,t0_ms,t1_ms,work\n")
    small = args.device == "cpu"
    torch.manual_seed(0)
    info0 = {"name": "_run", "torch": torch.__version__, "cuda": torch.version.cuda,
             "device": torch.cuda.get_device_name(0) if env.cuda else "cpu",
             "nvml": nvml_static(), "wall": time.time(), "scale": args.scale, "gap_s": args.gap}
    if env.cuda:
        p = torch.cuda.get_device_properties(0)
        info0["sm_count"] = p.multi_processor_count
        try:
            info0["cublas"] = torch._C._cuda_getCompiledVersion()
        except Exception:
            pass
    with open(scen_path, "a") as f:
        f.write(json.dumps(info0) + "\n")
    failures = 0
    mix_ops = None
    summary = []
    for name in only:
        _, kind, dur, s = by_name[name]
        dur = dur * args.scale
        rec = {"name": name, "kind": kind, "duration_target_s": dur, "settings": dict(s)}
        try:
            if kind == "idle":
                env.sync()
                rec["wall0"] = time.time()
                rec["energy_start_mj"] = energy_mj()
                time.sleep(dur)
                rec["wall1"] = time.time()
                rec["energy_end_mj"] = energy_mj()
                _write_rec(scen_path, rec)
                continue
            if kind in ("gemm", "copy", "add", "attn"):
                step, work, settings = {"gemm": make_gemm, "copy": make_copy, "add": make_add,
                                        "attn": make_attn}[kind](env, s, small)
                rec["settings"].update(settings)
                per_chunk, per_call_ms = run_sustained(env, name, step, work, dur, settings)
                rec.update({"calls_per_chunk": per_chunk, "warm_call_ms": per_call_ms,
                            "work_per_call": work, "unit": "bytes" if kind in ("copy", "add") else "flop"})
                time.sleep(args.gap)
                st, rows, span_ms, calls = stream_sustained(env, name, step, work, dur, per_chunk)
                rec["calls"] = calls
            elif kind == "mix":
                if mix_ops is None:
                    gstep, gflops, _ = make_gemm(env, {"dtype": "bf16", "m": MIX_GEMM, "n": MIX_GEMM,
                                                       "k": MIX_GEMM}, small)
                    cstep, cbytes, _ = make_copy(env, {"bytes": MIX_COPY_BYTES}, small)
                    mix_ops = (gstep, gflops, time_per_call(env, gstep), cstep, cbytes, time_per_call(env, cstep))
                gstep, gflops, gms, cstep, cbytes, cms = mix_ops
                time.sleep(args.gap)
                st, rows, span_ms, extra = stream_mix(env, name, gstep, gflops, gms, s["other"], cstep, cbytes, cms,
                                                      s["burst_ms"], dur)
                rec["settings"].update(extra)
                rec["settings"].update({"gemm": f"bf16 {MIX_GEMM}^3", "copy_bytes_per_buffer": MIX_COPY_BYTES})
                rec["unit"] = "flop (g), bytes (c)"
            elif kind == "train":
                time.sleep(args.gap)
                rows, info = run_train(env, name, s["config"], dur, small)
                rec.update(info)
                rec["unit"] = "tokens"
                _write_chunks(chunks, rows)
                rec["energy_end_mj_at_return"] = energy_mj()
                rec["chunks"] = len(rows)
                _write_rec(scen_path, rec)
                r = info["train_step_result"]
                summary.append(f"{name:24s} step {r['step_time_ms']:.1f} ms  steps {info['steps']}  "
                               f"span {info['span_ms'] / 1e3:.1f} s")
                print(summary[-1], flush=True)
                continue
            rec.update({"wall0": st.wall0, "wall1": st.wall1, "span_ms": span_ms,
                        "energy_start_mj": st.e_start, "energy_end_mj": st.e_end, "chunks": len(rows)})
            _write_chunks(chunks, rows)
            _write_rec(scen_path, rec)
            summary.append(_quick(name, rows, rec))
            print(summary[-1], flush=True)
        except ConfigError as e:
            rec["skipped"] = str(e)
            _write_rec(scen_path, rec)
            print(f"{name}: skipped: {e}", flush=True)
        except Exception as e:  # one scenario's failure does not stop the others
            import traceback
            traceback.print_exc()
            rec["error"] = f"{type(e).__name__}: {e}"
            _write_rec(scen_path, rec)
            failures += 1
        finally:
            step = st = rows = None
            if env.cuda:
                torch.cuda.empty_cache()
    chunks.close()
    return 1 if failures else 0


def _quick(name, rows, rec):
    """First 100 ms vs last half rate, from the chunks alone (the analysis adds power and clock)."""
    by_phase = {}
    for r in rows:
        by_phase.setdefault(r[2], []).append(r)
    parts = []
    for ph, rs in sorted(by_phase.items()):
        if ph == "i":
            continue
        span = rs[-1][4]
        first = [r for r in rs if r[4] <= 100.0]
        late = [r for r in rs if r[3] >= span / 2]

        def rate(sel):
            t = sum(r[4] - r[3] for r in sel)
            return sum(r[5] for r in sel) / (t * 1e-3) if t > 0 else float("nan")
        scale = 1e12 if ph in ("w", "g") and rec.get("kind") != "copy" and rec.get("kind") != "add" else 1e9
        unit = "TFLOP/s" if scale == 1e12 else "GB/s"
        parts.append(f"{ph}: first100ms {rate(first) / scale:8.1f} settled {rate(late) / scale:8.1f} {unit}")
    return f"{name:24s} " + "; ".join(parts)


def _write_rec(path, rec):
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def _write_chunks(f, rows):
    for r in rows:
        f.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.4f},{r[4]:.4f},{r[5]:.6g}\n")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--only", help="comma list of scenarios (default: all but the training steps)")
    r.add_argument("--scale", type=float, default=1.0, help="multiply every duration (default 1)")
    r.add_argument("--gap", type=float, default=5.0, help="idle seconds before each scenario (default 5)")
    r.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    s = sub.add_parser("sample")
    s.add_argument("--out", required=True)
    s.add_argument("--period-ms", type=float, default=10.0)
    sub.add_parser("list")
    args = p.parse_args(argv)
    try:
        if args.cmd == "sample":
            nvml_sampler(args.out, args.period_ms)
            return 0
        if args.cmd == "list":
            for name, kind, dur, s in SCENARIOS:
                print(f"{name:24s} {kind:6s} {dur:4d} s  {json.dumps(s)}")
            return 0
        if args.scale <= 0 or not math.isfinite(args.scale):
            raise ConfigError(f"--scale {args.scale} must be positive")
        return run(args)
    except ConfigError as e:
        print(f"power_clock.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
