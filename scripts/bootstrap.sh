#!/usr/bin/env bash
# Installs what fakv needs and is missing (Debian packages, a Python venv with
# the pinned PyPI packages), then configures and builds. Idempotent: a second
# run only rebuilds what changed. Sourced by demo.sh and test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FAKV_BUILD_DIR:-$ROOT/build}"

source "$ROOT/scripts/debian_packages.sh"
ensure_debian_packages "${FAKV_DEBIAN_PACKAGES[@]}"

PY="${FAKV_PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  echo "[fakv] creating $ROOT/.venv with $($PY --version)"
  "$PY" -m venv "$ROOT/.venv"
fi
if ! cmp -s "$ROOT/requirements.txt" "$ROOT/.venv/requirements.installed"; then
  echo "[fakv] installing Python packages (requirements.txt)"
  "$ROOT/.venv/bin/python" -m pip install -q --upgrade pip
  "$ROOT/.venv/bin/python" -m pip install -q -r "$ROOT/requirements.txt"
  cp "$ROOT/requirements.txt" "$ROOT/.venv/requirements.installed"
fi
export PATH="$ROOT/.venv/bin:/usr/lib/llvm-22/bin:/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$ROOT/frontend${PYTHONPATH:+:$PYTHONPATH}"

if [ ! -f "$BUILD/build.ninja" ]; then
  echo "[fakv] configuring $BUILD"
  cmake -G Ninja -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
fi
echo "[fakv] building"
ninja -C "$BUILD" ${FAKV_BUILD_TARGETS:-all} | sed -E '/^\[[0-9]+\/[0-9]+\] /d; /^ninja: (Entering|Leaving)/d'
