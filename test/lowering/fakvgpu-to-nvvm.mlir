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
// RUN:   | FileCheck %s --implicit-check-not=llvm.intr.trap --implicit-check-not='bf16, !llvm.ptr<3>'

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
