#!/usr/bin/env bash
# The whole fakv test suite, as CI runs it: installs what is missing, builds,
# then runs the lit tests (IR, lowering, CPU execution) and the Python tests.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
# Without ptxas (CUDA 13.0 at /usr/local/cuda, as the machines have it) the tests that assemble PTX for sm_90a
# skip, lit's ptxas ones too: in CI that is a failure, not a quieter pass.
# nvcc likewise (bench/stream_balance.py's bare reads compile with it: test_bench_stream.py).
if [ -n "${CI:-}" ] && { ! command -v ptxas >/dev/null || ! command -v nvcc >/dev/null ||
                         grep -q '^FAKV_PTXAS:.*NOTFOUND' "$BUILD/CMakeCache.txt"; }; then
  echo "[fakv] CI: no ptxas or nvcc on PATH, or no ptxas in the build's configuration (/usr/local/cuda/bin): the" \
       "PTX, cubin and bare-read tests would skip" >&2
  exit 1
fi
echo "[fakv] lit tests"
lit -sv "$BUILD/test"
echo "[fakv] Python tests"
# (-rs: every skip's reason listed, so one that should not have skipped is seen; no test files is pytest's
# exit 5, a failure)
(cd "$ROOT" && python -m pytest -q -rs test/python)
