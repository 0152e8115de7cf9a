//===- PlanSharedMemory.cpp - fakvgpu-plan-shared-memory --------------------===//
//
// Places every shared-memory buffer of a kernel with layouts: the persistent
// ones (rings, barriers, operand tiles) one after the other, then a scratch
// area per warp role for layout conversions and cross-warp reductions,
// reused by the users of that role.
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

/// Places every shared-memory buffer of `func`: the persistent ones (rings,
/// barriers, operand tiles) one after the other, then a scratch area per role
/// for the layout conversions and cross-warp reductions, reused by each.
void planSharedMemory(func::FuncOp func) {
  int64_t next = 0;
  auto place = [&](Operation *op, int64_t bytes, int64_t align) {
    next = llvm::alignTo(next, align);
    op->setAttr(kSmemOffsetAttr, IntegerAttr::get(IntegerType::get(func.getContext(), 64), next));
    next += bytes;
  };
  SmallVector<std::pair<Operation *, int64_t>> scratchUsers;
  func.walk([&](Operation *op) {
    if (auto bars = dyn_cast<fakvgpu::AllocBarriersOp>(op))
      place(op, 8 * bars.getType().getCount(), 8);
    else if (auto ring = dyn_cast<fakvgpu::AllocRingOp>(op)) {
      RankedTensorType tile = ring.getType().getTile();
      place(op, ring.getType().getStages() * sharedTileBytes(tile, tile.getDimSize(0)), 1024);
    } else if (auto conv = dyn_cast<fakvgpu::ConvertLayoutOp>(op)) {
      auto dst = cast<RankedTensorType>(conv.getType());
      if (isa<fakvgpu::SharedAttr>(dst.getEncoding()))
        place(op, sharedTileBytes(dst, sharedRows(conv.getResult())), 1024);
      else
        scratchUsers.push_back(
            {op, dst.getNumElements() *
                     std::max<int64_t>(1, dst.getElementTypeBitWidth() / 8)});
    } else if (isa<AtomicAddOp>(op)) {
      scratchUsers.push_back({op, 4});       // the old value, for the whole program
    } else if (auto red = dyn_cast<ReduceOp>(op)) {
      LinearLayout src = layoutOf(red.getSrc().getType());
      int64_t k = 1;
      for (auto &w : src.warps)
        if (w[red.getAxis()])
          k *= 2;
      if (k > 1)
        scratchUsers.push_back({op, red.getType().getNumElements() * k * 4});
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
    u.first->setAttr(kSmemOffsetAttr, IntegerAttr::get(IntegerType::get(func.getContext(), 64),
                                                       base[roleOf(u.first).barrier]));
  func->setAttr(kSmemBytesAttr, IntegerAttr::get(IntegerType::get(func.getContext(), 64),
                                                 next + kSmemAlignSlack));
}

struct PlanSharedMemoryPass
    : public fakv::impl::FakvGPUPlanSharedMemoryBase<PlanSharedMemoryPass> {
  void runOnOperation() override {
    if (failed(forEachKernelWithLayouts(getOperation(), planSharedMemory)))
      signalPassFailure();
  }
};
} // namespace
