//===- FakvGPUToNVVM.cpp - fakv/fakvgpu kernels to a gpu.module of NVVM ---===//
//
// Tiles become per-thread values: a tile in a #fakvgpu.linear layout is a
// vector of the elements its thread holds (register order), a shared tile
// its shared-memory address. Ops become the per-thread code for their
// layouts; rings, barriers and copies become mbarrier, TMA and cp.async;
// fakvgpu.warp_specialize becomes a branch on the warpgroup. Kernels end up
// as gpu.func in `gpu.module @fakv_kernels`, with what a launch needs
// recorded on them (threads, shared memory, tensor-map arguments).
// Matmuls are in DotToNVVM.cpp. Test: test/lowering/fakvgpu-to-nvvm.mlir.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/Passes.h"
#include "lowering/PointerLowering.h"
#include "passes/Divisibility.h"

#include "dialect/FakvDialect.h"
#include "dialect/FakvGPUDialect.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_CONVERTFAKVGPUTONVVM
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

namespace {

Type ptrType(MLIRContext *ctx, unsigned space) {
  return LLVM::LLVMPointerType::get(ctx, space);
}

bool isLinearTile(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa_and_present<fakvgpu::LinearAttr>(rt.getEncoding());
}

Value vecElement(OpBuilder &b, Location loc, Value vec, int64_t i) {
  return vector::ExtractOp::create(b, loc, vec, ArrayRef<int64_t>{i});
}

Value fromElements(OpBuilder &b, Location loc, Type vecType,
                   ArrayRef<Value> elems) {
  return vector::FromElementsOp::create(b, loc, cast<VectorType>(vecType),
                                        elems);
}

/// `if (cond) then() -> T else otherwise()`.
Value ifValue(OpBuilder &b, Location loc, Value cond, Type t,
              function_ref<Value(OpBuilder &)> then,
              function_ref<Value(OpBuilder &)> otherwise) {
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{t}, cond, true);
  {
    OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
    scf::YieldOp::create(tb, loc, then(tb));
  }
  {
    OpBuilder eb = OpBuilder::atBlockBegin(&ifOp.getElseRegion().front());
    scf::YieldOp::create(eb, loc, otherwise(eb));
  }
  return ifOp.getResult(0);
}

//===----------------------------------------------------------------------===//
// Program structure and scalars
//===----------------------------------------------------------------------===//

struct ProgramIdLowering : OpConversionPattern<ProgramIdOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ProgramIdOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto dim = static_cast<gpu::Dimension>(op.getAxis());
    Value id = gpu::BlockIdOp::create(rewriter, op.getLoc(), dim);
    rewriter.replaceOpWithNewOp<arith::IndexCastOp>(op, rewriter.getI32Type(), id);
    return success();
  }
};

struct NumProgramsLowering : OpConversionPattern<NumProgramsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NumProgramsOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto dim = static_cast<gpu::Dimension>(op.getAxis());
    Value n = gpu::GridDimOp::create(rewriter, op.getLoc(), dim);
    rewriter.replaceOpWithNewOp<arith::IndexCastOp>(op, rewriter.getI32Type(), n);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Tile construction and elementwise math
//===----------------------------------------------------------------------===//

struct ArangeLowering : OpConversionPattern<ArangeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ArangeOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    LinearLayout l = layoutOf(op.getType());
    auto vt = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    Value base = laneWarpCoords(rewriter, loc, l,
                                roleThreadId(rewriter, loc, op))[0];
    base = arith::AddIOp::create(rewriter, loc, base,
                                 i32(rewriter, loc, op.getStart()));
    SmallVector<int32_t> offsets;
    for (int64_t r = 0; r < l.numRegs(); ++r)
      offsets.push_back(l.regCoord(r)[0]);
    Value cst = arith::ConstantOp::create(
        rewriter, loc, vt, DenseElementsAttr::get(vt, ArrayRef<int32_t>(offsets)));
    Value splat = vector::BroadcastOp::create(rewriter, loc, vt, base);
    rewriter.replaceOpWithNewOp<arith::AddIOp>(op, splat, cst);
    return success();
  }
};

struct SplatLowering : OpConversionPattern<SplatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SplatOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Type vt = getTypeConverter()->convertType(op.getType());
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, vt, a.getValue());
    return success();
  }
};

/// Tile constants (splats) become vector constants.
struct TileConstantLowering : OpConversionPattern<arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isLinearTile(op.getType()))
      return failure();
    auto dense = dyn_cast<SplatElementsAttr>(op.getValue());
    if (!dense)
      return rewriter.notifyMatchFailure(op, "only splat tile constants");
    auto vt = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, vt, DenseElementsAttr::get(vt, dense.getSplatValue<Attribute>()));
    return success();
  }
};

/// Same vector in and out: the layouts make the register orders agree.
template <typename OpT>
struct IdentityLowering : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Value src = a.getSrc();
    Type want = this->getTypeConverter()->convertType(op.getType());
    if (src.getType() != want)
      return op.emitOpError() << "layouts of source and result do not match "
                                 "register for register";
    rewriter.replaceOp(op, src);
    return success();
  }
};

struct BroadcastLowering : OpConversionPattern<BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    LinearLayout dst = layoutOf(op.getType()), src = layoutOf(op.getSrc().getType());
    ArrayRef<int64_t> srcShape = op.getSrc().getType().getShape();
    SmallVector<int64_t> mask;
    for (int64_t r = 0; r < dst.numRegs(); ++r) {
      fakvgpu::Coord c = dst.regCoord(r);
      for (unsigned d = 0; d < c.size(); ++d)
        if (srcShape[d] == 1)
          c[d] = 0;
      std::optional<int64_t> s = src.regOf(c);
      if (!s)
        return op.emitOpError() << "source layout does not hold the elements "
                                   "the result's registers need";
      mask.push_back(*s);
    }
    rewriter.replaceOpWithNewOp<vector::ShuffleOp>(op, a.getSrc(), a.getSrc(),
                                                   mask);
    return success();
  }
};

struct CastLowering : OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto vt = cast<VectorType>(getTypeConverter()->convertType(op.getType()));
    unsigned wf = op.getSrc().getType().getElementTypeBitWidth();
    unsigned wt = op.getType().getElementTypeBitWidth();
    Value v = a.getSrc();
    if (wf == wt) {
      auto f32 = VectorType::get(vt.getShape(), rewriter.getF32Type());
      v = arith::ExtFOp::create(rewriter, loc, f32, v);
      wf = 32;
    }
    if (wf < wt)
      rewriter.replaceOpWithNewOp<arith::ExtFOp>(op, vt, v);
    else
      rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, vt, v);
    return success();
  }
};

/// arith and math ops on tiles: the same op on the per-thread vectors.
struct ElementwiseLowering : ConversionPattern {
  ElementwiseLowering(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), 1, ctx) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
    if ((ns != "arith" && ns != "math") || isa<arith::ConstantOp>(op) ||
        llvm::none_of(op->getResultTypes(), isLinearTile))
      return failure();
    if (isa<math::Exp2Op, math::ExpOp, math::Log2Op, math::LogOp,
            math::TanhOp>(op))
      return failure(); // MathApproxLowering
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertTypes(op->getResultTypes(), types)))
      return failure();
    OperationState state(op->getLoc(), op->getName().getStringRef(), operands,
                         types, op->getAttrs());
    rewriter.replaceOp(op, rewriter.create(state)->getResults());
    return success();
  }
};

/// exp2/exp/log2/log/tanh on tiles: the GPU's approximate instructions,
/// element by element.
struct MathApproxLowering : ConversionPattern {
  MathApproxLowering(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), 2, ctx) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<math::Exp2Op, math::ExpOp, math::Log2Op, math::LogOp,
             math::TanhOp>(op) ||
        !isLinearTile(op->getResult(0).getType()))
      return failure();
    Location loc = op->getLoc();
    auto vt = cast<VectorType>(
        getTypeConverter()->convertType(op->getResult(0).getType()));
    if (!vt.getElementType().isF32())
      return op->emitOpError() << "on the GPU takes f32 tiles";
    Type f32 = rewriter.getF32Type();
    auto call = [&](StringRef name, Value x) -> Value {
      return LLVM::CallIntrinsicOp::create(rewriter, loc, f32,
                                           rewriter.getStringAttr(name),
                                           ValueRange{x})
          .getResult(0);
    };
    auto cst = [&](double v) {
      return arith::ConstantFloatOp::create(rewriter, loc, rewriter.getF32Type(),
                                            APFloat(float(v)));
    };
    SmallVector<Value> out;
    for (int64_t i = 0; i < vt.getNumElements(); ++i) {
      Value x = vecElement(rewriter, loc, operands[0], i);
      Value y;
      if (isa<math::Exp2Op>(op))
        y = call("llvm.nvvm.ex2.approx.ftz.f", x);
      else if (isa<math::ExpOp>(op))
        y = call("llvm.nvvm.ex2.approx.ftz.f",
                 arith::MulFOp::create(rewriter, loc, x, cst(1.4426950408889634)));
      else if (isa<math::Log2Op>(op))
        y = call("llvm.nvvm.lg2.approx.ftz.f", x);
      else if (isa<math::LogOp>(op))
        y = arith::MulFOp::create(rewriter, loc,
                                  call("llvm.nvvm.lg2.approx.ftz.f", x),
                                  cst(0.6931471805599453));
      else // LLVM 22 has no NVVM tanh intrinsic: the PTX instruction.
        y = LLVM::InlineAsmOp::create(
                rewriter, loc, f32, ValueRange{x},
                rewriter.getStringAttr("tanh.approx.f32 $0, $1;"),
                rewriter.getStringAttr("=f,f"), UnitAttr(), UnitAttr(),
                LLVM::TailCallKindAttr(),
                LLVM::AsmDialectAttr::get(rewriter.getContext(),
                                          LLVM::AsmDialect::AD_ATT),
                ArrayAttr())
                .getResult(0);
      out.push_back(y);
    }
    rewriter.replaceOp(op, fromElements(rewriter, loc, vt, out));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Value combine(OpBuilder &b, Location loc, ReduceKind kind, Value x, Value y) {
  switch (kind) {
  case ReduceKind::sum:
    return arith::AddFOp::create(b, loc, x, y);
  case ReduceKind::max:
    return arith::MaximumFOp::create(b, loc, x, y);
  case ReduceKind::min:
    return arith::MinimumFOp::create(b, loc, x, y);
  }
  llvm_unreachable("reduce kind");
}

struct ReduceLowering : OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (!op.getType().getElementType().isF32())
      return op.emitOpError() << "on the GPU reduces f32 tiles";
    unsigned axis = op.getAxis();
    LinearLayout src = layoutOf(op.getSrc().getType());
    LinearLayout dst = layoutOf(op.getType());
    ReduceKind kind = op.getKind();

    // 1. Within the thread: registers that differ only along the axis.
    SmallVector<Value> acc(dst.numRegs());
    for (int64_t r = 0; r < src.numRegs(); ++r) {
      fakvgpu::Coord c = src.regCoord(r);
      c.erase(c.begin() + axis);
      std::optional<int64_t> d = dst.regOf(c);
      if (!d)
        return op.emitOpError() << "result layout is not the source's slice";
      Value x = vecElement(rewriter, loc, a.getSrc(), r);
      acc[*d] = acc[*d] ? combine(rewriter, loc, kind, acc[*d], x) : x;
    }
    // 2. Across the lanes that move along the axis: butterfly shuffles.
    Value full = i32(rewriter, loc, -1), clamp = i32(rewriter, loc, 31);
    for (unsigned bit = 0; bit < src.lanes.size(); ++bit) {
      if (!src.lanes[bit][axis])
        continue;
      for (Value &v : acc) {
        Value other = NVVM::ShflOp::create(
            rewriter, loc, rewriter.getF32Type(), full, v,
            i32(rewriter, loc, 1 << bit), clamp, NVVM::ShflKind::bfly,
            UnitAttr());
        v = combine(rewriter, loc, kind, v, other);
      }
    }
    // 3. Across the warps that move along the axis: through shared memory.
    SmallVector<unsigned> warpBits;
    for (unsigned bit = 0; bit < src.warps.size(); ++bit)
      if (src.warps[bit][axis])
        warpBits.push_back(bit);
    if (!warpBits.empty()) {
      int64_t k = int64_t(1) << warpBits.size();
      Value tid = roleThreadId(rewriter, loc, op);
      Value warp = arith::ShRUIOp::create(rewriter, loc, tid, i32(rewriter, loc, 5));
      Value slot = i32(rewriter, loc, 0);
      for (auto [i, bit] : llvm::enumerate(warpBits)) {
        Value set = arith::AndIOp::create(
            rewriter, loc,
            arith::ShRUIOp::create(rewriter, loc, warp, i32(rewriter, loc, bit)),
            i32(rewriter, loc, 1));
        slot = arith::OrIOp::create(
            rewriter, loc, slot,
            arith::ShLIOp::create(rewriter, loc, set, i32(rewriter, loc, i)));
      }
      SmallVector<Value> base = laneWarpCoords(rewriter, loc, dst, tid);
      ArrayRef<int64_t> shape = op.getType().getShape();
      Value scratch = smemOf(rewriter, loc, op);
      auto elementIndex = [&](int64_t reg) {
        SmallVector<Value> c = elementCoords(rewriter, loc, dst, base, reg);
        Value lin = i32(rewriter, loc, 0);
        for (unsigned d = 0; d < c.size(); ++d)
          lin = arith::AddIOp::create(
              rewriter, loc,
              arith::MulIOp::create(rewriter, loc, lin,
                                    i32(rewriter, loc, shape[d])),
              c[d]);
        return lin;
      };
      auto addr = [&](Value e, Value s) {
        Value idx = arith::AddIOp::create(
            rewriter, loc, arith::MulIOp::create(rewriter, loc, e, i32(rewriter, loc, k)), s);
        return addBytes(rewriter, loc, scratch,
                        arith::MulIOp::create(rewriter, loc, idx, i32(rewriter, loc, 4)));
      };
      syncRole(rewriter, loc, op);
      SmallVector<Value> elems;
      for (int64_t r = 0; r < dst.numRegs(); ++r) {
        elems.push_back(elementIndex(r));
        LLVM::StoreOp::create(rewriter, loc, acc[r], addr(elems[r], slot));
      }
      syncRole(rewriter, loc, op);
      for (int64_t r = 0; r < dst.numRegs(); ++r) {
        Value v;
        for (int64_t s = 0; s < k; ++s) {
          Value x = LLVM::LoadOp::create(rewriter, loc, rewriter.getF32Type(),
                                         addr(elems[r], i32(rewriter, loc, s)));
          v = v ? combine(rewriter, loc, kind, v, x) : x;
        }
        acc[r] = v;
      }
    }
    rewriter.replaceOp(op, fromElements(rewriter, loc,
                                        getTypeConverter()->convertType(op.getType()),
                                        acc));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Layout conversions
//===----------------------------------------------------------------------===//

struct ConvertLayoutLowering : OpConversionPattern<fakvgpu::ConvertLayoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fakvgpu::ConvertLayoutOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = cast<RankedTensorType>(op.getSrc().getType());
    auto dstType = cast<RankedTensorType>(op.getType());
    LinearLayout src = layoutOf(srcType);
    Value tid = roleThreadId(rewriter, loc, op);
    SmallVector<Value> base = laneWarpCoords(rewriter, loc, src, tid);
    Type et = srcType.getElementType();
    Value smem = smemOf(rewriter, loc, op);

    if (isa<fakvgpu::SharedAttr>(dstType.getEncoding())) {
      // Registers -> the swizzled operand layout; a tile of fewer than 64
      // rows is written once per 64 / rows copy (wgmma reads 64 rows).
      if (srcType.getRank() != 2 || et.getIntOrFloatBitWidth() != 16 ||
          srcType.getDimSize(1) % 64 != 0)
        return op.emitOpError() << "writes 2-D 16-bit tiles with a multiple of "
                                   "64 columns to shared memory";
      int64_t rows = srcType.getDimSize(0);
      int64_t stored = sharedRows(op.getResult());
      syncRole(rewriter, loc, op);
      for (int64_t r = 0; r < src.numRegs(); ++r) {
        SmallVector<Value> c = elementCoords(rewriter, loc, src, base, r);
        Value v = vecElement(rewriter, loc, a.getSrc(), r);
        for (int64_t copy = 0; copy < stored / rows; ++copy) {
          Value row = copy ? Value(arith::AddIOp::create(
                                 rewriter, loc, c[0], i32(rewriter, loc, copy * rows)))
                           : c[0];
          Value off = swizzledOffset(rewriter, loc, row, c[1], stored);
          LLVM::StoreOp::create(rewriter, loc, v, addBytes(rewriter, loc, smem, off));
        }
      }
      NVVM::FenceProxyOp::create(
          rewriter, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(rewriter.getContext(),
                                     NVVM::SharedSpace::shared_cta));
      syncRole(rewriter, loc, op);
      rewriter.replaceOp(op, smem);
      return success();
    }

    // Registers -> registers, through a row-major scratch buffer.
    LinearLayout dst = layoutOf(dstType);
    ArrayRef<int64_t> shape = srcType.getShape();
    bool isBool = et.isInteger(1);
    Type storeType = isBool ? rewriter.getI8Type() : et;
    int64_t bytes = std::max<int64_t>(1, storeType.getIntOrFloatBitWidth() / 8);
    auto address = [&](ArrayRef<Value> c) {
      Value lin = i32(rewriter, loc, 0);
      for (unsigned d = 0; d < c.size(); ++d)
        lin = arith::AddIOp::create(
            rewriter, loc,
            arith::MulIOp::create(rewriter, loc, lin, i32(rewriter, loc, shape[d])),
            c[d]);
      return addBytes(rewriter, loc, smem,
                      arith::MulIOp::create(rewriter, loc, lin, i32(rewriter, loc, bytes)));
    };
    syncRole(rewriter, loc, op);
    for (int64_t r = 0; r < src.numRegs(); ++r) {
      Value v = vecElement(rewriter, loc, a.getSrc(), r);
      if (isBool)
        v = arith::ExtUIOp::create(rewriter, loc, storeType, v);
      LLVM::StoreOp::create(rewriter, loc, v,
                            address(elementCoords(rewriter, loc, src, base, r)));
    }
    syncRole(rewriter, loc, op);
    SmallVector<Value> dbase = laneWarpCoords(rewriter, loc, dst, tid);
    SmallVector<Value> out;
    for (int64_t r = 0; r < dst.numRegs(); ++r) {
      Value v = LLVM::LoadOp::create(
          rewriter, loc, storeType,
          address(elementCoords(rewriter, loc, dst, dbase, r)));
      if (isBool)
        v = arith::TruncIOp::create(rewriter, loc, et, v);
      out.push_back(v);
    }
    rewriter.replaceOp(op, fromElements(rewriter, loc,
                                        getTypeConverter()->convertType(dstType),
                                        out));
    return success();
  }
};

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

/// Marks the loads and stores whose vectors are provably aligned, before
/// the conversion (which then needs no address check for them).
void markAlignedAccesses(func::FuncOp func) {
  auto mark = [](Operation *op, RankedTensorType tile, Value ptr,
                 ValueRange offsets, ValueRange strides, Value mask) {
    if (!isLinearTile(tile))
      return;
    LinearLayout l = layoutOf(tile);
    int64_t width = vectorWidth(l, tile.getElementType(), strides.back(), mask);
    if (width > 1 && provablyAligned(l, width, tile.getElementType(), ptr,
                                     offsets, strides))
      op->setAttr(kAlignedAttr, UnitAttr::get(op->getContext()));
  };
  func.walk([&](LoadOp op) {
    mark(op, op.getType(), op.getPtr(), op.getOffsets(), op.getStrides(),
         op.getMask());
  });
  func.walk([&](StoreOp op) {
    mark(op, op.getValue().getType(), op.getPtr(), op.getOffsets(),
         op.getStrides(), op.getMask());
  });
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
      Value v = ifValue(
          rewriter, loc, g.whole, vt,
          [&](OpBuilder &tb) -> Value {
            return LLVM::LoadOp::create(
                tb, loc, vt, elementAddress(tb, loc, a.getPtr(), g.first, et),
                width * et.getIntOrFloatBitWidth() / 8);
          },
          [&](OpBuilder &eb) -> Value {
            SmallVector<Value> parts;
            for (int64_t j = 0; j < width; ++j)
              parts.push_back(scalar(eb, r + j));
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
      auto ifOp = scf::IfOp::create(rewriter, loc, g.whole, true);
      OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
      SmallVector<int64_t> lanes;
      for (int64_t j = 0; j < width; ++j)
        lanes.push_back(r + j);
      Value v = vector::ShuffleOp::create(tb, loc, a.getValue(), a.getValue(), lanes);
      LLVM::StoreOp::create(tb, loc, v, elementAddress(tb, loc, a.getPtr(), g.first, et),
                            width * et.getIntOrFloatBitWidth() / 8);
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
           << "on the GPU is pipelined (fakv-pipeline): use it in an scf.for "
              "that loads one tile per iteration, at rows iv * tile_rows";
  }
};

//===----------------------------------------------------------------------===//
// Rings, barriers, asynchronous copies
//===----------------------------------------------------------------------===//

struct AllocRingLowering : OpConversionPattern<fakvgpu::AllocRingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fakvgpu::AllocRingOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, smemOf(rewriter, op.getLoc(), op));
    return success();
  }
};

struct AllocBarriersLowering : OpConversionPattern<fakvgpu::AllocBarriersOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fakvgpu::AllocBarriersOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value bars = smemOf(rewriter, loc, op);
    Value tid = roleThreadId(rewriter, loc, op);
    Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                        tid, i32(rewriter, loc, 0));
    auto ifOp = scf::IfOp::create(rewriter, loc, first, false);
    {
      OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
      for (int64_t i = 0; i < op.getType().getCount(); ++i)
        NVVM::MBarrierInitOp::create(
            tb, loc, addBytes(tb, loc, bars, i32(tb, loc, 8 * i)),
            i32(tb, loc, op.getArrivals()), Value());
    }
    NVVM::FenceMbarrierInitOp::create(rewriter, loc);
    syncRole(rewriter, loc, op);
    rewriter.replaceOp(op, bars);
    return success();
  }
};

Value barrierAt(OpBuilder &b, Location loc, Value bars, Value index) {
  return addBytes(b, loc, bars,
                  arith::MulIOp::create(b, loc, index, i32(b, loc, 8)));
}

Value slotAt(OpBuilder &b, Location loc, Value ring, fakvgpu::RingType type,
             Value slot) {
  int64_t bytes = sharedTileBytes(type.getTile(), type.getTile().getDimSize(0));
  return addBytes(b, loc, ring,
                  arith::MulIOp::create(b, loc, slot, i32(b, loc, bytes)));
}

struct RingViewLowering : OpConversionPattern<fakvgpu::RingViewOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fakvgpu::RingViewOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, slotAt(rewriter, op.getLoc(), a.getRing(),
                                  op.getRing().getType(), a.getSlot()));
    return success();
  }
};

struct WaitLowering : OpConversionPattern<fakvgpu::WaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fakvgpu::WaitOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NVVM::MBarrierTryWaitParityOp::create(
        rewriter, loc, barrierAt(rewriter, loc, a.getBarriers(), a.getIndex()),
        a.getPhase(), i32(rewriter, loc, 10000000));
    rewriter.eraseOp(op);
    return success();
  }
};

struct ArriveLowering : OpConversionPattern<fakvgpu::ArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fakvgpu::ArriveOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NVVM::MBarrierArriveOp::create(
        rewriter, loc, TypeRange{},
        barrierAt(rewriter, loc, a.getBarriers(), a.getIndex()), Value());
    rewriter.eraseOp(op);
    return success();
  }
};

struct ClearRowsLowering : OpConversionPattern<fakvgpu::ClearRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fakvgpu::ClearRowsOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType tile = op.getRing().getType().getTile();
    int64_t rows = tile.getDimSize(0), cols = tile.getDimSize(1);
    int64_t chunksPerRow = cols * tile.getElementTypeBitWidth() / 8 / 16;
    int64_t threads = roleOf(op).count;
    Value first = arith::MaxSIOp::create(rewriter, loc, a.getFirst(),
                                         i32(rewriter, loc, 0));
    Value partial = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt,
                                          first, i32(rewriter, loc, rows));
    auto ifOp = scf::IfOp::create(rewriter, loc, partial, false);
    OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
    Value slot = slotAt(tb, loc, a.getRing(), op.getRing().getType(), a.getSlot());
    Value tid = roleThreadId(tb, loc, op);
    auto zero = arith::ConstantOp::create(
        tb, loc, VectorType::get({4}, tb.getI32Type()),
        DenseElementsAttr::get(VectorType::get({4}, tb.getI32Type()),
                               ArrayRef<int32_t>{0, 0, 0, 0}));
    for (int64_t q0 = 0; q0 < rows * chunksPerRow; q0 += threads) {
      Value q = arith::AddIOp::create(tb, loc, tid, i32(tb, loc, q0));
      Value row = arith::DivUIOp::create(tb, loc, q, i32(tb, loc, chunksPerRow));
      Value col = arith::MulIOp::create(
          tb, loc, arith::RemUIOp::create(tb, loc, q, i32(tb, loc, chunksPerRow)),
          i32(tb, loc, 8));
      Value cond = arith::AndIOp::create(
          tb, loc,
          arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::sge, row, first),
          arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::slt, row,
                                i32(tb, loc, rows)));
      auto inner = scf::IfOp::create(tb, loc, cond, false);
      OpBuilder ib = OpBuilder::atBlockBegin(&inner.getThenRegion().front());
      LLVM::StoreOp::create(
          ib, loc, zero,
          addBytes(ib, loc, slot, swizzledOffset(ib, loc, row, col, rows)), 16);
    }
    NVVM::FenceProxyOp::create(
        tb, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(tb.getContext(), NVVM::SharedSpace::shared_cta));
    syncRole(tb, loc, op);
    rewriter.eraseOp(op);
    return success();
  }
};

/// A page outside [0, num_pages) is bad data (fakv.paged_load): it is
/// reported when the op says where; the copy reads nothing of it (TMA fills
/// out-of-range boxes with zeros; the gather masks it). Only pages of rows
/// that are read (`live`, or every row when null) are reported. Returns
/// whether the page is inside.
Value checkPage(OpBuilder &b, Location loc, fakvgpu::AsyncPagedLoadOp::Adaptor a,
                Value page, Value live = Value()) {
  Value outside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                        page, a.getNumPages());
  if (a.getError())
    reportIf(b, loc, a.getError(),
             live ? arith::AndIOp::create(b, loc, outside, live).getResult() : outside,
             a.getErrorCode());
  return arith::XOrIOp::create(b, loc, outside,
                               arith::ConstantIntOp::create(b, loc, 1, 1));
}

struct AsyncPagedLoadLowering : OpConversionPattern<fakvgpu::AsyncPagedLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fakvgpu::AsyncPagedLoadOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType tile = op.getRing().getType().getTile();
    int64_t rows = tile.getDimSize(0), cols = tile.getDimSize(1);
    int64_t elemBytes = tile.getElementTypeBitWidth() / 8;
    Value slot = slotAt(rewriter, loc, a.getRing(), op.getRing().getType(),
                        a.getSlot());
    Value bar = barrierAt(rewriter, loc, a.getSignal(), a.getSlot());
    Value tid = roleThreadId(rewriter, loc, op);
    Value pos = a.getLeftpad()
                    ? Value(arith::AddIOp::create(rewriter, loc, a.getRow(),
                                                  a.getLeftpad()))
                    : a.getRow();

    // addTensorMapArguments decided TMA before the conversion started.
    if (auto tma = op->getAttrOfType<IntegerAttr>("fakvgpu.tma_param")) {
      auto func = op->getParentOfType<FunctionOpInterface>();
      Value map = func.getArgument(tma.getInt());
      Value leader = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                           tid, i32(rewriter, loc, 0));
      auto ifOp = scf::IfOp::create(rewriter, loc, leader, false);
      OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
      Value page, offset;
      if (a.getTable()) {
        Value pageIdx = arith::DivSIOp::create(tb, loc, pos, a.getPageSize());
        offset = arith::RemSIOp::create(tb, loc, pos, a.getPageSize());
        Value idx = arith::ExtSIOp::create(tb, loc, tb.getI64Type(), pageIdx);
        page = LLVM::LoadOp::create(
            tb, loc, tb.getI32Type(),
            elementAddress(tb, loc, a.getTable(), idx, tb.getI32Type()));
      } else {
        page = a.getPage();
        offset = pos;
      }
      checkPage(tb, loc, a, page);
      NVVM::MBarrierArriveExpectTxOp::create(
          tb, loc, TypeRange{}, bar, i32(tb, loc, rows * cols * elemBytes),
          NVVM::MemScopeKind::CTA, false, Value());
      auto ptr7 = ptrType(tb.getContext(), 7);
      for (int64_t p = 0; p < cols / 64; ++p) {
        Value dst = addBytes(tb, loc, slot, i32(tb, loc, p * rows * 128));
        Value dst7 = LLVM::AddrSpaceCastOp::create(tb, loc, ptr7, dst);
        NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
            tb, loc, dst7, map,
            ValueRange{i32(tb, loc, 64 * p), a.getHead(), offset, page}, bar,
            ValueRange{}, Value(), Value(),
            NVVM::TMALoadModeAttr::get(tb.getContext(), NVVM::TMALoadMode::TILE),
            tb.getBoolAttr(false), NVVM::CTAGroupKindAttr(), Value());
      }
      rewriter.eraseOp(op);
      return success();
    }

    // cp.async gather: 16-byte chunks, rows past `valid` zero-filled.
    int64_t chunksPerRow = cols * elemBytes / 16;
    bool wholeChunks = op->hasAttr(fakvgpu::kWholeChunksAttr);
    int64_t threads = roleOf(op).count;
    Type et = tile.getElementType();
    for (int64_t q0 = 0; q0 < rows * chunksPerRow; q0 += threads) {
      Value q = arith::AddIOp::create(rewriter, loc, tid, i32(rewriter, loc, q0));
      Value inTile = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt,
                                           q, i32(rewriter, loc, rows * chunksPerRow));
      auto ifOp = scf::IfOp::create(rewriter, loc, inTile, false);
      OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
      Value r = arith::DivUIOp::create(tb, loc, q, i32(tb, loc, chunksPerRow));
      Value col = arith::MulIOp::create(
          tb, loc, arith::RemUIOp::create(tb, loc, q, i32(tb, loc, chunksPerRow)),
          i32(tb, loc, 16 / elemBytes));
      Value key = arith::AddIOp::create(tb, loc, a.getRow(), r);
      Value valid = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::slt, key,
                                          a.getValid());
      Value rowValid = valid;
      if (a.getChannels())
        valid = arith::AndIOp::create(
            tb, loc, valid,
            arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::slt, col,
                                  a.getChannels()));
      Value p = a.getLeftpad() ? Value(arith::AddIOp::create(tb, loc, key, a.getLeftpad()))
                               : key;
      Value pageIdx = arith::DivSIOp::create(tb, loc, p, a.getPageSize());
      Value offset = arith::RemSIOp::create(tb, loc, p, a.getPageSize());
      Value page;
      if (a.getTable()) {
        Value idx = arith::ExtSIOp::create(tb, loc, tb.getI64Type(), pageIdx);
        page = ifValue(
            tb, loc, rowValid, tb.getI32Type(),
            [&](OpBuilder &vb) -> Value {
              return LLVM::LoadOp::create(
                  vb, loc, vb.getI32Type(),
                  elementAddress(vb, loc, a.getTable(), idx, vb.getI32Type()));
            },
            [&](OpBuilder &eb) -> Value { return i32(eb, loc, 0); });
      } else {
        page = arith::AddIOp::create(tb, loc, a.getPage(), pageIdx);
      }
      Value rowOk = arith::AndIOp::create(tb, loc, rowValid, checkPage(tb, loc, a, page, rowValid));
      valid = arith::AndIOp::create(tb, loc, valid, rowOk);
      auto ext = [&](Value v) {
        return arith::ExtSIOp::create(tb, loc, tb.getI64Type(), v);
      };
      Value rowElem = arith::MulIOp::create(tb, loc, ext(page), a.getPageStride());
      rowElem = arith::AddIOp::create(
          tb, loc, rowElem, arith::MulIOp::create(tb, loc, ext(offset), a.getRowStride()));
      rowElem = arith::AddIOp::create(
          tb, loc, rowElem, arith::MulIOp::create(tb, loc, ext(a.getHead()), a.getHeadStride()));
      rowElem = arith::AddIOp::create(tb, loc, rowElem, ext(col));
      Value elem = arith::SelectOp::create(tb, loc, valid, rowElem, i64(tb, loc, 0));
      Value src = elementAddress(tb, loc, a.getCache(), elem, et);
      Value dst = addBytes(tb, loc, slot, swizzledOffset(tb, loc, r, col, rows));
      auto copyChunk = [&](OpBuilder &cb) {
        Value srcSize = arith::SelectOp::create(cb, loc, valid, i32(cb, loc, 16),
                                                i32(cb, loc, 0));
        NVVM::CpAsyncOp::create(
            cb, loc, dst, src, cb.getI32IntegerAttr(16),
            NVVM::LoadCacheModifierKindAttr::get(cb.getContext(),
                                                 NVVM::LoadCacheModifierKind::CG),
            srcSize);
      };
      if (wholeChunks) {
        copyChunk(tb);
        continue;
      }
      // Rows not known to be 16-byte aligned (a head dimension that is not
      // a multiple of 8, say), or a chunk across the channels' end: a
      // 16-byte copy where the chunk is aligned and whole, else element by
      // element (plain loads and stores; the fence below makes them
      // visible to the tensor cores).
      Value aligned = arith::CmpIOp::create(
          tb, loc, arith::CmpIPredicate::eq,
          arith::AndIOp::create(tb, loc,
                                LLVM::PtrToIntOp::create(tb, loc, tb.getI64Type(), src),
                                i64(tb, loc, 15)),
          i64(tb, loc, 0));
      if (a.getChannels())
        aligned = arith::AndIOp::create(
            tb, loc, aligned,
            arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::sle,
                                  arith::AddIOp::create(tb, loc, col, i32(tb, loc, 16 / elemBytes)),
                                  a.getChannels()));
      auto branch = scf::IfOp::create(tb, loc, aligned, /*withElseRegion=*/true);
      OpBuilder vb = OpBuilder::atBlockBegin(&branch.getThenRegion().front());
      copyChunk(vb);
      OpBuilder eb = OpBuilder::atBlockBegin(&branch.getElseRegion().front());
      Type intType = eb.getIntegerType(elemBytes * 8);
      for (int64_t e = 0; e < 16 / elemBytes; ++e) {
        Value ok = rowOk;
        if (a.getChannels())
          ok = arith::AndIOp::create(
              eb, loc, ok,
              arith::CmpIOp::create(eb, loc, arith::CmpIPredicate::slt,
                                    arith::AddIOp::create(eb, loc, col, i32(eb, loc, e)),
                                    a.getChannels()));
        Value x = ifValue(
            eb, loc, ok, intType,
            [&](OpBuilder &lb) -> Value {
              Value at = arith::AddIOp::create(lb, loc, rowElem, i64(lb, loc, e));
              return LLVM::LoadOp::create(lb, loc, intType,
                                          elementAddress(lb, loc, a.getCache(), at, et));
            },
            [&](OpBuilder &zb) -> Value {
              return arith::ConstantOp::create(zb, loc, intType, zb.getIntegerAttr(intType, 0));
            });
        LLVM::StoreOp::create(eb, loc, x, addBytes(eb, loc, dst, i32(eb, loc, e * elemBytes)));
      }
    }
    if (!wholeChunks)
      NVVM::FenceProxyOp::create(
          rewriter, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(rewriter.getContext(), NVVM::SharedSpace::shared_cta));
    NVVM::CpAsyncMBarrierArriveOp::create(rewriter, loc, bar,
                                          rewriter.getBoolAttr(true));
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Places every shared-memory buffer of `func`: the persistent ones (rings,
/// barriers, operand tiles) one after the other, then one scratch area
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
  int64_t scratch = 0;
  for (auto &u : scratchUsers)
    scratch = std::max(scratch, u.second);
  next = llvm::alignTo(next, 128);
  for (auto &u : scratchUsers)
    u.first->setAttr(kSmemOffsetAttr, IntegerAttr::get(IntegerType::get(func.getContext(), 64), next));
  next += scratch;
  func->setAttr(kSmemBytesAttr, IntegerAttr::get(IntegerType::get(func.getContext(), 64),
                                                 next + kSmemAlignSlack));
}

/// One tensor-map argument per cache copied with TMA, appended to the
/// kernel's arguments (as generic pointers; the kernel ABI pass makes them
/// by-value grid constants). Records which argument each describes and
/// the box rows, for the host.
void addTensorMapArguments(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  SmallVector<int32_t> cacheArgs, boxRows;
  llvm::DenseMap<std::pair<unsigned, int64_t>, unsigned> param;
  func.walk([&](fakvgpu::AsyncPagedLoadOp op) {
    if (!op.usesTMA())
      return;
    unsigned cacheArg = cast<BlockArgument>(op.getCache()).getArgNumber();
    int64_t rows = op.getRing().getType().getTile().getDimSize(0);
    auto key = std::make_pair(cacheArg, rows);
    if (!param.count(key)) {
      param[key] = func.getNumArguments();
      (void)func.insertArgument(func.getNumArguments(), ptrType(ctx, 0),
                                DictionaryAttr::get(ctx), op.getLoc());
      cacheArgs.push_back(cacheArg);
      boxRows.push_back(rows);
    }
    op->setAttr("fakvgpu.tma_param",
                IntegerAttr::get(IntegerType::get(ctx, 64), param[key]));
  });
  func->setAttr(kTmaArgsAttr, DenseI32ArrayAttr::get(ctx, cacheArgs));
  func->setAttr(kTmaBoxesAttr, DenseI32ArrayAttr::get(ctx, boxRows));
}

/// fakvgpu.warp_specialize -> two guarded regions, each marked with its
/// role (first thread, thread count, barrier id) for the patterns.
void lowerWarpSpecialize(fakvgpu::WarpSpecializeOp ws) {
  OpBuilder b(ws);
  Location loc = ws.getLoc();
  int64_t producerThreads = ws.getProducerWarps() * 32;
  int64_t consumerThreads = ws.getConsumerWarps() * 32;
  Value tid = arith::IndexCastOp::create(
      b, loc, b.getI32Type(), gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, tid,
                                           i32(b, loc, producerThreads));
  auto producer = scf::IfOp::create(b, loc, isProducer, false);
  producer->setAttr(kRoleAttr, b.getDenseI64ArrayAttr({0, producerThreads, 1}));
  Block &pb = producer.getThenRegion().front();
  pb.getOperations().splice(pb.begin(), ws.getProducer().front().getOperations());
  int32_t producerRegs = ws.getProducerRegisters();
  int32_t consumerRegs = ws.getConsumerRegisters();
  bool rebalance = producerRegs > 0 && consumerRegs > 0;
  if (rebalance) {
    OpBuilder pbb = OpBuilder::atBlockBegin(&pb);
    NVVM::SetMaxRegisterOp::create(pbb, loc, producerRegs,
                                   NVVM::SetMaxRegisterAction::decrease);
  }
  Value isConsumer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, tid,
                                           i32(b, loc, producerThreads));
  auto consumer = scf::IfOp::create(b, loc, isConsumer, false);
  consumer->setAttr(kRoleAttr,
                    b.getDenseI64ArrayAttr({producerThreads, consumerThreads, 2}));
  Block &cb = consumer.getThenRegion().front();
  cb.getOperations().splice(cb.begin(), ws.getConsumer().front().getOperations());
  if (rebalance) {
    OpBuilder cbb = OpBuilder::atBlockBegin(&cb);
    NVVM::SetMaxRegisterOp::create(cbb, loc, consumerRegs,
                                   NVVM::SetMaxRegisterAction::increase);
    // The kernel is compiled for the average, rounded down to a multiple of
    // 8: what the producer gives up, the consumer takes.
    int64_t average = (producerRegs * producerThreads + consumerRegs * consumerThreads) /
                      (producerThreads + consumerThreads);
    auto func = ws->getParentOfType<func::FuncOp>();
    func->setAttr(kMaxRegistersAttr, b.getI32IntegerAttr(average / 8 * 8));
  }
  ws.erase();
}

/// func.func kernels -> gpu.func in gpu.module @fakv_kernels, with the
/// dynamic shared memory symbol and the launch facts as attributes.
void outlineKernels(ModuleOp module, SmallVectorImpl<func::FuncOp> &kernels) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "fakv_kernels");
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
  b.setInsertionPointToStart(gpuModule.getBody());
  LLVM::GlobalOp::create(b, module.getLoc(),
                         LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), 0),
                         /*isConstant=*/false, LLVM::Linkage::External, kSmemSymbol,
                         Attribute(), /*alignment=*/1024, /*addrSpace=*/3);
  for (func::FuncOp func : kernels) {
    b.setInsertionPointToEnd(gpuModule.getBody());
    auto gpuFunc = gpu::GPUFuncOp::create(b, func.getLoc(), func.getName(),
                                          func.getFunctionType());
    gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
    int64_t threads =
        func->getAttrOfType<IntegerAttr>(fakvgpu::kNumWarpsAttr).getInt() * 32;
    gpuFunc.setKnownBlockSizeAttr(
        DenseI32ArrayAttr::get(ctx, {int32_t(threads), 1, 1}));
    for (StringRef name : {kSmemBytesAttr, kTmaArgsAttr, kTmaBoxesAttr})
      gpuFunc->setAttr(name, func->getAttr(name));
    if (Attribute regs = func->getAttr(kMaxRegistersAttr))
      gpuFunc->setAttr(kMaxRegistersAttr, regs);
    gpuFunc->setAttr(fakvgpu::kNumWarpsAttr, func->getAttr(fakvgpu::kNumWarpsAttr));
    if (Attribute packing = func->getAttr(fakv::FakvDialect::getGridPackingAttrName()))
      gpuFunc->setAttr(fakv::FakvDialect::getGridPackingAttrName(), packing);
    gpuFunc.getBody().front().erase();
    gpuFunc.getBody().takeBody(func.getBody());
    gpuFunc.walk([&](func::ReturnOp ret) {
      OpBuilder rb(ret);
      gpu::ReturnOp::create(rb, ret.getLoc());
      ret.erase();
    });
    func.erase();
  }
}

struct ConvertFakvGPUToNVVMPass
    : public fakv::impl::ConvertFakvGPUToNVVMBase<ConvertFakvGPUToNVVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<func::FuncOp> kernels;
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (!isKernel(func)) {
        func.erase(); // host code has no place in the device module
        continue;
      }
      if (!func->hasAttr(fakvgpu::kNumWarpsAttr)) {
        func.emitError() << "has no layouts yet: run fakv-assign-layouts first";
        return signalPassFailure();
      }
      kernels.push_back(func);
    }
    for (func::FuncOp func : kernels) {
      func.walk([](fakvgpu::WarpSpecializeOp ws) { lowerWarpSpecialize(ws); });
      planSharedMemory(func);
      addTensorMapArguments(func);
      markAlignedAccesses(func);
    }

    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion([ctx](PtrType) { return ptrType(ctx, 1); });
    converter.addConversion([ctx](fakvgpu::RingType) { return ptrType(ctx, 3); });
    converter.addConversion([ctx](fakvgpu::BarriersType) { return ptrType(ctx, 3); });
    converter.addConversion([ctx](RankedTensorType t) -> std::optional<Type> {
      if (isa_and_present<fakvgpu::SharedAttr>(t.getEncoding()))
        return ptrType(ctx, 3);
      if (auto l = dyn_cast_if_present<fakvgpu::LinearAttr>(t.getEncoding()))
        return VectorType::get({LinearLayout::fromAttr(l).numRegs()},
                               t.getElementType());
      return std::nullopt;
    });

    ConversionTarget target(*ctx);
    target.addIllegalDialect<FakvDialect, fakvgpu::FakvGPUDialect>();
    target.addLegalDialect<LLVM::LLVMDialect, NVVM::NVVMDialect,
                           gpu::GPUDialect, vector::VectorDialect>();
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return converter.isLegal(op); });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType()) &&
             converter.isLegal(&f.getBody());
    });

    RewritePatternSet patterns(ctx);
    patterns.add<ProgramIdLowering, NumProgramsLowering, ArangeLowering, SplatLowering,
                 TileConstantLowering, IdentityLowering<ExpandDimsOp>,
                 IdentityLowering<ReshapeOp>, BroadcastLowering, CastLowering,
                 ReduceLowering, ConvertLayoutLowering, LoadLowering,
                 StoreLowering, PagedLoadLowering, AllocRingLowering,
                 AllocBarriersLowering, RingViewLowering, WaitLowering,
                 ArriveLowering, ClearRowsLowering, AsyncPagedLoadLowering>(
        converter, ctx);
    populatePointerLoweringPatterns(converter, patterns);
    patterns.add<ElementwiseLowering, MathApproxLowering>(converter, ctx);
    populateDotToNVVMPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    scf::populateSCFStructuralTypeConversions(converter, patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    outlineKernels(module, kernels);
  }
};
} // namespace
