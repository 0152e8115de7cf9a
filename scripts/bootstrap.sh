#!/usr/bin/env bash
# Installs what fakv needs and is missing (Debian packages, a Python venv with
# the pinned PyPI packages), then configures and builds. Idempotent: a second
# run only rebuilds what changed. Sourced by demo.sh and test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FAKV_BUILD_DIR:-$ROOT/build}"

source "$ROOT/scripts/debian_packages.sh"
ensure_debian_packages "${FAKV_DEBIAN_PACKAGES[@]}"

# The venv is made again (--clear) when it no longer runs (its interpreter gone), runs another Python version
# than FAKV_PYTHON's or has no pip (a venv cut short); packages are then installed anew, and the build folder's
# Python (CMake's cache of the interpreter's version and suffix, kept while its path stays .venv's) found again.
# FAKV_PYTHON is resolved in the source tree (a pyenv shim picks its version by the folder it runs in).
PY="$(cd "$ROOT" && "${FAKV_PYTHON:-python3}" -c 'import sys; print(sys.executable)' 2>/dev/null)" ||
  { echo "[fakv] ${FAKV_PYTHON:-python3} does not run (FAKV_PYTHON)" >&2; exit 1; }
version() { "$1" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null; }
PY_VERSION="$(version "$PY")"
if [ "$(version "$ROOT/.venv/bin/python")" != "$PY_VERSION" ] || ! "$ROOT/.venv/bin/python" -m pip --version &>/dev/null
then
  echo "[fakv] creating $ROOT/.venv with $PY ($PY_VERSION)"
  rm -f "$ROOT/.venv/requirements.installed"
  "$PY" -m venv --clear "$ROOT/.venv"
  rm -f "$BUILD/CMakeCache.txt"       # (configured anew below; the same commands, so ninja rebuilds what differs)
fi
if ! cmp -s "$ROOT/requirements.txt" "$ROOT/.venv/requirements.installed"; then
  echo "[fakv] installing Python packages (requirements.txt)"
  "$ROOT/.venv/bin/python" -m pip install -q pip==26.3
  "$ROOT/.venv/bin/python" -m pip install -q -r "$ROOT/requirements.txt"
  cp "$ROOT/requirements.txt" "$ROOT/.venv/requirements.installed"
fi
export PATH="$ROOT/.venv/bin:/usr/lib/llvm-22/bin:${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
export PYTHONPATH="$ROOT/frontend${PYTHONPATH:+:$PYTHONPATH}"

# Configured on every run (a few seconds): a build folder configured by hand, before CUDA was installed, for
# another venv or for a wheel (static, extensions elsewhere) is brought in line. What it could not find (the
# extensions, ptxas, lit) is printed.
echo "[fakv] configuring $BUILD"
cmake -G Ninja -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" -DFAKV_STATIC=OFF -DFAKV_PYTHON_PACKAGE_DIR="$ROOT/frontend/fakv" \
  -UFAKV_CUDA_INCLUDE -UFAKV_PTXAS |
  { grep -E 'not found|Error|error|Warning' || true; }
echo "[fakv] building"
ninja -C "$BUILD" ${FAKV_BUILD_TARGETS:-all} | sed -E '/^\[[0-9]+\/[0-9]+\] /d; /^ninja: (Entering|Leaving)/d'
