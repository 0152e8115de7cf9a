//===- AssignLayouts.cpp - where every tile lives -------------------------===//
//
// Anchors first (wgmma accumulators, shared-memory dot operands), then the
// layouts flow along the rules of `propagate` until nothing changes; a tile
// still without a layout gets a row-major blocked one and the flow resumes.
// Finally each op's operands are checked against what the op needs, with a
// fakvgpu.convert_layout where they differ, and the types are rewritten.
// Test: test/passes/assign-layouts.mlir.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/LinearLayout.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <set>

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVASSIGNLAYOUTS
#include "passes/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using fakvgpu::LinearAttr;
using fakvgpu::LinearLayout;
using fakvgpu::SharedAttr;
using fakvgpu::kStoredRowsAttr;

namespace {
using fakvgpu::kMaxTileElements;

bool isTile(Value v) { return isa<RankedTensorType>(v.getType()); }
RankedTensorType tileType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The dialects a kernel's ops may come from on the GPU path (what the DSL
/// emits, and what fakv's passes make of it).
bool gpuDialect(Operation *op) {
  StringRef ns = op->getName().getDialectNamespace();
  return ns == "fakv" || ns == "arith" || ns == "math" || ns == "scf" || ns == "func";
}

/// An op whose tile operands and results all share one layout.
bool isElementwise(Operation *op) {
  if (isa<CastOp>(op))
    return true;
  if (op->hasTrait<OpTrait::Elementwise>())
    return true;
  return false;
}

class LayoutAssigner {
public:
  LayoutAssigner(func::FuncOp func, unsigned numWarps)
      : func(func), numWarps(numWarps), ctx(func.getContext()) {}

  LogicalResult run();

private:
  func::FuncOp func;
  unsigned numWarps;
  MLIRContext *ctx;
  llvm::MapVector<Value, Attribute> layout;
  /// The values given a layout since the flow last ran (propagateAll takes
  /// the ops that read them from here).
  SmallVector<Value> fresh;
  /// The kernel's ops in func.walk's order (the flow's sweep order) and their
  /// places in it.
  std::vector<Operation *> order;
  DenseMap<Operation *, unsigned> place;

  Attribute shared() { return SharedAttr::get(ctx, 128); }
  Attribute linear(const LinearLayout &l) { return l.toAttr(ctx); }
  /// The layout of a dot's result: wgmma's accumulator, or with the kernel's
  /// `fakv.swap_ab` and fewer than 64 rows the swapped form's (both
  /// operands then from shared memory).
  Attribute accumulator(DotOp dot) {
    ArrayRef<int64_t> shape = dot.getType().getShape();
    if (swapDots)
      return linear(LinearLayout::wgmmaSwappedAccumulator(shape, numWarps));
    return linear(LinearLayout::wgmmaAccumulator(shape, numWarps));
  }
  /// With the kernel's `fakv.swap_ab`: all of its dots swap, or none (a
  /// swapped P.V after an unswapped Q.K^T, say, would carry the running max
  /// and sum in two layouts); each with fewer than 64 rows, a multiple of 64
  /// columns, and an A that can be written to shared memory (16-bit, a
  /// multiple of 64 columns). Decided by run().
  bool swapDots = false;
  bool allDotsSwap() {
    bool all = func->hasAttr(FakvDialect::getSwapABAttrName());
    func.walk([&](DotOp d) {
      ArrayRef<int64_t> shape = d.getType().getShape();
      RankedTensorType a = d.getA().getType();
      all &= shape[0] < 64 && shape[1] % 64 == 0 && a.getDimSize(1) % 64 == 0 &&
             a.getElementTypeBitWidth() == 16;
    });
    return all;
  }

  /// Gives `v` the layout `a` unless it has one already.
  void assign(Value v, Attribute a) {
    if (!v || !isTile(v) || !a || layout.count(v))
      return;
    layout[v] = a;
    fresh.push_back(v);
  }
  Attribute get(Value v) { return layout.lookup(v); }
  /// Values that must share one layout (a loop's or branch's init, block
  /// argument, result and yields): the first one decided, for all.
  void assignTogether(ArrayRef<Value> group) {
    Attribute a;
    for (Value v : group)
      if (!a)
        a = get(v);
    for (Value v : group)
      assign(v, a);
  }

  LogicalResult checkShapes();
  LogicalResult anchor();
  void propagate(Operation *op);
  void propagateAll();
  LogicalResult materialize();
  /// The layout op `user` needs operand `operand` in, given the layouts
  /// decided for its results (null when it takes any).
  Attribute required(Operation *user, OpOperand &operand);
};

LogicalResult LayoutAssigner::checkShapes() {
  // (a kernel's arguments too: an unused f80 one reached NVPTX's printer, which trapped)
  for (BlockArgument arg : func.getArguments())
    if (!fakv::isLoweredElementType(getElementTypeOrSelf(arg.getType())))
      return func.emitOpError() << "the GPU lowering holds integers of up to 64 bits and f16, bf16, f32 or "
                                   "f64 values, got argument #"
                                << arg.getArgNumber() << " of " << arg.getType();
  // (pre-order: an op of another dialect is named before the ops it holds)
  WalkResult r = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!gpuDialect(op)) {
      op->emitOpError() << "is not supported by the GPU lowering (a kernel's ops "
                           "are fakv, arith, math, scf and func ones)";
      return WalkResult::interrupt();
    }
    // (host functions are dropped: a kernel calls none; the DSL inlines its
    // helpers. Refused here: a call's tile result got a layout its callee's
    // type did not.)
    if (auto call = dyn_cast<func::CallOp>(op)) {
      call.emitOpError() << "calls @" << call.getCallee()
                         << ": a kernel calls no function on the GPU (inline it)";
      return WalkResult::interrupt();
    }
    // (nor takes one's address: the function it names was erased, or outlined beside it, and the reference
    // failed the verifier after the lowering)
    if (auto ref = dyn_cast<func::ConstantOp>(op)) {
      ref.emitOpError() << "refers to @" << ref.getValue()
                        << ": a kernel calls no function on the GPU (inline it)";
      return WalkResult::interrupt();
    }
    for (Value v : op->getResults()) {
      Type et = getElementTypeOrSelf(v.getType());
      if (isTile(v) && !et.isIntOrFloat()) {
        op->emitOpError() << "the GPU lowering holds tiles of integers or floats, got "
                          << v.getType();
        return WalkResult::interrupt();
      }
      if (!fakv::isLoweredElementType(et)) {
        op->emitOpError() << "the GPU lowering holds integers of up to 64 bits "
                             "and f16, bf16, f32 or f64 values, got "
                          << v.getType();
        return WalkResult::interrupt();
      }
      if (isTile(v) && tileType(v).getRank() == 0) {
        op->emitOpError() << "the GPU lowering has no 0-d tiles (a reduction of "
                             "every dimension); keep a dimension of 1, e.g. "
                             "fl.sum(x[None, :], 1)";
        return WalkResult::interrupt();
      }
      if (isTile(v) && !fakvgpu::isPowerOfTwoShape(tileType(v).getShape())) {
        op->emitOpError() << "the GPU lowering needs tiles whose dimensions "
                             "are powers of two, got "
                          << v.getType();
        return WalkResult::interrupt();
      }
      // Register tiles are unrolled per thread: past this the kernel
      // spills and the compile takes minutes (4096x4096: ~30 s).
      // (counted without overflow: 2^32 x 2^32 wrapped to 0 and passed)
      if (isTile(v) &&
          elementsUpTo(tileType(v), kMaxTileElements) > kMaxTileElements) {
        op->emitOpError() << "the GPU lowering holds a tile in registers, at most "
                          << kMaxTileElements << " elements ("
                          << kMaxTileElements / 128
                          << " per thread of a warpgroup), got " << v.getType();
        return WalkResult::interrupt();
      }
    }
    if (auto dot = dyn_cast<DotOp>(op)) {
      Type et = dot.getA().getType().getElementType();
      if (!et.isBF16() && !et.isF16()) {
        dot.emitOpError() << "the GPU lowering (wgmma) needs f16 or bf16 "
                             "operands, got "
                          << et;
        return WalkResult::interrupt();
      }
      if (dot.getTransposeA()) {
        dot.emitOpError() << "the GPU lowering takes no transposed A (one warpgroup's wgmma)";
        return WalkResult::interrupt();
      }
      if (dot.getType().getDimSize(0) > 64) {
        dot.emitOpError() << "the GPU lowering handles M <= 64 rows (one warpgroup's wgmma), got M = "
                          << dot.getType().getDimSize(0);
        return WalkResult::interrupt();
      }
    }
    if (isa<RotaryOp>(op)) {
      op->emitOpError() << "is not supported by the GPU lowering yet";
      return WalkResult::interrupt();
    }
    // (composites become arith and fakv parts first: a layout given to one left its results' types apart)
    if (fakv::isDecomposable(op)) {
      op->emitOpError() << "is decomposed before layouts are assigned: run fakv-decompose before "
                           "fakv-assign-layouts";
      return WalkResult::interrupt();
    }
    // Layouts flow through scf.for's and scf.if's values only (propagate, required): another region op
    // carrying a tile (scf.while, index_switch, execute_region) left its values' layouts unmatched.
    if (op->getName().getDialectNamespace() == "scf" &&
        !isa<scf::ForOp, scf::IfOp, scf::YieldOp>(op) &&
        (llvm::any_of(op->getOperands(), isTile) || llvm::any_of(op->getResults(), isTile))) {
      op->emitOpError() << "carries tiles, which the GPU lowering does through scf.for and scf.if only";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

LogicalResult LayoutAssigner::anchor() {
  func.walk([&](DotOp dot) {
    Attribute acc = accumulator(dot);
    assign(dot.getResult(), acc);
    assign(dot.getAcc(), acc);
  });
  // A paged load feeding a dot loads straight into shared memory; another B
  // operand (a tile in registers: a fakv.load, math) is converted to shared
  // memory before the dot (materialize: `required`). (Giving every B the
  // shared layout made a fakv.load produce shared memory, which its
  // lowering cannot: a crash.)
  // Only dots read such a tile (the lowering has no shared-to-register
  // copy): any other use is refused here (a store of it crashed the
  // lowering; math on it, or a loop carrying it, failed later, obscurely).
  WalkResult r = func.walk([&](PagedLoadOp load) {
    if (!llvm::any_of(load->getUses(), [](OpOperand &use) {
          return isa<DotOp>(use.getOwner()) && use.getOperandNumber() == 1;
        }))
      return WalkResult::advance();
    assign(load.getResult(), shared());
    for (OpOperand &use : load->getUses())
      if (!isa<DotOp>(use.getOwner()) || use.getOperandNumber() > 1) {
        InFlightDiagnostic d = load.emitOpError()
            << "feeds a dot's B operand, so it is loaded into shared memory, "
               "where only dots read it; its use by '"
            << use.getOwner()->getName() << "' is not supported on the GPU "
            << "(load the tile a second time for it)";
        d.attachNote(use.getOwner()->getLoc()) << "used here";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

void LayoutAssigner::propagate(Operation *op) {
  auto linearOf = [&](Value v) -> std::optional<LinearLayout> {
    if (auto a = dyn_cast_if_present<LinearAttr>(get(v)))
      return LinearLayout::fromAttr(a);
    return std::nullopt;
  };

  if (isElementwise(op)) {
    Attribute common;
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (isTile(v) && isa_and_present<LinearAttr>(get(v)) && !common)
        common = get(v);
    if (!common)
      return;
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      assign(v, common);
    return;
  }
  if (auto b = dyn_cast<BroadcastOp>(op)) {
    if (auto l = linearOf(b.getResult()))
      assign(b.getSrc(), linear(l->restricted(b.getSrc().getType().getShape())));
    return;
  }
  if (auto e = dyn_cast<ExpandDimsOp>(op)) {
    if (auto l = linearOf(e.getResult()))
      assign(e.getSrc(), linear(l->sliced(e.getAxis())));
    if (auto l = linearOf(e.getSrc()))
      assign(e.getResult(), linear(l->expanded(e.getAxis())));
    return;
  }
  if (auto r = dyn_cast<ReshapeOp>(op)) {
    ArrayRef<int64_t> from = r.getSrc().getType().getShape();
    ArrayRef<int64_t> to = r.getType().getShape();
    if (auto l = linearOf(r.getSrc()))
      assign(r.getResult(), linear(l->reshaped(from, to)));
    if (auto l = linearOf(r.getResult()))
      assign(r.getSrc(), linear(l->reshaped(to, from)));
    return;
  }
  if (auto red = dyn_cast<ReduceOp>(op)) {
    if (auto l = linearOf(red.getSrc()))
      assign(red.getResult(), linear(l->sliced(red.getAxis())));
    return;
  }
  // A load's or store's mask takes the layout of its data, and back.
  auto tieMask = [&](Value mask, Value data) {
    if (!mask)
      return;
    assign(mask, get(data));
    if (auto l = linearOf(mask))
      assign(data, linear(*l));
  };
  if (auto load = dyn_cast<LoadOp>(op))
    return tieMask(load.getMask(), load.getResult());
  if (auto store = dyn_cast<StoreOp>(op))
    return tieMask(store.getMask(), store.getValue());
  if (auto forOp = dyn_cast<scf::ForOp>(op)) {
    auto yield = cast<scf::YieldOp>(forOp.getBody()->getTerminator());
    for (unsigned i = 0; i < forOp.getNumResults(); ++i) {
      assignTogether({forOp.getInitArgs()[i], forOp.getRegionIterArgs()[i],
                      forOp.getResult(i), yield.getOperand(i)});
    }
    return;
  }
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    if (ifOp.getNumResults() == 0)
      return;
    auto thenYield = ifOp.thenYield(), elseYield = ifOp.elseYield();
    for (unsigned i = 0; i < ifOp.getNumResults(); ++i) {
      assignTogether({ifOp.getResult(i), thenYield.getOperand(i), elseYield.getOperand(i)});
    }
  }
}

/// The ops whose `propagate` reads v's layout: its defining op (a loop's
/// for a loop-carried block argument), its users, and a yield's loop or
/// branch.
static void readersOf(Value v, function_ref<void(Operation *)> f) {
  if (Operation *def = v.getDefiningOp())
    f(def);
  else if (Operation *owner = cast<BlockArgument>(v).getOwner()->getParentOp())
    f(owner);
  for (Operation *user : v.getUsers()) {
    f(user);
    if (isa<scf::YieldOp>(user))
      f(user->getParentOp());
  }
}

/// Sweeps the kernel in func.walk's order until a sweep gives no value a
/// layout, as a loop of whole sweeps would, visiting only the ops that may
/// act: those reading a value given a layout since their last visit (the
/// others' `propagate` would find what it found then). An op after the one
/// being visited is visited later in the same sweep, one before it (or the
/// op itself) in the next: the same visits in the same order, so the same
/// layouts (the first decided wins), without a sweep over every op per step
/// along a chain (a review's 16,000 ops took 16 s).
void LayoutAssigner::propagateAll() {
  if (order.empty())
    func.walk([&](Operation *op) {
      place[op] = order.size();
      order.push_back(op);
    });
  auto mark = [&](std::set<unsigned> &now, std::set<unsigned> *next, unsigned at) {
    for (Value v : fresh)
      readersOf(v, [&](Operation *op) {
        unsigned j = place.lookup(op);               // (every op of the kernel has its place, the kernel too)
        (!next || j > at ? now : *next).insert(j);
      });
    fresh.clear();
  };
  // (the first sweep's ops: those reading a value given a layout since the last flow, by anchor() or an
  // unconstrained tile's blocked layout; no other op's `propagate` finds anything new)
  std::set<unsigned> now, next;
  mark(now, nullptr, 0);
  while (!now.empty()) {
    while (!now.empty()) {
      unsigned i = *now.begin();
      now.erase(now.begin());
      propagate(order[i]);
      mark(now, &next, i);
    }
    std::swap(now, next);
  }
}

Attribute LayoutAssigner::required(Operation *user, OpOperand &operand) {
  Value v = operand.get();
  if (!isTile(v))
    return {};
  unsigned idx = operand.getOperandNumber();
  auto resultLinear = [&](Value r) -> std::optional<LinearLayout> {
    if (auto a = dyn_cast_if_present<LinearAttr>(get(r)))
      return LinearLayout::fromAttr(a);
    return std::nullopt;
  };
  if (isElementwise(user)) {
    for (Value r : user->getResults())
      if (isTile(r))
        return get(r);
    return {};
  }
  if (auto dot = dyn_cast<DotOp>(user)) {
    if (idx == 1)
      return shared();
    if (idx == 2)
      return get(dot.getResult());
    // A: straight from registers when already in the accumulator layout
    // (P in P.V), else from shared memory (always for a swapped dot: there
    // A is wgmma's B).
    if (swapDots)
      return shared();
    Attribute wgmma = linear(LinearLayout::wgmmaAccumulator(
        dot.getA().getType().getShape(), numWarps));
    return get(v) == wgmma ? wgmma : shared();
  }
  if (auto b = dyn_cast<BroadcastOp>(user))
    if (auto l = resultLinear(b.getResult()))
      return linear(l->restricted(b.getSrc().getType().getShape()));
  if (auto e = dyn_cast<ExpandDimsOp>(user))
    if (auto l = resultLinear(e.getResult()))
      return linear(l->sliced(e.getAxis()));
  if (auto r = dyn_cast<ReshapeOp>(user))
    if (auto l = resultLinear(r.getResult()))
      return linear(l->reshaped(r.getType().getShape(),
                                r.getSrc().getType().getShape()));
  if (auto load = dyn_cast<LoadOp>(user))
    return get(load.getResult());
  if (auto store = dyn_cast<StoreOp>(user))
    if (idx != 0)
      return get(store.getValue());
  if (auto forOp = dyn_cast<scf::ForOp>(user)) {
    if (idx >= 3)
      return get(forOp.getRegionIterArgs()[idx - 3]);
  }
  if (auto yield = dyn_cast<scf::YieldOp>(user)) {
    Operation *parent = yield->getParentOp();
    if (auto forOp = dyn_cast<scf::ForOp>(parent))
      return get(forOp.getRegionIterArgs()[idx]);
    if (auto ifOp = dyn_cast<scf::IfOp>(parent))
      return get(ifOp.getResult(idx));
  }
  return {};
}

LogicalResult LayoutAssigner::materialize() {
  // Operands in the wrong layout get a conversion right before their use.
  SmallVector<std::pair<OpOperand *, Attribute>> fixes;
  func.walk([&](Operation *op) {
    for (OpOperand &operand : op->getOpOperands()) {
      Attribute want = required(op, operand);
      if (want && want != get(operand.get()))
        fixes.push_back({&operand, want});
    }
  });
  // A reduction's result is its source's layout sliced; if the result was
  // given another layout by its users, convert after the reduction.
  SmallVector<std::pair<ReduceOp, Attribute>> reduceFixes;
  func.walk([&](ReduceOp red) {
    if (auto src = dyn_cast_if_present<LinearAttr>(get(red.getSrc()))) {
      Attribute natural =
          linear(LinearLayout::fromAttr(src).sliced(red.getAxis()));
      if (get(red.getResult()) != natural)
        reduceFixes.push_back({red, natural});
    }
  });

  // A tile bound for shared memory (a dot's operand) must fit its layout: 16-bit, whole 64-column panels (a
  // dot over a head dim of 32, say, is refused here, not as a ring the later passes cannot build).
  auto fitsShared = [&](Value v, Operation *at) {
    auto t = tileType(v);
    return cast<SharedAttr>(shared()).verifyEncoding(t.getShape(), t.getElementType(), [&] {
      return at->emitOpError() << "needs its " << t << " in shared memory, as a dot's operand: ";
    });
  };
  for (auto &[v, a] : layout)
    if (isa<SharedAttr>(a) &&
        failed(fitsShared(v, v.getDefiningOp() ? v.getDefiningOp() : v.getParentBlock()->getParentOp())))
      return failure();
  for (auto &[operand, want] : fixes)
    if (isa<SharedAttr>(want) && failed(fitsShared(operand->get(), operand->getOwner())))
      return failure();

  auto withEncoding = [](Value v, Attribute enc) {
    auto t = tileType(v);
    return RankedTensorType::get(t.getShape(), t.getElementType(), enc);
  };
  // Rewrite all types (a tile constant's value carries its type too).
  for (auto &[v, a] : layout) {
    v.setType(withEncoding(v, a));
    if (auto cst = v.getDefiningOp<arith::ConstantOp>())
      if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue()))
        cst.setValueAttr(dense.isSplat()
                             ? DenseElementsAttr::get(
                                   cast<ShapedType>(v.getType()),
                                   dense.getSplatValue<Attribute>())
                             : DenseElementsAttr::getFromRawBuffer(
                                   cast<ShapedType>(v.getType()),
                                   dense.getRawData()));
  }

  OpBuilder b(ctx);
  for (auto [operand, want] : fixes) {
    Value v = operand->get();
    b.setInsertionPoint(operand->getOwner());
    auto conv = fakvgpu::ConvertLayoutOp::create(
        b, operand->getOwner()->getLoc(), withEncoding(v, want), v);
    // A swapped dot's A is wgmma's B of N = M' rows: stored with those
    // (codegen::sharedRows), not replicated to 64.
    if (swapDots && isa<DotOp>(operand->getOwner()) && operand->getOperandNumber() == 0)
      conv->setAttr(kStoredRowsAttr,
                    b.getI64IntegerAttr(LinearLayout::wgmmaSwappedN(tileType(v).getDimSize(0))));
    operand->set(conv);
  }
  for (auto [red, natural] : reduceFixes) {
    Type wanted = red.getType();
    b.setInsertionPointAfter(red);
    red.getResult().setType(withEncoding(red.getResult(), natural));
    auto conv = fakvgpu::ConvertLayoutOp::create(b, red.getLoc(), wanted,
                                                 red.getResult());
    red.getResult().replaceAllUsesExcept(conv, conv);
  }
  return success();
}

/// A tile constant with several users (CSE merges the kernel's zeros and
/// -inf fills: a loop's initial values with another's) becomes one constant
/// per user, so that each takes the layout its user needs instead of one
/// use's layout and a conversion for the others.
void splitSharedConstants(func::FuncOp func) {
  SmallVector<arith::ConstantOp> shared;
  func.walk([&](arith::ConstantOp c) {
    if (isa<RankedTensorType>(c.getType()) && !c->hasOneUse() && !c->use_empty())
      shared.push_back(c);
  });
  for (arith::ConstantOp c : shared) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : c->getUses())
      uses.push_back(&use);
    OpBuilder b(c);
    b.setInsertionPointAfter(c);
    for (OpOperand *use : ArrayRef(uses).drop_front())
      use->set(b.clone(*c)->getResult(0));
  }
}

LogicalResult LayoutAssigner::run() {
  if (failed(checkShapes()))
    return failure();
  splitSharedConstants(func);
  swapDots = allDotsSwap();
  // An unswapped dot is one wgmma chain of N columns (a swapped one runs
  // them 64 at a time): refused here, with the shapes, not in the lowering.
  if (!swapDots) {
    WalkResult wide = func.walk([&](DotOp dot) {
      int64_t n = dot.getType().getDimSize(1);
      if (n <= 256)
        return WalkResult::advance();
      dot.emitOpError() << "the GPU lowering (wgmma) handles N <= 256 columns, got "
                        << dot.getType() << " (wider: several dots over 256-column parts of B, or "
                        << "@fakv.jit(swap_ab=True) with fewer than 64 rows)";
      return WalkResult::interrupt();
    });
    if (wide.wasInterrupted())
      return failure();
  }
  if (failed(anchor()))
    return failure();
  propagateAll();
  // Tiles nobody constrained: blocked (16-byte vectors along the last
  // dimension), the largest first (program order among equals), so that
  // smaller tiles inherit from it rather than a big one being converted.
  // (the tiles in func.walk's order, the largest first, stably: the first unlaid one is the largest, the first
  // met among equals, as a walk per tile found it; a review's 8,000 unrelated tiles took 6.5 s so)
  SmallVector<Value> tiles;
  func.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (isTile(v))
        tiles.push_back(v);
    for (Region &r : op->getRegions())
      for (Block &blk : r)
        for (Value arg : blk.getArguments())
          if (isTile(arg))
            tiles.push_back(arg);
  });
  llvm::stable_sort(tiles, [](Value a, Value b) {
    return tileType(a).getNumElements() > tileType(b).getNumElements();
  });
  for (Value pending : tiles) {
    if (layout.count(pending))
      continue;
    RankedTensorType t = tileType(pending);
    unsigned bytes = std::max<unsigned>(1, t.getElementTypeBitWidth() / 8);
    assign(pending, linear(LinearLayout::blocked(t.getShape(), numWarps,
                                                 std::max(1u, 16 / bytes))));
    propagateAll();
  }
  if (failed(materialize()))
    return failure();
  func->setAttr(fakvgpu::kNumWarpsAttr,
                IntegerAttr::get(IntegerType::get(ctx, 32), numWarps));
  return success();
}

struct FakvAssignLayoutsPass
    : public fakv::impl::FakvAssignLayoutsBase<FakvAssignLayoutsPass> {
  using FakvAssignLayoutsBase::FakvAssignLayoutsBase;
  void runOnOperation() override {
    // (a power of two: a layout's warp bases are bits of the warp id; 12 or 28 warps got layouts over 16 or
    // 32, whose last warps' rows nobody computed)
    if (numWarps < 4 || numWarps > 32 || !llvm::isPowerOf2_32(numWarps)) {
      getOperation().emitError() << "num-warps must be 4, 8, 16 or 32 (whole warpgroups, a power of two: "
                                    "a layout's warps are bits of the warp id), got "
                                 << static_cast<unsigned>(numWarps);
      return signalPassFailure();
    }
    if (failed(checkNestedKernels(getOperation())))
      return signalPassFailure();
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (isKernel(func) && failed(LayoutAssigner(func, numWarps).run()))
        return signalPassFailure();
  }
};
} // namespace
