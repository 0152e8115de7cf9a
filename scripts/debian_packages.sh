#!/usr/bin/env bash
# Sourced by bootstrap.sh and wheel.sh: the Debian packages fakv builds
# with, and a function that installs those of a list that are missing.
# (ccache from the first build on: CMakeLists.txt puts it before the compiler when it is there, and a build
# folder configured without it, then with it after wheel.sh installed it, compiled everything again)
FAKV_DEBIAN_PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools libzstd-dev
                      cmake ninja-build g++ python3-venv python3-dev ccache)

ensure_debian_packages() {  # package...
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "[fakv] installing Debian packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "[fakv] missing Debian packages (${missing[*]}) and neither root nor sudo" \
      "to install them: install them, or run as root" >&2; return 1; }
    sudo=(sudo)
  fi
  # (env inside sudo: sudo resets the environment, and a debconf prompt would wait unseen; the lock waited for, not
  # refused, while a fresh machine's unattended upgrades hold it; an install cut short finished first)
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive dpkg --configure -a
  "${apt[@]}" update -qq
  "${apt[@]}" install -y -qq "${missing[@]}" >/dev/null
}
