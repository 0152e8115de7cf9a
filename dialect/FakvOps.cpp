//===- FakvOps.cpp - fakv op verifiers ------------------------------------===//
//
// Every rule here has an invalid-IR test in test/dialect/invalid.mlir that
// shows its message.
//
//===----------------------------------------------------------------------===//

#include "dialect/FakvDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fakv;

#define GET_OP_CLASSES
#include "dialect/FakvOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {
RankedTensorType tileType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

bool isMatmulFloat(Type t) { return t.isF16() || t.isBF16() || t.isF32(); }

/// `what` must be an f32 tile of exactly `shape`.
LogicalResult expectF32Tile(Operation *op, Value v, StringRef what,
                            ArrayRef<int64_t> shape) {
  RankedTensorType t = tileType(v);
  if (!t.getElementType().isF32())
    return op->emitOpError() << what << " must have f32 elements, got "
                             << t.getElementType();
  if (t.getShape() != shape)
    return op->emitOpError() << what << " must have shape " << shapeStr(shape)
                             << ", got " << shapeStr(t.getShape());
  return success();
}

/// `what` must be a 1-D i32 tile of length `n` (row or column positions).
LogicalResult expectPositions(Operation *op, Value v, StringRef what,
                              int64_t n) {
  RankedTensorType t = tileType(v);
  if (t.getRank() != 1 || !t.getElementType().isSignlessInteger(32) ||
      t.getDimSize(0) != n)
    return op->emitOpError()
           << what << " must be a 1-D i32 tile of length " << n << ", got "
           << t;
  return success();
}

/// Scores of a score modifier: a 2-D f32 tile.
LogicalResult expectScores(Operation *op, Value v) {
  RankedTensorType t = tileType(v);
  if (t.getRank() != 2 || !t.getElementType().isF32())
    return op->emitOpError() << "scores must be a 2-D f32 tile, got " << t;
  return success();
}

/// The kernel an op is in: its nearest isolated-from-above ancestor, when
/// that is a function marked 'fakv.kernel' (not a function around a module
/// or another isolated op it sits in: its values are not the kernel's).
func::FuncOp enclosingKernel(Operation *op) {
  auto func = dyn_cast_or_null<func::FuncOp>(op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>());
  return isKernel(func) ? func : func::FuncOp();
}

LogicalResult insideKernel(Operation *op) {
  if (!enclosingKernel(op))
    return op->emitOpError()
           << "is only valid inside a function marked 'fakv.kernel'";
  return success();
}

/// Shared checks of the strided load/store addressing operands.
LogicalResult verifyStridedAccess(Operation *op, RankedTensorType tile,
                                  PtrType ptr, size_t numOffsets,
                                  size_t numStrides, size_t numBounds) {
  if (ptr.getElementType() != tile.getElementType())
    return op->emitOpError() << "pointer element type "
                             << ptr.getElementType()
                             << " does not match the tile element type "
                             << tile.getElementType();
  int64_t rank = tile.getRank();
  if (rank == 0)
    return op->emitOpError() << "tile must have rank >= 1";
  if ((int64_t)numOffsets != rank)
    return op->emitOpError() << "expects one offset per tile dimension ("
                             << rank << "), got " << numOffsets;
  if ((int64_t)numStrides != rank)
    return op->emitOpError() << "expects one stride per tile dimension ("
                             << rank << "), got " << numStrides;
  if (numBounds != 0 && (int64_t)numBounds != rank)
    return op->emitOpError() << "expects no bounds or one per tile dimension ("
                             << rank << "), got " << numBounds;
  return success();
}
} // namespace

/// Whether `v` is a tile in a memory encoding (a view of tile memory).
static bool isMemoryTile(Value v) {
  auto tile = dyn_cast<RankedTensorType>(v.getType());
  return tile && isa_and_present<MemoryTileEncodingAttrInterface>(tile.getEncoding());
}

Speculation::Speculatability DotOp::getSpeculatability() {
  return isMemoryTile(getA()) || isMemoryTile(getB()) ? Speculation::NotSpeculatable
                                                      : Speculation::Speculatable;
}

void DotOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  for (OpOperand *operand : {&getAMutable(), &getBMutable()})
    if (isMemoryTile(operand->get()))
      effects.emplace_back(MemoryEffects::Read::get(), operand, TileMemoryResource::get());
}

int64_t mlir::fakv::elementsUpTo(RankedTensorType tile, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : tile.getShape()) {
    if (d > 0 && n > limit / d)
      return limit + 1;
    n *= d;
  }
  return n;
}

LogicalResult mlir::fakv::verifyBoundedTiles(Operation *op) {
  auto check = [&](Type t) -> LogicalResult {
    auto tile = dyn_cast<RankedTensorType>(t);
    if (tile && tile.hasStaticShape() && elementsUpTo(tile, kMaxTileElements) > kMaxTileElements)
      return op->emitOpError() << "tile " << t << " holds more than " << kMaxTileElements
                               << " elements (2^24), fakv's limit for one tile";
    return success();
  };
  for (Type t : op->getOperandTypes())
    if (failed(check(t)))
      return failure();
  for (Type t : op->getResultTypes())
    if (failed(check(t)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Program structure
//===----------------------------------------------------------------------===//

LogicalResult ProgramIdOp::verify() { return insideKernel(*this); }
LogicalResult NumProgramsOp::verify() { return insideKernel(*this); }

//===----------------------------------------------------------------------===//
// Tile construction
//===----------------------------------------------------------------------===//

LogicalResult ArangeOp::verify() {
  RankedTensorType t = getType();
  // (the bounds are unsigned: -5 written reads 4294967291)
  if (int32_t(getStart()) < 0 || int32_t(getEnd()) < 0)
    return emitOpError() << "start and end must be in [0, 2^31), got " << int32_t(getStart()) << " and "
                         << int32_t(getEnd()) << " (for negative positions: arange 0 to n, minus k)";
  if (getEnd() <= getStart())
    return emitOpError() << "end (" << getEnd()
                         << ") must be greater than start (" << getStart()
                         << ")";
  if (t.getRank() != 1 || !t.getElementType().isSignlessInteger(32))
    return emitOpError() << "result must be a 1-D i32 tile, got " << t;
  if (t.getDimSize(0) != (int64_t)getEnd() - getStart())
    return emitOpError() << "result length " << t.getDimSize(0)
                         << " must equal end - start = "
                         << (int64_t)getEnd() - getStart();
  return success();
}

LogicalResult SplatOp::verify() {
  if (getValue().getType() != getType().getElementType())
    return emitOpError() << "scalar type " << getValue().getType()
                         << " does not match the tile element type "
                         << getType().getElementType();
  return success();
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType src = getSrc().getType(), dst = getType();
  if (src.getElementType() != dst.getElementType())
    return emitOpError() << "source and result element types differ: "
                         << src.getElementType() << " vs "
                         << dst.getElementType();
  if (src.getRank() != dst.getRank())
    return emitOpError() << "source and result ranks differ (" << src.getRank()
                         << " vs " << dst.getRank()
                         << "); insert unit dimensions with fakv.expand_dims";
  for (int64_t d = 0; d < src.getRank(); ++d)
    if (src.getDimSize(d) != 1 && src.getDimSize(d) != dst.getDimSize(d))
      return emitOpError() << "dimension " << d << " of the source has size "
                           << src.getDimSize(d)
                           << "; only size-1 dimensions can broadcast (to "
                           << dst.getDimSize(d) << ")";
  return success();
}

LogicalResult ExpandDimsOp::verify() {
  RankedTensorType src = getSrc().getType(), dst = getType();
  int64_t axis = getAxisAttr().getInt();   // (signed: -1 is -1)
  if (axis < 0 || axis > src.getRank())
    return emitOpError() << "axis " << axis << " out of range [0, "
                         << src.getRank() << "]";
  SmallVector<int64_t> shape(src.getShape());
  shape.insert(shape.begin() + axis, 1);
  if (dst.getShape() != ArrayRef<int64_t>(shape) ||
      dst.getElementType() != src.getElementType())
    return emitOpError() << "result must have shape " << shapeStr(shape)
                         << " and element type " << src.getElementType()
                         << ", got " << dst;
  return success();
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType src = getSrc().getType(), dst = getType();
  if (src.getElementType() != dst.getElementType())
    return emitOpError() << "source and result element types differ: "
                         << src.getElementType() << " vs "
                         << dst.getElementType();
  if (src.getNumElements() != dst.getNumElements())
    return emitOpError() << "source has " << src.getNumElements()
                         << " elements but the result has "
                         << dst.getNumElements();
  if (src.getRank() == 0 || dst.getRank() == 0)
    return emitOpError() << "reshapes tiles of one dimension or more (expand_dims "
                            "and a reduction make and take 0-d tiles), got "
                         << src << " -> " << dst;
  return success();
}

LogicalResult CastOp::verify() {
  RankedTensorType src = getSrc().getType(), dst = getType();
  if (src.getEncoding() != dst.getEncoding())
    return emitOpError() << "converts elements in place: the tile's layout stays, got " << src
                         << " -> " << dst;
  // The formats memory holds and both lowerings convert (f8 and narrower,
  // tf32: no CPU lowering, no load or store).
  auto convertible = [](Type t) { return t.isF16() || t.isBF16() || t.isF32() || t.isF64(); };
  if (!convertible(src.getElementType()) || !convertible(dst.getElementType()))
    return emitOpError() << "converts between f16, bf16, f32 and f64 tiles, got "
                         << src.getElementType() << " to "
                         << dst.getElementType();
  if (src.getShape() != dst.getShape())
    return emitOpError() << "source and result shapes differ: "
                         << shapeStr(src.getShape()) << " vs "
                         << shapeStr(dst.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

LogicalResult LoadScalarOp::verify() {
  if (getPtr().getType().getElementType() != getType())
    return emitOpError() << "result type " << getType()
                         << " does not match the pointer element type "
                         << getPtr().getType().getElementType();
  return success();
}

LogicalResult LoadOp::verify() {
  return verifyStridedAccess(*this, getType(), getPtr().getType(),
                                 getOffsets().size(), getStrides().size(),
                                 getBounds().size());
}

LogicalResult StoreOp::verify() {
  return verifyStridedAccess(*this, getValue().getType(), getPtr().getType(),
                             getOffsets().size(), getStrides().size(),
                             getBounds().size());
}

LogicalResult PagedLoadOp::verify() {
  RankedTensorType t = getType();
  if (t.getRank() != 2)
    return emitOpError() << "result must be a 2-D (rows x head_dim) tile, got "
                         << t;
  if (getCache().getType().getElementType() != t.getElementType())
    return emitOpError() << "cache element type "
                         << getCache().getType().getElementType()
                         << " does not match the tile element type "
                         << t.getElementType();
  if (!getTable() == !getPage())
    return emitOpError() << "expects exactly one of 'table' (paged cache) and "
                            "'page' (contiguous cache)";
  if (!getError() != !getErrorCode())
    return emitOpError() << "'report' takes an error pointer and a code";
  // (a run-time page size <= 0 divides by it on the GPU; a constant one is refused here)
  APInt pageSize;
  if (matchPattern(getPageSize(), m_ConstantInt(&pageSize)) && !pageSize.isStrictlyPositive())
    return emitOpError() << "page_size must be positive, got " << pageSize.getSExtValue();
  return success();
}

Value PagedLoadOp::rowsRead(OpBuilder &b, Location loc, Value valid, Value page,
                           Value leftpad, Value pageSize) {
  if (!page)
    return valid;
  Value inPage = leftpad ? Value(arith::SubIOp::create(b, loc, pageSize, leftpad)) : pageSize;
  return arith::MinSIOp::create(b, loc, valid, inPage);
}

//===----------------------------------------------------------------------===//
// Matmul, online softmax, LSE combine
//===----------------------------------------------------------------------===//

LogicalResult DotOp::verify() {
  RankedTensorType a = getA().getType(), b = getB().getType(),
                   acc = getAcc().getType(), res = getType();
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOpError() << "operands must be 2-D tiles, got " << a << " and "
                         << b;
  if (a.getElementType() != b.getElementType())
    return emitOpError() << "operand element types differ: "
                         << a.getElementType() << " vs " << b.getElementType();
  if (!isMatmulFloat(a.getElementType()))
    return emitOpError() << "operand element type must be f16, bf16 or f32, "
                            "got "
                         << a.getElementType();
  int64_t m = getTransposeA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t ka = getTransposeA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t kb = getTransposeB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = getTransposeB() ? b.getDimSize(0) : b.getDimSize(1);
  if (ka != kb)
    return emitOpError() << "contraction sizes differ: a gives K = " << ka
                         << ", b gives K = " << kb;
  if (failed(expectF32Tile(*this, getAcc(), "accumulator", {m, n})))
    return failure();
  if (res.getShape() != acc.getShape() || !res.getElementType().isF32())
    return emitOpError() << "result must be f32 of shape "
                         << shapeStr({m, n}) << ", got " << res;
  return success();
}

LogicalResult OnlineSoftmaxOp::verify() {
  RankedTensorType s = getScores().getType();
  if (s.getRank() != 2 || !s.getElementType().isF32())
    return emitOpError() << "scores must be a 2-D f32 tile, got " << s;
  return expectF32Tile(*this, getMax(), "running max/sum",
                       {s.getDimSize(0)});
}

LogicalResult LseCombineOp::verify() {
  RankedTensorType p = getPartials().getType();
  if (p.getRank() != 3 || !p.getElementType().isF32())
    return emitOpError() << "partials must be a 3-D (splits x rows x "
                            "head_dim) f32 tile, got "
                         << p;
  int64_t s = p.getDimSize(0), r = p.getDimSize(1), d = p.getDimSize(2);
  if (failed(expectF32Tile(*this, getLses(), "lses", {s, r})) ||
      failed(expectF32Tile(*this, getOut(), "out", {r, d})) ||
      failed(expectF32Tile(*this, getLse(), "lse", {r})))
    return failure();
  return success();
}

LogicalResult ClusterGatherOp::verify() {
  if (failed(insideKernel(*this)))
    return failure();
  int64_t size = getSize();
  if (size < 2 || size > 8)
    return emitOpError() << "a cluster has 2 to 8 programs, got " << size;
  if (getXs().empty() || getXs().size() != getResults().size())
    return emitOpError() << "gathers one or more tiles, a result for each";
  if (getScatter() && getScatter()->size() != getXs().size())
    return emitOpError() << "scatter marks each tile: " << getXs().size() << " entries, got "
                         << getScatter()->size();
  for (auto [i, x, res] : llvm::enumerate(getXs(), getResults())) {
    auto xt = cast<RankedTensorType>(x.getType()), rt = cast<RankedTensorType>(res.getType());
    if (!xt.getElementType().isIntOrFloat() || xt.getElementType().getIntOrFloatBitWidth() != 32)
      return emitOpError() << "gathers tiles of 32-bit elements, got " << xt.getElementType();
    SmallVector<int64_t> shape(xt.getShape());
    if (isScattered(i)) {
      if (xt.getRank() == 0 || shape.back() % size)
        return emitOpError() << "shares out the last dimension of tile #" << i << " in " << size
                             << " slices: it must be a multiple of " << size << ", got " << xt;
      shape.back() /= size;
    }
    shape.push_back(size);
    if (rt.getElementType() != xt.getElementType() || rt.getShape() != ArrayRef<int64_t>(shape))
      return emitOpError() << "result must be " << xt.getElementType() << " of shape "
                           << shapeStr(shape) << " (the tile's, then the cluster's size), got " << rt;
  }
  for (Operation *p = (*this)->getParentOp(); p && !isa<func::FuncOp>(p); p = p->getParentOp())
    if (isa<LoopLikeOpInterface>(p))
      return emitOpError() << "runs once a program: not inside a loop";
  // The kernel's first cluster_gather (not one inside an op isolated from it:
  // not the kernel's, and verified after this one, its size maybe missing).
  func::FuncOp kernel = enclosingKernel(*this);
  ClusterGatherOp first;
  kernel.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op != kernel && op->hasTrait<OpTrait::IsIsolatedFromAbove>())
      return WalkResult::skip();
    first = dyn_cast<ClusterGatherOp>(op);
    return first ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (first.getSize() != size)
    return emitOpError() << "a kernel's cluster_gathers must agree on the cluster's size ("
                         << first.getSize() << " before)";
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  RankedTensorType src = getSrc().getType(), dst = getType();
  int64_t axis = getAxisAttr().getInt();   // (signed: -1 is -1)
  if (axis < 0 || axis >= src.getRank())
    return emitOpError() << "axis " << axis << " out of range [0, "
                         << src.getRank() << ")";
  Type et = src.getElementType();
  if (!isa<FloatType>(et) && !et.isSignlessInteger(32))
    return emitOpError() << "source must have float or i32 elements, got "
                         << et;
  SmallVector<int64_t> shape(src.getShape());
  shape.erase(shape.begin() + axis);
  if (dst.getShape() != ArrayRef<int64_t>(shape) ||
      dst.getElementType() != src.getElementType())
    return emitOpError() << "result must have shape " << shapeStr(shape)
                         << " and element type " << src.getElementType()
                         << ", got " << dst;
  return success();
}

LogicalResult ItemOp::verify() {
  RankedTensorType src = getSrc().getType();
  if (src.getNumElements() != 1)
    return emitOpError() << "source must have one element, got " << src;
  if (getType() != src.getElementType())
    return emitOpError() << "result must be the source's element type "
                         << src.getElementType() << ", got " << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Score modifiers
//===----------------------------------------------------------------------===//

LogicalResult LengthMaskOp::verify() {
  if (failed(expectScores(*this, getScores())))
    return failure();
  return expectPositions(*this, getCols(), "cols",
                         getScores().getType().getDimSize(1));
}

namespace {
LogicalResult verifyRowsCols(Operation *op, Value scores, Value rows,
                             Value cols) {
  if (failed(expectScores(op, scores)))
    return failure();
  RankedTensorType s = tileType(scores);
  if (failed(expectPositions(op, rows, "rows", s.getDimSize(0))))
    return failure();
  return expectPositions(op, cols, "cols", s.getDimSize(1));
}
} // namespace

LogicalResult CausalMaskOp::verify() {
  return verifyRowsCols(*this, getScores(), getRows(), getCols());
}

LogicalResult WindowMaskOp::verify() {
  return verifyRowsCols(*this, getScores(), getRows(), getCols());
}

LogicalResult SoftcapOp::verify() {
  if (failed(expectScores(*this, getScores())))
    return failure();
  FloatAttr cap;
  if (!matchPattern(getCap(), m_Constant(&cap)))
    return success();
  if (!(cap.getValueAsDouble() > 0))
    return emitOpError() << "cap must be positive, got " << cap;
  // The lowerings multiply by 1 / cap, which f32 must hold (a 0 score gives
  // NaN otherwise), and cap * tanh(...) is NaN for an infinite cap.
  float c = static_cast<float>(cap.getValueAsDouble());
  if (!std::isfinite(c) || !std::isfinite(1.0f / c))
    return emitOpError() << "cap must be finite and at least 2.94e-39 (1 / "
                            "FLT_MAX: its reciprocal must be an f32), got "
                         << cap;
  return success();
}

LogicalResult AlibiOp::verify() {
  if (failed(verifyRowsCols(*this, getScores(), getRows(), getCols())))
    return failure();
  return expectF32Tile(*this, getSlopes(), "slopes",
                       {getScores().getType().getDimSize(0)});
}

//===----------------------------------------------------------------------===//
// Rotary
//===----------------------------------------------------------------------===//

LogicalResult RotaryOp::verify() {
  RankedTensorType x = getX().getType(), c = getCos().getType();
  if (x.getRank() != 2 || !isa<Float16Type, BFloat16Type, Float32Type>(x.getElementType()))
    return emitOpError() << "x must be a 2-D f16, bf16 or f32 tile, got " << x;
  if (c.getRank() != 2 || !c.getElementType().isF32() ||
      c.getDimSize(0) != x.getDimSize(0))
    return emitOpError() << "cos and sin must be f32 tiles with "
                         << x.getDimSize(0) << " rows, got " << c;
  if (2 * c.getDimSize(1) > x.getDimSize(1))
    return emitOpError() << "rotary dimension 2 x " << c.getDimSize(1)
                         << " exceeds the head dimension " << x.getDimSize(1);
  return success();
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

LogicalResult PtrOfOp::verify() {
  auto m = cast<MemRefType>(getMemref().getType());
  if (m.getElementType() != getType().getElementType())
    return emitOpError() << "memref element type " << m.getElementType()
                         << " does not match the pointer element type "
                         << getType().getElementType();
  if (!m.getLayout().isIdentity())
    return emitOpError() << "memref must have an identity layout";
  return success();
}

LogicalResult LaunchOp::verify() {
  if (getGrid().size() != 3)
    return emitOpError() << "expects a 3-D grid, got " << getGrid().size()
                         << " extents";
  if (auto func = (*this)->getParentOfType<func::FuncOp>(); func && isKernel(func))
    return emitOpError() << "is host code: a kernel does not launch kernels";
  return success();
}

LogicalResult
LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto func =
      symbolTable.lookupNearestSymbolFrom<func::FuncOp>(*this, getCalleeAttr());
  if (!func)
    return emitOpError() << "'" << getCallee()
                         << "' does not name a func.func";
  if (!isKernel(func))
    return emitOpError() << "'" << getCallee()
                         << "' is not marked 'fakv.kernel'";
  TypeRange params = func.getArgumentTypes();
  if (params.size() != getArgs().size())
    return emitOpError() << "kernel '" << getCallee() << "' takes "
                         << params.size() << " arguments, got "
                         << getArgs().size();
  for (auto [i, p, a] : llvm::enumerate(params, getArgs().getTypes()))
    if (p != a)
      return emitOpError() << "argument " << i << " has type " << a
                           << " but kernel '" << getCallee() << "' expects "
                           << p;
  return success();
}
