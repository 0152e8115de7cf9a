//===- MemoryToNVVM.cpp - global loads and stores ---------------------------===//
//
// fakv.load / fakv.store of tiles: each thread's elements in vectors of up
// to 16 bytes where its registers hold consecutive elements; a vector that
// markAlignedAccesses proves aligned is one access, others are checked at
// run time (one access when aligned, element by element otherwise); an
// aligned vector whose last bound is a multiple of its width is in or out
// of bounds as a whole (its first element decides).
// fakv.paged_load must have been pipelined (fakv-pipeline). The pass
// fakvgpu-mark-aligned runs markAlignedAccesses before the conversion.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/Passes.h"
#include "lowering/PointerLowering.h"
#include "passes/Divisibility.h"

#include "dialect/FakvDialect.h"
#include "dialect/FakvGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVGPUMARKALIGNED
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

namespace {

//===----------------------------------------------------------------------===//
// Global loads and stores
//===----------------------------------------------------------------------===//

/// Element offset (i64) and validity (i1) of register `reg` of a strided
/// access.
std::pair<Value, Value> stridedElement(OpBuilder &b, Location loc,
                                       ArrayRef<Value> coords,
                                       ValueRange offsets, ValueRange strides,
                                       ValueRange bounds) {
  Value lin = i64(b, loc, 0);
  Value valid = arith::ConstantIntOp::create(b, loc, 1, 1);
  for (unsigned d = 0; d < coords.size(); ++d) {
    Value pos = arith::AddIOp::create(b, loc, offsets[d], coords[d]);
    Value pos64 = arith::ExtSIOp::create(b, loc, b.getI64Type(), pos);
    lin = arith::AddIOp::create(b, loc, lin,
                                arith::MulIOp::create(b, loc, pos64, strides[d]));
    if (!bounds.empty()) {
      Value lo = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, pos,
                                       i32(b, loc, 0));
      Value hi = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, pos,
                                       bounds[d]);
      valid = arith::AndIOp::create(b, loc, valid,
                                    arith::AndIOp::create(b, loc, lo, hi));
    }
  }
  return {lin, valid};
}

/// How many leading registers of `l` hold consecutive elements of the last
/// dimension (a power of two, at most `maxElems`): the width of a vector
/// access.
int64_t contiguousRegs(const LinearLayout &l, int64_t maxElems) {
  int64_t v = 1;
  for (unsigned b = 0; b < l.regs.size() && v < maxElems; ++b) {
    fakvgpu::Coord expect(l.rank, 0);
    expect[l.rank - 1] = v;
    if (l.regs[b] != expect)
      break;
    v *= 2;
  }
  return v;
}

/// The vector width for a strided access of a tile in layout `l`: 16 bytes
/// at most, 1 unless the last stride is the constant 1 and there is no mask.
int64_t vectorWidth(const LinearLayout &l, Type et, Value lastStride,
                    Value mask) {
  if (mask || !matchPattern(lastStride, m_One()))
    return 1;
  int64_t bytes = std::max<int64_t>(1, et.getIntOrFloatBitWidth() / 8);
  return contiguousRegs(l, 16 / bytes);
}

/// For each group of `width` registers of a strided access: the element
/// offset and validity of its first and last element, and whether the
/// whole group can move as one aligned vector (both valid and aligned).
struct VectorGroup {
  Value first, firstValid, whole;
};

VectorGroup vectorGroup(OpBuilder &b, Location loc, const LinearLayout &l,
                        ArrayRef<Value> base, int64_t reg, int64_t width,
                        Value ptr, Type et, ValueRange offsets,
                        ValueRange strides, ValueRange bounds,
                        bool knownAligned) {
  SmallVector<Value> c0 = elementCoords(b, loc, l, base, reg);
  auto [lin0, valid0] = stridedElement(b, loc, c0, offsets, strides, bounds);
  if (width == 1)
    return {lin0, valid0, Value()};
  SmallVector<Value> c1 = elementCoords(b, loc, l, base, reg + width - 1);
  auto [lin1, valid1] = stridedElement(b, loc, c1, offsets, strides, bounds);
  if (knownAligned)
    return {lin0, valid0, arith::AndIOp::create(b, loc, valid0, valid1)};
  int64_t bytes = width * et.getIntOrFloatBitWidth() / 8;
  Value addr = LLVM::PtrToIntOp::create(
      b, loc, b.getI64Type(), elementAddress(b, loc, ptr, lin0, et));
  Value aligned = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::AndIOp::create(b, loc, addr, i64(b, loc, bytes - 1)),
      i64(b, loc, 0));
  Value whole = arith::AndIOp::create(
      b, loc, arith::AndIOp::create(b, loc, valid0, valid1), aligned);
  return {lin0, valid0, whole};
}

/// Whether every vector of `width` elements of a strided access is
/// aligned, whatever the run-time values: the pointer, the strides but the
/// last (1) and the last offset are known multiples (passes/Divisibility.h),
/// and the layout starts each group of `width` registers at a multiple of
/// `width` in the last dimension.
bool provablyAligned(const LinearLayout &l, int64_t width, Type et, Value ptr,
                     ValueRange offsets, ValueRange strides) {
  int64_t elemBytes = std::max<int64_t>(1, et.getIntOrFloatBitWidth() / 8);
  int64_t bytes = width * elemBytes;
  if (knownAlignment(ptr) % bytes)
    return false;
  unsigned last = strides.size() - 1;
  for (unsigned d = 0; d < last; ++d)
    if ((knownDivisor(strides[d]) * elemBytes) % bytes)
      return false;
  if (knownDivisor(offsets[last]) % width)
    return false;
  auto starts = [&](ArrayRef<fakvgpu::Coord> bases) {
    return llvm::all_of(bases, [&](const fakvgpu::Coord &c) {
      return c[l.rank - 1] % width == 0;
    });
  };
  return starts(ArrayRef(l.regs).drop_front(llvm::Log2_64(width))) &&
         starts(l.lanes) && starts(l.warps);
}


struct LoadLowering : OpConversionPattern<LoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoadOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LinearLayout l = layoutOf(op.getType());
    Type et = op.getType().getElementType();
    SmallVector<Value> base =
        laneWarpCoords(rewriter, loc, l, roleThreadId(rewriter, loc, op));
    int64_t width = vectorWidth(l, et, op.getStrides().back(), a.getMask());
    auto otherValue = [&](OpBuilder &eb) -> Value {
      return a.getOther() ? a.getOther()
                          : Value(arith::ConstantOp::create(eb, loc, et,
                                                            eb.getZeroAttr(et)));
    };
    // One element, guarded.
    auto scalar = [&](OpBuilder &sb, int64_t r) -> Value {
      SmallVector<Value> c = elementCoords(sb, loc, l, base, r);
      auto [lin, valid] = stridedElement(sb, loc, c, a.getOffsets(),
                                         a.getStrides(), a.getBounds());
      if (a.getMask())
        valid = arith::AndIOp::create(sb, loc, valid,
                                      vecElement(sb, loc, a.getMask(), r));
      return ifValue(
          sb, loc, valid, et,
          [&](OpBuilder &tb) -> Value {
            return LLVM::LoadOp::create(
                tb, loc, et, elementAddress(tb, loc, a.getPtr(), lin, et));
          },
          otherValue);
    };
    SmallVector<Value> out;
    for (int64_t r = 0; r < l.numRegs(); r += width) {
      if (width == 1) {
        out.push_back(scalar(rewriter, r));
        continue;
      }
      VectorGroup g = vectorGroup(rewriter, loc, l, base, r, width, a.getPtr(),
                                  et, a.getOffsets(), a.getStrides(),
                                  a.getBounds(), op->hasAttr(kAlignedAttr));
      auto vt = VectorType::get({width}, et);
      // Wholly inside or outside the bounds (and aligned): no fallback.
      bool whole = op->hasAttr(kWholeVectorsAttr) && op->hasAttr(kAlignedAttr);
      Value v = ifValue(
          rewriter, loc, whole ? g.firstValid : g.whole, vt,
          [&](OpBuilder &tb) -> Value {
            return LLVM::LoadOp::create(
                tb, loc, vt, elementAddress(tb, loc, a.getPtr(), g.first, et),
                width * et.getIntOrFloatBitWidth() / 8);
          },
          [&](OpBuilder &eb) -> Value {
            SmallVector<Value> parts;
            for (int64_t j = 0; j < width; ++j)
              parts.push_back(whole ? otherValue(eb) : scalar(eb, r + j));
            return fromElements(eb, loc, vt, parts);
          });
      for (int64_t j = 0; j < width; ++j)
        out.push_back(vecElement(rewriter, loc, v, j));
    }
    rewriter.replaceOp(op, fromElements(rewriter, loc,
                                        getTypeConverter()->convertType(op.getType()),
                                        out));
    return success();
  }
};

struct StoreLowering : OpConversionPattern<StoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StoreOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LinearLayout l = layoutOf(op.getValue().getType());
    Type et = op.getValue().getType().getElementType();
    SmallVector<Value> base =
        laneWarpCoords(rewriter, loc, l, roleThreadId(rewriter, loc, op));
    int64_t width = vectorWidth(l, et, op.getStrides().back(), a.getMask());
    auto scalar = [&](OpBuilder &sb, int64_t r) {
      SmallVector<Value> c = elementCoords(sb, loc, l, base, r);
      auto [lin, valid] = stridedElement(sb, loc, c, a.getOffsets(),
                                         a.getStrides(), a.getBounds());
      if (a.getMask())
        valid = arith::AndIOp::create(sb, loc, valid,
                                      vecElement(sb, loc, a.getMask(), r));
      auto ifOp = scf::IfOp::create(sb, loc, valid, false);
      OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
      LLVM::StoreOp::create(tb, loc, vecElement(tb, loc, a.getValue(), r),
                            elementAddress(tb, loc, a.getPtr(), lin, et));
    };
    for (int64_t r = 0; r < l.numRegs(); r += width) {
      if (width == 1) {
        scalar(rewriter, r);
        continue;
      }
      VectorGroup g = vectorGroup(rewriter, loc, l, base, r, width, a.getPtr(),
                                  et, a.getOffsets(), a.getStrides(),
                                  a.getBounds(), op->hasAttr(kAlignedAttr));
      bool whole = op->hasAttr(kWholeVectorsAttr) && op->hasAttr(kAlignedAttr);   // no fallback
      auto ifOp = scf::IfOp::create(rewriter, loc, whole ? g.firstValid : g.whole, !whole);
      OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
      SmallVector<int64_t> lanes;
      for (int64_t j = 0; j < width; ++j)
        lanes.push_back(r + j);
      Value v = vector::ShuffleOp::create(tb, loc, a.getValue(), a.getValue(), lanes);
      LLVM::StoreOp::create(tb, loc, v, elementAddress(tb, loc, a.getPtr(), g.first, et),
                            width * et.getIntOrFloatBitWidth() / 8);
      if (whole)
        continue;
      OpBuilder eb = OpBuilder::atBlockBegin(&ifOp.getElseRegion().front());
      for (int64_t j = 0; j < width; ++j)
        scalar(eb, r + j);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct PagedLoadLowering : OpConversionPattern<PagedLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PagedLoadOp op, OpAdaptor,
                  ConversionPatternRewriter &) const override {
    return op.emitOpError()
           << "on the GPU is a dot's B operand (K or V) copied into shared "
              "memory by fakv-pipeline: use it as fakv.dot's B, in an scf.for "
              "that loads one tile per iteration, at rows iv * tile_rows";
  }
};

/// Once per program: the role's threads meet (their writes before it happen
/// before the add), thread 0 adds at device scope and leaves the old value
/// in the role's scratch word, they meet again and all read it (thread 0's
/// acquire, then the barrier, orders their later reads), and meet a third
/// time before the scratch is reused.
struct AtomicAddLowering : OpConversionPattern<AtomicAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AtomicAddOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (failed(requirePlacement(op)))
      return failure();
    Value word = smemOf(rewriter, loc, op);
    syncRole(rewriter, loc, op);
    Value leader = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                         roleThreadId(rewriter, loc, op), i32(rewriter, loc, 0));
    auto ifOp = scf::IfOp::create(rewriter, loc, leader, /*withElseRegion=*/false);
    OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
    Value index = arith::ExtSIOp::create(tb, loc, tb.getI64Type(), a.getIndex());
    Value addr = elementAddress(tb, loc, a.getPtr(), index, tb.getI32Type());
    // Inline PTX: LLVM 22's NVPTX drops the ordering of an atomicrmw (a
    // relaxed `atom`).
    Value old = LLVM::InlineAsmOp::create(
                    tb, loc, tb.getI32Type(), ValueRange{addr, a.getValue()},
                    tb.getStringAttr("atom.acq_rel.gpu.global.add.u32 $0, [$1], $2;"),
                    tb.getStringAttr("=r,l,r,~{memory}"), tb.getUnitAttr(), UnitAttr(),
                    LLVM::TailCallKindAttr(),
                    LLVM::AsmDialectAttr::get(tb.getContext(), LLVM::AsmDialect::AD_ATT),
                    ArrayAttr())
                    .getResult(0);
    LLVM::StoreOp::create(tb, loc, old, word, /*alignment=*/4);
    syncRole(rewriter, loc, op);
    Value result = LLVM::LoadOp::create(rewriter, loc, rewriter.getI32Type(), word, /*alignment=*/4);
    syncRole(rewriter, loc, op);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// griddepcontrol.wait (fakv.dependency_wait) or .launch_dependents
/// (fakv.launch_dependents) where the kernel says, as fakvgpu-dependent-launch
/// would put them at its top (it then adds none).
template <typename Op>
struct GridDependencyLowering : OpConversionPattern<Op> {
  GridDependencyLowering(const TypeConverter &converter, MLIRContext *context, StringRef ptx)
      : OpConversionPattern<Op>(converter, context), ptx(ptx) {}
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    griddepcontrol(rewriter, op.getLoc(), ptx);
    rewriter.eraseOp(op);
    return success();
  }
  StringRef ptx;
};

} // namespace

/// Marks the loads and stores whose vectors are provably aligned, before
/// the conversion (which then needs no address check for them).
void codegen::markAlignedAccesses(func::FuncOp func) {
  auto mark = [](Operation *op, RankedTensorType tile, Value ptr,
                 ValueRange offsets, ValueRange strides, ValueRange bounds, Value mask) {
    if (!isLinearTile(tile))
      return;
    LinearLayout l = layoutOf(tile);
    int64_t width = vectorWidth(l, tile.getElementType(), strides.back(), mask);
    if (width > 1 && provablyAligned(l, width, tile.getElementType(), ptr,
                                     offsets, strides)) {
      op->setAttr(kAlignedAttr, UnitAttr::get(op->getContext()));
      // A vector starts at a multiple of its width in the last dimension
      // (provablyAligned); with the last bound a multiple too, its first and
      // last elements are both inside the bounds or both outside.
      if (bounds.empty() || knownDivisor(bounds.back()) % width == 0)
        op->setAttr(kWholeVectorsAttr, UnitAttr::get(op->getContext()));
    }
  };
  func.walk([&](LoadOp op) {
    mark(op, op.getType(), op.getPtr(), op.getOffsets(), op.getStrides(),
         op.getBounds(), op.getMask());
  });
  func.walk([&](StoreOp op) {
    mark(op, op.getValue().getType(), op.getPtr(), op.getOffsets(),
         op.getStrides(), op.getBounds(), op.getMask());
  });
}

void codegen::populateMemoryToNVVMPatterns(const TypeConverter &converter,
                                           RewritePatternSet &patterns) {
  patterns.add<LoadLowering, StoreLowering, PagedLoadLowering, AtomicAddLowering>(
      converter, patterns.getContext());
  patterns.add<GridDependencyLowering<DependencyWaitOp>>(converter, patterns.getContext(),
                                                         kGridDependencyWait);
  patterns.add<GridDependencyLowering<LaunchDependentsOp>>(converter, patterns.getContext(),
                                                           kLaunchDependents);
}

namespace {
struct MarkAlignedPass : public fakv::impl::FakvGPUMarkAlignedBase<MarkAlignedPass> {
  void runOnOperation() override {
    if (failed(forEachKernelWithLayouts(getOperation(), markAlignedAccesses)))
      signalPassFailure();
  }
};
} // namespace
