//===- PlanSharedMemory.cpp - fakvgpu-plan-shared-memory --------------------===//
//
// Places every shared-memory buffer of a kernel with layouts: the persistent
// ones (rings first, barriers, operand tiles) one after the other, then a
// scratch area per warp role for layout conversions and cross-warp
// reductions, reused by the users of that role. What a warp-specialized
// consumer does after its last use of the rings (every copy into them has
// landed and been read: the epilogue, work on tiles loaded from registers)
// reuses the rings' bytes when it fits in them.
// Records offsets (fakvgpu.smem_offset) and the kernel's total
// (fakvgpu.smem_bytes). Test: test/lowering/plan-shared-memory.mlir.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/Passes.h"

#include "dialect/FakvDialect.h"
#include "dialect/FakvGPUDialect.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVGPUPLANSHAREDMEMORY
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

namespace {

/// The top-level op of a warp-specialized consumer's block after which the
/// rings are dead: its last op that uses a ring or a barrier (the consumer
/// has then waited for, and read, every copy the producer issued). Null
/// when the kernel has no consumer role. This rests on what
/// fakv-warp-specialize and the lowering guarantee: the producer loop runs
/// the consumer loop's iterations exactly; ring views are made inside that
/// loop (never carried out of it); a dot waits for its wgmma before it
/// returns; every shared-memory write of a role first synchronises the role.
Operation *lastRingUserIn(Block &block) {
  Operation *last = nullptr;
  for (Operation &top : block) {
    bool uses = false;
    top.walk([&](Operation *op) {
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          uses |= isa<fakvgpu::AllocRingOp, fakvgpu::AllocBarriersOp>(def);
    });
    if (uses)
      last = &top;
  }
  return last;
}

/// (Under an early exit, the consumer's ring users sit in one branch of a
/// result-less scf.if: the last of them in that branch.)
Operation *lastRingUser(func::FuncOp func) {
  Operation *last = nullptr;
  func.walk([&](scf::IfOp role) {
    auto r = role->getAttrOfType<DenseI64ArrayAttr>(kRoleAttr);
    if (!r || r.size() < 1 || r[0] == 0)   // (the producer: thread 0 on)
      return;
    Operation *user = lastRingUserIn(role.getThenRegion().front());
    while (auto guard = dyn_cast_or_null<scf::IfOp>(user)) {
      if (guard->getNumResults() != 0)
        break;
      Operation *inThen = lastRingUserIn(guard.getThenRegion().front());
      Operation *inElse = guard.getElseRegion().empty() ? nullptr
                                                        : lastRingUserIn(guard.getElseRegion().front());
      if (!inThen == !inElse)
        break;
      user = inThen ? inThen : inElse;
    }
    if (user)
      last = user;
  });
  return last;
}

/// Places every shared-memory buffer of `func`: the persistent ones (rings,
/// barriers, operand tiles) one after the other, then a scratch area per role
/// for the layout conversions and cross-warp reductions, reused by each. The
/// buffers of what runs after the consumer's last ring use ("late") go to an
/// area of their own, on the rings' bytes when they fit there.
void planSharedMemory(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  Operation *ringsDead = lastRingUser(func);
  auto late = [&](Operation *op) {
    if (!ringsDead)
      return false;
    Operation *top = ringsDead->getBlock()->findAncestorOpInBlock(*op);
    return top && top != ringsDead && ringsDead->isBeforeInBlock(top);
  };
  // Offsets: persistent buffers from `next`, late ones from `lateNext`
  // (relative to the late area's base, decided at the end).
  int64_t next = 0, lateNext = 0;
  SmallVector<std::pair<Operation *, int64_t>> lateBuffers;   // (op, relative offset)
  auto setOffset = [&](Operation *op, int64_t offset) {
    op->setAttr(kSmemOffsetAttr, IntegerAttr::get(IntegerType::get(ctx, 64), offset));
  };
  auto place = [&](Operation *op, int64_t bytes, int64_t align) {
    if (late(op)) {
      lateNext = llvm::alignTo(lateNext, align);
      lateBuffers.push_back({op, lateNext});
      lateNext += bytes;
      return;
    }
    next = llvm::alignTo(next, align);
    setOffset(op, next);
    next += bytes;
  };
  // The rings first, so that their bytes are one span from offset 0.
  func.walk([&](fakvgpu::AllocRingOp ring) {
    RankedTensorType tile = ring.getType().getTile();
    place(ring, ring.getType().getStages() * sharedTileBytes(tile, tile.getDimSize(0)), 1024);
  });
  int64_t ringBytes = next;
  SmallVector<std::pair<Operation *, int64_t>> scratchUsers, lateScratchUsers;
  auto scratchUser = [&](Operation *op, int64_t bytes) {
    (late(op) ? lateScratchUsers : scratchUsers).push_back({op, bytes});
  };
  func.walk([&](Operation *op) {
    if (auto bars = dyn_cast<fakvgpu::AllocBarriersOp>(op))
      place(op, 8 * bars.getType().getCount(), 8);
    else if (auto conv = dyn_cast<fakvgpu::ConvertLayoutOp>(op)) {
      auto dst = cast<RankedTensorType>(conv.getType());
      if (isa<fakvgpu::SharedAttr>(dst.getEncoding()))
        place(op, sharedTileBytes(dst, sharedRows(conv.getResult())), 1024);
      else
        scratchUser(op, dst.getNumElements() * std::max<int64_t>(1, dst.getElementTypeBitWidth() / 8));
    } else if (isa<AtomicAddOp>(op)) {
      scratchUser(op, 4);                    // the old value, for the whole program
    } else if (auto gather = dyn_cast<ClusterGatherOp>(op)) {
      // An mbarrier, then each tile's gathered copy: written by the other
      // programs of the cluster at any time (never reused, never late).
      int64_t bytes = 16;
      for (auto [k, x] : llvm::enumerate(gather.getXs()))
        bytes += cast<RankedTensorType>(x.getType()).getNumElements() *
                 (gather.isScattered(k) ? 1 : gather.getSize()) * 4;
      next = llvm::alignTo(next, 16);
      setOffset(op, next);
      next += bytes;
    } else if (auto red = dyn_cast<ReduceOp>(op)) {
      LinearLayout src = layoutOf(red.getSrc().getType());
      int64_t k = 1;
      for (auto &w : src.warps)
        if (w[red.getAxis()])
          k *= 2;
      if (k > 1)
        scratchUser(op, red.getType().getNumElements() * k * 4);
    }
  });
  // One scratch area per warp role (the roles run concurrently; the users
  // of one role are ordered by its barriers), each as large as its
  // largest user, in order of first use.
  SmallVector<int64_t> roles;
  llvm::DenseMap<int64_t, int64_t> scratch;
  for (auto &u : scratchUsers) {
    int64_t role = roleOf(u.first).barrier;
    if (!scratch.count(role))
      roles.push_back(role);
    scratch[role] = std::max(scratch[role], u.second);
  }
  llvm::DenseMap<int64_t, int64_t> base;
  next = llvm::alignTo(next, 128);
  for (int64_t role : roles) {
    next = llvm::alignTo(next, 128);
    base[role] = next;
    next += scratch[role];
  }
  for (auto &u : scratchUsers)
    setOffset(u.first, base[roleOf(u.first).barrier]);
  // The late area: its buffers, then one scratch area (one role runs it).
  int64_t lateScratch = 0;
  for (auto &u : lateScratchUsers)
    lateScratch = std::max(lateScratch, u.second);
  int64_t lateScratchAt = llvm::alignTo(lateNext, 128);
  int64_t lateBytes = lateScratchUsers.empty() ? lateNext : lateScratchAt + lateScratch;
  int64_t lateBase = 0;                       // on the rings' bytes when it fits there
  if (lateBytes > ringBytes) {
    lateBase = llvm::alignTo(next, 1024);
    next = lateBase + lateBytes;
  }
  for (auto &b : lateBuffers)
    setOffset(b.first, lateBase + b.second);
  for (auto &u : lateScratchUsers)
    setOffset(u.first, lateBase + lateScratchAt);
  func->setAttr(kSmemBytesAttr, IntegerAttr::get(IntegerType::get(ctx, 64), next + kSmemAlignSlack));
}

/// The most dynamic shared memory a block may use on sm_90 (227 KiB).
constexpr int64_t kMaxSmemBytes = 227 * 1024;

struct PlanSharedMemoryPass
    : public fakv::impl::FakvGPUPlanSharedMemoryBase<PlanSharedMemoryPass> {
  void runOnOperation() override {
    bool tooBig = false;
    if (failed(forEachKernelWithLayouts(getOperation(), [&](func::FuncOp func) {
          planSharedMemory(func);
          int64_t bytes = func->getAttrOfType<IntegerAttr>(kSmemBytesAttr).getInt();
          if (bytes > kMaxSmemBytes) {
            bool rings = func.walk([](fakvgpu::AllocRingOp) { return WalkResult::interrupt(); })
                             .wasInterrupted();
            // (each dot operand copied to shared memory has a buffer of its own for the whole kernel: one in a
            // loop's body serves every iteration, an unrolled one each copy)
            func.emitError() << "needs " << bytes << " bytes of shared memory; a block has at most "
                             << kMaxSmemBytes << " on sm_90 ("
                             << (rings ? "fewer stages or smaller tiles"
                                       : "smaller tiles, or the dots in an fl.range loop rather than unrolled: "
                                         "each dot operand in shared memory keeps a buffer of its own")
                             << ")";
            tooBig = true;
          }
        })) || tooBig)
      signalPassFailure();
  }
};
} // namespace
