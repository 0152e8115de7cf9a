// fakv-assign-layouts: wgmma accumulators, shared-memory operands, layouts
// flowing through softmax math and the loop, conversions where needed.
// RUN: fakv-opt %S/Inputs/attention.mlir --fakv-decompose --canonicalize --fakv-assign-layouts | FileCheck %s
// RUN: %not fakv-opt %S/Inputs/attention.mlir --fakv-assign-layouts=num-warps=6 2>&1 | FileCheck %s --check-prefix=WARPS
// A dot's B loaded into registers is converted to shared memory before the
// dot (it once got the shared layout itself, which a load cannot produce:
// a crash in the conversion); the whole pipeline then compiles.
// RUN: fakv-opt %S/Inputs/dot-register-operands.mlir --fakv-assign-layouts | FileCheck %s --check-prefix=REGB
// RUN: fakv-opt %S/Inputs/dot-register-operands.mlir --fakv-to-cubin=format=isa | FileCheck %s --check-prefix=REGB-PTX

// The layouts, printed as aliases: the wgmma accumulator of a 16 x 32 tile
// (rows from lanes 4..31 and register bit 1, columns from lanes 0..3 and the
// other register bits; the three other warps replicate the 16 rows), its row
// slice, the 16 x 64 accumulator, the blocked layout of the Q load.
// CHECK-DAG: #[[S:linear[0-9]*]] = #fakvgpu.linear<regs = {{\[}}[0, 1], [8, 0], [0, 8], [0, 16]], lanes = {{\[}}[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warps = {{\[}}[0, 0], [0, 0]]>
// CHECK-DAG: #[[ROW:linear[0-9]*]] = #fakvgpu.linear<regs = {{\[}}[8]], lanes = {{\[}}[0], [0], [1], [2], [4]], warps = {{\[}}[0], [0]]>
// CHECK-DAG: #[[O:linear[0-9]*]] = #fakvgpu.linear<regs = {{\[}}[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lanes = {{\[}}[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warps = {{\[}}[0, 0], [0, 0]]>
// CHECK-DAG: #[[Q:linear[0-9]*]] = #fakvgpu.linear<regs = {{\[}}[0, 1], [0, 2], [0, 4]], lanes = {{\[}}[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = {{\[}}[4, 0], [8, 0]]>
// CHECK-DAG: #[[SH:shared[0-9]*]] = #fakvgpu.shared<swizzle = 128>

// CHECK-LABEL: func.func @attention(
// CHECK-SAME: fakvgpu.num_warps = 4 : i32
// CHECK: %[[QT:.*]] = fakv.load {{.*}} -> tensor<16x64xbf16, #[[Q]]>
// CHECK: scf.for {{.*}} -> (tensor<16xf32, #[[ROW]]>, tensor<16xf32, #[[ROW]]>, tensor<16x64xf32, #[[O]]>)
// CHECK: %[[K:.*]] = fakv.paged_load {{.*}} -> tensor<32x64xbf16, #[[SH]]>
// CHECK: %[[V:.*]] = fakv.paged_load {{.*}} -> tensor<32x64xbf16, #[[SH]]>
// CHECK: %[[QS:.*]] = fakvgpu.convert_layout %[[QT]] : tensor<16x64xbf16, #[[Q]]> -> tensor<16x64xbf16, #[[SH]]>
// CHECK: fakv.dot %[[QS]], %[[K]], %{{.*}} {transpose_b} : tensor<16x64xbf16, #[[SH]]>, tensor<32x64xbf16, #[[SH]]> -> tensor<16x32xf32, #[[S]]>
// CHECK: fakv.reduce max %{{.*}}, 1 : tensor<16x32xf32, #[[S]]> -> tensor<16xf32, #[[ROW]]>
// The probabilities stay in registers, in the accumulator layout: P.V's A.
// CHECK: %[[P:.*]] = fakv.cast %{{.*}} : tensor<16x32xf32, #[[S]]> -> tensor<16x32xbf16, #[[S]]>
// CHECK: fakv.dot %[[P]], %[[V]], %{{.*}} : tensor<16x32xbf16, #[[S]]>, tensor<32x64xbf16, #[[SH]]> -> tensor<16x64xf32, #[[O]]>
// CHECK: fakv.store {{.*}} : tensor<16x64xf32, #[[O]]>, !fakv.ptr<f32>

// WARPS: error: num-warps must be 4, 8, 16 or 32 (whole warpgroups, a power of two: a layout's warps are bits of the warp id), got 6

// REGB: %[[K:.*]] = fakv.load %{{.*}} -> tensor<32x128xbf16, #linear{{[0-9]*}}>
// REGB: %[[KS:.*]] = fakvgpu.convert_layout %[[K]] : tensor<32x128xbf16, #linear{{.*}}> -> tensor<32x128xbf16, #shared>
// REGB: fakv.dot %{{.*}}, %[[KS]], %{{.*}} {transpose_b}
// REGB-PTX: wgmma.mma_async
