// fakv-to-llvm-cpu guards the divisions it adds itself: a paged_load whose
// page size is known only at run time divides a row by it (page, offset in
// the page) through a divisor made safe (guard-cpu-division's select: a
// page size of 0 divides by 1 and sets @fakv_cpu_fault), not a SIGFPE.
// RUN: fakv-opt %s --fakv-to-llvm-cpu | FileCheck %s
// CHECK-LABEL: llvm.func @runtime_page(
// CHECK: %[[SAFE:.*]] = llvm.select %{{.*}}, %{{.*}}, %arg3 : i1, i32
// CHECK: llvm.sdiv %{{.*}}, %[[SAFE]] {fakv_cpu.divisor_checked} : i32
// CHECK: llvm.srem %{{.*}}, %[[SAFE]] {fakv_cpu.divisor_checked} : i32
func.func @runtime_page(%cache: !fakv.ptr<f32>, %table: !fakv.ptr<i32>, %out: !fakv.ptr<f32>, %ps: i32, %np: i32, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %s16 = arith.constant 16 : i64
  %k = fakv.paged_load %cache[%c0, %c0] table %table valid %n page_size %ps num_pages %np
         strides [%s16, %s4, %s4] : !fakv.ptr<f32> -> tensor<4x4xf32>
  fakv.store %k, %out[%c0, %c0] strides [%s4, %s1] : tensor<4x4xf32>, !fakv.ptr<f32>
  return
}
