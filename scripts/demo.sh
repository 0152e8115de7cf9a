#!/usr/bin/env bash
# The main job: installs what is missing, builds, compiles the decode kernel
# from its DSL description (kernels/decode.py) and runs it through
# fakv.flash_attn_with_kvcache: on the GPU when there is one, else on the CPU
# path; prints the result next to a float64 reference (scripts/demo.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
python "$ROOT/scripts/demo.py" "$@"
