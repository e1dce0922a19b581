#!/usr/bin/env bash
# Power and clock measurements on one GPU, with nvidia-smi (every 50 ms) and an NVML sampler
# (every 10 ms) running in the background, from any directory:
#
#   tools/reference/power_clock.sh STAGE[,STAGE...]
#
# Stages, run in the order given:
#   power  10 s idle with no CUDA context, then power_clock.py's default scenarios: idle with a
#          context, sustained GEMMs (bf16, fp8, tf32, fp32), copies, flash attention, duty-cycle mixes
#   train  reference training steps (gpt-350m, gpt-1.3b, llama-7b-2k) through train_step.py
#   ops    host_launch.py ops: eager op and graph-replay costs, launch-queue depth
#   steps  host_launch.py step for each launch-bound configuration, eager and as a CUDA graph
#   smoke  host_launch.py step for the smallest configuration with 3 steps (a quick check)
#
# Output in $OUT (default ./power-out): meta.txt (the card as found, versions), run.log, nvsmi.csv,
# nvml.csv.gz, scenarios.jsonl, chunks.csv.gz, windows.csv (power_clock_analyze.py) and host.jsonl:
# eight files at most. Only reads the card's state: it never sets clocks, power limits or modes.
# POWER_CLOCK_EXTRA adds arguments to power_clock.py run (e.g. "--device cpu --scale 0.01" to test
# the logic without a GPU). The exit code is the number of failed stages.
set -u
stages=${1:-power}
for st in ${stages//,/ }; do
  case "$st" in power|train|ops|steps|smoke) ;;
    *) echo "usage: $0 STAGE[,STAGE...] with stages power, train, ops, steps, smoke" >&2; exit 2 ;; esac
done
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/power-out}
mkdir -p "$out"
log=$out/run.log
export PYTHONUNBUFFERED=1
failed=0
say() { echo "== $(date -u +%H:%M:%S.%N | cut -c1-12) $*" | tee -a "$log"; }
stage() {  # stage NAME LIMIT_S COMMAND...
  local name=$1 limit=$2; shift 2
  say "$name (limit ${limit}s): $*"
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  say "$name: exit $rc after $((SECONDS - start))s"
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
}

# ---- the card as found (read only) ----
{
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%S.%NZ)  local: $(date '+%Y-%m-%d %H:%M:%S %z %Z')  epoch: $(date +%s.%N)"
  echo "# uname: $(uname -a)"
  echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)  cores: $(nproc)"
  python3 -c 'import sys, torch; print("# python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1
  python3 -m pip show nvidia-ml-py 2>/dev/null | grep -E '^(Name|Version)' | tr '\n' ' '; echo
  nvidia-smi --query-gpu=name,pci.bus_id,driver_version,vbios_version,memory.total,pstate,persistence_mode,compute_mode,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,clocks.applications.graphics,clocks.default_applications.graphics,power.draw,power.limit,enforced.power.limit,power.default_limit,power.min_limit,power.max_limit,temperature.gpu,clocks_event_reasons.active --format=csv
  nvidia-smi -q
} > "$out/meta.txt" 2>&1

# ---- which sampling fields this driver answers ----
want="timestamp power.draw power.draw.average power.draw.instant clocks.sm clocks.mem temperature.gpu clocks_event_reasons.active enforced.power.limit power.default_limit"
fields=""
for f in $want; do
  if nvidia-smi --query-gpu="$f" --format=csv,noheader > /dev/null 2>&1; then fields="$fields,$f"
  elif [ "$f" = clocks_event_reasons.active ] &&
       nvidia-smi --query-gpu=clocks_throttle_reasons.active --format=csv,noheader > /dev/null 2>&1; then
    fields="$fields,clocks_throttle_reasons.active"
  else say "nvidia-smi field $f not supported: left out"; fi
done
fields=${fields#,}
say "stages $stages; nvidia-smi fields: $fields"

nvidia-smi --query-gpu="$fields" --format=csv -lms 50 > "$out/nvsmi.csv" 2>&1 &
smi_pid=$!
python3 "$here/power_clock.py" sample --out "$out/nvml.csv" --period-ms 10 >> "$log" 2>&1 &
nvml_pid=$!
sleep 1

for st in ${stages//,/ }; do
  case "$st" in
  power)
    # Idle power before any work: no CUDA context on the card.
    t0=$(date +%s.%N); sleep "${POWER_CLOCK_IDLE_S:-10}"; t1=$(date +%s.%N)
    echo "{\"name\": \"idle_noctx\", \"kind\": \"idle\", \"wall0\": $t0, \"wall1\": $t1}" >> "$out/scenarios.jsonl"
    stage power 480 python3 "$here/power_clock.py" run --out "$out" ${POWER_CLOCK_EXTRA:-} ;;
  train)
    stage train 200 python3 "$here/power_clock.py" run --out "$out" --gap 5 \
      --only train_gpt-350m,train_gpt-1.3b,train_llama-7b-2k ${POWER_CLOCK_EXTRA:-} ;;
  ops)
    stage host-ops 120 python3 "$here/host_launch.py" ops --out "$out/host.jsonl" ;;
  steps)
    for c in gpt-125m-s256-b1 gpt-125m-s512-b2 gpt-350m-s256-b1 gpt-350m-s512-b2 llama-220m-s512-b1; do
      stage "host-step $c" 60 python3 "$here/host_launch.py" step --config "$c" --out "$out/host.jsonl"
    done ;;
  smoke)
    stage host-smoke 60 python3 "$here/host_launch.py" step --config gpt-125m-s256-b1 --steps 3 --warmup 2 \
      --out "$out/host.jsonl" ;;
  esac
done

sleep 1
kill "$smi_pid" "$nvml_pid" 2> /dev/null
wait "$smi_pid" "$nvml_pid" 2> /dev/null
gzip -f "$out/nvml.csv"
stage analyze 60 python3 "$here/power_clock_analyze.py" "$out"
say "done; $failed failed stage(s)"
exit "$failed"
