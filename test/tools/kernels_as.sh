#!/bin/sh
# kernels_as.sh DTYPE FILE...: print the files one after the other, with the
# element-type aliases of the kernels in kernels/*.mlir (!kv, !out) set to
# DTYPE, so that one kernel description is tested in f32, f16 and bf16.
dtype=$1
shift
sed -E "s/^!(kv|out) = .*/!\1 = $dtype/" "$@"
