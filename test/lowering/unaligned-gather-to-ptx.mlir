// A cache whose rows are not known to start 16-byte aligned (no
// fakv.divisibility on its pointer; a head dimension that is not a multiple
// of 8, say): no TMA (its strides must be multiples of 16 bytes); the
// cp.async gather copies a 16-byte chunk where it is aligned at run time,
// else element by element, then fences the generic-proxy stores for the
// tensor cores. The PTX passes ptxas for sm_90a.
// REQUIRES: ptxas
// RUN: sed 's/ {fakv.divisibility = 16 : i64}//g' %S/../passes/Inputs/attention.mlir > %t.mlir
// RUN: fakv-compile %t.mlir -o %t --format=isa
// RUN: FileCheck %s --implicit-check-not=cp.async.bulk.tensor < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// CHECK: .entry attention(
// CHECK: cp.async.cg.shared.global
// CHECK: ld.global.b16
// CHECK: st.shared.b16
// CHECK: fence.proxy.async.shared::cta
// CHECK: cp.async.mbarrier.arrive
