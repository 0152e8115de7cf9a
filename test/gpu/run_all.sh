#!/usr/bin/env bash
# Every GPU test and the benches on the GPU machine, as a user would run
# them: fakv installed from its wheel (dist/, scripts/wheel.sh), kernels
# compiled there on the spot into a fresh, empty cache; the CUDA toolkit
# hidden from the tests (only the driver and torch's CUDA wheels remain).
# Logs go to LOGDIR; a summary line per step to stdout. Exits 1 when a step
# failed (its rc printed on its line), after running the rest.
#
#   test/gpu/run_all.sh LOGDIR [STEP...]
#   STEP: install hide ir frontend grid kvcache demo restore sanitize bench host (default: all, in this
#   order), profile, cost (bench/append_cost.py), modes (bench/launch_modes.py), ragged
#   (bench/ragged_splits.py), peers (bench/bench_grid.py, FlashInfer from .carry/wheels), cpu-suite (the CPU
#   path's kernel tests on the GPU: test/gpu/numpy_on_gpu.py; $CPU_SUITE names the files); sanitize is memcheck
#   racecheck synccheck initcheck (each a step of its own too)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LOGS="${1:-gpu-logs}"; shift || true
STEPS="${*:-install hide ir frontend grid kvcache demo restore sanitize bench host}"
STEPS="${STEPS//sanitize/memcheck racecheck synccheck initcheck}"
mkdir -p "$LOGS"
LOGS="$(cd "$LOGS" && pwd)"
export FAKV_CACHE_DIR="${FAKV_CACHE_DIR:-$(mktemp -d /tmp/fakv-cache.XXXXXX)}"
export PYTHONUNBUFFERED=1
cd "$ROOT"
FAILED=""
CPU_SUITE="${CPU_SUITE:-test_dsl_semantics.py test_dsl_control_flow.py test_dsl_python_semantics.py test_dsl_fuzz.py \
test_kernels_cpu.py test_frontend.py test_api_fuzz.py test_kvcache.py}"
run() {  # name timeout command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || FAILED="$FAILED $name"
  echo "[$name] rc=$rc in $((SECONDS - t0)) s: $(grep -E 'passed|failed|SUMMARY|error|PASS|FAIL' "$LOGS/$name.log" | tail -2 | tr '\n' ' ')"
}
no_skips() {  # name: a pytest step none of whose cases may skip (without a GPU every one would, and pytest exits 0)
  if grep -qE '[0-9]+ skipped' "$LOGS/$1.log"; then
    FAILED="$FAILED $1(skipped)"; echo "[$1] FAILED: cases skipped: $(grep -E '[0-9]+ skipped' "$LOGS/$1.log" | tail -1)"
  fi
}
hide_cuda() {  # the toolkit out of sight: /usr/local/cuda* moved aside, PATH and CUDA_HOME cleared
  for d in /usr/local/cuda /usr/local/cuda-*; do
    [ -e "$d" ] || [ -L "$d" ] && mv "$d" "/usr/local/.hidden-$(basename "$d")"
  done
  export PATH="$(echo "$PATH" | tr ':' '\n' | grep -v -i cuda | paste -sd:)"
  unset CUDA_HOME CUDA_PATH
}
restore_cuda() {
  for d in /usr/local/.hidden-cuda*; do    # (cuda may be a link to cuda-13.0: dangling until both are back)
    [ -e "$d" ] || [ -L "$d" ] && mv "$d" "/usr/local/$(basename "$d" | sed 's/^.hidden-//')"
  done
  export PATH="/usr/local/cuda/bin:$PATH"
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
# pytest workers: the kvcache grid's largest cases hold up to ~10 GiB a worker (8 workers ran an 80 GB H100
# out of memory, session 39): one worker per 16 GiB of the GPU's memory, 8 at most
GPU_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
[[ $GPU_MIB =~ ^[0-9]+$ ]] || GPU_MIB=0      # ([N/A], or nothing: one worker)
WORKERS=$(( GPU_MIB / 16384 )); WORKERS=$(( WORKERS < 1 ? 1 : WORKERS > 8 ? 8 : WORKERS ))
echo "kernel cache: $FAKV_CACHE_DIR ($(ls "$FAKV_CACHE_DIR" | wc -l) entries)"
for step in $STEPS; do
  case $step in
    install)
      wheel=$(ls "$ROOT"/dist/fakv-*-cp312-*.whl)
      python3 -m pip install -q --no-deps --no-index --force-reinstall "$wheel" > "$LOGS/install.log" 2>&1
      rc=$?; [ $rc -eq 0 ] || FAILED="$FAILED install"
      echo "[install] rc=$rc $(basename "$wheel"): $(cd /tmp && python3 -c 'import fakv, os; print(os.path.dirname(fakv.__file__))')" ;;
    hide)
      hide_cuda
      echo "[hide] ptxas: $(command -v ptxas || echo none); /usr/local: $(ls /usr/local | tr '\n' ' ')"
      ! command -v ptxas > /dev/null || FAILED="$FAILED hide"
      (cd /tmp && python3 -c 'import fakv.ptx as p; print("[hide] PTX assembler:", *p.assembler())') ;;
    restore) restore_cuda; echo "[restore] ptxas: $(command -v ptxas || echo none)" ;;
    ir) run ir 300 python3 test/gpu/test_ir_kernels.py ;;
    frontend) run frontend 300 python3 test/gpu/test_frontend_gpu.py
      # (a skip for another reason than one GPU, or any skip on a machine of several, fails the step: run_all
      # counts skips apart from failures, and the two-GPU cases had never run unnoticed)
      gpus=$(nvidia-smi -L | grep -c '^GPU')
      other=$(grep '^SKIP' "$LOGS/frontend.log" | grep -vc 'needs two GPUs$')
      if [ "$other" -gt 0 ] || { [ "$gpus" -ge 2 ] && grep -q '^SKIP' "$LOGS/frontend.log"; }; then
        FAILED="$FAILED frontend(skipped)"; echo "[frontend] FAILED: skips on $gpus GPU(s): $(grep -c '^SKIP' "$LOGS/frontend.log")"
      elif [ "$gpus" -lt 2 ]; then
        echo "[frontend] the two-GPU cases skipped ($(grep -c '^SKIP' "$LOGS/frontend.log")): one GPU here"
      fi ;;
    grid) run grid 540 python3 -m pytest -q -p no:cacheprovider -n "$WORKERS" test/gpu/test_flash_attn.py; no_skips grid ;;
    kvcache) run kvcache 540 python3 -m pytest -q -p no:cacheprovider -n "$WORKERS" test/gpu/test_kvcache.py
      no_skips kvcache ;;
    demo) run demo 120 python3 scripts/demo.py ;;
    memcheck|racecheck|synccheck)
      run "$step" 400 compute-sanitizer --tool "$step" --error-exitcode 9 python3 test/gpu/sanitize.py ;;
    initcheck)
      # (torch's allocator off: a block it hands back was written by an earlier case, and counts as initialised)
      PYTORCH_NO_CUDA_MEMORY_CACHING=1 run initcheck 400 compute-sanitizer --tool initcheck --error-exitcode 9 python3 test/gpu/sanitize.py --no-reference ;;
    profile) run profile 300 python3 bench/profile_host.py; cat "$LOGS/profile.log" ;;
    cost) run cost 300 python3 bench/append_cost.py; cat "$LOGS/cost.log" ;;
    modes) run modes 300 python3 bench/launch_modes.py; cat "$LOGS/modes.log" ;;
    ragged) run ragged 300 python3 bench/ragged_splits.py; cat "$LOGS/ragged.log" ;;
    peers)     # bench/bench_grid.py with FlashInfer from wheels carried in .carry/wheels (no network there): its
               # JIT modules compiled first (bench/flashinfer_warm.py, ~2 min), then the grid as docs/perf has it
      run peers-install 120 python3 -m pip install -q --no-deps --no-index --target /tmp/fi "$ROOT"/.carry/wheels/*.whl
      PYTHONPATH=/tmp/fi CUDA_HOME=/usr/local/cuda FLASHINFER_CUDA_ARCH_LIST=9.0a \
        run peers-warm 420 python3 bench/flashinfer_warm.py
      PYTHONPATH=/tmp/fi CUDA_HOME=/usr/local/cuda FLASHINFER_CUDA_ARCH_LIST=9.0a \
        run peers 560 python3 bench/bench_grid.py --out "$LOGS/perf" --peers sdpa,triton,flashinfer,flashinfer-tc,bare \
        --sustain 0.1 --rounds 3
      tail -3 "$LOGS/peers.log" ;;
    cpu-suite)  # the CPU path's kernel tests, their launches on numpy arrays moved to the GPU (numpy_on_gpu.py: what
                # only the CPU path does is xfail there); a file a process, all at once (ml_dtypes from
                # .carry/testwheels where the machine has none); fails on any failure
      python3 -c 'import ml_dtypes' 2> /dev/null ||
        python3 -m pip install -q --no-deps --no-index --target /tmp/testwheels "$ROOT"/.carry/testwheels/*.whl
      pids=()
      for f in $CPU_SUITE; do
        PYTHONPATH="$ROOT/test/gpu:$ROOT/test/python:/tmp/testwheels" timeout 500 python3 -m pytest -q -rf \
          -p no:cacheprovider -p numpy_on_gpu "test/python/$f" > "$LOGS/cpu-suite-${f%.py}.log" 2>&1 &
        pids+=($!)
      done
      for pid in "${pids[@]}"; do wait "$pid" || FAILED="$FAILED cpu-suite"; done
      for f in $CPU_SUITE; do
        echo "[cpu-suite] $f: $(grep -E 'numpy_on_gpu:|passed|failed|error' "$LOGS/cpu-suite-${f%.py}.log" | tail -2 | tr '\n' ' ')"
      done ;;
    bench)
      run bench 300 python3 bench/bench_decode.py
      cat "$LOGS/bench.log"
      run bench-checks 120 python3 test/gpu/bench_decode_checks.py
      for c in $(grep -o '^cubin: [^ ]*' "$LOGS/bench.log" | cut -d' ' -f2); do
        echo "$c: $(cuobjdump --dump-sass "$c" | grep -oE 'HGMMA\.[0-9x]+\.F32\.BF16|UTMALDG\.[0-9]D|LDG\.E\.128' | sort | uniq -c | tr '\n' ' ')"
      done ;;
    host)
      run host 540 python3 bench/bench_host.py --json "$LOGS/host.json"
      cat "$LOGS/host.log" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
[ -z "$FAILED" ] || { echo "failed:$FAILED"; exit 1; }
