//===- Pipeline.cpp - multi-stage shared-memory rings for K/V loads -------===//
//
// A loop that loads tiles into shared memory with fakv.paged_load becomes:
//
//   rings and `full` barriers            (one ring per load, `stages` slots)
//   prologue: start loads for iterations 0 .. stages-2
//   loop i:   start loads for iteration i + stages - 1 (slot (i-1) mod stages)
//             wait full[i mod stages] (phase (i / stages) mod 2)
//             clear the rows past the valid length; use the ring views
//
// In this single-stream form the math's own program order frees a slot
// before it is refilled (wgmma results are waited for inside fakv.dot). The
// prologue and the refill are scf.if ops marked with kPrologueAttr and
// kPrefetchAttr (PipelineUtils.h).
// fakv-warp-specialize turns it into producer and consumer loops with
// `empty` barriers. Test: test/passes/pipeline.mlir.
//
//===----------------------------------------------------------------------===//

#include "passes/Divisibility.h"
#include "passes/Passes.h"
#include "passes/PipelineUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVPIPELINE
#include "passes/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakvgpu;

LogicalResult mlir::fakv::collectLoadSlice(scf::ForOp loop, Operation *load,
                                           SmallVectorImpl<Operation *> &slice) {
  SmallVector<Value> worklist(load->getOperands());
  llvm::SmallPtrSet<Operation *, 8> seen;
  Block *body = loop.getBody();
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (v == loop.getInductionVar())
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == body)
        return load->emitOpError()
               << "cannot be pipelined: its operands depend on a value the "
                  "loop carries; they may use only the loop index and values "
                  "defined before the loop";
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!loop->isAncestor(def))
      continue;
    if (def->getBlock() != body)
      return load->emitOpError() << "cannot be pipelined: an operand is "
                                    "computed inside a nested region";
    if (!isMemoryEffectFree(def) && !isa<LoadScalarOp>(def))
      return load->emitOpError() << "cannot be pipelined: an operand comes "
                                    "from an op with side effects";
    if (seen.insert(def).second) {
      slice.push_back(def);
      llvm::append_range(worklist, def->getOperands());
    }
  }
  llvm::sort(slice, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return success();
}

AsyncPagedLoadOp mlir::fakv::issueLoad(OpBuilder &b, scf::ForOp loop,
                                       PagedLoadOp load,
                                       ArrayRef<Operation *> slice, Value iv,
                                       Value ring, Value slot, Value full) {
  IRMapping map;
  map.map(loop.getInductionVar(), iv);
  for (Operation *op : slice)
    b.clone(*op, map);
  auto m = [&](Value v) { return v ? map.lookupOrDefault(v) : Value(); };
  auto copy = AsyncPagedLoadOp::create(
      b, load.getLoc(), m(load.getCache()), m(load.getHead()), m(load.getRow()),
      m(load.getTable()), m(load.getPage()), m(load.getValid()),
      m(load.getLeftpad()), m(load.getChannels()), m(load.getPageSize()),
      m(load.getNumPages()),
      m(load.getPageStride()), m(load.getRowStride()), m(load.getHeadStride()),
      m(load.getError()), m(load.getErrorCode()), ring, slot, full);
  if (alignedRows(load))
    copy->setAttr(kAlignedRowsAttr, b.getUnitAttr());
  int64_t elemBytes = load.getType().getElementTypeBitWidth() / 8;
  if (alignedRows(load) && (!load.getChannels() ||
                            (knownDivisor(load.getChannels()) * elemBytes) % 16 == 0) &&
      (load.getType().getDimSize(1) * elemBytes) % 16 == 0)
    copy->setAttr(kWholeChunksAttr, b.getUnitAttr());
  return copy;
}

bool mlir::fakv::alignedRows(PagedLoadOp load) {
  int64_t elemBytes = load.getType().getElementTypeBitWidth() / 8;
  if (knownAlignment(load.getCache()) % 16)
    return false;
  for (Value stride : {load.getPageStride(), load.getRowStride(), load.getHeadStride()})
    if ((knownDivisor(stride) * elemBytes) % 16)
      return false;
  return true;
}

namespace {

struct PipelinedLoad {
  PagedLoadOp load;
  SmallVector<Operation *> slice;
  Value ring, full;
};

Value cstI32(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}

/// The deepest ring: more buffers than this do not fit shared memory with
/// any useful tile (the decode kernel runs 2 or 3).
constexpr unsigned kMaxStages = 8;

LogicalResult pipelineLoop(scf::ForOp loop, unsigned stages,
                           int32_t numThreads) {
  SmallVector<PipelinedLoad> loads;
  for (Operation &op : *loop.getBody())
    if (auto load = dyn_cast<PagedLoadOp>(op))
      if (isa_and_present<SharedAttr>(load.getType().getEncoding())) {
        PipelinedLoad p{load, {}, {}, {}};
        if (failed(collectLoadSlice(loop, load, p.slice)))
          return failure();
        loads.push_back(std::move(p));
      }
  if (loads.empty())
    return success();
  if (!loop.getInductionVar().getType().isInteger(32))
    return loop.emitOpError()
           << "a pipelined loop (its fakv.paged_load tiles copied ahead into shared memory) counts in i32, got "
           << loop.getInductionVar().getType()
           << " (fl.range counts in i64 with a negative or run-time step, or i64 bounds: a positive constant "
              "step over i32 bounds)";

  Location loc = loop.getLoc();
  MLIRContext *ctx = loop.getContext();
  OpBuilder b(loop);
  int64_t s = stages;
  auto barriersType = BarriersType::get(ctx, s);
  for (PipelinedLoad &p : loads) {
    auto ring = RingType::getChecked(   // (16-bit tiles of whole 64-column panels)
        [&] { return p.load.emitOpError() << "cannot be pipelined into shared memory: "; }, ctx, s,
        p.load.getType());
    if (!ring)
      return failure();
    p.ring = AllocRingOp::create(b, loc, ring);
  }

  // A TMA copy is announced by one elected thread; a gather arrives from
  // every issuing thread.
  for (PipelinedLoad &p : loads) {
    int32_t arrivals = alignedRows(p.load) &&
                               AsyncPagedLoadOp::usesTMA(
                                   p.load.getType(), p.load.getCache(),
                                   p.load.getPage(), p.load.getLeftpad(),
                                   p.load.getPageSize(), p.load.getRow())
                           ? 1
                           : numThreads;
    p.full = AllocBarriersOp::create(b, loc, barriersType,
                                     b.getI32IntegerAttr(arrivals));
  }

  // Prologue: iterations 0 .. stages-2.
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound(),
        step = loop.getStep();
  for (int64_t k = 0; k + 1 < s; ++k) {
    Value ivK = arith::AddIOp::create(
        b, loc, lb, arith::MulIOp::create(b, loc, step, cstI32(b, loc, k)));
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, ivK, ub);
    auto ifOp = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    ifOp->setAttr(kPrologueAttr, UnitAttr::get(ctx));
    OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
    for (PipelinedLoad &p : loads)
      issueLoad(tb, loop, p.load, p.slice, ivK, p.ring, cstI32(tb, loc, k),
                p.full);
  }

  // In the loop: the iteration's index, slot and phase; refill; wait.
  b.setInsertionPointToStart(loop.getBody());
  Value iv = loop.getInductionVar();
  Value i = arith::DivSIOp::create(b, loc, arith::SubIOp::create(b, loc, iv, lb),
                                   step);
  Value sVal = cstI32(b, loc, s);
  Value slot = arith::RemSIOp::create(b, loc, i, sVal);
  Value phase = arith::RemSIOp::create(
      b, loc, arith::DivSIOp::create(b, loc, i, sVal), cstI32(b, loc, 2));
  // Refill: start iteration `ahead` = iv + (stages - 1) steps into slot
  // (ahead - lb) / step mod stages. The block computes everything from
  // `ahead` (and values from before the loop), so that fakv-warp-specialize
  // can replay it as the producer's body for any iteration.
  Value ahead = arith::AddIOp::create(
      b, loc, iv, arith::MulIOp::create(b, loc, step, cstI32(b, loc, s - 1)));
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, ahead, ub);
  auto refill = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  refill->setAttr(kPrefetchAttr, UnitAttr::get(ctx));
  {
    OpBuilder tb = OpBuilder::atBlockBegin(&refill.getThenRegion().front());
    Value aheadIdx = arith::DivSIOp::create(
        tb, loc, arith::SubIOp::create(tb, loc, ahead, lb), step);
    Value aheadSlot =
        arith::RemSIOp::create(tb, loc, aheadIdx, cstI32(tb, loc, s));
    for (PipelinedLoad &p : loads)
      issueLoad(tb, loop, p.load, p.slice, ahead, p.ring, aheadSlot, p.full);
  }
  for (PipelinedLoad &p : loads) {
    b.setInsertionPoint(p.load);
    WaitOp::create(b, loc, p.full, slot, phase);
    Value rowsRead = PagedLoadOp::rowsRead(b, loc, p.load.getValid(), p.load.getPage(),
                                           p.load.getLeftpad(), p.load.getPageSize());
    Value first = arith::SubIOp::create(b, loc, rowsRead, p.load.getRow());
    ClearRowsOp::create(b, loc, p.ring, slot, first);
    Value view = RingViewOp::create(b, loc, p.ring, slot);
    p.load.replaceAllUsesWith(view);
    p.load.erase();
  }
  return success();
}

struct FakvPipelinePass
    : public fakv::impl::FakvPipelineBase<FakvPipelinePass> {
  using FakvPipelineBase::FakvPipelineBase;
  void runOnOperation() override {
    if (stages < 1 || stages > kMaxStages) {
      getOperation().emitError() << "stages must be in [1, " << kMaxStages
                                 << "] (each is a K/V buffer in shared memory), got "
                                 << static_cast<unsigned>(stages);
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!isKernel(func))
        continue;
      auto warps = func->getAttrOfType<IntegerAttr>(kNumWarpsAttr);
      if (!warps) {
        func.emitError() << "fakv-pipeline runs after fakv-assign-layouts";
        return signalPassFailure();
      }
      SmallVector<scf::ForOp> loops;
      func.walk([&](scf::ForOp loop) { loops.push_back(loop); });
      for (scf::ForOp loop : loops)
        if (failed(pipelineLoop(loop, stages, warps.getInt() * 32)))
          return signalPassFailure();
    }
  }
};
} // namespace
