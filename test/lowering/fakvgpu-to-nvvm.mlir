// convert-fakvgpu-to-nvvm: a warp-specialized, pipelined attention kernel
// becomes a gpu.func of NVVM: TMA into rings, mbarrier handshakes, wgmma
// (A from shared memory for Q.Kᵀ, from registers for P.V), butterfly
// shuffles for row reductions, and its launch facts.
// Registers moved from the producer to the consumer: setmaxnreg in each
// role, and the kernel compiled for the average ((24 + 168) / 2 = 96).
// RUN: fakv-opt %S/../passes/Inputs/attention.mlir \
// RUN:   --fakv-to-fakvgpu="producer-registers=24 consumer-registers=168" --fakvgpu-to-llvm \
// RUN:   | FileCheck %s --check-prefix=REGS
// REGS: llvm.func @attention(
// REGS-SAME: nvvm.maxnreg = 96 : i32
// REGS: nvvm.setmaxregister  decrease 24
// REGS: nvvm.setmaxregister  increase 168
// RUN: fakv-opt %S/../passes/Inputs/attention.mlir --fakv-to-fakvgpu --fakvgpu-lower-warp-specialize --fakvgpu-plan-shared-memory --fakvgpu-tma-arguments --fakvgpu-mark-aligned --convert-fakvgpu-to-nvvm --fakvgpu-outline-kernels \
// RUN:   -o %t.mlir
// RUN: FileCheck %s --implicit-check-not=llvm.intr.trap --implicit-check-not='bf16, !llvm.ptr<3>' < %t.mlir
// RUN: FileCheck %s --check-prefix=CLEAR < %t.mlir

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @fakv_kernels
// CHECK: llvm.mlir.global external @fakv_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// The two tensor maps (K and V caches, arguments 1 and 2) come last.
// CHECK: gpu.func @attention(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) kernel
// CHECK-SAME: fakvgpu.num_warps = 8 : i32
// CHECK-SAME: fakvgpu.smem_bytes = 26624 : i64
// CHECK-SAME: fakvgpu.tma_args = array<i32: 1, 2>
// CHECK-SAME: fakvgpu.tma_boxes = array<i32: 32, 32>
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// Barriers are initialised by thread 0 before anything else.
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// Producer warpgroup (threads 0..127): wait for a free slot, announce the
// bytes, one TMA box per 64 channels.
// A slot of K's ring is 32 x 64 bf16 = 4096 bytes, its barrier 8 bytes on;
// the copy announces all 4096 bytes to that barrier.
// CHECK: scf.if
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: %[[SOFF:.*]] = arith.muli %[[S:.*]], %c4096_i32 : i32
// CHECK: %[[DST:.*]] = llvm.getelementptr %{{.*}}[%[[SOFF]]]
// CHECK: %[[BOFF:.*]] = arith.muli %[[S]], %c8_i32 : i32
// CHECK: %[[BAR:.*]] = llvm.getelementptr %{{.*}}[%[[BOFF]]]
// A page outside [0, num_pages) is bad data but no trap: TMA fills its box
// with zeros (fakv.paged_load; reported when the op says where).
// CHECK: arith.cmpi uge
// CHECK: %[[TX:.*]] = arith.constant 4096 : i32
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[BAR]], %[[TX]] : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[BAR]], box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: } {fakvgpu.role = array<i64: 0, 128, 1>}
// Consumer warpgroup (threads 128..255): Q to shared memory (16 bytes a
// store: 8 consecutive columns are one swizzle chunk), then the loop.
// CHECK: scf.if
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 32, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// CHECK: nvvm.mbarrier.arrive
// CHECK: } {fakvgpu.role = array<i64: 128, 128, 2>}

// The swizzled byte offset of (row, col) in a tile of R rows, the layout TMA's
// 128-byte swizzle writes and wgmma's descriptors read: panel * R * 128 +
// row * 128 + ((col / 8 % 8) ^ (row % 8)) * 16 + (col % 8) * 2. Q's store
// (R = 64) first, then clear_rows (K's slot, R = 32), which zeroes 16 bytes
// rows from `first` (the first row past the valid keys) on, 16 bytes a store.
// CLEAR: %[[PANEL:[0-9]+]] = arith.shrui %[[COL:[0-9]+]], %c6_i32 : i32
// CLEAR-NEXT: %[[CHUNK_MASK:c7_i32[_0-9]*]] = arith.constant 7 : i32
// CLEAR-NEXT: %[[THREE:c3_i32[_0-9]*]] = arith.constant 3 : i32
// CLEAR-NEXT: %[[COL8:[0-9]+]] = arith.shrui %[[COL]], %[[THREE]] : i32
// CLEAR-NEXT: %[[CHUNK:[0-9]+]] = arith.andi %[[COL8]], %[[CHUNK_MASK]] : i32
// CLEAR-NEXT: %[[ROW_MASK:c7_i32[_0-9]*]] = arith.constant 7 : i32
// CLEAR-NEXT: %[[PHASE:[0-9]+]] = arith.andi %[[ROW:[0-9]+]], %[[ROW_MASK]] : i32
// CLEAR-NEXT: %[[SWZ:[0-9]+]] = arith.xori %[[CHUNK]], %[[PHASE]] : i32
// CLEAR-NEXT: %[[PANEL_BYTES:c8192_i32[_0-9]*]] = arith.constant 8192 : i32
// CLEAR-NEXT: %[[P:[0-9]+]] = arith.muli %[[PANEL]], %[[PANEL_BYTES]] : i32
// CLEAR-NEXT: %[[ROW_BYTES:c128_i32[_0-9]*]] = arith.constant 128 : i32
// CLEAR-NEXT: %[[R:[0-9]+]] = arith.muli %[[ROW]], %[[ROW_BYTES]] : i32
// CLEAR-NEXT: %[[PR:[0-9]+]] = arith.addi %[[P]], %[[R]] : i32
// CLEAR-NEXT: %[[CHUNK_BYTES:c16_i32[_0-9]*]] = arith.constant 16 : i32
// CLEAR-NEXT: %[[C:[0-9]+]] = arith.muli %[[SWZ]], %[[CHUNK_BYTES]] : i32
// CLEAR-NEXT: %[[PRC:[0-9]+]] = arith.addi %[[PR]], %[[C]] : i32
// CLEAR-NEXT: %[[ELEM_BYTES:c2_i32[_0-9]*]] = arith.constant 2 : i32
// CLEAR-NEXT: %[[ELEM_MASK:c7_i32[_0-9]*]] = arith.constant 7 : i32
// CLEAR-NEXT: %[[E:[0-9]+]] = arith.andi %[[COL]], %[[ELEM_MASK]] : i32
// CLEAR-NEXT: %[[EB:[0-9]+]] = arith.muli %[[E]], %[[ELEM_BYTES]] : i32
// CLEAR-NEXT: %[[OFF:[0-9]+]] = arith.addi %[[PRC]], %[[EB]] : i32
// CLEAR-NEXT: %[[DST:[0-9]+]] = llvm.getelementptr %{{.*}}[%[[OFF]]]
// CLEAR-NEXT: llvm.store %{{.*}}, %[[DST]] {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<3>
// clear_rows: rows from max(first, 0) on, when that is inside the tile.
// CLEAR: %[[FIRST:[0-9]+]] = arith.maxsi %{{.*}}, %c0_i32{{[_0-9]*}} : i32
// CLEAR: arith.cmpi slt, %[[FIRST]], %c32_i32{{[_0-9]*}} : i32
// CLEAR: %cst{{[_0-9]*}} = arith.constant dense<0> : vector<4xi32>
// CLEAR: %[[CROW:[0-9]+]] = arith.divui %{{.*}}, %c8_i32{{[_0-9]*}} : i32
// CLEAR: %[[CCOL:[0-9]+]] = arith.muli %{{.*}}, %c8_i32{{[_0-9]*}} : i32
// CLEAR-NEXT: %[[ROWS:c32_i32[_0-9]*]] = arith.constant 32 : i32
// CLEAR-NEXT: %[[INSIDE:[0-9]+]] = arith.cmpi slt, %[[CROW]], %[[ROWS]] : i32
// CLEAR-NEXT: %[[CLEARED:[0-9]+]] = arith.cmpi sge, %[[CROW]], %[[FIRST]] : i32
// CLEAR-NEXT: %[[BOTH:[0-9]+]] = arith.andi %[[CLEARED]], %[[INSIDE]] : i1
// CLEAR-NEXT: scf.if %[[BOTH]] {
// CLEAR: arith.andi %[[CROW]], %c7_i32{{[_0-9]*}} : i32
// CLEAR: arith.constant 4096 : i32
// CLEAR: llvm.store %cst{{[_0-9]*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
