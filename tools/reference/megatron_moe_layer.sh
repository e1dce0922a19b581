#!/usr/bin/env bash
# Runs megatron_moe_layer.py on the GPU machine and records the machine's state around it.
#
#   tools/reference/megatron_moe_layer.sh MEGATRON_DIR [arguments for megatron_moe_layer.py]
#
# MEGATRON_DIR holds megatron/core of a Megatron-LM checkout (nothing is installed). Output goes
# to $OUT (default out/moe): meta.txt, run.log, results.jsonl, traces.tar (gzipped Chrome traces of
# the cases that keep one). Only reads the card's settings; never changes clocks, limits or modes.
set -uo pipefail
mdir=${1:?usage: megatron_moe_layer.sh MEGATRON_DIR [args]}
shift
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-out/moe}
mkdir -p "$out"
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-1}   # as Megatron-LM's examples set it
export NO_VCS_VERSION=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

{
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ) epoch $(date +%s)"
  echo "# kernel: $(uname -r)  cores: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  echo "# megatron dir: $mdir ($(du -sh "$mdir" | cut -f1))"
  nvidia-smi --query-gpu=name,driver_version,vbios_version,memory.total,persistence_mode,compute_mode,mig.mode.current,power.limit,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv 2>&1
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1
  python3 -m pip list 2>/dev/null | grep -i -E '^(torch|triton|numpy|packaging|einops|transformer|grouped|apex|flash|nvidia-cublas|nvidia-cuda-cupti)' 
  echo "# gcc: $(command -v gcc || echo none)"
} > "$out/meta.txt" 2>&1

python3 "$here/megatron_moe_layer.py" --megatron "$mdir" --out "$out" "$@" 2>&1 | tee "$out/run.log"
rc=${PIPESTATUS[0]}

{
  echo "# after the run: $(date -u +%Y-%m-%dT%H:%M:%SZ), exit $rc"
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv 2>&1
} >> "$out/meta.txt"

# one file for the traces (the device tool returns at most 8 files of 16 MiB)
if ls "$out"/traces/*.json.gz >/dev/null 2>&1; then
  while :; do
    tar -C "$out" --exclude="*.json" -cf "$out/traces.tar" traces
    [ "$(stat -c %s "$out/traces.tar")" -lt 15000000 ] && break
    big=$(ls -S "$out"/traces/*.json.gz | head -1)
    echo "# traces.tar too large: dropping $big" >> "$out/meta.txt"
    rm -f "$big"
  done
fi
rm -rf "$out/traces"
exit "$rc"
