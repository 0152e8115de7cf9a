// fakv.dependency_wait on the GPU: griddepcontrol.wait where the kernel
// says, after the loads of what the kernels before it do not write, and
// before those of what they do; fakvgpu-dependent-launch then puts only
// launch_dependents at the kernel's top (a kernel without the op waits
// there: dependent-launch.mlir). fakv.launch_dependents likewise: the
// kernel behind it launches once every program has passed it. The PTX
// passes ptxas for sm_90a.
// REQUIRES: ptxas
// RUN: fakv-compile %s -o %t --format=isa
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// CHECK: .entry early_loads(
// CHECK-NOT: griddepcontrol.wait
// CHECK: griddepcontrol.launch_dependents;
// CHECK-NOT: griddepcontrol.wait
// CHECK: ld.global{{.*}}[[INPUT:%rd[0-9]+]]
// CHECK: griddepcontrol.wait;
// CHECK-NOT: griddepcontrol
// CHECK: ld.global
// CHECK: st.global
func.func @early_loads(%input: !fakv.ptr<f32>, %partial: !fakv.ptr<f32>, %out: !fakv.ptr<f32>)
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %a = fakv.load %input[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<128xf32>
  fakv.dependency_wait
  %b = fakv.load %partial[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<128xf32>
  %sum = arith.addf %a, %b : tensor<128xf32>
  fakv.store %sum, %out[%c0] strides [%s1] : tensor<128xf32>, !fakv.ptr<f32>
  return
}

// CHECK: .entry release_late(
// CHECK: griddepcontrol.wait;
// CHECK-NOT: griddepcontrol
// CHECK: st.global
// CHECK: griddepcontrol.launch_dependents;
// CHECK-NOT: griddepcontrol
// CHECK: ret;
func.func @release_late(%input: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %a = fakv.load %input[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<128xf32>
  fakv.store %a, %out[%c0] strides [%s1] : tensor<128xf32>, !fakv.ptr<f32>
  fakv.launch_dependents
  return
}
