// Round trip of every fakv op: parse, print, parse again (custom and generic
// forms), and check the printed form.
// RUN: fakv-opt %s | fakv-opt | FileCheck %s
// RUN: fakv-opt %s --mlir-print-op-generic | fakv-opt | FileCheck %s

// CHECK-LABEL: func.func @divisibility
// CHECK-SAME: %{{.*}}: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %{{.*}}: i64 {fakv.divisibility = 8 : i64}
func.func @divisibility(%p: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %s: i64 {fakv.divisibility = 8 : i64})
    attributes {fakv.kernel} {
  return
}

// CHECK-LABEL: func.func @program_structure
// CHECK: fakv.program_id 0
// CHECK: fakv.program_id 2
// CHECK: fakv.num_programs 1
func.func @program_structure(%out: !fakv.ptr<i32>) attributes {fakv.kernel} {
  %x = fakv.program_id 0
  %z = fakv.program_id 2
  %n = fakv.num_programs 1
  return
}

// CHECK-LABEL: func.func @construction
// CHECK: fakv.arange 0 to 64 : tensor<64xi32>
// CHECK: fakv.arange 16 to 48 : tensor<32xi32>
// CHECK: fakv.splat %{{.*}} : f32 -> tensor<64x1xf32>
// CHECK: fakv.broadcast %{{.*}} : tensor<64x1xf32> -> tensor<64x128xf32>
// CHECK: fakv.expand_dims %{{.*}}, 1 : tensor<64xi32> -> tensor<64x1xi32>
// CHECK: fakv.reshape %{{.*}} : tensor<4x16x128xbf16> -> tensor<64x128xbf16>
// CHECK: fakv.cast %{{.*}} : tensor<64x128xf32> -> tensor<64x128xbf16>
func.func @construction(%f: f32, %t: tensor<4x16x128xbf16>, %p: tensor<64x128xf32>) {
  %a = fakv.arange 0 to 64 : tensor<64xi32>
  %a2 = fakv.arange 16 to 48 : tensor<32xi32>
  %s = fakv.splat %f : f32 -> tensor<64x1xf32>
  %b = fakv.broadcast %s : tensor<64x1xf32> -> tensor<64x128xf32>
  %e = fakv.expand_dims %a, 1 : tensor<64xi32> -> tensor<64x1xi32>
  %r = fakv.reshape %t : tensor<4x16x128xbf16> -> tensor<64x128xbf16>
  %c = fakv.cast %p : tensor<64x128xf32> -> tensor<64x128xbf16>
  return
}

// CHECK-LABEL: func.func @memory
// CHECK: fakv.addptr %{{.*}}, %{{.*}} : !fakv.ptr<i32>
// CHECK: fakv.load_scalar %{{.*}}[%{{.*}}] : !fakv.ptr<i32> -> i32
// CHECK: fakv.atomic_add %{{.*}}[%{{.*}}], %{{.*}} : !fakv.ptr<i32>
// CHECK: fakv.load %{{.*}}[%{{.*}}, %{{.*}}] strides [%{{.*}}, %{{.*}}] : !fakv.ptr<bf16> -> tensor<64x128xbf16>
// CHECK: fakv.load %{{.*}}[%{{.*}}, %{{.*}}] strides [%{{.*}}, %{{.*}}] bounds [%{{.*}}, %{{.*}}] mask %{{.*}} other %{{.*}} : !fakv.ptr<f32> -> tensor<64x128xf32>
// CHECK: fakv.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] strides [%{{.*}}, %{{.*}}] bounds [%{{.*}}, %{{.*}}] : tensor<64x128xf32>, !fakv.ptr<f32>
// CHECK: fakv.store %{{.*}}, %{{.*}}[%{{.*}}] strides [%{{.*}}] mask %{{.*}} : tensor<64xf32>, !fakv.ptr<f32>
// CHECK: fakv.paged_load %{{.*}}[%{{.*}}, %{{.*}}] table %{{.*}} valid %{{.*}} leftpad %{{.*}} page_size %{{.*}} num_pages %{{.*}} strides [%{{.*}}, %{{.*}}, %{{.*}}] : !fakv.ptr<bf16> -> tensor<128x128xbf16>
// CHECK: fakv.paged_load %{{.*}}[%{{.*}}, %{{.*}}] page %{{.*}} valid %{{.*}} channels %{{.*}} page_size %{{.*}} num_pages %{{.*}} strides [%{{.*}}, %{{.*}}, %{{.*}}] report %{{.*}}, %{{.*}} : !fakv.ptr<f16> -> tensor<64x64xf16>
// CHECK: fakv.report %{{.*}}, %{{.*}}, %{{.*}} : !fakv.ptr<i32>
// CHECK: fakv.dependency_wait
// CHECK: fakv.launch_dependents
func.func @memory(%q: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>, %kc: !fakv.ptr<bf16>, %vc: !fakv.ptr<f16>,
                  %bt: !fakv.ptr<i32>, %i: i32, %s: i64, %m: tensor<64x128xi1>, %m1: tensor<64xi1>,
                  %f: f32, %t: tensor<64x128xf32>, %t1: tensor<64xf32>) {
  %row = fakv.addptr %bt, %s : !fakv.ptr<i32>
  %len = fakv.load_scalar %row[%i] : !fakv.ptr<i32> -> i32
  %old = fakv.atomic_add %bt[%i], %len : !fakv.ptr<i32>
  %x = fakv.load %q[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<64x128xbf16>
  %y = fakv.load %o[%i, %i] strides [%s, %s] bounds [%len, %i] mask %m other %f
         : !fakv.ptr<f32> -> tensor<64x128xf32>
  fakv.store %t, %o[%i, %i] strides [%s, %s] bounds [%len, %i] : tensor<64x128xf32>, !fakv.ptr<f32>
  fakv.store %t1, %o[%i] strides [%s] mask %m1 : tensor<64xf32>, !fakv.ptr<f32>
  %k = fakv.paged_load %kc[%i, %i] table %row valid %len leftpad %i page_size %i num_pages %i
         strides [%s, %s, %s] : !fakv.ptr<bf16> -> tensor<128x128xbf16>
  %v = fakv.paged_load %vc[%i, %i] page %i valid %len channels %i page_size %i num_pages %i
         strides [%s, %s, %s] report %bt, %i : !fakv.ptr<f16> -> tensor<64x64xf16>
  %bad = arith.cmpi slt, %len, %i : i32
  fakv.report %bt, %bad, %i : !fakv.ptr<i32>
  fakv.dependency_wait
  fakv.launch_dependents
  return
}

// CHECK-LABEL: func.func @attention
// CHECK: fakv.dot %{{.*}}, %{{.*}}, %{{.*}} {transpose_b} : tensor<64x128xbf16>, tensor<32x128xbf16> -> tensor<64x32xf32>
// CHECK: fakv.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xbf16>, tensor<32x128xbf16> -> tensor<64x128xf32>
// CHECK: fakv.dot %{{.*}}, %{{.*}}, %{{.*}} {transpose_a} : tensor<32x64xf16>, tensor<32x16xf16> -> tensor<64x16xf32>
// CHECK: fakv.online_softmax %{{.*}}, %{{.*}}, %{{.*}} scale %{{.*}} : tensor<64x32xf32>, tensor<64xf32>
// CHECK: fakv.online_softmax %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<64xf32>
// CHECK: fakv.lse_combine %{{.*}}, %{{.*}} : tensor<8x4x128xf32>, tensor<8x4xf32> -> tensor<4x128xf32>, tensor<4xf32>
// CHECK: fakv.reduce max %{{.*}}, 1 : tensor<64x32xf32> -> tensor<64xf32>
// CHECK: fakv.reduce sum %{{.*}}, 0 : tensor<64x32xf32> -> tensor<32xf32>
// CHECK: fakv.reduce min %{{.*}}, 1 : tensor<64x32xf32> -> tensor<64xf32>
// CHECK: fakv.reduce sum %{{.*}}, 1 : tensor<1x128xi32> -> tensor<1xi32>
// CHECK: fakv.item %{{.*}} : tensor<1xi32> -> i32
func.func @attention(%q: tensor<64x128xbf16>, %k: tensor<32x128xbf16>, %v: tensor<32x128xbf16>,
                     %pb: tensor<64x32xbf16>, %a: tensor<32x64xf16>, %b: tensor<32x16xf16>,
                     %acc: tensor<64x32xf32>, %acc2: tensor<64x128xf32>, %acc3: tensor<64x16xf32>,
                     %m: tensor<64xf32>, %l: tensor<64xf32>, %scale: f32,
                     %parts: tensor<8x4x128xf32>, %lses: tensor<8x4xf32>, %hits: tensor<1x128xi32>) {
  %s = fakv.dot %q, %k, %acc {transpose_b} : tensor<64x128xbf16>, tensor<32x128xbf16> -> tensor<64x32xf32>
  %o = fakv.dot %pb, %v, %acc2 : tensor<64x32xbf16>, tensor<32x128xbf16> -> tensor<64x128xf32>
  %t = fakv.dot %a, %b, %acc3 {transpose_a} : tensor<32x64xf16>, tensor<32x16xf16> -> tensor<64x16xf32>
  %m1, %l1, %p, %alpha = fakv.online_softmax %s, %m, %l scale %scale : tensor<64x32xf32>, tensor<64xf32>
  %m2, %l2, %p2, %alpha2 = fakv.online_softmax %s, %m1, %l1 : tensor<64x32xf32>, tensor<64xf32>
  %out, %lse = fakv.lse_combine %parts, %lses : tensor<8x4x128xf32>, tensor<8x4xf32> -> tensor<4x128xf32>, tensor<4xf32>
  %r1 = fakv.reduce max %s, 1 : tensor<64x32xf32> -> tensor<64xf32>
  %r2 = fakv.reduce sum %s, 0 : tensor<64x32xf32> -> tensor<32xf32>
  %r3 = fakv.reduce min %s, 1 : tensor<64x32xf32> -> tensor<64xf32>
  %c = fakv.reduce sum %hits, 1 : tensor<1x128xi32> -> tensor<1xi32>
  %n = fakv.item %c : tensor<1xi32> -> i32
  return
}

// CHECK-LABEL: func.func @score_modifiers
// CHECK: fakv.length_mask %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<32xi32>
// CHECK: fakv.causal_mask %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<64xi32>, tensor<32xi32>
// CHECK: fakv.window_mask %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<64xi32>, tensor<32xi32>
// CHECK: fakv.softcap %{{.*}}, %{{.*}} : tensor<64x32xf32>
// CHECK: fakv.alibi %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<64xi32>, tensor<32xi32>, tensor<64xf32>
func.func @score_modifiers(%s: tensor<64x32xf32>, %rows: tensor<64xi32>, %cols: tensor<32xi32>,
                           %n: i32, %cap: f32, %slopes: tensor<64xf32>) {
  %a = fakv.length_mask %s, %cols, %n : tensor<64x32xf32>, tensor<32xi32>
  %b = fakv.causal_mask %a, %rows, %cols, %n : tensor<64x32xf32>, tensor<64xi32>, tensor<32xi32>
  %c = fakv.window_mask %b, %rows, %cols, %n, %n, %n : tensor<64x32xf32>, tensor<64xi32>, tensor<32xi32>
  %d = fakv.softcap %c, %cap : tensor<64x32xf32>
  %e = fakv.alibi %d, %rows, %cols, %n, %slopes : tensor<64x32xf32>, tensor<64xi32>, tensor<32xi32>, tensor<64xf32>
  return
}

// CHECK-LABEL: func.func @rotary
// CHECK: fakv.rotary %{{.*}}, %{{.*}}, %{{.*}} {interleaved} : tensor<16x128xbf16>, tensor<16x32xf32>
// CHECK: fakv.rotary %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x128xbf16>, tensor<16x64xf32>
func.func @rotary(%x: tensor<16x128xbf16>, %c: tensor<16x32xf32>, %s: tensor<16x32xf32>,
                  %c2: tensor<16x64xf32>, %s2: tensor<16x64xf32>) {
  %a = fakv.rotary %x, %c, %s {interleaved} : tensor<16x128xbf16>, tensor<16x32xf32>
  %b = fakv.rotary %x, %c2, %s2 : tensor<16x128xbf16>, tensor<16x64xf32>
  return
}

// CHECK-LABEL: func.func @kernel
func.func @kernel(%p: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel} {
  return
}

// CHECK-LABEL: func.func @host
// CHECK: fakv.ptr_of %{{.*}} : memref<16xf32> -> !fakv.ptr<f32>
// CHECK: fakv.launch @kernel[%{{.*}}, %{{.*}}, %{{.*}}] (%{{.*}}, %{{.*}}) : (!fakv.ptr<f32>, i32)
func.func @host(%buf: memref<16xf32>, %g: i32) {
  %p = fakv.ptr_of %buf : memref<16xf32> -> !fakv.ptr<f32>
  fakv.launch @kernel[%g, %g, %g](%p, %g) : (!fakv.ptr<f32>, i32)
  return
}

// CHECK-LABEL: func.func @cluster
// CHECK: fakv.cluster_gather(%{{.*}}, %{{.*}}) size 8 : tensor<4x128xf32>, tensor<4xi32> -> tensor<4x128x8xf32>, tensor<4x8xi32>
// CHECK: fakv.cluster_gather(%{{.*}}, %{{.*}}) size 8 {scatter = array<i1: true, false>} : tensor<4x128xf32>, tensor<4xi32> -> tensor<4x16x8xf32>, tensor<4x8xi32>
func.func @cluster(%v: f32, %n: i32) attributes {fakv.kernel} {
  %out = fakv.splat %v : f32 -> tensor<4x128xf32>
  %len = fakv.splat %n : i32 -> tensor<4xi32>
  %outs, %lens = fakv.cluster_gather(%out, %len) size 8 : tensor<4x128xf32>, tensor<4xi32> -> tensor<4x128x8xf32>, tensor<4x8xi32>
  %cols, %lens2 = fakv.cluster_gather(%out, %len) size 8 {scatter = array<i1: true, false>} : tensor<4x128xf32>, tensor<4xi32> -> tensor<4x16x8xf32>, tensor<4x8xi32>
  return
}
