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
// RUN: FileCheck %s --check-prefix=NUMS < %t.mlir

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

// The numbers of the kernel's first function. Its two barriers 8 bytes
// apart. The wgmma descriptors: 128-byte swizzle (bit 62), stride byte
// offset 1024 (64 << 32, in 16-byte units), leading byte offset 16 for the
// K-major Q and K, 4096 (a panel of V's 32 rows) for the MN-major V. Q.Kᵀ
// advances both by 32 bytes (2 units) per k-slice of 16 channels. P.V
// takes A from registers: k-slice s is P's registers 8s .. 8s+7, packed in
// pairs (even low); B advances 16 rows of V (2048 bytes, 128 units).
// NUMS: scf.if %{{[0-9]+}} {
// NUMS-NEXT: %c1_i32{{(_[0-9]+)?}} = arith.constant 1 : i32
// NUMS-NEXT: %[[OFF0:c0_i32(_[0-9]+)?]] = arith.constant 0 : i32
// NUMS-NEXT: %[[BAR0:[0-9]+]] = llvm.getelementptr %[[BARS:[0-9]+]][%[[OFF0]]]
// NUMS-NEXT: nvvm.mbarrier.init %[[BAR0]]
// NUMS-NEXT: %c1_i32{{(_[0-9]+)?}} = arith.constant 1 : i32
// NUMS-NEXT: %[[OFF1:c8_i32(_[0-9]+)?]] = arith.constant 8 : i32
// NUMS-NEXT: %[[BAR1:[0-9]+]] = llvm.getelementptr %[[BARS]][%[[OFF1]]]
// NUMS-NEXT: nvvm.mbarrier.init %[[BAR1]]
// NUMS: %[[DK:[0-9]+]] = arith.ori %{{[0-9]+}}, %c4611686293305360384_i64{{(_[0-9]+)?}} : i64
// NUMS: %[[DQ:[0-9]+]] = arith.ori %{{[0-9]+}}, %c4611686293305360384_i64{{(_[0-9]+)?}} : i64
// NUMS-NEXT: nvvm.wgmma.mma_async %[[DQ]], %[[DK]],
// NUMS-NEXT: %[[TWO:c2_i64(_[0-9]+)?]] = arith.constant 2 : i64
// NUMS-NEXT: %[[DQ1:[0-9]+]] = arith.addi %[[DQ]], %[[TWO]] : i64
// NUMS-NEXT: %[[TWO_:c2_i64(_[0-9]+)?]] = arith.constant 2 : i64
// NUMS-NEXT: %[[DK1:[0-9]+]] = arith.addi %[[DK]], %[[TWO_]] : i64
// NUMS-NEXT: nvvm.wgmma.mma_async %[[DQ1]], %[[DK1]],
// NUMS: arith.addi %[[DQ]], %c4_i64{{(_[0-9]+)?}} : i64
// NUMS: arith.addi %[[DQ]], %c6_i64{{(_[0-9]+)?}} : i64
// NUMS: %[[DV:[0-9]+]] = arith.ori %{{[0-9]+}}, %c4611686293322072064_i64{{(_[0-9]+)?}} : i64
// NUMS-NEXT: nvvm.wgmma.fence.aligned
// NUMS: %[[E0:[0-9]+]] = vector.extract %[[P:[0-9]+]][0] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[E1:[0-9]+]] = vector.extract %[[P]][1] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[V0:[0-9]+]] = vector.from_elements %[[E0]], %[[E1]] : vector<2xbf16>
// NUMS-NEXT: %[[R0:[0-9]+]] = llvm.bitcast %[[V0]] : vector<2xbf16> to i32
// NUMS-NEXT: %[[E2:[0-9]+]] = vector.extract %[[P]][2] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[E3:[0-9]+]] = vector.extract %[[P]][3] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[V2:[0-9]+]] = vector.from_elements %[[E2]], %[[E3]] : vector<2xbf16>
// NUMS-NEXT: %[[R1:[0-9]+]] = llvm.bitcast %[[V2]] : vector<2xbf16> to i32
// NUMS-NEXT: %[[E4:[0-9]+]] = vector.extract %[[P]][4] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[E5:[0-9]+]] = vector.extract %[[P]][5] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[V4:[0-9]+]] = vector.from_elements %[[E4]], %[[E5]] : vector<2xbf16>
// NUMS-NEXT: %[[R2:[0-9]+]] = llvm.bitcast %[[V4]] : vector<2xbf16> to i32
// NUMS-NEXT: %[[E6:[0-9]+]] = vector.extract %[[P]][6] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[E7:[0-9]+]] = vector.extract %[[P]][7] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[V6:[0-9]+]] = vector.from_elements %[[E6]], %[[E7]] : vector<2xbf16>
// NUMS-NEXT: %[[R3:[0-9]+]] = llvm.bitcast %[[V6]] : vector<2xbf16> to i32
// NUMS: llvm.inline_asm {{.*}}m64n64k16{{.*}} %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[DV]], %c1_i32
// NUMS: %[[E8:[0-9]+]] = vector.extract %[[P]][8] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[E9:[0-9]+]] = vector.extract %[[P]][9] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[V8:[0-9]+]] = vector.from_elements %[[E8]], %[[E9]] : vector<2xbf16>
// NUMS-NEXT: %[[R4:[0-9]+]] = llvm.bitcast %[[V8]] : vector<2xbf16> to i32
// NUMS-NEXT: %[[E10:[0-9]+]] = vector.extract %[[P]][10] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[E11:[0-9]+]] = vector.extract %[[P]][11] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[V10:[0-9]+]] = vector.from_elements %[[E10]], %[[E11]] : vector<2xbf16>
// NUMS-NEXT: %[[R5:[0-9]+]] = llvm.bitcast %[[V10]] : vector<2xbf16> to i32
// NUMS-NEXT: %[[E12:[0-9]+]] = vector.extract %[[P]][12] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[E13:[0-9]+]] = vector.extract %[[P]][13] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[V12:[0-9]+]] = vector.from_elements %[[E12]], %[[E13]] : vector<2xbf16>
// NUMS-NEXT: %[[R6:[0-9]+]] = llvm.bitcast %[[V12]] : vector<2xbf16> to i32
// NUMS-NEXT: %[[E14:[0-9]+]] = vector.extract %[[P]][14] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[E15:[0-9]+]] = vector.extract %[[P]][15] : bf16 from vector<16xbf16>
// NUMS-NEXT: %[[V14:[0-9]+]] = vector.from_elements %[[E14]], %[[E15]] : vector<2xbf16>
// NUMS-NEXT: %[[R7:[0-9]+]] = llvm.bitcast %[[V14]] : vector<2xbf16> to i32
// NUMS-NEXT: %[[STEP:c128_i64(_[0-9]+)?]] = arith.constant 128 : i64
// NUMS-NEXT: %[[DV1:[0-9]+]] = arith.addi %[[DV]], %[[STEP]] : i64
// NUMS-NEXT: %c1_i32{{(_[0-9]+)?}} = arith.constant 1 : i32
// NUMS-NEXT: llvm.inline_asm {{.*}}m64n64k16{{.*}} %[[R4]], %[[R5]], %[[R6]], %[[R7]], %[[DV1]], %c1_i32
