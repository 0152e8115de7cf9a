#!/usr/bin/env bash
# The main job: installs what is missing, builds, compiles the decode kernel
# (kernels/decode.mlir) and runs it, printing its output next to a float64
# reference. Without a GPU it runs through the CPU path (fakv-to-llvm-cpu +
# mlir-runner).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
python "$ROOT/scripts/demo.py" --build "$BUILD" "$@"
