#!/usr/bin/env bash
# Calibration run on a GPU machine, from the repository root:
#
#   tools/calibrator/run_on_device.sh [smoke|full|calibrate|reference|parallel]
#
# 1. records the GPU (nvidia-smi, topology);
# 2. builds clustersim-calibrate there with CMake + nvcc from tools/calibrator alone (it needs only
#    the CUDA toolkit and NCCL), or uses the binary named by CALIBRATE_BIN; if the build fails it
#    falls back to CALIBRATE_FALLBACK_BIN when that names a binary;
# 3. runs every measurement (`all`: GEMM, memory, launch, NCCL) into raw-sample files;
# 4. runs the PyTorch reference training steps of tools/reference/configs.json (one GPU), and with
#    several GPUs also the data-, tensor- and pipeline-parallel variants under torchrun;
# 5. leaves everything in $OUT (default ./calibration-out): gemm.csv, memory.csv, launch.csv,
#    nccl.csv, reference.jsonl, nvidia-smi.txt and run.log (seven files).
#
# smoke:     --quick calibration, 1 warm-up + 2 timed reference steps, a CPU check of the parallel
#            variants (about 4 minutes on one H200).
# full:      the whole calibration, then 3 warm-up + 5 timed reference steps.
# calibrate: the whole calibration only;  reference: the reference steps only (full counts).
# parallel:  with 2 or more GPUs, the parallel variants only: a --verify check of each on the GPUs
#            (a tiny model), then the timed ddp, tp and pp steps (REFERENCE_ONLY names the
#            configurations, default gpt-1.3b,llama-1b-gqa; REFERENCE_VARIANTS the variants,
#            default "ddp tp pp").
# Where one command may run at most 10 minutes, run `calibrate` and `reference` as two commands.
# Each stage has a time limit and the script goes on after a failure; the exit code is the number of
# failed stages.
set -u
mode=${1:-full}
case "$mode" in smoke|full|calibrate|reference|parallel) ;;
  *) echo "usage: $0 [smoke|full|calibrate|reference|parallel]" >&2; exit 2 ;; esac
do_calibrate=1; do_reference=1; do_single=1
[ "$mode" = calibrate ] && do_reference=0
[ "$mode" = reference ] && do_calibrate=0
[ "$mode" = parallel ] && { do_calibrate=0; do_single=0; }
out=${OUT:-$PWD/calibration-out}
mkdir -p "$out"
log=$out/run.log
: > "$log"
# NVLink multicast (NVLS) stays off: on shared machines it can take the host's GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
failed=0
# Stage time limits (s): smoke fits one 420 s command with room to spare.
if [ "$mode" = smoke ]; then
  t_configure=60 t_build=150 t_calibrate=120 t_reference=150 t_variant=40
else
  t_configure=120 t_build=240 t_calibrate=420 t_reference=240 t_variant=240
fi

say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
# run_stage NAME LIMIT_S COMMAND...: runs with a time limit, output to the log, counts failures.
run_stage() {
  local name=$1 limit=$2; shift 2
  say "$name (limit ${limit}s): $*"
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >> "$log" 2>&1
  local rc=$?
  say "$name: exit $rc after $((SECONDS - start))s"
  [ $rc -eq 0 ] || failed=$((failed + 1))
  return $rc
}

say "mode $mode, output $out"
{
  nvidia-smi
  nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu,pstate --format=csv
  nvidia-smi topo -m
  nvidia-smi nvlink --status
} > "$out/nvidia-smi.txt" 2>&1
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
say "GPUs: $gpus"

# ---- build ----
bin=${CALIBRATE_BIN:-}
if [ "$do_calibrate" = 1 ] && [ -z "$bin" ]; then
  build=${CALIBRATE_BUILD_DIR:-/tmp/build-calibrate}
  generator=()
  command -v ninja > /dev/null && generator=(-G Ninja)
  if run_stage configure "$t_configure" cmake -S tools/calibrator -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
                            -DCLUSTERSIM_CALIBRATE_WERROR=OFF &&
     run_stage build "$t_build" cmake --build "$build" --target clustersim-calibrate -j "$(nproc)"; then
    bin=$build/bin/clustersim-calibrate
  elif [ -n "${CALIBRATE_FALLBACK_BIN:-}" ] && [ -x "$CALIBRATE_FALLBACK_BIN" ]; then
    say "build failed: using the prebuilt $CALIBRATE_FALLBACK_BIN"
    bin=$CALIBRATE_FALLBACK_BIN
  fi
fi

# ---- calibration ----
if [ "$do_calibrate" = 0 ]; then
  :
elif [ -n "$bin" ] && [ -x "$bin" ]; then
  run_stage info 30 "$bin" info
  # CALIBRATE_SHAPES names a shapes file (`clustersim calibrate shapes`) timed besides the built-in sets.
  shapes=()
  [ -n "${CALIBRATE_SHAPES:-}" ] && shapes=(--shapes "$CALIBRATE_SHAPES")
  if [ "$mode" = smoke ]; then
    run_stage calibrate "$t_calibrate" "$bin" all --quick "${shapes[@]}" --out "$out"
  else
    run_stage calibrate "$t_calibrate" "$bin" all "${shapes[@]}" --out "$out"
  fi
else
  say "no calibrator binary: calibration skipped"
  failed=$((failed + 1))
fi

# ---- reference training steps ----
ref=tools/reference/train_step.py
if [ "$mode" = smoke ]; then steps=(--warmup 1 --steps 2); else steps=(--warmup 3 --steps 5); fi
[ "$do_reference" = 1 ] && [ "$do_single" = 1 ] && run_stage reference "$t_reference" python3 "$ref" --configs tools/reference/configs.json "${steps[@]}" --out "$out/reference.jsonl"
if [ "$do_reference" = 0 ]; then
  :
elif [ "$gpus" -ge 2 ]; then
  if [ "$mode" = parallel ]; then
    # The parallel code paths on the GPUs against the one-GPU model; a hang prints its stacks.
    tiny=(--name tiny --layers 4 --hidden 64 --heads 4 --kv-heads 2 --ffn-hidden 128 --vocab 512 --seq-len 32
          --micro-batch 2 --mlp swiglu --norm rmsnorm --positions rope --bias false --tie-embeddings true)
    for variant in ${REFERENCE_VARIANTS:-ddp tp pp}; do
      run_stage "gpu-verify-$variant" 90 env CLUSTERSIM_REFERENCE_WATCHDOG_S=60 python3 -m torch.distributed.run --standalone \
        --nproc_per_node "$gpus" "$ref" "${tiny[@]}" --verify --parallel "$variant" \
        --microbatches $([ "$variant" = pp ] && echo "$gpus" || echo 1) --warmup 1 --steps 1
    done
  fi
  for variant in ${REFERENCE_VARIANTS:-ddp tp pp}; do
    extra=()
    [ "$variant" = pp ] && extra=(--microbatches $((2 * gpus)))
    run_stage "reference-$variant" "$t_variant" python3 -m torch.distributed.run --standalone --nproc_per_node "$gpus" "$ref" \
      --configs tools/reference/configs.json --only "${REFERENCE_ONLY:-gpt-1.3b,llama-1b-gqa}" --parallel "$variant" "${extra[@]}" \
      "${steps[@]}" --out "$out/reference.jsonl"
  done
elif [ "$mode" = smoke ]; then
  # One GPU: check the parallel code paths on the CPU (gloo), against the one-GPU model.
  tiny=(--name tiny --layers 4 --hidden 64 --heads 4 --kv-heads 2 --ffn-hidden 128 --vocab 512 --seq-len 32
        --micro-batch 2 --mlp swiglu --norm rmsnorm --positions rope --bias false --tie-embeddings true)
  for variant in ddp tp pp; do
    run_stage "cpu-$variant" "$t_variant" python3 -m torch.distributed.run --standalone --nproc_per_node 2 "$ref" "${tiny[@]}" \
      --device cpu --verify --parallel "$variant" --microbatches $([ "$variant" = pp ] && echo 2 || echo 1) \
      --warmup 1 --steps 1
  done
fi

say "done: $failed failed stage(s)"
sed -n '/== clustersim-calibrate summary/,/^==/p' "$log" | head -60
[ -f "$out/reference.jsonl" ] && python3 - "$out/reference.jsonl" <<'EOF'
import json, sys
print(f"{'reference':28} {'params':>8} {'step ms':>9} {'fwd':>8} {'bwd':>8} {'opt':>7} {'peak GiB':>9} {'tok/s':>9}")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "error" in r:
        print(f"{r['name']:28} {r['error']}")
        continue
    name = r["name"] + ("" if r["world_size"] == 1 else f" {r['config']['parallel']}x{r['world_size']}")
    print(f"{name:28} {r['params']/1e9:7.2f}B {r['step_time_ms']:9.1f} {r['forward_ms']:8.1f} {r['backward_ms']:8.1f} "
          f"{r['optimizer_ms']:7.1f} {r['peak_allocated_gib']:9.2f} {r['tokens_per_s']:9.0f}")
EOF
exit $failed
