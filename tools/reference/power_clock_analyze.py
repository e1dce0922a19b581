#!/usr/bin/env python3
"""Joins power_clock.py's chunks with the NVML and nvidia-smi samples: 100 ms windows and a summary.

  python3 power_clock_analyze.py DIR [--summary FILE.json]

Reads DIR/scenarios.jsonl, chunks.csv.gz, nvml.csv(.gz) and nvsmi.csv (meta.txt for the time zone
of nvidia-smi's timestamps); writes DIR/windows.csv, prints a summary table, and with --summary also
writes the summary as JSON. Pure Python (no numpy), so that it runs where the data are.

Windows: 100 ms from each scenario's reference event (t = 0 when its first kernel was enqueued on
an idle GPU). A chunk's work and time are split over the windows it overlaps, in proportion. A
window's rate is its work over its busy time (chunks of that phase), so a window half idle still
shows the rate of the kernels that ran. Power and clock are the means of the samples whose time
lies in the window.
"""

import bisect
import csv
import gzip
import io
import json
import math
import os
import re
import statistics
import sys
from datetime import datetime, timedelta, timezone

WINDOW_MS = 100.0
SW_POWER_CAP = 0x4  # nvmlClocksEventReasonSwPowerCap
HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80
# nvidia-smi's CSV header names some fields differently from the query names.
SMI_ALIASES = {"clocks.current.sm": "clocks.sm", "clocks.current.memory": "clocks.mem"}


def _open(path):
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"))
    return open(path)


def read_lines_tolerant(path):
    """Lines of a possibly truncated (gzip) file: stops at the damage."""
    out = []
    try:
        with _open(path) as f:
            for line in f:
                out.append(line)
    except (EOFError, OSError, gzip.BadGzipFile):
        pass
    return out


def first_existing(d, *names):
    for n in names:
        p = os.path.join(d, n)
        if os.path.exists(p):
            return p
    return None


def num(s):
    try:
        v = float(s)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def load_nvml(d):
    p = first_existing(d, "nvml.csv.gz", "nvml.csv")
    rows = []
    if not p:
        return rows
    lines = read_lines_tolerant(p)
    if not lines:
        return rows
    header = lines[0].strip().split(",")
    for line in lines[1:]:
        parts = line.strip().split(",")
        if len(parts) != len(header):
            continue
        r = dict(zip(header, parts))
        rec = {k: num(r[k]) for k in header if k != "reasons"}
        rec["reasons"] = int(r["reasons"], 16) if r.get("reasons") else None
        if rec["t_wall"] is not None:
            rows.append(rec)
    rows.sort(key=lambda r: r["t_wall"])
    return rows


def tz_offset(d):
    p = os.path.join(d, "meta.txt")
    if os.path.exists(p):
        with open(p) as f:
            m = re.search(r"local: \S+ \S+ ([+-]\d{4})", f.read())
        if m:
            s = m.group(1)
            sign = 1 if s[0] == "+" else -1
            return timezone(sign * timedelta(hours=int(s[1:3]), minutes=int(s[3:5])))
    return timezone.utc


def load_smi(d):
    p = first_existing(d, "nvsmi.csv", "nvsmi.csv.gz")
    rows = []
    if not p:
        return rows
    tz = tz_offset(d)
    lines = [line.rstrip("\n") for line in read_lines_tolerant(p)]
    header = None
    for line in lines:
        if line.startswith("timestamp"):
            header = [SMI_ALIASES.get(h.strip().split(" [")[0], h.strip().split(" [")[0]) for h in line.split(",")]
            continue
        if header is None:
            continue
        parts = [x.strip() for x in line.split(",")]
        if len(parts) != len(header):
            continue
        r = dict(zip(header, parts))
        try:
            t = datetime.strptime(r["timestamp"], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=tz).timestamp()
        except ValueError:
            continue
        rec = {"t_wall": t}
        for k, v in r.items():
            if k == "timestamp":
                continue
            if k.startswith("clocks_event_reasons") or k.startswith("clocks_throttle_reasons"):
                try:
                    rec["reasons"] = int(v, 16)
                except ValueError:
                    rec["reasons"] = None
                continue
            rec[k] = num(v.split(" ")[0])
        rows.append(rec)
    rows.sort(key=lambda r: r["t_wall"])
    return rows


def load_scenarios(d):
    recs = []
    p = os.path.join(d, "scenarios.jsonl")
    if os.path.exists(p):
        with open(p) as f:
            for line in f:
                line = line.strip()
                if line:
                    recs.append(json.loads(line))
    return recs


def load_chunks(d):
    by = {}
    p = first_existing(d, "chunks.csv.gz", "chunks.csv")
    if not p:
        return by
    lines = read_lines_tolerant(p)
    for line in lines:
        parts = line.strip().split(",")
        if len(parts) != 6 or parts[0] == "scenario":
            continue
        try:
            by.setdefault(parts[0], []).append((int(parts[1]), parts[2], float(parts[3]), float(parts[4]),
                                                float(parts[5])))
        except ValueError:
            continue
    for v in by.values():
        v.sort()
    return by


_TIMES = {}


def samples_between(rows, t0, t1):
    key = id(rows)
    if key not in _TIMES or len(_TIMES[key][0]) != len(rows):
        _TIMES[key] = ([r["t_wall"] for r in rows], rows)
    ts = _TIMES[key][0]
    a = bisect.bisect_left(ts, t0)
    b = bisect.bisect_left(ts, t1)
    return rows[a:b]


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def energy_between(nvml, t0, t1):
    """Energy (J) between two wall times from the card's cumulative counter, interpolated."""
    pts = [(r["t_wall"], r["energy_mj"]) for r in nvml if r.get("energy_mj") is not None]
    if len(pts) < 2 or t0 < pts[0][0] or t1 > pts[-1][0]:
        return None
    ts = [p[0] for p in pts]

    def at(t):
        i = max(1, min(len(pts) - 1, bisect.bisect_left(ts, t)))
        (ta, ea), (tb, eb) = pts[i - 1], pts[i]
        return ea + (eb - ea) * (t - ta) / (tb - ta) if tb > ta else ea
    return (at(t1) - at(t0)) / 1000.0


def window_rows(name, rec, chunks, nvml, smi):
    wall0 = rec["wall0"]
    span_ms = rec.get("span_ms") or (rec["wall1"] - wall0) * 1e3
    nwin = max(1, int(math.ceil(span_ms / WINDOW_MS)))
    work = [{} for _ in range(nwin)]
    busy = [{} for _ in range(nwin)]
    for _, ph, t0, t1, w in chunks:
        if t1 <= t0:
            continue
        a = int(t0 // WINDOW_MS)
        b = min(nwin - 1, int(t1 // WINDOW_MS))
        for k in range(max(0, a), b + 1):
            lo, hi = max(t0, k * WINDOW_MS), min(t1, (k + 1) * WINDOW_MS)
            if hi <= lo:
                continue
            f = (hi - lo) / (t1 - t0)
            work[k][ph] = work[k].get(ph, 0.0) + w * f
            busy[k][ph] = busy[k].get(ph, 0.0) + (hi - lo)
    out = []
    for k in range(nwin):
        t_lo = wall0 + k * WINDOW_MS / 1e3
        t_hi = t_lo + WINDOW_MS / 1e3
        nv = samples_between(nvml, t_lo, t_hi)
        sm = samples_between(smi, t_lo, t_hi)
        reasons = 0
        for r in nv:
            reasons |= r.get("reasons") or 0
        row = {"scenario": name, "window": k, "t_ms": k * WINDOW_MS}
        for ph in sorted(set(work[k]) | set(busy[k])):
            bt = busy[k].get(ph, 0.0)
            row[f"rate_{ph}"] = work[k].get(ph, 0.0) / (bt * 1e-3) if bt > 0 else None
            row[f"busy_{ph}"] = bt / WINDOW_MS
        row.update({
            "sm_mhz": mean(r["sm_mhz"] for r in nv), "mem_mhz": mean(r["mem_mhz"] for r in nv),
            "power_w": mean(r["power_w"] for r in nv), "power_instant_w": mean(r.get("power_instant_w") for r in nv),
            "power_average_w": mean(r.get("power_average_w") for r in nv), "temp_c": mean(r["temp_c"] for r in nv),
            "reasons": hex(reasons) if nv else "", "n_nvml": len(nv),
            "smi_power_draw_w": mean(r.get("power.draw") for r in sm),
            "smi_power_instant_w": mean(r.get("power.draw.instant") for r in sm),
            "smi_sm_mhz": mean(r.get("clocks.sm") for r in sm), "n_smi": len(sm)})
        out.append(row)
    return out


def binned_rate(chunks, phase, bin_ms, limit_ms):
    """Rate per bin of bin_ms up to limit_ms (work split by overlap)."""
    n = int(limit_ms // bin_ms)
    work = [0.0] * n
    busy = [0.0] * n
    for _, ph, t0, t1, w in chunks:
        if ph != phase or t1 <= t0 or t0 >= limit_ms:
            continue
        for k in range(int(t0 // bin_ms), min(n - 1, int(t1 // bin_ms)) + 1):
            lo, hi = max(t0, k * bin_ms), min(t1, (k + 1) * bin_ms)
            if hi > lo:
                work[k] += w * (hi - lo) / (t1 - t0)
                busy[k] += hi - lo
    return [(k * bin_ms, work[k] / (busy[k] * 1e-3) if busy[k] > 0 else None) for k in range(n)]


def drop_onset(profile, ref_ms=16.0, skip_ms=4.0, frac=0.98):
    """First bin time (ms) from which the rate stays below frac × the peak of the first ref_ms for
    three bins, or None."""
    peak = max((r for t, r in profile if t < ref_ms and r is not None), default=None)
    if not peak:
        return None, None
    for i, (t, r) in enumerate(profile):  # the first of three bins in a row under the mark
        nxt = [q for _, q in profile[i:i + 3]]
        if t > skip_ms and len(nxt) == 3 and all(q is not None and q < frac * peak for q in nxt):
            return t, peak
    return None, peak


def autocorr_peak_lag_s(values, lo=5, hi=20):
    """Lag (in 100 ms windows, returned in s) with the largest autocorrelation between lo and hi."""
    x = [v for v in values if v is not None]
    if len(x) < 3 * hi:
        return None, None
    m = sum(x) / len(x)
    den = sum((v - m) ** 2 for v in x)
    if den <= 0:
        return None, None
    best = max(((sum((x[i] - m) * (x[i + lag] - m) for i in range(len(x) - lag)) / den, lag)
                for lag in range(lo, hi + 1)))
    return best[1] * WINDOW_MS / 1e3, best[0]


def rate_of(chunks, phase, t_lo=0.0, t_hi=float("inf")):
    sel = [c for c in chunks if c[1] == phase and c[2] >= t_lo and c[3] <= t_hi]
    t = sum(c[3] - c[2] for c in sel)
    return sum(c[4] for c in sel) / (t * 1e-3) if t > 0 else None


def summarize(rec, chunks, windows, nvml, smi, max_sm):
    name, kind = rec["name"], rec.get("kind")
    wall0, wall1 = rec["wall0"], rec["wall1"]
    span_s = wall1 - wall0
    s = {"name": name, "kind": kind, "span_s": round(span_s, 3)}
    e = energy_between(nvml, wall0, wall1)
    if e is None and rec.get("energy_start_mj") is not None and rec.get("energy_end_mj") is not None:
        e = (rec["energy_end_mj"] - rec["energy_start_mj"]) / 1000.0
    s["energy_j"] = e
    s["avg_power_w"] = e / span_s if e is not None and span_s > 0 else None
    nv = samples_between(nvml, wall0, wall1)
    s["temp_start_c"] = nv[0]["temp_c"] if nv else None
    s["temp_end_c"] = nv[-1]["temp_c"] if nv else None
    reasons = 0
    for r in nv:
        reasons |= r.get("reasons") or 0
    s["reasons_seen"] = hex(reasons) if nv else None
    s["frac_samples_sw_power_cap"] = (sum(1 for r in nv if (r.get("reasons") or 0) & SW_POWER_CAP) / len(nv)) if nv else None
    # Settled: the last half of the run, at most its last 10 s.
    t_set = max(span_s / 2, span_s - 10.0)
    late = samples_between(nvml, wall0 + t_set, wall1)
    s["settled_from_s"] = round(t_set, 2)
    s["settled_sm_mhz"] = median(r["sm_mhz"] for r in late)
    s["settled_power_w"] = mean(r["power_w"] for r in late)
    s["settled_power_instant_w"] = mean(r.get("power_instant_w") for r in late)
    s["min_sm_mhz"] = min((r["sm_mhz"] for r in nv if r["sm_mhz"] is not None), default=None)
    s["max_sm_mhz"] = max((r["sm_mhz"] for r in nv if r["sm_mhz"] is not None), default=None)
    if kind == "idle":
        s["median_sm_mhz"] = median(r["sm_mhz"] for r in nv)
        s["mean_power_w"] = mean(r["power_w"] for r in nv)
        s["mean_power_instant_w"] = mean(r.get("power_instant_w") for r in nv)
        s["smi_mean_power_w"] = mean(r.get("power.draw") for r in samples_between(smi, wall0, wall1))
        return s
    phases = sorted({c[1] for c in chunks} - {"i"})
    for ph in phases:
        key = {"w": "", "g": "gemm_", "c": "copy_", "step": "step_"}.get(ph, ph + "_")
        s[key + "rate_all"] = rate_of(chunks, ph)
        s[key + "rate_first_10ms"] = rate_of(chunks, ph, 0, 10.0)
        s[key + "rate_first_100ms"] = rate_of(chunks, ph, 0, 100.0)
        s[key + "rate_settled"] = rate_of(chunks, ph, t_set * 1e3)
        rates = [w.get(f"rate_{ph}") for w in windows if w.get(f"rate_{ph}") is not None]
        s[key + "rate_max_window"] = max(rates) if rates else None
    busy = sum(c[3] - c[2] for c in chunks if c[1] != "i")
    s["busy_frac"] = busy / (span_s * 1e3) if span_s > 0 else None
    if kind in ("gemm", "attn", "copy", "add"):
        s.update(step_response(chunks, nvml, wall0, s, max_sm))
    if kind == "mix":
        s.update(mix_detail(rec, chunks, nvml, wall0))
    if kind == "train":
        steps = [c for c in chunks if c[1] == "step"]
        s["steps"] = len(steps)
        s["step_ms_median"] = median(c[3] - c[2] for c in steps)
        s["step_ms_mean"] = span_s * 1e3 / len(steps) if steps else None
        s["joules_per_step"] = e / len(steps) if e is not None and steps else None
        tokens = sum(c[4] for c in steps)
        s["joules_per_token"] = e / tokens if e is not None and tokens else None
        s["median_sm_mhz"] = median(r["sm_mhz"] for r in nv)
        s["mean_power_instant_w"] = mean(r.get("power_instant_w") for r in nv)
        r = rec.get("train_step_result", {})
        s["train_step_step_time_ms"] = r.get("step_time_ms")
        s["train_step_forward_ms"] = r.get("forward_ms")
        s["train_step_backward_ms"] = r.get("backward_ms")
        s["train_step_optimizer_ms"] = r.get("optimizer_ms")
    return s


def step_response(chunks, nvml, wall0, s, max_sm):
    """How the rate, clock and power move after the step from idle to sustained work."""
    out = {}
    settled = s.get("rate_settled")
    first = s.get("rate_first_10ms")
    bins = binned_rate(chunks, "w", 10.0, 3000.0)
    out["rate_10ms_bins_first_2s"] = [round(r / 1e12 if r and r > 1e13 else (r or 0) / 1e9, 2)
                                      for _, r in bins[:200]] if bins else []
    out["rate_unit_bins"] = "TFLOP/s" if (settled or 0) > 1e13 else "GB/s"
    if settled and first and abs(first - settled) / settled > 0.02:
        target = settled + (first - settled) / math.e
        for t, r in bins:
            if r is not None and ((first > settled and r <= target) or (first < settled and r >= target)):
                out["rate_e_fold_ms"] = t + 5.0
                break
        for t, r in bins:
            if r is not None and abs(r - settled) / settled < 0.02:
                out["rate_within_2pct_ms"] = t + 5.0
                break
    scale = 1e12 if out["rate_unit_bins"] == "TFLOP/s" else 1e9
    fine = binned_rate(chunks, "w", 2.0, 400.0)
    onset, peak = drop_onset(fine)
    out["rate_peak_first_16ms"] = peak
    out["rate_drop_onset_ms"] = onset  # first 2 ms bin under 98 % of that peak
    out["rate_5ms_bins_first_400ms"] = [None if r is None else round(r / scale, 1)
                                        for _, r in binned_rate(chunks, "w", 5.0, 400.0)]
    lag, ac = autocorr_peak_lag_s([w_rate for t, w_rate in binned_rate(chunks, "w", WINDOW_MS, max((c[3] for c in chunks), default=0.0))
                                   if t >= 2000.0])
    out["rate_oscillation_period_s"] = lag
    out["rate_oscillation_autocorr"] = ac
    nv = samples_between(nvml, wall0 - 0.05, wall0 + 5.0)
    pts = [(r["t_wall"] - wall0, r["sm_mhz"], r.get("power_instant_w"), r["power_w"]) for r in nv
           if r["sm_mhz"] is not None]
    if pts:
        out["sm_mhz_at_start"] = pts[0][1]  # the last sample before the work, or the first in it
        pts = [p for p in pts if p[0] >= 0]
    if pts:
        top = max_sm or max(p[1] for p in pts)
        up = next((p for p in pts if p[1] >= top - 30), None)
        if up:
            out["t_clock_at_max_ms"] = round(up[0] * 1e3, 1)
            drop = next((p for p in pts if p[0] > up[0] and p[1] < top - 30), None)
            if drop:
                out["t_clock_below_max_ms"] = round(drop[0] * 1e3, 1)
        ssm = s.get("settled_sm_mhz")
        if ssm:
            for i, p in enumerate(pts):
                rest = [q[1] for q in pts[i:]]
                if all(abs(x - ssm) / ssm < 0.03 for x in rest[:50]):
                    out["t_clock_within_3pct_ms"] = round(p[0] * 1e3, 1)
                    break
        sp = s.get("settled_power_instant_w")
        if sp:
            hit = next((p for p in pts if p[2] is not None and p[2] >= 0.9 * sp), None)
            if hit:
                out["t_power_instant_90pct_ms"] = round(hit[0] * 1e3, 1)
        out["nvml_first_2s"] = [[round(p[0] * 1e3, 1), p[1], p[2], p[3]] for p in pts if p[0] <= 2.0]
    return out


def mix_detail(rec, chunks, nvml, wall0):
    """Clock in GEMM bursts vs the other bursts; the GEMM rate at the start vs the end of bursts."""
    out = {}
    spans = []  # (t0_s, t1_s, phase) per burst, contiguous chunks of one phase merged
    for _, ph, t0, t1, w in chunks:
        if spans and spans[-1][2] == ph and abs(spans[-1][1] - t0) < 1e-6:
            spans[-1][1] = t1
        else:
            spans.append([t0, t1, ph])
    starts = [sp[0] / 1e3 + wall0 for sp in spans]
    by = {}
    for r in samples_between(nvml, wall0, wall0 + (spans[-1][1] / 1e3 if spans else 0)):
        i = bisect.bisect_right(starts, r["t_wall"]) - 1
        if i >= 0:
            by.setdefault(spans[i][2], []).append(r)
    for ph, rs in by.items():
        out[f"sm_mhz_in_{ph}"] = mean(r["sm_mhz"] for r in rs)
        out[f"power_instant_w_in_{ph}"] = mean(r.get("power_instant_w") for r in rs)
    g = [sp for sp in spans if sp[2] == "g"]
    out["gemm_bursts"] = len(g)
    out["gemm_burst_ms_median"] = median(sp[1] - sp[0] for sp in g)
    o = [sp for sp in spans if sp[2] != "g"]
    out["other_burst_ms_median"] = median(sp[1] - sp[0] for sp in o)
    # GEMM rate against the time since its burst began, over the bursts that start after 2 s.
    prof_w, prof_t = {}, {}
    g_starts = [sp[0] for sp in g]
    for _, ph, t0, t1, w in chunks:
        if ph != "g" or t0 < 2000.0:
            continue
        j = bisect.bisect_right(g_starts, t0 + 1e-9) - 1  # the burst this chunk belongs to
        if j < 0 or g_starts[j] < 2000.0:
            continue
        k = int((t0 - g_starts[j]) // 2.0)
        prof_w[k] = prof_w.get(k, 0.0) + w
        prof_t[k] = prof_t.get(k, 0.0) + (t1 - t0)
    if prof_t:
        prof = [(k * 2.0, prof_w[k] / (prof_t[k] * 1e-3)) for k in sorted(prof_t)]
        onset, peak = drop_onset(prof)
        out["burst_rate_peak_first_16ms"] = peak
        out["burst_drop_onset_ms"] = onset
        out["burst_profile_2ms_tflops"] = [[t, round(r / 1e12, 1)] for t, r in prof[:150]]
    if g and median(sp[1] - sp[0] for sp in g) >= 20:
        head, tail = [], []
        for sp in g:
            d = sp[1] - sp[0]
            head.append(rate_of(chunks, "g", sp[0], sp[0] + 0.2 * d))
            tail.append(rate_of(chunks, "g", sp[1] - 0.2 * d, sp[1]))
        out["gemm_rate_burst_head"] = median(head)
        out["gemm_rate_burst_tail"] = median(tail)
    return out


def analyze(d):
    """(run record, card facts, windows, summaries, NVML samples) of the measurement in folder d."""
    recs = load_scenarios(d)
    chunks = load_chunks(d)
    nvml = load_nvml(d)
    smi = load_smi(d)
    run = next((r for r in recs if r.get("name") == "_run"), {})
    nv_static = run.get("nvml", {}) if isinstance(run.get("nvml"), dict) else {}
    max_sm = nv_static.get("max_sm_mhz") if isinstance(nv_static.get("max_sm_mhz"), (int, float)) else None
    all_windows = []
    summaries = []
    for rec in recs:
        if rec.get("name") == "_run" or "wall0" not in rec or "wall1" not in rec or rec.get("wall0") is None:
            if rec.get("name") != "_run":
                summaries.append({"name": rec.get("name"), "kind": rec.get("kind"),
                                  "skipped": rec.get("skipped"), "error": rec.get("error")})
            continue
        ch = chunks.get(rec["name"], [])
        win = window_rows(rec["name"], rec, ch, nvml, smi)
        all_windows.extend(win)
        s = summarize(rec, ch, win, nvml, smi, max_sm)
        if rec.get("error"):
            s["error"] = rec["error"]
        summaries.append(s)
    return run, nv_static, all_windows, summaries, nvml


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    d = argv[0]
    summary_path = None
    if "--summary" in argv:
        summary_path = argv[argv.index("--summary") + 1]
    run, nv_static, all_windows, summaries, nvml = analyze(d)
    cols = ["scenario", "window", "t_ms", "rate_w", "busy_w", "rate_g", "busy_g", "rate_c", "busy_c", "busy_i",
            "rate_step", "busy_step", "sm_mhz", "mem_mhz", "power_w", "power_instant_w", "power_average_w", "temp_c",
            "reasons", "n_nvml", "smi_power_draw_w", "smi_power_instant_w", "smi_sm_mhz", "n_smi"]
    with open(os.path.join(d, "windows.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for row in all_windows:
            w.writerow(["" if row.get(c) is None else (f"{row[c]:.6g}" if isinstance(row[c], float) else row[c])
                        for c in cols])
    if summary_path:
        with open(summary_path, "w") as f:
            json.dump({"run": run, "scenarios": summaries}, f, indent=1)
    print_table(summaries, nv_static, nvml)
    host = os.path.join(d, "host.jsonl")
    if os.path.exists(host):
        with open(host) as f:
            print_host([json.loads(line) for line in f if line.strip()])
    return 0


def print_host(recs):
    """host_launch.py's lines, one row each."""
    for r in recs:
        k = r.get("kind")
        if r.get("error"):
            print(f"host {k} {r.get('op')}: error {r['error']}")
        elif k == "op":
            print(f"op {r['op']:24s} kernels/call {r.get('kernels_per_call')}: host {fmt(r.get('host_us_per_call_gpu_idle'), nd=2)} µs "
                  f"(GPU busy: {fmt(r.get('host_us_per_call_gpu_busy'), nd=2)}), GPU queued {fmt(r.get('gpu_us_per_call_queued'), nd=2)} µs, "
                  f"graph {fmt(r.get('graph_gpu_us_per_kernel_queued'), nd=2)} µs/kernel, replay call "
                  f"{fmt(r.get('graph_host_us_per_replay'))} µs {r.get('graph_error') or ''}")
        elif k == "queue":
            print(f"queue {r['op']:20s} first blocking launch #{r.get('first_blocking_index')} "
                  f"(blocked {fmt(r.get('blocking_call_ms'))} ms), host {fmt(r.get('host_us_per_launch_before_block_median'), nd=2)} µs/launch")
        elif k == "step":
            e, n, g = r.get("eager_reference", {}), r.get("eager_nocache", {}), r.get("graph", {})
            pr = r.get("eager_profile", {})
            print(f"step {r['config']:20s} {r['params'] / 1e6:.0f} M: eager {e.get('step_time_ms')} ms, eager (no autocast cache) "
                  f"{fmt(n.get('step_time_ms'), nd=2)} ms, graph {fmt(g.get('step_time_ms'), nd=3)} ms, launches/step "
                  f"{pr.get('launch_calls')} {r.get('graph_error') or ''}")


def fmt(v, unit=1.0, nd=1):
    if v is None:
        return "-"
    return f"{v / unit:.{nd}f}"


def print_table(summaries, nv_static, nvml):
    print(f"card: {json.dumps(nv_static)}")
    print(f"{'scenario':24s} {'first10ms':>9s} {'first100':>9s} {'settled':>9s} {'unit':7s} {'MHz set':>7s} "
          f"{'W avg':>6s} {'W inst':>6s} {'t<max':>6s} {'e-fold':>6s} {'T C':>7s} reasons")
    for s in summaries:
        if s.get("skipped") or (s.get("error") and "span_s" not in s):
            print(f"{s['name']:24s} skipped/failed: {s.get('skipped') or s.get('error')}")
            continue
        kind = s.get("kind")
        if kind == "idle":
            print(f"{s['name']:24s} idle: {fmt(s.get('mean_power_w'))} W (instant {fmt(s.get('mean_power_instant_w'))}), "
                  f"SM {fmt(s.get('median_sm_mhz'), nd=0)} MHz, energy-counter {fmt(s.get('avg_power_w'))} W")
            continue
        if kind == "train":
            print(f"{s['name']:24s} step {fmt(s.get('step_ms_median'))} ms (train_step {s.get('train_step_step_time_ms')}), "
                  f"{fmt(s.get('avg_power_w'))} W avg, {fmt(s.get('joules_per_step'))} J/step, "
                  f"SM {fmt(s.get('median_sm_mhz'), nd=0)} MHz, {s.get('steps')} steps, reasons {s.get('reasons_seen')}")
            continue
        if kind == "mix":
            print(f"{s['name']:24s} gemm {fmt(s.get('gemm_rate_all'), 1e12)} TF/s (first100 {fmt(s.get('gemm_rate_first_100ms'), 1e12)}), "
                  f"copy {fmt(s.get('copy_rate_all'), 1e9, 0)} GB/s, busy {fmt(s.get('busy_frac'), 0.01, 0)}%, "
                  f"{fmt(s.get('avg_power_w'))} W, SM g/other {fmt(s.get('sm_mhz_in_g'), nd=0)}/"
                  f"{fmt(s.get('sm_mhz_in_c') or s.get('sm_mhz_in_i'), nd=0)} MHz, head/tail "
                  f"{fmt(s.get('gemm_rate_burst_head'), 1e12)}/{fmt(s.get('gemm_rate_burst_tail'), 1e12)}")
            continue
        unit = 1e12 if kind in ("gemm", "attn") else 1e9
        print(f"{s['name']:24s} {fmt(s.get('rate_first_10ms'), unit):>9s} {fmt(s.get('rate_first_100ms'), unit):>9s} "
              f"{fmt(s.get('rate_settled'), unit):>9s} {'TFLOP/s' if unit == 1e12 else 'GB/s':7s} "
              f"{fmt(s.get('settled_sm_mhz'), nd=0):>7s} {fmt(s.get('avg_power_w')):>6s} "
              f"{fmt(s.get('settled_power_instant_w')):>6s} {fmt(s.get('t_clock_below_max_ms'), nd=0):>6s} "
              f"{fmt(s.get('rate_e_fold_ms'), nd=0):>6s} {fmt(s.get('temp_start_c'), nd=0)}-{fmt(s.get('temp_end_c'), nd=0):<3s} "
              f"{s.get('reasons_seen')}")
    if nvml:
        vals = [r["sm_mhz"] for r in nvml if r["sm_mhz"] is not None]
        dt = [b["t_wall"] - a["t_wall"] for a, b in zip(nvml, nvml[1:])]
        print(f"nvml samples: {len(nvml)}, median period {fmt(median(dt), 1e-3, 2)} ms, SM {min(vals)}–{max(vals)} MHz")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
