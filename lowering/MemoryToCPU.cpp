//===- MemoryToCPU.cpp - fakv memory ops on the host ----------------------===//
//
// fakv.load / fakv.store / fakv.paged_load as tensor.generate of guarded
// llvm.load and loops of guarded llvm.store: elements outside the bounds or
// the mask are `other` (not read); a page outside the cache reads nothing
// (its rows are zero) and is reported when the op names an error word.
//
//===----------------------------------------------------------------------===//

#include "lowering/CPUCodegen.h"
#include "lowering/PointerLowering.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::cpu;

namespace {

/// Linear element index and validity of tile index `ivs` of a strided access.
std::pair<Value, Value> stridedIndex(ImplicitLocOpBuilder &b, ValueRange ivs,
                                     ValueRange offsets, ValueRange strides,
                                     ValueRange bounds, Value mask) {
  Value lin = cstI64(b, 0);
  Value valid = arith::ConstantIntOp::create(b, 1, 1);
  for (auto [d, iv] : llvm::enumerate(ivs)) {
    Value pos = arith::AddIOp::create(b, offsets[d], indexToI32(b, iv));
    lin = arith::AddIOp::create(
        b, lin, arith::MulIOp::create(b, i32ToI64(b, pos), strides[d]));
    if (!bounds.empty()) {
      Value lo = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, pos,
                                       cstI32(b, 0));
      Value hi = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, pos,
                                       bounds[d]);
      valid = arith::AndIOp::create(b, valid, arith::AndIOp::create(b, lo, hi));
    }
  }
  if (mask)
    valid = arith::AndIOp::create(b, valid,
                                  tensor::ExtractOp::create(b, mask, ivs));
  return {lin, valid};
}

struct LoadLowering : OpConversionPattern<LoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type et = op.getType().getElementType();
    Value r = generate(b, op.getType(), [&](ImplicitLocOpBuilder &ib,
                                            ValueRange ivs) -> Value {
      auto [lin, valid] =
          stridedIndex(ib, ivs, adaptor.getOffsets(), adaptor.getStrides(),
                       adaptor.getBounds(), adaptor.getMask());
      return select(
          ib, valid,
          [&](ImplicitLocOpBuilder &tb) -> Value {
            return LLVM::LoadOp::create(
                tb, et, elementAddress(tb, adaptor.getPtr(), lin, et));
          },
          [&](ImplicitLocOpBuilder &eb) -> Value {
            return adaptor.getOther() ? adaptor.getOther() : zeroOf(eb, et);
          });
    });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Loops over every index of `shape`, calling `body` with the indices.
void forEachIndex(ImplicitLocOpBuilder &b, ArrayRef<int64_t> shape,
                  function_ref<void(ImplicitLocOpBuilder &, ValueRange)> body) {
  SmallVector<Value> lbs(shape.size(), cstIndex(b, 0));
  SmallVector<Value> ubs, steps(shape.size(), cstIndex(b, 1));
  for (int64_t s : shape)
    ubs.push_back(cstIndex(b, s));
  scf::buildLoopNest(b, b.getLoc(), lbs, ubs, steps,
                     [&](OpBuilder &ob, Location loc, ValueRange ivs) {
                       ImplicitLocOpBuilder ib(loc, ob);
                       body(ib, ivs);
                     });
}

struct StoreLowering : OpConversionPattern<StoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type et = op.getValue().getType().getElementType();
    forEachIndex(b, op.getValue().getType().getShape(),
                 [&](ImplicitLocOpBuilder &ib, ValueRange ivs) {
                   auto [lin, valid] = stridedIndex(
                       ib, ivs, adaptor.getOffsets(), adaptor.getStrides(),
                       adaptor.getBounds(), adaptor.getMask());
                   auto ifOp = scf::IfOp::create(ib, valid, false);
                   ImplicitLocOpBuilder tb = ImplicitLocOpBuilder::atBlockBegin(
                       ib.getLoc(), &ifOp.getThenRegion().front());
                   Value v = tensor::ExtractOp::create(tb, adaptor.getValue(), ivs);
                   LLVM::StoreOp::create(
                       tb, v, elementAddress(tb, adaptor.getPtr(), lin, et));
                 });
    rewriter.eraseOp(op);
    return success();
  }
};

struct PagedLoadLowering : OpConversionPattern<PagedLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PagedLoadOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType type = op.getType();
    Type et = type.getElementType();
    // Element offset of the start of each tile row (page lookup done once per
    // row), or -1 for rows past the valid length (or past a contiguous
    // cache's page).
    auto rowType = RankedTensorType::get({type.getDimSize(0)}, b.getI64Type());
    Value rowsRead = PagedLoadOp::rowsRead(b, op.getLoc(), a.getValid(), a.getPage(),
                                           a.getLeftpad(), a.getPageSize());
    Value rowBase = generate(b, rowType, [&](ImplicitLocOpBuilder &ib,
                                             ValueRange ivs) -> Value {
      Value r = arith::AddIOp::create(ib, a.getRow(), indexToI32(ib, ivs[0]));
      Value pos = a.getLeftpad()
                      ? Value(arith::AddIOp::create(ib, r, a.getLeftpad()))
                      : r;
      // (A negative position is outside the op's contract: read as nothing
      // here rather than before the page, or before the table. A row past
      // 2^31 - 1 wraps negative: it is none either, not one below `valid`
      // whose position wrapped back into the cache.)
      Value valid = arith::AndIOp::create(
          ib,
          arith::AndIOp::create(
              ib, arith::CmpIOp::create(ib, arith::CmpIPredicate::slt, r, rowsRead),
              arith::CmpIOp::create(ib, arith::CmpIPredicate::sge, r, a.getRow())),
          arith::CmpIOp::create(ib, arith::CmpIPredicate::sge, pos,
                                arith::ConstantIntOp::create(ib, 0, 32)));
      return select(
          ib, valid,
          [&](ImplicitLocOpBuilder &tb) -> Value {
            Value pageIdx = arith::DivSIOp::create(tb, pos, a.getPageSize());
            Value offset = arith::RemSIOp::create(tb, pos, a.getPageSize());
            Value page;
            if (a.getTable())
              page = LLVM::LoadOp::create(
                  tb, tb.getI32Type(),
                  elementAddress(tb, a.getTable(), i32ToI64(tb, pageIdx),
                                 tb.getI32Type()));
            else
              page = arith::AddIOp::create(tb, a.getPage(), pageIdx);
            // A page outside the cache reads nothing (rows of zeros) and
            // is reported.
            Value outside = arith::CmpIOp::create(tb, arith::CmpIPredicate::uge,
                                                  page, a.getNumPages());
            if (a.getError())
              reportIf(tb, tb.getLoc(), a.getError(), outside, a.getErrorCode());
            Value base = arith::MulIOp::create(tb, i32ToI64(tb, page),
                                               a.getPageStride());
            base = arith::AddIOp::create(
                tb, base,
                arith::MulIOp::create(tb, i32ToI64(tb, offset),
                                      a.getRowStride()));
            base = arith::AddIOp::create(
                tb, base,
                arith::MulIOp::create(tb, i32ToI64(tb, a.getHead()),
                                      a.getHeadStride()));
            return arith::SelectOp::create(tb, outside, cstI64(tb, -1), base);
          },
          [&](ImplicitLocOpBuilder &eb) -> Value { return cstI64(eb, -1); });
    });
    Value r = generate(b, type, [&](ImplicitLocOpBuilder &ib,
                                    ValueRange ivs) -> Value {
      Value base = tensor::ExtractOp::create(ib, rowBase, ivs[0]);
      Value valid = arith::CmpIOp::create(ib, arith::CmpIPredicate::sge, base,
                                          cstI64(ib, 0));
      if (a.getChannels())
        valid = arith::AndIOp::create(
            ib, valid,
            arith::CmpIOp::create(ib, arith::CmpIPredicate::slt,
                                  indexToI32(ib, ivs[1]), a.getChannels()));
      return select(
          ib, valid,
          [&](ImplicitLocOpBuilder &tb) -> Value {
            Value idx = arith::AddIOp::create(tb, base, indexToI64(tb, ivs[1]));
            return LLVM::LoadOp::create(
                tb, et, elementAddress(tb, a.getCache(), idx, et));
          },
          [&](ImplicitLocOpBuilder &eb) -> Value { return zeroOf(eb, et); });
    });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// The CPU runs the programs of a launch one after the other, on one
/// thread: a load, an add and a store are the atomic add.
struct AtomicAddLowering : OpConversionPattern<AtomicAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AtomicAddOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value index = arith::ExtSIOp::create(b, b.getI64Type(), a.getIndex());
    Value addr = elementAddress(b, b.getLoc(), a.getPtr(), index, b.getI32Type());
    Value old = LLVM::LoadOp::create(b, b.getI32Type(), addr);
    LLVM::StoreOp::create(b, arith::AddIOp::create(b, old, a.getValue()), addr);
    rewriter.replaceOp(op, old);
    return success();
  }
};

/// The CPU runs a call's kernels one after the other: nothing to wait for,
/// nothing to release early.
template <typename Op>
struct EraseLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void cpu::populateMemoryToCPUPatterns(const TypeConverter &converter,
                                      RewritePatternSet &patterns) {
  patterns.add<LoadLowering, StoreLowering, PagedLoadLowering, AtomicAddLowering,
               EraseLowering<DependencyWaitOp>, EraseLowering<LaunchDependentsOp>>(
      converter, patterns.getContext());
}
