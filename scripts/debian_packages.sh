#!/usr/bin/env bash
# Sourced by bootstrap.sh and wheel.sh: the Debian packages fakv builds
# with, and a function that installs those of a list that are missing.
FAKV_DEBIAN_PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools libzstd-dev
                      cmake ninja-build g++ python3-venv python3-dev)

ensure_debian_packages() {  # package...
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "[fakv] installing Debian packages: ${missing[*]}"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}
