#!/usr/bin/env bash
# Installs what fakv needs and is missing (Debian packages, a Python venv with
# the pinned PyPI packages), then configures and builds. Idempotent: a second
# run only rebuilds what changed. Sourced by demo.sh and test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FAKV_BUILD_DIR:-$ROOT/build}"

source "$ROOT/scripts/debian_packages.sh"
ensure_debian_packages "${FAKV_DEBIAN_PACKAGES[@]}"

# The venv is made again (--clear) when it no longer runs (its interpreter gone) or runs another Python version
# than FAKV_PYTHON's; packages are then installed anew.
PY="${FAKV_PYTHON:-python3}"
version() { "$1" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null; }
PY_VERSION="$(version "$PY")" || { echo "[fakv] $PY does not run (FAKV_PYTHON)" >&2; exit 1; }
if [ "$(version "$ROOT/.venv/bin/python")" != "$PY_VERSION" ]; then
  echo "[fakv] creating $ROOT/.venv with $PY ($PY_VERSION)"
  "$PY" -m venv --clear "$ROOT/.venv"
fi
if ! cmp -s "$ROOT/requirements.txt" "$ROOT/.venv/requirements.installed"; then
  echo "[fakv] installing Python packages (requirements.txt)"
  "$ROOT/.venv/bin/python" -m pip install -q pip==26.3
  "$ROOT/.venv/bin/python" -m pip install -q -r "$ROOT/requirements.txt"
  cp "$ROOT/requirements.txt" "$ROOT/.venv/requirements.installed"
fi
export PATH="$ROOT/.venv/bin:/usr/lib/llvm-22/bin:${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
export PYTHONPATH="$ROOT/frontend${PYTHONPATH:+:$PYTHONPATH}"

# Configured on every run (a few seconds): a build folder configured by hand, before CUDA was installed, or for
# another venv is brought in line. What it could not find (the extensions, ptxas, lit) is printed.
echo "[fakv] configuring $BUILD"
cmake -G Ninja -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" -UFAKV_CUDA_INCLUDE -UFAKV_PTXAS |
  { grep -E 'not found|Error|error|Warning' || true; }
echo "[fakv] building"
ninja -C "$BUILD" ${FAKV_BUILD_TARGETS:-all} | sed -E '/^\[[0-9]+\/[0-9]+\] /d; /^ninja: (Entering|Leaving)/d'
