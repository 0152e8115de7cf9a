//===- WarpSpecialize.cpp - a producer warpgroup for the copies -----------===//
//
// From the single-stream pipelined loop of fakv-pipeline:
//
//   fakvgpu.warp_specialize {
//     producer: for iv in [lb, ub):   slot = i mod S
//                 <the refill block's reads and addresses for iteration iv>
//                 if i >= S: wait empty[slot] (phase (i / S - 1) mod 2)
//                 <the rest of the refill block: its copies>
//   }, {
//     consumer: the rest of the kernel; the loop without its refill, each
//               iteration ending with arrive empty[slot]
//   }
//
// A refill's global reads (a work list's entry) come before its wait: they
// are ordered after the consumer's iteration i - S - 1, not i - S, which
// holds because the refill reads nothing the loop writes.
// The prologue goes (the producer issues every iteration itself). Scalars
// the producer needs stay before the op, visible to both roles. Test:
// test/passes/warp-specialize.mlir.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/PipelineUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVWARPSPECIALIZE
#include "passes/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakvgpu;

namespace {

constexpr int32_t kProducerWarps = 4;

Value cstI32(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}

LogicalResult specialize(func::FuncOp func, scf::ForOp loop, scf::IfOp refill,
                         unsigned producerRegs, unsigned consumerRegs) {
  Location loc = loop.getLoc();
  MLIRContext *ctx = func.getContext();
  auto warpsAttr = func->getAttrOfType<IntegerAttr>(kNumWarpsAttr);
  int32_t consumerWarps = warpsAttr.getInt();
  // (a block holds 32 warps at most: the producer's warpgroup comes on top of the consumer's warps)
  if (consumerWarps + kProducerWarps > 32)
    return loop.emitOpError() << "warp specialization adds " << kProducerWarps << " producer warps to the "
                              << consumerWarps << " of the kernel: at most " << 32 - kProducerWarps
                              << " warps to begin with (fakv-assign-layouts num-warps)";
  // The loop sits at the kernel's top level, or under result-less scf.ifs
  // (an early `return` in the DSL puts the rest of the kernel in an else):
  // `anchor` is the top-level op that holds it, `guards` the ifs, outermost
  // first, and `levels` the block of each that leads to the loop.
  Block &body = func.getBody().front();
  Operation *anchor = loop;
  SmallVector<scf::IfOp> guards;
  SmallVector<Block *> levels;
  while (anchor->getBlock() != &body) {
    auto guard = dyn_cast<scf::IfOp>(anchor->getParentOp());
    if (!guard || guard->getNumResults() != 0)
      return loop.emitOpError()
             << "warp specialization needs the pipelined loop at the kernel's "
                "top level or under result-less scf.ifs";
    guards.insert(guards.begin(), guard);
    levels.insert(levels.begin(), anchor->getBlock());
    anchor = guard;
  }

  // A fakv.dependency_wait stays where every warp passes it before the roles
  // split (below): only at the top level.
  WalkResult nestedWait = func.walk([&](fakv::DependencyWaitOp w) {
    return w->getBlock() == &body ? WalkResult::advance() : WalkResult::interrupt();
  });
  if (nestedWait.wasInterrupted())
    return func.emitOpError()
           << "has a fakv.dependency_wait inside a region; with warp "
              "specialization it must be at the kernel's top level (the "
              "producer warps' copies wait there too)";

  // The ring size and the slot of each consumer iteration (the waits' index).
  WaitOp anyWait;
  loop.getBody()->walk([&](WaitOp w) {
    if (!anyWait)
      anyWait = w;
  });
  if (!anyWait)
    return loop.emitOpError() << "has a refill (an scf.if with '" << kPrefetchAttr
                              << "', fakv-pipeline's copies ahead) but no fakvgpu.wait for its slots";
  // (its slot ends the loop's iteration too, in the consumer's arrive: defined in the loop's body itself, as
  // fakv-pipeline puts the waits; one written inside an scf.if did not dominate that arrive)
  if (anyWait->getBlock() != loop.getBody())
    return anyWait.emitOpError() << "waits inside a region of the pipelined loop; with warp specialization "
                                    "its waits are ops of the loop's body (as fakv-pipeline puts them)";
  int64_t stages = anyWait.getBarriers().getType().getCount();
  Value consumerSlot = anyWait.getIndex();

  // Gathers are now issued by the producer's threads.
  refill.getThenRegion().walk([&](AsyncPagedLoadOp load) {
    if (!load.usesTMA())
      if (auto alloc = load.getSignal().getDefiningOp<AllocBarriersOp>())
        alloc.setArrivals(kProducerWarps * 32);
  });

  // Rings and barriers allocated under the guards move to the top level
  // (every thread initialises them, before the roles split).
  if (!guards.empty())
    for (Operation &op : llvm::make_early_inc_range(*loop->getBlock()))
      if (isa<AllocRingOp, AllocBarriersOp>(op))
        op.moveBefore(anchor);

  OpBuilder b(anchor);
  auto barriersType = BarriersType::get(ctx, stages);
  Value empty = AllocBarriersOp::create(
      b, loc, barriersType, b.getI32IntegerAttr(consumerWarps * 32));

  // What the producer needs from inside the guards (the loop's bounds, the
  // refill's operands, the inner guards' conditions) is cloned under copies
  // of the guards; what it needs from the top level stays before the op.
  llvm::SmallPtrSet<Block *, 4> nested(levels.begin(), levels.end());
  llvm::SmallPtrSet<Operation *, 32> needed;
  SmallVector<Value> roots = {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()};
  refill.getThenRegion().walk([&](Operation *op) { llvm::append_range(roots, op->getOperands()); });
  for (size_t i = 1; i < guards.size(); ++i)
    roots.push_back(guards[i].getCondition());
  while (!roots.empty()) {
    Operation *def = roots.pop_back_val().getDefiningOp();
    if (!def || !nested.contains(def->getBlock()) || !needed.insert(def).second)
      continue;
    // The producer recomputes these: no memory access (it would not see the
    // consumer's writes, nor repeat an atomic or a report safely), no tile.
    if (!isMemoryEffectFree(def) ||
        llvm::any_of(def->getResultTypes(), [](Type t) { return isa<ShapedType>(t); }))
      return def->emitOpError()
             << "is computed under the condition of an early exit and feeds the "
                "pipelined loop's bounds or copies; compute it before the `if`";
    def->walk([&](Operation *inner) { llvm::append_range(roots, inner->getOperands()); });
  }
  IRMapping map;
  Operation *producerRoot = nullptr;
  OpBuilder nb(anchor);
  for (auto [i, guard] : llvm::enumerate(guards)) {
    Block *level = levels[i];
    Value cond = map.lookupOrDefault(guard.getCondition());
    if (level->getParent() == &guard.getElseRegion())
      cond = arith::XOrIOp::create(nb, loc, cond,
                                   arith::ConstantIntOp::create(nb, loc, 1, 1));
    auto copy = scf::IfOp::create(nb, loc, cond, /*withElse=*/false);
    if (!producerRoot)
      producerRoot = copy;
    nb.setInsertionPoint(copy.getThenRegion().front().getTerminator());
    Operation *child = i + 1 < guards.size() ? guards[i + 1].getOperation() : loop.getOperation();
    for (Operation &op : *level) {
      if (&op == child)
        break;
      if (needed.contains(&op))
        nb.clone(op, map);
    }
  }

  // The producer loop, built before the consumer loop for now.
  Value lb = map.lookupOrDefault(loop.getLowerBound()),
        ub = map.lookupOrDefault(loop.getUpperBound()),
        step = map.lookupOrDefault(loop.getStep());
  auto producer = scf::ForOp::create(nb, loc, lb, ub, step);
  if (!producerRoot)
    producerRoot = producer;
  {
    OpBuilder pb = OpBuilder::atBlockBegin(producer.getBody());
    Value iv = producer.getInductionVar();
    Value i = arith::DivSIOp::create(pb, loc,
                                     arith::SubIOp::create(pb, loc, iv, lb), step);
    Value s = cstI32(pb, loc, stages);
    Value slot = arith::RemSIOp::create(pb, loc, i, s);
    Value reuse = arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::sge, i, s);
    auto wait = scf::IfOp::create(pb, loc, reuse, /*withElse=*/false);
    {
      OpBuilder wb = OpBuilder::atBlockBegin(&wait.getThenRegion().front());
      Value use = arith::DivSIOp::create(wb, loc, i, s);
      Value phase = arith::RemSIOp::create(
          wb, loc, arith::SubIOp::create(wb, loc, use, cstI32(wb, loc, 1)),
          cstI32(wb, loc, 2));
      WaitOp::create(wb, loc, empty, slot, phase);
    }
    pb.setInsertionPoint(producer.getBody()->getTerminator());
    auto cond = refill.getCondition().getDefiningOp<arith::CmpIOp>();
    map.map(cond.getLhs(), iv);
    for (Operation &op : refill.getThenRegion().front().without_terminator())
      pb.clone(op, map);
    // The wait goes down to the first op that writes memory (the first copy
    // into the ring) or touches the rings' tiles: what only reads global
    // memory or computes an address (a work list's entry, a length) runs
    // while the slot is still being read. (The refill reads nothing the
    // loop writes: collectLoadSlice admits only load_scalar and pure ops.)
    auto readsGlobalOnly = [](Operation *op) {
      auto iface = dyn_cast<MemoryEffectOpInterface>(op);
      if (!iface || op->getNumRegions() != 0)
        return false;
      SmallVector<MemoryEffects::EffectInstance> effects;
      iface.getEffects(effects);
      return llvm::all_of(effects, [](MemoryEffects::EffectInstance &e) {
        return isa<MemoryEffects::Read>(e.getEffect()) &&
               !isa<fakv::TileMemoryResource>(e.getResource());
      });
    };
    for (Operation &op : *producer.getBody()) {
      if (!wait->isBeforeInBlock(&op) || op.hasTrait<OpTrait::IsTerminator>())
        continue;
      if (readsGlobalOnly(&op))
        continue;
      wait->moveBefore(&op);
      break;
    }
  }

  // The consumer: no refill; release the slot at the end of each iteration.
  refill.erase();
  b.setInsertionPoint(loop.getBody()->getTerminator());
  ArriveOp::create(b, loc, empty, consumerSlot);
  SmallVector<Operation *> prologue;
  func.walk([&](scf::IfOp ifOp) {
    if (ifOp->hasAttr(kPrologueAttr))
      prologue.push_back(ifOp);
  });
  for (Operation *op : prologue)
    op->erase();

  // What the producer needs stays before the warp_specialize op; everything
  // else moves into the consumer. So does a fakv.dependency_wait before the
  // loop: the producer's copies may read what the kernel before wrote (in
  // the consumer alone, the copies went ahead of it); one after the loop
  // goes with the consumer (the copies came before it anyway).
  llvm::SmallPtrSet<Operation *, 32> keep;
  SmallVector<Operation *> worklist = {producerRoot};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!keep.insert(op).second)
      continue;
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (def->getBlock() == &body)
            worklist.push_back(def);
    });
  }
  for (Operation &op : body)
    if (isa<AllocRingOp, AllocBarriersOp>(op) ||
        (isa<fakv::DependencyWaitOp>(op) && op.isBeforeInBlock(anchor)))
      keep.insert(&op);

  b.setInsertionPoint(body.getTerminator());
  auto ws = WarpSpecializeOp::create(
      b, loc, b.getI32IntegerAttr(kProducerWarps),
      b.getI32IntegerAttr(consumerWarps), b.getI32IntegerAttr(producerRegs),
      b.getI32IntegerAttr(consumerRegs));
  Block *producerBlock = new Block();
  ws.getProducer().push_back(producerBlock);
  Block *consumerBlock = new Block();
  ws.getConsumer().push_back(consumerBlock);
  producerRoot->moveBefore(producerBlock, producerBlock->end());
  SmallVector<Operation *> toMove;
  for (Operation &op : body)
    if (&op != ws && !op.hasTrait<OpTrait::IsTerminator>() && !keep.count(&op))
      toMove.push_back(&op);
  for (Operation *op : toMove)
    op->moveBefore(consumerBlock, consumerBlock->end());

  func->setAttr(kNumWarpsAttr,
                b.getI32IntegerAttr(consumerWarps + kProducerWarps));
  return success();
}

struct FakvWarpSpecializePass
    : public fakv::impl::FakvWarpSpecializeBase<FakvWarpSpecializePass> {
  using FakvWarpSpecializeBase::FakvWarpSpecializeBase;
  void runOnOperation() override {
    for (auto [name, regs] : {std::pair<const char *, unsigned>{"producer-registers", producerRegisters},
                              {"consumer-registers", consumerRegisters}})
      if (regs != 0 && (regs < 24 || regs > 256 || regs % 8 != 0)) {
        getOperation().emitError() << name << " must be 0 (none) or a multiple of 8 in [24, 256] "
                                   << "(setmaxnreg), got " << regs;
        return signalPassFailure();
      }
    // (fakvgpu.warp_specialize's verifier: both counts or neither, the producer's no more than the consumer's)
    if ((producerRegisters == 0) != (consumerRegisters == 0) || producerRegisters > consumerRegisters) {
      getOperation().emitError() << "producer-registers and consumer-registers are both 0 (no setmaxnreg) or "
                                 << "both set, the producer's no more than the consumer's (it gives registers "
                                 << "to the consumer), got " << static_cast<unsigned>(producerRegisters) << " and "
                                 << static_cast<unsigned>(consumerRegisters);   // (an Option<unsigned>: streamed as a char)
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!isKernel(func))
        continue;
      SmallVector<scf::IfOp> refills;
      func.walk([&](scf::IfOp ifOp) {
        if (ifOp->hasAttr(kPrefetchAttr))
          refills.push_back(ifOp);
      });
      if (refills.empty())
        continue;
      if (refills.size() > 1) {
        // (at the second loop's line: the first is the one it can take)
        Operation *second = refills[1]->getParentOp() ? refills[1]->getParentOp() : refills[1].getOperation();
        InFlightDiagnostic d = second->emitError()
                               << "warp specialization handles one pipelined loop per kernel, found "
                               << refills.size() << " (@fakv.jit(warp_specialize=False) takes more)";
        d.attachNote(refills[0]->getParentOp() ? refills[0]->getParentOp()->getLoc() : refills[0].getLoc())
            << "the first";
        return signalPassFailure();
      }
      // (the attribute is fakv-pipeline's: its refill, an scf.if on an arith.cmpi in the pipelined loop's
      // body, of a kernel with layouts)
      scf::IfOp refill = refills.front();
      auto loop = dyn_cast_or_null<scf::ForOp>(refill->getParentOp());
      auto cond = refill.getCondition().getDefiningOp<arith::CmpIOp>();
      // The producer replays the refill for its own index: the compare's left side (fakv-pipeline's `iv +
      // step * (stages - 1)`) becomes that index, and the refill may use nothing else of the loop's body (a
      // session 54 fuzz: another body value was left pointing into the consumer's loop, IR that failed the
      // verifier; a constant as the left side was replaced by the index).
      auto ahead = cond ? cond.getLhs().getDefiningOp<arith::AddIOp>() : arith::AddIOp();
      bool fromLoop = loop && ahead && ahead->getBlock() == loop.getBody() &&
                      llvm::is_contained(ahead->getOperands(), loop.getInductionVar());
      if (fromLoop) {
        llvm::SetVector<Value> above;
        getUsedValuesDefinedAbove(refill.getThenRegion(), above);
        fromLoop = llvm::all_of(above, [&](Value v) {
          return v == ahead.getResult() || !loop.getRegion().isAncestor(v.getParentRegion());
        });
      }
      if (!loop || !cond || !fromLoop || !func->getAttrOfType<IntegerAttr>(kNumWarpsAttr) ||
          refill->getNumResults()) {
        refill.emitOpError() << "carries '" << kPrefetchAttr
                             << "' but is not fakv-pipeline's refill (an scf.if of no results on an "
                                "arith.cmpi in the body of the pipelined scf.for, in a kernel with layouts); "
                                "of the loop's values its ops use only the compare's left side, the loop's "
                                "index plus a step";
        return signalPassFailure();
      }
      // (the prologue's ifs are erased from the consumer: ones with results, or holding the loop, are not
      // fakv-pipeline's, and erasing them left uses of nothing or dropped the loop)
      WalkResult bad = func.walk([&](scf::IfOp ifOp) {
        if (ifOp->hasAttr(kPrologueAttr) && (ifOp->getNumResults() || ifOp->isAncestor(loop))) {
          ifOp.emitOpError() << "carries '" << kPrologueAttr
                             << "' but is not fakv-pipeline's prologue copy (an scf.if of no results "
                                "before the pipelined loop)";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (bad.wasInterrupted())
        return signalPassFailure();
      if (failed(specialize(func, loop, refills.front(), producerRegisters,
                            consumerRegisters)))
        return signalPassFailure();
    }
  }
};
} // namespace
