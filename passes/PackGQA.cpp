//===- PackGQA.cpp - pack the query heads of a kv head into one program ---===//
//
// A kernel written for one query head per program (program_id(axis) = h,
// kv head h / GROUP) becomes a kernel for one kv head per program whose
// tiles hold the GROUP query heads that share it: the program is vectorised
// over j in [0, GROUP) with h = kvh * GROUP + j.
//
// Every value the head reaches is classified:
//   - an integer or pointer scalar must stay affine in j: base + j * coef
//     (h / GROUP is the uniform kvh, h % GROUP is j);
//   - a tile becomes a "packed" tile: the G logical copies folded into its
//     rows, shape (P * S0, S1, ...) for a logical (S0, S1, ...), P = GROUP
//     rounded up to a power of two (rows of j >= GROUP read and write
//     nothing);
//   - anything else (a float scalar of the head, a branch on it, K/V loads
//     that depend on more than h / GROUP) is a diagnostic.
// Uniform tiles that meet packed ones are replicated, by recomputing them
// from their arange/splat where they come from one (what the GPU lowering
// handles best), else by expand_dims + broadcast + reshape. Loads and stores
// through an affine pointer gain a leading dimension of stride coef and bound
// GROUP. program_id(axis) is the kv head, num_programs(axis) is multiplied
// back, and `fakv.grid_packing` tells the launcher to run grid[axis] / GROUP
// programs.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVPACKGQA
#include "passes/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;

namespace {

/// A scalar of the head: base + j * coef (coef null: 0).
struct Affine {
  Value base, coef;
};

/// The tile operands of an op that are indexed by key columns, not by rows:
/// they must stay uniform (every query head sees the same keys).
static bool isColumnOperand(Operation *op, unsigned index) {
  if (isa<LengthMaskOp>(op))
    return index == 1;
  if (isa<CausalMaskOp, WindowMaskOp, AlibiOp>(op))
    return index == 2;
  if (isa<DotOp>(op))
    return index == 1;
  return false;
}

/// Ops whose tiles are all indexed by row first, so that folding the heads
/// into the rows commutes with them (elementwise math, the row-wise fakv ops).
static bool isRowWise(Operation *op) {
  if (isa<DotOp, OnlineSoftmaxOp, LengthMaskOp, CausalMaskOp, WindowMaskOp,
          SoftcapOp, AlibiOp, RotaryOp, CastOp, ClusterGatherOp>(op))
    return true;
  Dialect *d = op->getDialect();
  return d && (d->getNamespace() == "arith" || d->getNamespace() == "math") &&
         op->getNumResults() == 1 && isa<RankedTensorType>(op->getResult(0).getType());
}

/// Erases a block whose values are used only inside it.
static void eraseBlock(Block *block) {
  for (Operation &op : *block)
    op.dropAllReferences();
  block->dropAllDefinedValueUses();
  block->erase();
}

class Packer {
public:
  Packer(func::FuncOp f, unsigned axis) : func(f), axis(axis) {}

  LogicalResult run();
  /// GROUP: the query heads of one kv head (1 when nothing was packed).
  int64_t groupSize() const { return group; }

private:
  func::FuncOp func;
  unsigned axis;
  int64_t group = 0, padded = 0;
  Operation *groupOp = nullptr; // the first program_id / GROUP (for diagnostics)
  DenseSet<Value> dependent;      // values that differ between the heads
  DenseSet<Operation *> touched;  // ops to rebuild (or holding such ops)
  IRMapping map;                  // uniform values: old -> new
  DenseMap<Value, Affine> affine; // affine scalars
  DenseMap<Value, Value> packed;  // packed tiles: old -> new (storage)
  DenseMap<Value, Value> replicated;

  InFlightDiagnostic fail(Operation *op, const Twine &why) {
    return op->emitError() << "fakv-pack-gqa: " << why;
  }
  LogicalResult findGroup();
  bool splitsHead(Operation *op);
  bool isKvHead(Operation *op) {
    return isa<arith::DivSIOp, arith::DivUIOp, arith::FloorDivSIOp>(op) && splitsHead(op);
  }
  void analyse();
  LogicalResult rewriteBlock(Block &from, ImplicitLocOpBuilder &b);
  LogicalResult rewriteOp(Operation *op, ImplicitLocOpBuilder &b);
  LogicalResult rewriteFor(scf::ForOp op, ImplicitLocOpBuilder &b);
  LogicalResult rewriteIf(scf::IfOp op, ImplicitLocOpBuilder &b);
  LogicalResult rewriteScalar(Operation *op, ImplicitLocOpBuilder &b);
  struct HeadAccess {
    SmallVector<Value> offsets, strides, bounds;
    Value mask;
  };
  template <typename MemOp>
  FailureOr<HeadAccess> headAccess(MemOp op, Affine p, RankedTensorType type,
                                   ImplicitLocOpBuilder &b);
  LogicalResult rewriteLoad(LoadOp op, ImplicitLocOpBuilder &b);
  LogicalResult rewriteStore(StoreOp op, ImplicitLocOpBuilder &b);
  LogicalResult rewriteShape(Operation *op, ImplicitLocOpBuilder &b);

  RankedTensorType storageType(Type t) {
    auto tt = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(tt.getShape());
    shape[0] *= padded;
    return tt.clone(shape);
  }
  /// The new value of a tile operand in packed form (uniform ones replicated).
  Value asPacked(Value old, ImplicitLocOpBuilder &b) {
    if (Value v = packed.lookup(old))
      return v;
    return replicate(old, b);
  }
  Value replicate(Value old, ImplicitLocOpBuilder &b);
  /// `memo`: the values recomputed so far at this insertion point (null: not recomputable), so that a
  /// tile reached along many paths is made once (`u = u + u`, n times: 2^n copies, minutes and gigabytes).
  Value recompute(Value old, ImplicitLocOpBuilder &b, DenseMap<Value, Value> &memo, unsigned depth = 0);
  Value recomputeOnce(Value old, ImplicitLocOpBuilder &b, DenseMap<Value, Value> &memo, unsigned depth);
  /// (P * S0, S1, ...) -> (P, S0, S1, ...).
  Value unfold(Value storage, ArrayRef<int64_t> logical, ImplicitLocOpBuilder &b) {
    auto t = cast<RankedTensorType>(storage.getType());
    SmallVector<int64_t> shape{padded};
    llvm::append_range(shape, logical);
    return ReshapeOp::create(b, t.clone(shape), storage);
  }
  Value fold(Value unfolded, ImplicitLocOpBuilder &b) {
    auto t = cast<RankedTensorType>(unfolded.getType());
    SmallVector<int64_t> shape(t.getShape().drop_front());
    shape[0] *= padded;
    return ReshapeOp::create(b, t.clone(shape), unfolded);
  }
  /// The head index j of every element of a packed tile of `logical` shape.
  Value headIndex(RankedTensorType logical, ImplicitLocOpBuilder &b);
  Value cst(ImplicitLocOpBuilder &b, Type t, int64_t v) {
    return arith::ConstantOp::create(b, t, b.getIntegerAttr(t, v));
  }
  Value uniform(Value old) { return map.lookupOrDefault(old); }
  /// An affine view of an integer or pointer operand (uniform: coef null).
  Affine affineOf(Value old) {
    auto it = affine.find(old);
    return it != affine.end() ? it->second : Affine{uniform(old), Value()};
  }
};

LogicalResult Packer::findGroup() {
  // The divisions of program_id(axis) in program order (a use list's is not,
  // and a kernel may take program_id more than once), so that the first one
  // names GROUP and a later, other divisor is the error.
  SmallVector<Operation *> divisions;
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!isa<arith::DivSIOp, arith::DivUIOp, arith::FloorDivSIOp>(op))
      return;
    auto pid = op->getOperand(0).getDefiningOp<ProgramIdOp>();
    if (pid && pid.getAxis() == axis && pid->getParentOp() == func)
      divisions.push_back(op);
  });
  for (Operation *user : divisions) {
    APInt g;
    if (!matchPattern(user->getOperand(1), m_ConstantInt(&g)) ||
        !g.isStrictlyPositive())
      return fail(user, "the query heads of a kv head must be a positive "
                        "constant: program_id(")
             << axis << ") / GROUP";
    if (group && group != g.getSExtValue()) {
      InFlightDiagnostic diag = fail(user, "program_id(")
                                << axis << ") is divided by " << g.getSExtValue()
                                << " and by " << group
                                << ": only GROUP (the query heads of a kv head) may "
                                   "divide it; another per-head value is tile math of the "
                                   "head (kernels/README.md)";
      diag.attachNote(groupOp->getLoc()) << "divided by " << group << " here";
      return diag;
    }
    if (!group)
      groupOp = user;
    group = g.getSExtValue();
  }
  return success();
}

/// Whether `op` takes program_id(axis) and the constant GROUP: h / GROUP
/// (the kv head, the same for the packed heads) or h % GROUP (the head's
/// index j) when it divides.
bool Packer::splitsHead(Operation *op) {
  APInt g;
  auto pid = op->getNumOperands() == 2
                 ? op->getOperand(0).getDefiningOp<ProgramIdOp>()
                 : ProgramIdOp();
  return pid && pid.getAxis() == axis &&
         matchPattern(op->getOperand(1), m_ConstantInt(&g)) &&
         g.getSExtValue() == group;
}

void Packer::analyse() {
  func.walk([&](ProgramIdOp pid) {
    if (pid.getAxis() == axis)
      dependent.insert(pid.getResult());
  });
  bool changed = true;
  auto mark = [&](Value v) { changed |= dependent.insert(v).second; };
  while (changed) {
    changed = false;
    func.walk([&](Operation *op) {
      bool any = llvm::any_of(op->getOperands(),
                              [&](Value v) { return dependent.contains(v); });
      if (auto yield = dyn_cast<scf::YieldOp>(op)) {
        Operation *parent = op->getParentOp();
        if (!isa<scf::ForOp, scf::IfOp>(parent))
          return; // another region op: rejected when rewritten
        for (auto [i, v] : llvm::enumerate(yield.getOperands()))
          if (dependent.contains(v)) {
            mark(parent->getResult(i));
            if (auto loop = dyn_cast<scf::ForOp>(parent))
              mark(loop.getRegionIterArgs()[i]);
          }
        return;
      }
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        for (auto [i, init] : llvm::enumerate(loop.getInitArgs()))
          if (dependent.contains(init)) {
            mark(loop.getRegionIterArgs()[i]);
            mark(loop.getResult(i));
          }
        return;
      }
      // An atomic_add of the head's own counter returns what every head of
      // the kv head would (they run together): uniform (rewriteOp).
      if (any && op->getNumRegions() == 0 && !isKvHead(op) && !isa<AtomicAddOp>(op))
        for (Value r : op->getResults())
          mark(r);
    });
  }
  func.walk<WalkOrder::PostOrder>([&](Operation *op) {
    bool t = isa<ProgramIdOp, NumProgramsOp>(op) ||
             llvm::any_of(op->getOperands(), [&](Value v) { return dependent.contains(v); }) ||
             llvm::any_of(op->getResults(), [&](Value v) { return dependent.contains(v); });
    for (Region &r : op->getRegions())
      for (Operation &inner : r.getOps())
        t |= touched.contains(&inner);
    if (auto loop = dyn_cast<scf::ForOp>(op))
      for (Value a : loop.getRegionIterArgs())
        t |= dependent.contains(a);
    // A yield into packed results packs (or replicates) what it yields.
    if (isa<scf::YieldOp>(op) && isa<scf::ForOp, scf::IfOp>(op->getParentOp()))
      t |= llvm::any_of(op->getParentOp()->getResults(),
                        [&](Value v) { return dependent.contains(v); });
    if (t)
      touched.insert(op);
  });
}

Value Packer::headIndex(RankedTensorType logical, ImplicitLocOpBuilder &b) {
  int64_t rows = logical.getDimSize(0);
  auto i32 = b.getI32Type();
  Value j = ArangeOp::create(b, RankedTensorType::get({padded * rows}, i32),
                             b.getI32IntegerAttr(0),
                             b.getI32IntegerAttr(padded * rows));
  if (rows != 1)
    j = arith::DivSIOp::create(
        b, j, SplatOp::create(b, cast<RankedTensorType>(j.getType()), cst(b, i32, rows)));
  auto storage = storageType(logical).clone(i32);
  if (storage.getRank() == 1)
    return j;
  SmallVector<int64_t> shape{padded * rows};
  for (int64_t d = 1; d < storage.getRank(); ++d) {
    shape.push_back(1);
    j = ExpandDimsOp::create(b, RankedTensorType::get(shape, i32), j,
                             b.getI32IntegerAttr(d));
  }
  return BroadcastOp::create(b, storage, j);
}

/// A uniform tile in packed form. Tiles built from arange/splat/constants by
/// row-wise math are recomputed at the packed shape; others are copied with
/// expand_dims + broadcast + reshape.
Value Packer::replicate(Value old, ImplicitLocOpBuilder &b) {
  if (Value v = replicated.lookup(old))
    return v;
  // Right after the uniform tile, so that the copy dominates every use.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfterValue(uniform(old));
  DenseMap<Value, Value> memo;
  Value v = recompute(old, b, memo);
  if (!v) {
    auto t = cast<RankedTensorType>(old.getType());
    SmallVector<int64_t> unit{1};
    llvm::append_range(unit, t.getShape());
    Value e = ExpandDimsOp::create(b, t.clone(unit), uniform(old),
                                   b.getI32IntegerAttr(0));
    unit[0] = padded;
    v = fold(BroadcastOp::create(b, t.clone(unit), e), b);
  }
  replicated[old] = v;
  return v;
}

/// Chains of row-wise ops deeper than this are copied, not recomputed: each op is a level of recursion (a chain
/// of 60,000 overflowed the stack). The DSL's kernels recompute a few ops.
constexpr unsigned kMaxRecomputeDepth = 512;

Value Packer::recompute(Value old, ImplicitLocOpBuilder &b, DenseMap<Value, Value> &memo, unsigned depth) {
  if (auto found = memo.find(old); found != memo.end())
    return found->second;
  if (depth > kMaxRecomputeDepth)
    return {};
  Value made = recomputeOnce(old, b, memo, depth);
  memo[old] = made;
  return made;
}

Value Packer::recomputeOnce(Value old, ImplicitLocOpBuilder &b, DenseMap<Value, Value> &memo, unsigned depth) {
  Operation *def = old.getDefiningOp();
  if (!def || def->getNumResults() != 1)
    return {};
  auto type = cast<RankedTensorType>(old.getType());
  RankedTensorType storage = storageType(type);
  if (auto splat = dyn_cast<SplatOp>(def))
    return SplatOp::create(b, storage, uniform(splat.getValue()));
  DenseElementsAttr dense;
  if (def->hasTrait<OpTrait::ConstantLike>())
    return matchPattern(old, m_Constant(&dense)) && dense.isSplat()
               ? arith::ConstantOp::create(b, storage, dense.resizeSplat(storage)).getResult()
               : Value(); // a constant of distinct rows: copied

  if (auto range = dyn_cast<ArangeOp>(def)) {
    // arange(a, b) of length S, repeated: (arange(0, P * S) % S) + a.
    int64_t len = type.getDimSize(0);
    Value i = ArangeOp::create(b, storage, b.getI32IntegerAttr(0),
                               b.getI32IntegerAttr(padded * len));
    i = arith::RemSIOp::create(b, i, SplatOp::create(b, storage, cst(b, b.getI32Type(), len)));
    if (range.getStart() != 0)
      i = arith::AddIOp::create(
          b, i, SplatOp::create(b, storage, cst(b, b.getI32Type(), range.getStart())));
    return i;
  }
  if (!isRowWise(def) || def->getNumRegions() || isa<DotOp, LoadOp>(def))
    return {};
  IRMapping m;
  for (auto [i, operand] : llvm::enumerate(def->getOperands())) {
    if (!isa<RankedTensorType>(operand.getType()) || isColumnOperand(def, i)) {
      m.map(operand, uniform(operand));
      continue;
    }
    Value r = recompute(operand, b, memo, depth + 1);
    if (!r)
      return {};
    m.map(operand, r);
  }
  Operation *clone = b.clone(*def, m);
  clone->getResult(0).setType(storage);
  return clone->getResult(0);
}

LogicalResult Packer::run() {
  if (failed(findGroup()))
    return failure();
  if (group == 0)
    return func.emitError() << "fakv-pack-gqa: kernel @" << func.getName()
                            << " asks to pack the query heads of grid axis "
                            << axis << ", but never divides program_id("
                            << axis << ") by the constant number of query "
                               "heads per kv head";
  padded = llvm::PowerOf2Ceil(group);
  if (group == 1)
    return success();
  // (scf regions only: the rewrite copies the entry block, whose values the
  // other blocks of a cf-branching body would still use)
  if (!func.getBody().hasOneBlock())
    return func.emitError() << "fakv-pack-gqa: kernel @" << func.getName()
                            << " has several blocks (cf branches); write its "
                               "control flow with scf.if / scf.for";
  // (the packed tiles are built without layouts: after fakv-assign-layouts they mixed with laid-out ones)
  WalkResult encoded = func.walk([&](Operation *op) {
    for (Type rt : op->getResultTypes())
      if (auto tile = dyn_cast<RankedTensorType>(rt); tile && tile.getEncoding()) {
        fail(op, "has a GPU layout: fakv-pack-gqa runs before fakv-assign-layouts");
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (encoded.wasInterrupted())
    return failure();
  analyse();
  // Each tile the rewrite makes holds `padded` of the kernel's: none may pass the dialect's limit, nor be
  // empty (a tile of no elements packed built `fakv.arange 0 to 0`, which the verifier refused).
  // (in program order: the first such op named, whatever the set's order)
  Operation *tooBig = nullptr;
  RankedTensorType t;
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!touched.contains(op))
      return WalkResult::advance();
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (auto vt = dyn_cast<RankedTensorType>(v.getType()); vt && vt.hasStaticShape() &&
          (!vt.getNumElements() || vt.getNumElements() * padded > kMaxTileElements)) {
        tooBig = op;
        t = vt;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (tooBig && !t.getNumElements())
    return fail(tooBig, "has a tile of no elements: fakv-pack-gqa packs tiles of at least one element");
  if (tooBig)
    return fail(tooBig, "packing the ") << group << " query heads of a kv head (padded to " << padded
           << ") makes a tile " << padded << " times this op's " << t << ": " << t.getNumElements() * padded
           << " elements, more than " << kMaxTileElements << " (2^24); use smaller tiles or fewer query heads "
           << "per kv head";

  Block &old = func.getBody().front();
  auto *fresh = new Block();
  for (BlockArgument a : old.getArguments())
    map.map(a, fresh->addArgument(a.getType(), a.getLoc()));
  func.getBody().push_back(fresh);
  ImplicitLocOpBuilder b(func.getLoc(), fresh, fresh->end());
  bool ok = succeeded(rewriteBlock(old, b));
  eraseBlock(ok ? &old : fresh);
  return success(ok);
}

LogicalResult Packer::rewriteBlock(Block &from, ImplicitLocOpBuilder &b) {
  for (Operation &op : from) {
    b.setLoc(op.getLoc());
    if (!touched.contains(&op)) {
      if (isa<AtomicAddOp>(op))      // the per-head programs would add GROUP times
        return fail(&op, "an atomic_add that the query heads of a kv head share cannot be "
                         "packed (one program adds for them all): give each head its own "
                         "index");
      b.clone(op, map);
      continue;
    }
    if (failed(rewriteOp(&op, b)))
      return failure();
  }
  return success();
}

LogicalResult Packer::rewriteOp(Operation *op, ImplicitLocOpBuilder &b) {
  for (Value r : op->getResults())
    if (auto t = dyn_cast<RankedTensorType>(r.getType());
        t && dependent.contains(r) && (t.getRank() == 0 || t.getElementType().isIndex()))
      return fail(op, "a rank-0 or index tile depends on the query head");
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return rewriteFor(loop, b);
  if (auto branch = dyn_cast<scf::IfOp>(op))
    return rewriteIf(branch, b);
  if (op->getNumRegions())
    return fail(op, "only scf.for and scf.if may hold ops of the query head");
  if (auto yield = dyn_cast<scf::YieldOp>(op)) {
    SmallVector<Value> values;
    Operation *parent = op->getParentOp();
    for (auto [i, v] : llvm::enumerate(yield.getOperands())) {
      if (!dependent.contains(parent->getResult(i)))
        values.push_back(uniform(v));
      else if (isa<RankedTensorType>(v.getType()))
        values.push_back(asPacked(v, b));
      else
        return fail(op, "a loop-carried or branch scalar depends on the query head");
    }
    scf::YieldOp::create(b, values);
    return success();
  }
  if (auto pid = dyn_cast<ProgramIdOp>(op)) {
    Operation *clone = b.clone(*op, map);
    if (pid.getAxis() != axis)
      return success();
    Value kvHead = clone->getResult(0);
    Value base = arith::MulIOp::create(b, kvHead, cst(b, b.getI32Type(), group));
    affine[pid.getResult()] = Affine{base, cst(b, b.getI32Type(), 1)};
    return success();
  }
  if (auto np = dyn_cast<NumProgramsOp>(op)) {
    Value n = b.clone(*op, map)->getResult(0);
    if (np.getAxis() == axis)
      n = arith::MulIOp::create(b, n, cst(b, b.getI32Type(), group));
    map.map(np.getResult(), n);
    return success();
  }
  if (auto atomic = dyn_cast<AtomicAddOp>(op)) {
    // Each head adds to its own counter; the packed program adds once, to
    // its first head's, and every head reads what it would have read.
    Affine ptr = affineOf(atomic.getPtr()), index = affineOf(atomic.getIndex());
    if (dependent.contains(atomic.getValue()))
      return fail(op, "an atomic_add's value depends on the query head");
    Value result = AtomicAddOp::create(b, b.getI32Type(), ptr.base, index.base,
                                       uniform(atomic.getValue()));
    map.map(atomic.getResult(), result);
    return success();
  }
  if (auto load = dyn_cast<LoadOp>(op))
    return rewriteLoad(load, b);
  if (auto store = dyn_cast<StoreOp>(op))
    return rewriteStore(store, b);
  if (isa<BroadcastOp, ExpandDimsOp, ReshapeOp, ReduceOp>(op))
    return rewriteShape(op, b);
  if (isa<PagedLoadOp>(op))
    return fail(op, "the K/V rows a program loads may depend on its query "
                    "head only through the kv head, program_id / GROUP");
  if (isa<LoadScalarOp>(op))
    return fail(op, "cannot pack this op: it depends on the query head (a per-head "
                    "scalar loaded: load a tile with a row per query row instead, "
                    "fl.load(P + h, (SQ_BLOCK,), (0,), (0,)), as decode.py's ALiBi slopes)");
  if (isa<LseCombineOp, ItemOp>(op))
    return fail(op, "cannot pack this op: it depends on the query head");

  if (op->getNumResults() == 1 && !isa<RankedTensorType>(op->getResult(0).getType()) &&
      !isa<SplatOp>(op))
    return rewriteScalar(op, b);

  if (auto splat = dyn_cast<SplatOp>(op)) {
    // A tile of h-dependent integers: base + j * coef, elementwise.
    Affine a = affineOf(splat.getValue());
    auto type = splat.getType();
    RankedTensorType storage = storageType(type);
    Value v = SplatOp::create(b, storage, a.base);
    if (a.coef) {
      Value j = headIndex(type, b);
      if (!a.coef.getType().isInteger(32))
        j = arith::ExtSIOp::create(b, storage.clone(a.coef.getType()), j);
      v = arith::AddIOp::create(
          b, v, arith::MulIOp::create(b, j, SplatOp::create(b, storage, a.coef)));
    }
    packed[splat.getResult()] = v;
    return success();
  }

  if (!isRowWise(op))
    return fail(op, "cannot pack this op over the query heads");
  if (auto dot = dyn_cast<DotOp>(op); dot && dot.getTransposeA())
    return fail(op, "a transposed A operand does not keep the query heads in "
                    "its rows");
  IRMapping m;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!isa<RankedTensorType>(operand.getType())) {
      if (dependent.contains(operand))
        return fail(op, "a scalar operand depends on the query head");
      m.map(operand, uniform(operand));
    } else if (isColumnOperand(op, i)) {
      if (dependent.contains(operand))
        return fail(op, "operand #")
               << i << " is shared by the rows (keys or B) and must not "
                       "depend on the query head";
      m.map(operand, uniform(operand));
    } else {
      m.map(operand, asPacked(operand, b));
    }
  }
  Operation *clone = b.clone(*op, m);
  for (auto [oldR, newR] : llvm::zip(op->getResults(), clone->getResults())) {
    newR.setType(storageType(oldR.getType()));
    packed[oldR] = newR;
  }
  return success();
}

LogicalResult Packer::rewriteScalar(Operation *op, ImplicitLocOpBuilder &b) {
  Value result = op->getResult(0);
  Type t = result.getType();
  if (!isa<IntegerType, IndexType, PtrType>(t) || t.isInteger(1))
    return fail(op, "a scalar of type ")
           << t << " depends on the query head; only integers and pointers "
                   "affine in the head can be packed (make a per-head float or "
                   "condition a tile with a row per query head, as decode.py's "
                   "ALiBi slopes, or compute it from the head index inside tile math)";
  auto operand = [&](unsigned i) { return affineOf(op->getOperand(i)); };
  auto apply = [&](Value x, Value y) -> Value {
    // The same op on new operands (x, y or x alone).
    IRMapping m;
    m.map(op->getOperand(0), x);
    if (op->getNumOperands() > 1)
      m.map(op->getOperand(1), y);
    return b.clone(*op, m)->getResult(0);
  };
  Affine r;
  if (isa<arith::AddIOp, arith::SubIOp>(op)) {
    Affine x = operand(0), y = operand(1);
    r.base = apply(x.base, y.base);
    if (x.coef && y.coef)
      r.coef = apply(x.coef, y.coef);
    else if (x.coef)
      r.coef = x.coef;
    else
      r.coef = isa<arith::SubIOp>(op)
                   ? arith::SubIOp::create(b, cst(b, t, 0), y.coef).getResult()
                   : y.coef;
  } else if (isa<arith::MulIOp>(op)) {
    Affine x = operand(0), y = operand(1);
    if (x.coef && y.coef)
      return fail(op, "a product of two values of the query head");
    r.base = apply(x.base, y.base);
    r.coef = x.coef ? apply(x.coef, y.base) : apply(x.base, y.coef);
  } else if (isa<arith::ExtSIOp, arith::IndexCastOp>(op)) {
    // Linear as long as the i32 value base + j * coef does not wrap, as for
    // any address arithmetic of the written kernel. (zero extension is not
    // linear for negative coefficients: not packed.)
    Affine x = operand(0);
    r.base = apply(x.base, {});
    r.coef = apply(x.coef, {});
  } else if (isa<arith::DivSIOp, arith::DivUIOp, arith::FloorDivSIOp,
                 arith::RemSIOp, arith::RemUIOp>(op)) {
    if (!splitsHead(op))
      return fail(op, "a scalar of the query head divided or taken modulo: only program_id(")
             << axis << ") itself may be divided by GROUP = " << group
             << " (a value or branch that depends on the head is written as tile math "
                "of it, kernels/README.md)";
    if (isa<arith::RemSIOp, arith::RemUIOp>(op)) {
      r.base = cst(b, t, 0);
      r.coef = cst(b, t, 1);
    } else {
      map.map(result, uniform(op->getOperand(0))); // the new program_id: the kv head
      return success();
    }
  } else if (auto addptr = dyn_cast<AddPtrOp>(op)) {
    Affine p = operand(0), off = operand(1);
    r.base = AddPtrOp::create(b, p.base.getType(), p.base, off.base);
    r.coef = p.coef && off.coef ? arith::AddIOp::create(b, p.coef, off.coef).getResult()
                                : (p.coef ? p.coef : off.coef);
  } else {
    return fail(op, "cannot pack this scalar op over the query heads: a scalar of the "
                    "head packs through +, - and * by values of no head, and program_id "
                    "/ or % GROUP; write other per-head values as tile math of the head, "
                    "(q_pos * 0 + h) (kernels/README.md)");
  }
  affine[result] = r;
  return success();
}

/// The addressing of a load or store of `type` through the affine pointer
/// `p`, with the heads as a leading dimension: offset 0, stride p.coef (0 for
/// a uniform pointer) and bound GROUP, or where the op has no bounds to
/// extend and GROUP was padded, a mask that leaves the padding heads out.
template <typename MemOp>
FailureOr<Packer::HeadAccess> Packer::headAccess(MemOp op, Affine p, RankedTensorType type,
                                                 ImplicitLocOpBuilder &b) {
  for (Value v : llvm::concat<Value>(op.getOffsets(), op.getStrides(), op.getBounds()))
    if (dependent.contains(v))
      return fail(op, "the offsets, strides and bounds of a load or store may "
                      "not depend on the query head (fold it into the pointer)");
  auto i32 = b.getI32Type(), i64 = b.getI64Type();
  HeadAccess a;
  a.offsets.push_back(cst(b, i32, 0));
  a.strides.push_back(!p.coef ? cst(b, i64, 0)
                      : p.coef.getType() == i64 ? p.coef
                                                : arith::ExtSIOp::create(b, i64, p.coef).getResult());
  for (Value v : op.getOffsets())
    a.offsets.push_back(uniform(v));
  for (Value v : op.getStrides())
    a.strides.push_back(uniform(v));
  if (!op.getBounds().empty()) {
    a.bounds.push_back(cst(b, i32, group));
    for (Value v : op.getBounds())
      a.bounds.push_back(uniform(v));
  } else if (padded != group) {
    Value j = headIndex(type, b);
    a.mask = unfold(arith::CmpIOp::create(
                        b, arith::CmpIPredicate::slt, j,
                        SplatOp::create(b, cast<RankedTensorType>(j.getType()), cst(b, i32, group))),
                    type.getShape(), b);
  }
  if (op.getMask()) {
    Value m = unfold(asPacked(op.getMask(), b), type.getShape(), b);
    a.mask = a.mask ? arith::AndIOp::create(b, a.mask, m).getResult() : m;
  }
  return a;
}

LogicalResult Packer::rewriteLoad(LoadOp op, ImplicitLocOpBuilder &b) {
  if (op.getOther() && dependent.contains(op.getOther()))
    return fail(op, "'other' may not depend on the query head");
  Affine p = affineOf(op.getPtr());
  RankedTensorType type = op.getType();
  FailureOr<HeadAccess> a = headAccess(op, p, type, b);
  if (failed(a))
    return failure();
  SmallVector<int64_t> shape{padded};
  llvm::append_range(shape, type.getShape());
  Value other = op.getOther() ? uniform(op.getOther()) : Value();
  Value load = LoadOp::create(b, type.clone(shape), p.base, a->offsets, a->strides, a->bounds,
                              a->mask, other);
  packed[op.getResult()] = fold(load, b);
  return success();
}

LogicalResult Packer::rewriteStore(StoreOp op, ImplicitLocOpBuilder &b) {
  Affine p = affineOf(op.getPtr());
  auto type = cast<RankedTensorType>(op.getValue().getType());
  // (first: a head in the offsets is that rule's error, not "one address")
  FailureOr<HeadAccess> a = headAccess(op, p, type, b);
  if (failed(a))
    return failure();
  if (!p.coef)
    return fail(op, "every query head would store to the same address: the "
                    "pointer must depend on the head");
  Value value = unfold(asPacked(op.getValue(), b), type.getShape(), b);
  StoreOp::create(b, value, p.base, a->offsets, a->strides, a->bounds, a->mask);
  return success();
}

/// broadcast, expand_dims, reshape and reduce of a packed tile.
LogicalResult Packer::rewriteShape(Operation *op, ImplicitLocOpBuilder &b) {
  Value src = op->getOperand(0);
  auto srcType = cast<RankedTensorType>(src.getType());
  auto resType = cast<RankedTensorType>(op->getResult(0).getType());
  Value in = asPacked(src, b);
  Value out;
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    if (reduce.getAxis() == 0)
      return fail(op, "a reduction over the rows mixes the query heads");
    out = ReduceOp::create(b, storageType(resType), reduce.getKindAttr(), in,
                           reduce.getAxisAttr());
  } else if (isa<ReshapeOp>(op)) {
    out = ReshapeOp::create(b, storageType(resType), in);
  } else if (auto expand = dyn_cast<ExpandDimsOp>(op)) {
    out = expand.getAxis() == 0
              ? unfold(in, srcType.getShape(), b)
              : ExpandDimsOp::create(b, storageType(resType), in, expand.getAxisAttr())
                    .getResult();
  } else if (srcType.getDimSize(0) == resType.getDimSize(0)) {
    out = BroadcastOp::create(b, storageType(resType), in);
  } else {
    // The rows themselves are broadcast: within each head.
    SmallVector<int64_t> shape{padded};
    llvm::append_range(shape, resType.getShape());
    out = fold(BroadcastOp::create(b, resType.clone(shape),
                                   unfold(in, srcType.getShape(), b)),
               b);
  }
  packed[op->getResult(0)] = out;
  return success();
}

LogicalResult Packer::rewriteFor(scf::ForOp op, ImplicitLocOpBuilder &b) {
  for (Value v : {op.getLowerBound(), op.getUpperBound(), op.getStep()})
    if (dependent.contains(v))
      return fail(op, "the trip count may not depend on the query head");
  SmallVector<Value> inits;
  for (auto [arg, init] : llvm::zip(op.getRegionIterArgs(), op.getInitArgs())) {
    if (!dependent.contains(arg)) {
      inits.push_back(uniform(init));
    } else if (isa<RankedTensorType>(init.getType())) {
      inits.push_back(asPacked(init, b));
    } else {
      return fail(op, "a loop-carried scalar depends on the query head");
    }
  }
  auto loop = scf::ForOp::create(b, uniform(op.getLowerBound()), uniform(op.getUpperBound()),
                                 uniform(op.getStep()), inits, nullptr, op.getUnsignedCmp());
  Block *body = loop.getBody();
  if (!body->empty())
    body->getTerminator()->erase();
  map.map(op.getInductionVar(), loop.getInductionVar());
  for (auto [oldArg, newArg] : llvm::zip(op.getRegionIterArgs(), loop.getRegionIterArgs())) {
    if (dependent.contains(oldArg))
      packed[oldArg] = newArg;
    else
      map.map(oldArg, newArg);
  }
  for (auto [oldR, newR] : llvm::zip(op.getResults(), loop.getResults())) {
    if (dependent.contains(oldR))
      packed[oldR] = newR;
    else
      map.map(oldR, newR);
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(body);
  return rewriteBlock(*op.getBody(), b);
}

LogicalResult Packer::rewriteIf(scf::IfOp op, ImplicitLocOpBuilder &b) {
  if (dependent.contains(op.getCondition()))
    return fail(op, "a branch on the query head: every head of a packed "
                    "program takes the same branch");
  SmallVector<Type> types;
  for (Value r : op.getResults()) {
    if (!dependent.contains(r))
      types.push_back(r.getType());
    else if (isa<RankedTensorType>(r.getType()))
      types.push_back(storageType(r.getType()));
    else
      return fail(op, "a branch result scalar depends on the query head");
  }
  bool withElse = !op.getElseRegion().empty();
  auto branch = scf::IfOp::create(b, types, uniform(op.getCondition()), withElse);
  for (auto [oldR, newR] : llvm::zip(op.getResults(), branch.getResults())) {
    if (dependent.contains(oldR))
      packed[oldR] = newR;
    else
      map.map(oldR, newR);
  }
  OpBuilder::InsertionGuard guard(b);
  for (auto [from, to] : {std::pair(&op.getThenRegion(), &branch.getThenRegion()),
                          std::pair(&op.getElseRegion(), &branch.getElseRegion())}) {
    if (from->empty())
      continue;
    Block &block = to->front();
    while (!block.empty())
      block.back().erase();
    b.setInsertionPointToEnd(&block);
    if (failed(rewriteBlock(from->front(), b)))
      return failure();
  }
  return success();
}

struct FakvPackGQAPass : public fakv::impl::FakvPackGQABase<FakvPackGQAPass> {
  void runOnOperation() override {
    if (failed(checkNestedKernels(getOperation())))
      return signalPassFailure();
    auto name = FakvDialect::getPackGQAAttrName();
    getOperation().walk([&](func::FuncOp f) {
      auto axis = f->getAttrOfType<IntegerAttr>(name);
      if (!axis)
        return;
      Packer packer(f, axis.getInt());
      if (failed(packer.run()))
        return signalPassFailure();
      f->removeAttr(name);
      SmallVector<int32_t> packing(3, 1);
      packing[axis.getInt()] = packer.groupSize();
      f->setAttr(FakvDialect::getGridPackingAttrName(),
                 DenseI32ArrayAttr::get(f.getContext(), packing));
    });
  }
};
} // namespace
