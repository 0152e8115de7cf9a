#!/usr/bin/env bash
# Builds self-contained fakv wheels into dist/, one per CPython version:
# LLVM/MLIR linked into fakv._fakv statically (symbols hidden, no RPATH),
# fakv._runtime (which loads the CUDA driver at run time), the kernels and
# everything `import fakv` needs. The platform tag is the one auditwheel
# finds true of the extensions (their glibc symbol versions; no library
# outside the manylinux set). Installs what it needs that is missing (the
# Debian packages of scripts/bootstrap.sh, ccache among them, and static zlib; pinned build tools in a
# venv per Python).
#
#   scripts/wheel.sh                 # CPython 3.11 and 3.12 (pyenv's, or python3.X on PATH)
#   FAKV_WHEEL_PYTHONS="3.12" scripts/wheel.sh
#
# Each wheel is then installed into a fresh venv and checked there with
# /usr/lib/llvm-22 hidden (scripts/check_wheel.py: the CPU path, an sm_90a
# compile); FAKV_WHEEL_CHECK=0 skips that.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHONS="${FAKV_WHEEL_PYTHONS:-3.11 3.12}"
DIST="$ROOT/dist"
TOOLS=(scikit-build-core==1.1.2 pybind11==3.1.0 wheel==0.48.0 auditwheel==6.8.2)

source "$ROOT/scripts/debian_packages.sh"
ensure_debian_packages "${FAKV_DEBIAN_PACKAGES[@]}" zlib1g-dev      # static zlib

interpreter() {  # the python of version $1
  local v=$1 p
  for p in "$HOME"/.pyenv/versions/"$v".*/bin/python"$v" "$(command -v "python$v" || true)"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  echo "[wheel] no Python $v (pyenv or python$v on PATH)" >&2
  return 1
}

# ccache shares the objects between the Python versions' build folders.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
mkdir -p "$DIST"
declare -A PY_OF     # every interpreter found before anything is built (a missing 3.12 named at once, not after 3.11's build)
for v in $PYTHONS; do PY_OF[$v]=$(interpreter "$v"); done
for v in $PYTHONS; do
  py=${PY_OF[$v]}
  tag="cp${v/./}"
  venv="$ROOT/build/wheel-venv-$tag"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q "${TOOLS[@]}"
  out="$ROOT/build/wheel-$tag"
  rm -rf "$out/dist"
  echo "[wheel] building for $("$venv/bin/python" --version) in $out"
  CMAKE_GENERATOR=Ninja "$venv/bin/python" -m pip wheel "$ROOT" --no-deps --no-build-isolation -w "$out/dist" \
    -C build-dir="$out/build" \
    -C cmake.define.FAKV_STATIC=ON \
    -C cmake.define.FAKV_PYTHON_PACKAGE_DIR="$out/package" \
    -C cmake.define.Python3_EXECUTABLE="$venv/bin/python"
  raw=$(ls "$out"/dist/fakv-*-"$tag"-*.whl)
  # The most compatible tag auditwheel finds true of the wheel, then that tag.
  # (auditwheel names linux_x86_64 when a library outside the manylinux set is needed: not a wheel to ship)
  plat=$("$venv/bin/python" -m auditwheel show "$raw" 2>/dev/null | tr '\n' ' ' |
         grep -oE 'consistent with the +following platform tag: +"[a-z0-9_]+"' | grep -oE '"[a-z0-9_]+"' | tr -d '"' || true)
  [[ $plat == manylinux_* ]] || { "$venv/bin/python" -m auditwheel show "$raw" || true
    echo "[wheel] auditwheel found no manylinux tag (${plat:-none}): the wheel needs libraries outside it" >&2; exit 1; }
  "$venv/bin/python" -m wheel tags --remove --platform-tag "$plat" "$raw" >/dev/null
  rm -f "$DIST"/fakv-*-"$tag"-*.whl
  mv "$out"/dist/fakv-*-"$tag"-*"$plat"*.whl "$DIST/"
  echo "[wheel] $(ls "$DIST"/fakv-*-"$tag"-*.whl) ($(du -h "$DIST"/fakv-*-"$tag"-*.whl | cut -f1))"
  if [ "${FAKV_WHEEL_CHECK:-1}" != 0 ]; then
    check="$ROOT/build/wheel-check-$tag"
    rm -rf "$check" && "$py" -m venv "$check"
    "$check/bin/python" -m pip install -q "$DIST"/fakv-*-"$tag"-*.whl
    mkdir -p "$ROOT/build/empty"
    if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then    # LLVM out of sight for the check
      # (Debian's libLLVM and libMLIR also lie in the loader's default folder, /usr/lib/llvm-22/lib linking there:
      # each covered by an empty file, so a library loaded at run time is missed too)
      : > "$ROOT/build/empty-file"
      (cd /tmp && unshare -m sh -c 'mount --bind "$1" /usr/lib/llvm-22 && f=$2 && shift 2 &&
         for l in /usr/lib/x86_64-linux-gnu/libLLVM*.so* /usr/lib/x86_64-linux-gnu/libMLIR*.so*; do
           [ ! -e "$l" ] || mount --bind "$f" "$l" || exit 1; done; exec "$@"' sh \
         "$ROOT/build/empty" "$ROOT/build/empty-file" "$check/bin/python" "$ROOT/scripts/check_wheel.py")
      echo "[wheel] $tag checked in a fresh venv, /usr/lib/llvm-22 and the system's libLLVM / libMLIR hidden"
    else            # (not root, or no mount namespace: the check cannot tell a wheel that needs the system LLVM)
      (cd /tmp && "$check/bin/python" "$ROOT/scripts/check_wheel.py")
      echo "[wheel] $tag checked in a fresh venv, /usr/lib/llvm-22 NOT hidden (needs root and unshare -m)" >&2
    fi
  fi
done
