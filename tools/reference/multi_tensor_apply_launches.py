# Launch count of ATen's multi_tensor_apply (chunk 65536 elements; per launch at most 320 blocks and
# depth_to_max_tensors[depth-1] tensors), for the step counter (_foreach_add_, depth 1) and fused AdamW (depth 4).
MAXT = {1: 110, 2: 64, 3: 48, 4: 36, 5: 30}
def launches(numels, depth, chunk=65536, max_blocks=320):
    n = 0; nt = 0; nb = 0
    for i, numel in enumerate(numels):
        nt += 1
        chunks = -(-numel // chunk)
        for c in range(chunks):
            nb += 1
            if (nt == MAXT[depth] and c == chunks - 1) or nb == max_blocks or (i == len(numels) - 1 and c == chunks - 1):
                n += 1; nb = 0
                nt = 0 if c == chunks - 1 else 1
    return n
def llama(L=16, h=1024, q=1024, kv=256, f=2816, V=32000):
    p = [V * h]
    for _ in range(L):
        p += [h, h * (q + 2 * kv), q * h, h, h * 2 * f, f * h]
    return p + [h]
def gpt(L=12, h=768, f=3072, V=50257, s=256):
    p = [V * h, s * h]
    for _ in range(L):
        p += [h, h, 3 * h * h, 3 * h, h * h, h, h, h, f * h, f, h * f, h]
    return p + [h, h]
for name, p in (("llama-220m", llama()), ("gpt-125m", gpt())):
    print(name, len(p), "tensors", sum(p), "params", "foreach_add_(steps)", launches([1] * len(p), 1), "fused_adamw", launches(p, 4),
          "ceil(sum chunks/320)", -(-sum(-(-x // 65536) for x in p) // 320))
