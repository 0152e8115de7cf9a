#!/usr/bin/env bash
# Every GPU test and the bench, on the GPU machine, with the kernel cache
# filled beforehand where MLIR is (docs/gpu-machine.md). Logs go to $1
# (default gpu-logs/); a summary line per step goes to stdout.
#   test/gpu/run_all.sh [LOGDIR] [STEP...]   STEP: ir frontend grid sanitize bench (default: all)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LOGS="${1:-gpu-logs}"; shift || true
STEPS="${*:-ir frontend grid sanitize bench}"
mkdir -p "$LOGS"
export FAKV_CACHE_DIR="${FAKV_CACHE_DIR:-$ROOT/.carry/cache}"
cd "$ROOT"
run() {  # name timeout command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  echo "[$name] rc=$? in $((SECONDS - t0)) s: $(grep -E 'passed|failed|SUMMARY|error' "$LOGS/$name.log" | tail -2 | tr '\n' ' ')"
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for step in $STEPS; do
  case $step in
    ir) run ir 300 python3 test/gpu/test_ir_kernels.py ;;
    frontend) run frontend 300 python3 test/gpu/test_frontend_gpu.py ;;
    grid) run grid 560 python3 test/gpu/test_flash_attn.py ;;
    sanitize)
      run memcheck 300 compute-sanitizer --tool memcheck python3 test/gpu/sanitize.py
      run racecheck 300 compute-sanitizer --tool racecheck python3 test/gpu/sanitize.py ;;
    bench)
      run bench 300 python3 bench/bench_decode.py
      cat "$LOGS/bench.log"
      for c in $(grep -o '^cubin: [^ ]*' "$LOGS/bench.log" | cut -d' ' -f2); do
        echo "$c: $(cuobjdump --dump-sass "$c" | grep -oE 'HGMMA\.[0-9x]+\.F32\.BF16|UTMALDG\.[0-9]D|LDG\.E\.128' | sort | uniq -c | tr '\n' ' ')"
      done ;;
  esac
done
