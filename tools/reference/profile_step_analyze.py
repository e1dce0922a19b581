#!/usr/bin/env python3
"""Offline analysis of profile_step_kernels.py's dumps: per kernel launch its phase, layer, innermost aten op,
top-level op, autograd node; writes kernels_CONFIG.tsv (full ordered list) and layer_counts_CONFIG.tsv."""
import collections, gzip, json, re, sys

LAUNCH = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
          "cudaMemsetAsync", "cudaLaunchCooperativeKernel"}


def short(k):
    k = re.sub(r"^void ", "", k).replace("at::native::", "").replace("(anonymous namespace)::", "")
    m = re.match(r"(nvjet_\w+|[\w:]+?)(?:<|\(|$)", k)
    base = m.group(1) if m else k[:60]
    base = base.replace("at::native::", "").replace("(anonymous namespace)::", "")
    # what the elementwise kernel computes
    f = re.search(r"(\w+_kernel_cuda|\w+_kernel_impl|\w+Functor\w*|launch_\w+|\w+_kernel)\b", k[len(m.group(0)) if m else 0:])
    return base + ("[" + f.group(1) + "]" if f and f.group(1) != base.split("::")[-1] else "")


def analyze(name):
    d = json.load(gzip.open(f"events_{name}.json.gz", "rt"))
    rows = d["rows"]
    by = {r[0]: r for r in rows}
    def chain(r):
        out = []
        while r[7] >= 0:
            r = by[r[7]]
            out.append(r)
        return out
    phases = {r[1]: (r[4], r[5]) for r in rows if r[2] == "CPU" and r[1] in ("P_fwd", "P_bwd", "P_opt")}
    # forward op sequence numbers -> layer
    seq_layer = {}
    for r in rows:
        if r[2] == "CPU" and r[3] == 1 and r[8] >= 0 and r[1].startswith("aten::"):
            lay = next((a[1] for a in chain(r) if re.fullmatch(r"L\d+", a[1])), "-")
            seq_layer.setdefault(r[8], lay)
    kern = {}
    for r in rows:
        if r[2] == "CUDA" and not re.fullmatch(r"L\d+|P_\w+|phase_step|Optimizer.*", r[1]):
            kern.setdefault(r[6], []).append(r)
    out = []
    for r in sorted((r for r in rows if r[2] == "CPU" and r[1] in LAUNCH), key=lambda r: r[4]):
        ch = chain(r)
        phase = next((p for p, (a, b) in phases.items() if a <= r[4] <= b), "-")
        inner = next((a for a in ch if a[1].startswith("aten::")), None)
        atens = [a for a in ch if a[1].startswith("aten::")]
        top = atens[-1] if atens else None
        node = next((a for a in ch if a[1].startswith("autograd::engine::evaluate_function")), None)
        opt = next((a[1] for a in ch if a[1].startswith("Optimizer.") or a[1].startswith("Optimizer")), None)
        if node is not None:
            layer = seq_layer.get(node[8], "-")
        else:
            layer = next((a[1] for a in ch if re.fullmatch(r"L\d+", a[1])), "-")
        ks = kern.get(r[6], [])
        kname = ks[0][1] if ks else r[1]
        out.append({"t": r[4], "phase": phase[2:], "layer": layer, "launch": r[1], "kernel": kname,
                    "kshort": short(kname) if ks else r[1],
                    "aten": inner[1] if inner else (opt or "-"), "shapes": inner[10] if inner else "",
                    "top": top[1] if top else "-",
                    "node": node[1].split(": ")[-1] if node else "-"})
    with open(f"kernels_{name}.tsv", "w") as f:
        f.write("i\tphase\tlayer\tautograd_node\ttop_op\taten_op\tkernel_short\tlaunch_api\taten_input_shapes\tkernel\n")
        for i, o in enumerate(out):
            f.write(f"{i}\t{o['phase']}\t{o['layer']}\t{o['node']}\t{o['top']}\t{o['aten']}\t{o['kshort']}\t{o['launch']}\t{o['shapes']}\t{o['kernel']}\n")
    return d["meta"], out


if __name__ == "__main__":
    for n in sys.argv[1:] or ["llama-220m-s512-b1", "gpt-125m-s256-b1"]:
        meta, out = analyze(n)
        print(meta, len(out))
        c = collections.Counter((o["phase"], o["layer"] if o["layer"] == "-" else "layer") for o in out)
        print(sorted(c.items()))
        per = collections.Counter(o["layer"] for o in out)
        print("per layer:", sorted(per.items(), key=lambda kv: kv[0]))
        mid = "L8" if n.startswith("llama") else "L6"
        cnt = collections.Counter((o["phase"], o["node"], o["top"], o["aten"], o["kshort"]) for o in out if o["layer"] == mid)
        with open(f"layer_counts_{n}.tsv", "w") as f:
            f.write(f"# kernels of one transformer layer ({mid}), in order of first launch\nphase\tautograd_node\ttop_op\taten_op\tkernel_short\tcount\n")
            seen = []
            for o in out:
                k = (o["phase"], o["node"], o["top"], o["aten"], o["kshort"])
                if o["layer"] == mid and k not in seen:
                    seen.append(k)
            for k in seen:
                f.write("\t".join(k) + f"\t{cnt[k]}\n")


def summary(name, layers):
    """Per-step counts per (phase, scope, autograd node, aten op, kernel), scope = layer or non-layer."""
    _, out = analyze(name)
    c = collections.Counter()
    order = []
    for o in out:
        k = (o["phase"], "layer" if o["layer"] != "-" else "non-layer", o["node"], o["top"], o["aten"], o["kshort"])
        if k not in c:
            order.append(k)
        c[k] += 1
    with open(f"summary_{name}.tsv", "w") as f:
        f.write("phase\tscope\tautograd_node\ttop_op\taten_op\tkernel_short\tper_step\tper_layer\n")
        for k in order:
            f.write("\t".join(k) + f"\t{c[k]}\t{c[k] / layers if k[1] == 'layer' else ''}\n")


if __name__ == "__main__":
    summary("llama-220m-s512-b1", 16)
    summary("gpt-125m-s256-b1", 12)
