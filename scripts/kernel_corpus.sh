#!/usr/bin/env bash
# The sha256 of the GPU binaries test_flash_attn.py, test_frontend_gpu.py and
# bench_decode.py compile (their --compile-only modes, into an empty cache)
# and of the PTX of the IR kernels, sorted, into OUT: compare two runs to show
# that a compiler change leaves these kernels byte-identical (timing
# properties stripped). test_kvcache.py and bench_grid.py have no
# compile-only mode: kernels only they compile are not in it.
#
#   scripts/kernel_corpus.sh /tmp/before.txt; <change, rebuild>; scripts/kernel_corpus.sh /tmp/after.txt
#   diff /tmp/before.txt /tmp/after.txt && echo identical
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(realpath -m "$1")"
PY="$ROOT/.venv/bin/python"
OPT="${FAKV_BUILD_DIR:-$ROOT/build}/bin/fakv-opt"
cd "$ROOT"
D=$(mktemp -d /tmp/fakv-corpus.XXXXXX)
export FAKV_CACHE_DIR=$D
"$PY" test/gpu/test_flash_attn.py --compile-only > /dev/null
"$PY" test/gpu/test_frontend_gpu.py --compile-only > /dev/null
"$PY" bench/bench_decode.py --compile-only > /dev/null
for f in kernels/decode.mlir kernels/combine.mlir; do
  for t in bf16 f16; do
    sh test/tools/kernels_as.sh $t $f | "$OPT" --fakv-to-cubin=format=isa \
      | sed -E "s/LLVMIRToISATimeInMs = [0-9]+/T/" > "$D/$(basename "$f").$t.ptx.txt"
  done
done
(cd "$D" && sha256sum *.cubin *.ptx.txt | awk '{print $1}' | sort) > "$OUT"
echo "$(wc -l < "$OUT") kernels in $D; hashes in $OUT"
