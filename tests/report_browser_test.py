#!/usr/bin/env python3
"""`clustersim report` pages rendered in headless Chromium (ctest: ReportBrowser, label browser).

For each scenario the page is written by `clustersim report`, loaded by Chromium (--dump-dom after
its load event, with the console on standard error) and screenshotted into the build folder. The
DOM must hold what the simulation says, taken from other outputs of the same binary:
  - the timeline: one row per Chrome trace thread of `run --trace`, its rects (<rect>s, or the
    subpaths of a large timeline's row <path>) the trace's spans
    merged by the page's stated resolution (the step / 10,000), that resolution the one of
    `run --json`'s step time; wait rows where `run --json`'s ranks have bubble, exposed
    communication or host-bound time;
  - one time-breakdown bar per simulated rank with a part per non-zero part, one memory bar per
    stage with a part per non-zero MemoryBreakdown field;
  - the energy and campaign sections exactly where `run --json` has them;
  - `collective --html`: a series per algorithm that `collective --algo X --json` runs, each point
    that run's busbw at its size, a square per row of the selector's `collective --json`;
  - a search: one circle per row of `search --csv`, the Pareto front computed here from that CSV,
    the winner the first layout of `search --json`, a row per rejection reason with its count;
  - the scenario text as the file holds it, the command line; body[data-ok="1"] (the inline script
    ran without an exception) and no console message.
Exits 77 (ctest: skipped) when chromium is not installed.
"""

import argparse
import collections
import csv
import html.parser
import json
import os
import shutil
import subprocess
import sys
import time

TIMELINE_BINS = 10_000  # kTimelineBins, tools/cli/html_report.h


class Dom(html.parser.HTMLParser):
    """The elements of a page: tag, attributes, parent index, text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements = []  # (tag, attrs dict, parent index)
        self.text = collections.defaultdict(str)
        self.stack = []

    def handle_starttag(self, tag, attrs):
        parent = self.stack[-1] if self.stack else -1
        self.elements.append((tag, dict(attrs), parent))
        self.stack.append(len(self.elements) - 1)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.stack.pop()

    def handle_endtag(self, tag):
        while self.stack:
            index = self.stack.pop()
            if self.elements[index][0] == tag:
                break

    def handle_data(self, data):
        for index in self.stack:
            self.text[index] += data

    def find(self, tag, cls=None, parent=None):
        out = []
        for i, (t, a, p) in enumerate(self.elements):
            if t != tag:
                continue
            if cls is not None and cls not in a.get("class", "").split():
                continue
            if parent is not None and p != parent:
                continue
            out.append(i)
        return out

    def by_id(self, ident):
        return next(i for i, (_, a, _) in enumerate(self.elements) if a.get("id") == ident)


failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def run(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} exited {result.returncode}:\n{result.stderr[-2000:]}")
    return result


def render(chromium, page, screenshot):
    """The page's DOM after load, the console lines, and seconds to render the DOM."""
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
            "--user-data-dir=" + page + ".profile"]
    start = time.monotonic()
    dom = subprocess.run(base + ["--dump-dom", "file://" + page], capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - start
    subprocess.run(base + ["--screenshot=" + screenshot, "--window-size=1400,2400", "file://" + page],
                   capture_output=True, text=True, timeout=120)
    shutil.rmtree(page + ".profile", ignore_errors=True)
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    return dom.stdout, console, seconds


def check_page_basics(name, dom_text, console, scenario_path, command="report"):
    dom = Dom()
    dom.feed(dom_text)
    body = dom.find("body")
    check(body and dom.elements[body[0]][1].get("data-ok") == "1",
          f"{name}: the inline script did not finish (body data-ok, data-error "
          f"{dom.elements[body[0]][1].get('data-error') if body else None})")
    check(not console, f"{name}: console messages: {console[:3]}")
    if scenario_path:
        with open(scenario_path, encoding="utf-8") as f:
            check(dom.text[dom.by_id("scenario-text")] == f.read(), f"{name}: the scenario text differs from the file")
    check(command in dom.text[dom.by_id("command-line")], f"{name}: no command line")
    return dom


ALGORITHMS = ("ring", "tree", "nvls", "hierarchical", "pairwise")  # collectives/algorithm.h's registry


def check_collective_report(args, name, flags):
    """`collective --html`: one series per algorithm that `collective --algo X --json` runs, a point
    per size at its busbw; the selector's choice a square per row of `collective --json`."""
    page = os.path.join(args.build, f"report-{name}.html")
    run([args.clustersim, "collective", *flags, "--html", page])
    chosen = json.loads(run([args.clustersim, "collective", *flags, "--json"]).stdout)["results"]
    expected = {}
    for algo in ALGORITHMS:
        result = subprocess.run([args.clustersim, "collective", *flags, "--algo", algo, "--json"],
                                capture_output=True, text=True)
        if result.returncode == 0:
            expected[algo] = json.loads(result.stdout)["results"]
        else:
            check(result.returncode == 2, f"{name}: --algo {algo} exited {result.returncode}")
    size = os.path.getsize(page)
    dom_text, console, seconds = render(args.chromium, page, os.path.join(args.build, f"report-{name}.png"))
    print(f"{name}: {size} bytes, DOM rendered in {seconds:.2f} s")
    dom = check_page_basics(name, dom_text, console, None, command="collective")
    series = {dom.elements[g][1]["data-algorithm"]: g for g in dom.find("g", "series")}
    check(set(series) == set(expected), f"{name}: series {sorted(series)}, algorithms that run {sorted(expected)}")
    for algo, g in series.items():
        points = dom.find("circle", parent=g)
        rows = expected.get(algo, [])
        check(len(points) == len(rows), f"{name}: {algo}: {len(points)} points, {len(rows)} sizes")
        for c, row in zip(points, rows):
            text = dom.text[c]
            check(f"{row['size_bytes']} B: {row['busbw_GBps']:.2f} GB/s" in text,
                  f"{name}: {algo}: point '{text}' is not busbw {row['busbw_GBps']:.2f} at {row['size_bytes']} B")
    squares = dom.find("rect", "chosen")
    check(len(squares) == len(chosen), f"{name}: {len(squares)} chosen points, {len(chosen)} rows")
    check(len(dom.find("li")) == len(ALGORITHMS) - len(expected),
          f"{name}: {len(dom.find('li'))} algorithms said not to apply, {len(ALGORITHMS) - len(expected)} do not run")
    return size, seconds


def merged_rects(trace, resolution_ps):
    rows = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            start = round(e["ts"] * 1e6)
            rows[e["tid"]].append((start, round((e["ts"] + e["dur"]) * 1e6)))
    rects = 0
    for spans in rows.values():
        spans.sort()
        end = None
        for s, t in spans:
            if end is not None and s <= end + resolution_ps:
                end = max(end, t)
            else:
                rects += 1
                end = t
    return len(rows), rects, max(t for spans in rows.values() for _, t in spans)


def check_run_report(args, name, scenario, sets=()):
    page = os.path.join(args.build, f"report-{name}.html")
    trace_path = os.path.join(args.build, f"report-{name}.trace.json")
    sets = [a for s in sets for a in ("--set", s)]
    run([args.clustersim, "report", scenario, "--out", page, *sets])
    run_json = json.loads(run([args.clustersim, "run", scenario, "--json", "--reproducible", "--trace", trace_path,
                               *sets]).stdout)
    with open(trace_path) as f:
        trace = json.load(f)
    os.remove(trace_path)
    size = os.path.getsize(page)
    dom_text, console, seconds = render(args.chromium, page, os.path.join(args.build, f"report-{name}.png"))
    print(f"{name}: {size} bytes, DOM rendered in {seconds:.2f} s")
    check(size < 5_000_000, f"{name}: the page is {size} bytes, above 5 MB")
    dom = check_page_basics(name, dom_text, console, scenario)

    svg = dom.elements[dom.by_id("timeline")][1]
    threads, expected_rects, last_end = merged_rects(trace, int(svg["data-resolution-ps"]))
    end_ps = max(round(run_json["step_time_s"] * 1e12), last_end)
    check(abs(int(svg["data-resolution-ps"]) - end_ps // TIMELINE_BINS) <= 1,
          f"{name}: resolution {svg['data-resolution-ps']} ps, the step / {TIMELINE_BINS} is {end_ps // TIMELINE_BINS}")
    spans = sum(1 for e in trace["traceEvents"] if e["ph"] == "X")
    check(int(svg["data-spans"]) == spans, f"{name}: data-spans {svg['data-spans']}, the trace has {spans}")
    rows = dom.find("g", "spans")
    check(len(rows) == threads, f"{name}: {len(rows)} timeline rows, the trace has {threads} threads")
    rects = sum(len(dom.find("rect", parent=g)) + sum(dom.elements[p][1]["d"].count("M") for p in dom.find("path", parent=g))
                for g in rows)
    check(rects == expected_rects, f"{name}: {rects} timeline rects, the trace's spans merge into {expected_rects}")
    kinds = {dom.elements[g][1]["class"].split()[1] for g in dom.find("g", "waits")}
    for part, css in (("bubble_s", "w-bubble"), ("exposed_comm_s", "w-exposed_comm"), ("host_bound_s", "w-host_bound")):
        has = any(rank[part] > 0 for rank in run_json["ranks"])
        check((css in kinds) == has, f"{name}: wait rows {sorted(kinds)}, ranks with {part} > 0: {has}")

    bars = dom.find("g", "rank-breakdown")
    check(len(bars) == run_json["sim"]["simulated_ranks"] == len(run_json["ranks"]),
          f"{name}: {len(bars)} breakdown bars, {run_json['sim']['simulated_ranks']} simulated ranks")
    for g, rank in zip(bars, run_json["ranks"]):
        parts = sum(1 for k in ("compute_s", "exposed_comm_s", "bubble_s", "optimizer_s", "host_bound_s", "idle_s")
                    if rank[k] > 0)
        got = len(dom.find("rect", "part", parent=g))
        check(got == parts, f"{name}: rank {rank['rank']}: {got} breakdown parts, {parts} non-zero")
    stages = dom.find("g", "stage-memory")
    per_stage = run_json["memory"]["per_stage"]
    check(len(stages) == len(per_stage), f"{name}: {len(stages)} memory bars, {len(per_stage)} stages")
    for g, stage in zip(stages, per_stage):
        parts = sum(1 for k in ("params_bytes", "param_copies_bytes", "grads_bytes", "optimizer_bytes",
                                "activations_bytes", "logits_bytes", "comm_buffers_bytes", "runtime_bytes")
                    if stage[k] > 0)
        got = len(dom.find("rect", "part", parent=g))
        check(got == parts, f"{name}: stage {stage['stage']}: {got} memory parts, {parts} non-zero")
        check(int(dom.elements[g][1]["data-total-bytes"]) == stage["total_bytes"], f"{name}: stage total differs")
    check(len(dom.find("line", "capacity")) == 1, f"{name}: no capacity line")
    ids = {a.get("id") for _, a, _ in dom.elements}
    check(("energy" in ids) == ("energy" in run_json), f"{name}: energy section and run --json disagree")
    check(("campaign" in ids) == ("campaign" in run_json), f"{name}: campaign section and run --json disagree")
    return size, seconds


def check_search_report(args, name, scenario):
    page = os.path.join(args.build, f"report-{name}.html")
    csv_path = os.path.join(args.build, f"report-{name}.csv")
    run([args.clustersim, "report", scenario, "--search", "--out", page])
    search_json = json.loads(run([args.clustersim, "search", scenario, "--json", "--csv", csv_path]).stdout)
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    os.remove(csv_path)
    size = os.path.getsize(page)
    dom_text, console, seconds = render(args.chromium, page, os.path.join(args.build, f"report-{name}.png"))
    print(f"{name}: {size} bytes, DOM rendered in {seconds:.2f} s")
    dom = check_page_basics(name, dom_text, console, scenario)

    circles = dom.find("circle", "candidate")
    check(len(circles) == len(rows) == search_json["evaluated"],
          f"{name}: {len(circles)} candidate points, {len(rows)} CSV rows, {search_json['evaluated']} evaluated")
    # The Pareto front of tokens/s (higher) against peak memory (lower), from the CSV.
    points = sorted(((int(r["peak_bytes"]), -float(r["tokens_per_s"]), int(r["index"])) for r in rows))
    front, best = set(), None
    for peak, tokens, index in points:
        if best is None or -tokens > best:
            front.add(index)
            best = -tokens
    on_page = {int(dom.elements[c][1]["data-index"]) for c in dom.find("circle", "pareto")}
    check(on_page == front, f"{name}: Pareto points {sorted(on_page)}, from the CSV {sorted(front)}")
    winners = dom.find("circle", "winner")
    check(len(winners) == 1, f"{name}: {len(winners)} winners")
    if winners and search_json["top"]:
        index = dom.elements[winners[0]][1]["data-index"]
        row = next(r for r in rows if r["index"] == index)
        top = search_json["top"][0]["layout"]
        check(all(int(row[k]) == top[k] for k in ("tp", "pp", "dp", "cp", "vpp", "micro_batch", "zero")),
              f"{name}: the winner #{index} is not search --json's first layout")
    rejected = {dom.elements[t][1]["data-reason"]: int(dom.elements[t][1]["data-count"]) for t in dom.find("tr", "rejected")}
    check(rejected == search_json["rejected"], f"{name}: rejected {rejected}, search --json {search_json['rejected']}")
    return size, seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--clustersim", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "")
    args = parser.parse_args()
    if not args.chromium:
        print("SKIPPED: chromium is not installed; scripts/install-deps installs Debian's chromium")
        return 77
    args.build = os.path.abspath(args.build)
    for name in ("gpt3-1.3b-single-h200", "mixtral-8x7b-64-h100", "llama3-405b-16k-h100"):
        # The 16,384-GPU step at analytical fidelity: its page is what is checked, not its flows
        # (a minute at flow fidelity, the default under auto).
        sets = ["simulation.fidelity=analytical"] if name == "llama3-405b-16k-h100" else []
        check_run_report(args, name, os.path.join(args.source, "scenarios", name + ".yaml"), sets)
    check_search_report(args, "search-gpt3-1.3b-2-dgx-h100",
                        os.path.join(args.source, "scenarios", "search", "gpt3-1.3b-2-dgx-h100.yaml"))
    check_collective_report(args, "collective-all_reduce-2-dgx-h100", ["--nodes", "2", "-b", "8", "-e", "1G"])
    check_collective_report(args, "collective-all_to_all-4-dgx-h100",
                            ["--nodes", "4", "--op", "all_to_all", "-b", "1K", "-e", "64M"])
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all pages checked; screenshots in", args.build)
    return 0


if __name__ == "__main__":
    sys.exit(main())
