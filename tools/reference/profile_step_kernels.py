# Profiles one eager training step (as tools/reference/host_launch.py's profile_step: autocast cache off,
# fused AdamW, flash SDPA) after warm-up steps, and dumps every profiler event (kernels, runtime launches,
# aten ops, markers) with its parent, plus the raw kineto events, for offline analysis (profile_step_analyze.py).
# Run from the repository root: python3 tools/reference/profile_step_kernels.py [CONFIG ...]   (writes $OUT/events_CONFIG.json.gz)
import gzip, json, os, sys, traceback, torch
sys.path.insert(0, "tools/reference")
import train_step as ts, host_launch as hl
from torch.profiler import ProfilerActivity, profile, record_function as rf
O = os.environ.get("OUT", ".")
rt = ts.Runtime(torch, "cuda")
DS = ts.build_model_classes(torch)
def wrap(f, i):
    def w(*a):
        with rf(f"L{i}"):
            return f(*a)
    return w
for n in sys.argv[1:] or ["llama-220m-s512-b1", "gpt-125m-s256-b1"]:
  try:
    cfg = ts.make_config(dict(hl.STEP_CONFIGS[n], name=n), n)
    torch.cuda.empty_cache()
    m, _ = ts.make_stage_model(cfg, rt, DS)
    for i, L in enumerate(m.layers):
        L.forward = wrap(L.forward, i)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.1, fused=True)
    g = torch.Generator(device="cuda"); g.manual_seed(4321)
    tk = [torch.randint(0, cfg.vocab, (1, cfg.seq_len + 1), device="cuda", generator=g) for _ in range(5)]
    def step(t):
        with rf("P_fwd"):
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                loss = m(t[:, :-1], t[:, 1:])
        with rf("P_bwd"):
            loss.backward()
        with rf("P_opt"):
            opt.step(); opt.zero_grad(set_to_none=True)
    with rt.attention_backend():
        for t in tk[1:]:
            step(t)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
            with rf("phase_step"):
                step(tk[0])
            torch.cuda.synchronize()
    ev = list(p.events())
    ix = {id(e): k for k, e in enumerate(ev)}
    rows = [[k, e.name[:300], str(e.device_type)[11:], e.thread, e.time_range.start, e.time_range.end, e.id,
             ix.get(id(e.cpu_parent), -1), e.sequence_nr, e.fwd_thread,
             str(e.input_shapes)[:160] if e.name.startswith("aten::") else ""] for k, e in enumerate(ev)]
    try:
        kin = [[e.name()[:300], str(e.device_type())[11:], e.start_ns(), e.duration_ns(), e.correlation_id(),
                e.linked_correlation_id(), e.start_thread_id()] for e in p.profiler.kineto_results.events()]
    except Exception as x:
        kin = repr(x)
    meta = {"config": n, "gqa_native": rt.gqa_native, "torch": torch.__version__,
            "launch_calls": sum(1 for e in ev if e.name in hl.LAUNCH_NAMES),
            "gpu_events": sum(1 for r in rows if r[2] == "CUDA"), "events": len(rows)}
    print(json.dumps(meta), flush=True)
    with gzip.open(f"{O}/events_{n}.json.gz", "wt") as f:
        json.dump({"meta": meta, "rows": rows, "kineto": kin}, f)
    del m, opt, p, ev
  except Exception:
    traceback.print_exc()
