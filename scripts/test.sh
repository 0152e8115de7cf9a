#!/usr/bin/env bash
# The whole fakv test suite, as CI runs it: installs what is missing, builds,
# then runs the lit tests (IR, lowering, CPU execution) and the Python tests.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
# Without ptxas (CUDA 13.0 at /usr/local/cuda, as the machines have it) the tests that assemble PTX for sm_90a
# skip, lit's ptxas ones too: in CI that is a failure, not a quieter pass.
if [ -n "${CI:-}" ] && { ! command -v ptxas >/dev/null || grep -q '^FAKV_PTXAS:.*NOTFOUND' "$BUILD/CMakeCache.txt"; }; then
  echo "[fakv] CI: no ptxas on PATH or in the build's configuration (/usr/local/cuda/bin): the PTX and cubin tests" \
       "would skip" >&2
  exit 1
fi
echo "[fakv] lit tests"
lit -sv "$BUILD/test"
if compgen -G "$ROOT/test/python/test_*.py" >/dev/null; then
  echo "[fakv] Python tests"
  (cd "$ROOT" && python -m pytest -q test/python)
fi
