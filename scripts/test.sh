#!/usr/bin/env bash
# The whole fakv test suite, as CI runs it: installs what is missing, builds,
# then runs the lit tests (IR, lowering, CPU execution) and the Python tests.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
echo "[fakv] lit tests"
lit -sv "$BUILD/test"
if compgen -G "$ROOT/test/python/test_*.py" >/dev/null; then
  echo "[fakv] Python tests"
  (cd "$ROOT" && python -m pytest -q test/python)
fi
