//===- TileOpsToNVVM.cpp - tiles as per-thread vectors ----------------------===//
//
// Program ids, tile construction (arange, splat, constants, broadcast,
// expand_dims, reshape, cast), elementwise arith/math (exp2/log2/tanh as the
// approximate PTX instructions), reductions (in-thread, butterfly shuffles,
// then across warps through shared memory) and layout conversions (through
// shared memory) on tiles held as the vector of a thread's elements.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/PointerLowering.h"
#include "lowering/ReduceCombine.h"

#include "dialect/FakvDialect.h"
#include "dialect/FakvGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

namespace {

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
    // The registers pass through: each must hold, in the result's layout, the
    // element (row-major index) it holds in the source's. With power-of-two
    // dimensions the index of an element is its coordinates' bits side by
    // side, so it is linear in the register, lane and warp bits: the bases'
    // indices agreeing is enough.
    auto from = cast<RankedTensorType>(op.getSrc().getType());
    auto to = cast<RankedTensorType>(op.getType());
    LinearLayout ls = layoutOf(from), ld = layoutOf(to);
    auto index = [](ArrayRef<fakvgpu::Coord> bases, size_t i, ArrayRef<int64_t> shape) {
      int64_t at = 0;
      if (i < bases.size())
        for (auto [x, n] : llvm::zip(bases[i], shape))
          at = at * n + x;
      return at;
    };
    for (auto [kind, s, d] : {std::tuple<const char *, ArrayRef<fakvgpu::Coord>, ArrayRef<fakvgpu::Coord>>{
                                  "regs", ls.regs, ld.regs},
                              {"lanes", ls.lanes, ld.lanes}, {"warps", ls.warps, ld.warps}})
      for (size_t i = 0; i < std::max(s.size(), d.size()); ++i)
        if (index(s, i, from.getShape()) != index(d, i, to.getShape()))
          return op.emitOpError() << "the result's layout must hold each register's element where the "
                                     "source's does (the source's layout, reshaped); its "
                                  << kind << " basis #" << i << " differs";
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
            math::TanhOp, math::CountLeadingZerosOp, math::CountTrailingZerosOp,
            math::CtPopOp, math::TruncOp, math::AbsIOp>(op))
      return failure(); // MathApproxLowering, MathIntrinsicLowering
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertTypes(op->getResultTypes(), types)))
      return failure();
    OperationState state(op->getLoc(), op->getName().getStringRef(), operands,
                         types, op->getAttrs());
    rewriter.replaceOp(op, rewriter.create(state)->getResults());
    return success();
  }
};

/// The math ops convert-gpu-to-nvvm leaves alone (it lowers the float
/// functions itself, through libdevice, and skips math-to-llvm; integer
/// absolute values of i32 only): the LLVM intrinsics, on tiles' vectors and
/// on scalars alike.
template <typename MathOp, typename LLVMOp>
struct MathIntrinsicLowering : OpConversionPattern<MathOp> {
  using OpConversionPattern<MathOp>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MathOp op, typename MathOp::Adaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = this->getTypeConverter()->convertType(op.getType());
    if constexpr (std::is_same_v<LLVMOp, LLVM::CountLeadingZerosOp> ||
                  std::is_same_v<LLVMOp, LLVM::CountTrailingZerosOp>)
      rewriter.replaceOpWithNewOp<LLVMOp>(op, type, a.getOperand(), /*is_zero_poison=*/false);
    else if constexpr (std::is_same_v<LLVMOp, LLVM::AbsOp>)   // (|INT_MIN| is INT_MIN, as the CPU path's)
      rewriter.replaceOpWithNewOp<LLVMOp>(op, type, a.getOperand(), /*is_int_min_poison=*/false);
    else
      rewriter.replaceOpWithNewOp<LLVMOp>(op, type, a.getOperand());
    return success();
  }
};

/// exp2/exp/log2/log/tanh on tiles: the GPU's approximate instructions,
/// element by element; f16 and bf16 elements through f32, rounded back once
/// (as the scalar functions, through libdevice).
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
    Type et = vt.getElementType();
    if (!et.isF32() && !et.isF16() && !et.isBF16())
      return op->emitOpError() << "on the GPU takes f32, f16 or bf16 tiles";
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
      if (et != f32)
        x = arith::ExtFOp::create(rewriter, loc, f32, x);
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
      out.push_back(et == f32 ? y : arith::TruncFOp::create(rewriter, loc, et, y).getResult());
    }
    rewriter.replaceOp(op, fromElements(rewriter, loc, vt, out));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

struct ReduceLowering : OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type et = op.getType().getElementType();
    if (!et.isF32() && !et.isSignlessInteger(32))
      return op.emitOpError() << "on the GPU reduces f32 or i32 tiles";
    unsigned axis = op.getAxis();
    LinearLayout src = layoutOf(op.getSrc().getType());
    LinearLayout dst = layoutOf(op.getType());
    if (dst != src.sliced(axis))
      return op.emitOpError() << "result layout is not the source's slice (fakv-assign-layouts gives it)";
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
      acc[*d] = acc[*d] ? combineReduced(rewriter, loc, kind, acc[*d], x) : x;
    }
    // 2. Across the lanes that move along the axis: butterfly shuffles, or
    // one redux.sync (sm_80+, i32) when the whole warp reduces together:
    // each lane bit moves along the axis only, or (max, min) replicates.
    Value full = i32(rewriter, loc, -1), clamp = i32(rewriter, loc, 31);
    auto wholeWarp = [&] {
      if (src.lanes.size() != 5 ||
          llvm::none_of(src.lanes, [&](const fakvgpu::Coord &c) { return c[axis] != 0; }))
        return false;
      return llvm::all_of(src.lanes, [&](const fakvgpu::Coord &c) {
        bool other = false;
        for (unsigned d = 0; d < c.size(); ++d)
          other |= d != axis && c[d] != 0;
        return !other && (c[axis] != 0 || kind != ReduceKind::sum);
      });
    };
    bool redux = et.isSignlessInteger(32) && wholeWarp();
    if (redux) {
      NVVM::ReduxKind rk = kind == ReduceKind::sum   ? NVVM::ReduxKind::ADD
                           : kind == ReduceKind::max ? NVVM::ReduxKind::MAX
                                                     : NVVM::ReduxKind::MIN;
      auto rkAttr = NVVM::ReduxKindAttr::get(rewriter.getContext(), rk);
      for (Value &v : acc)
        v = NVVM::ReduxOp::create(rewriter, loc, et, v, rkAttr, full);
    }
    for (unsigned bit = 0; bit < src.lanes.size() && !redux; ++bit) {
      if (!src.lanes[bit][axis])
        continue;
      for (Value &v : acc) {
        Value other = NVVM::ShflOp::create(
            rewriter, loc, et, full, v,
            i32(rewriter, loc, 1 << bit), clamp, NVVM::ShflKind::bfly,
            UnitAttr());
        v = combineReduced(rewriter, loc, kind, v, other);
      }
    }
    // 3. Across the warps that move along the axis: through shared memory.
    SmallVector<unsigned> warpBits;
    for (unsigned bit = 0; bit < src.warps.size(); ++bit)
      if (src.warps[bit][axis])
        warpBits.push_back(bit);
    if (!warpBits.empty()) {
      if (failed(requirePlacement(op)))
        return failure();
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
          Value x = LLVM::LoadOp::create(rewriter, loc, et,
                                         addr(elems[r], i32(rewriter, loc, s)));
          v = v ? combineReduced(rewriter, loc, kind, v, x) : x;
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

/// A one-element tile's element: its first register, which every thread
/// holds (a one-element layout maps lanes and warps to that element),
/// broadcast from lane 0.
struct ItemLowering : OpConversionPattern<ItemOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ItemOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value v = vecElement(rewriter, loc, a.getSrc(), 0);
    // Broadcast from lane 0 (a scalar is the program's: every lane reaches
    // it), so that ptxas knows the value is warp-uniform, as it knows
    // program ids and parameters: addresses and loop bounds made from it
    // stay in uniform registers (a sequence index found by reductions fed
    // the whole main loop's wgmma descriptors through R2UR otherwise).
    Type t = v.getType();
    unsigned width = t.getIntOrFloatBitWidth();
    if (width > 32 || (isa<FloatType>(t) && width != 32)) {
      rewriter.replaceOp(op, v);
      return success();
    }
    Type i32t = rewriter.getI32Type();
    Value x = isa<IntegerType>(t) && width < 32
                  ? Value(arith::ExtUIOp::create(rewriter, loc, i32t, v)) : v;
    Value lane0 = NVVM::ShflOp::create(
        rewriter, loc, x.getType(), i32(rewriter, loc, -1), x,
        i32(rewriter, loc, 0), i32(rewriter, loc, 31), NVVM::ShflKind::idx,
        UnitAttr());
    if (x != v)
      lane0 = arith::TruncIOp::create(rewriter, loc, t, lane0);
    rewriter.replaceOp(op, lane0);
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
    if (failed(requirePlacement(op)))
      return failure();
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
      // Registers holding up to 8 consecutive columns (16 bytes, one swizzle
      // chunk) from a multiple of 8 are stored as one vector.
      int64_t width = alignedVectorRegs(src, 8);
      auto vt = VectorType::get({width}, et);
      syncRole(rewriter, loc, op);
      for (int64_t r = 0; r < src.numRegs(); r += width) {
        SmallVector<Value> c = elementCoords(rewriter, loc, src, base, r);
        SmallVector<Value> parts;
        for (int64_t j = 0; j < width; ++j)
          parts.push_back(vecElement(rewriter, loc, a.getSrc(), r + j));
        Value v = width == 1 ? parts[0] : fromElements(rewriter, loc, vt, parts);
        for (int64_t copy = 0; copy < stored / rows; ++copy) {
          Value row = copy ? Value(arith::AddIOp::create(
                                 rewriter, loc, c[0], i32(rewriter, loc, copy * rows)))
                           : c[0];
          Value off = swizzledOffset(rewriter, loc, row, c[1], stored);
          LLVM::StoreOp::create(rewriter, loc, v, addBytes(rewriter, loc, smem, off),
                                width * 2);
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

/// fakv.cluster_gather's shared memory (fakvgpu-plan-shared-memory): an
/// mbarrier, then per tile its gathered copy: each rank's tile (or, shared
/// out, its slice for this program), row-major.
constexpr int64_t kGatherBarrierBytes = 16;

/// Each kernel with cluster_gathers starts by initialising their mbarriers
/// (thread 0; each expects one arrival from each of the `size` programs),
/// fencing the initialisation at cluster scope and arriving (relaxed)
/// on the cluster barrier: a gather's wait on it then knows every program's
/// mbarriers ready. Marks the kernel with its cluster's shape.
void startClusterKernel(ConversionPatternRewriter &rewriter, func::FuncOp func) {
  if (func->hasAttr(kClusterSizeAttr))
    return;
  Location loc = func.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&func.getBody().front());
  Value tid = arith::IndexCastOp::create(rewriter, loc, rewriter.getI32Type(),
                                         gpu::ThreadIdOp::create(rewriter, loc, gpu::Dimension::x));
  Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, tid, i32(rewriter, loc, 0));
  auto ifOp = scf::IfOp::create(rewriter, loc, first, false);
  int64_t size = 0;
  {
    OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
    func.walk([&](ClusterGatherOp op) {
      if (!op->hasAttr(kSmemOffsetAttr))
        return;                       // (its own lowering reports it)
      size = op.getSize();
      NVVM::MBarrierInitOp::create(tb, loc, smemOf(tb, loc, op), i32(tb, loc, size), Value());
    });
    NVVM::FenceMbarrierInitOp::create(tb, loc);
  }
  NVVM::ClusterArriveRelaxedOp::create(rewriter, loc, /*aligned=*/nullptr);
  rewriter.modifyOpInPlace(func, [&] { func->setAttr(kClusterSizeAttr, rewriter.getI32IntegerAttr(size)); });
}

/// fakv.cluster_gather: after the cluster barrier (every program's mbarriers
/// initialised), each element's one writer thread writes it into every
/// program's copy (st.shared::cluster at the writer's rank; an element of a
/// tile shared out, into its slice's program's only); the role meets
/// and its thread r arrives on rank r's mbarrier (release, cluster scope);
/// then each thread waits on its own
/// (acquire, cluster scope: every program's elements have landed) and reads
/// the result from its own shared memory. A program passes its wait only
/// once no other will write to it, so none exits while written to.
struct ClusterGatherLowering : OpConversionPattern<ClusterGatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClusterGatherOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t size = op.getSize();
    if (failed(requirePlacement(op)))
      return failure();
    startClusterKernel(rewriter, op->getParentOfType<func::FuncOp>());
    Value tid = roleThreadId(rewriter, loc, op);
    Value bar = smemOf(rewriter, loc, op);
    Type cluster = ptrType(rewriter.getContext(), 7);
    NVVM::ClusterWaitOp::create(rewriter, loc, /*aligned=*/nullptr);
    Value own = NVVM::ClusterId::create(rewriter, loc, rewriter.getI32Type());
    // Element c of tile k's copy from rank `rank`: 4 bytes at rank * elements + (row-major c), so that a
    // warp's writes of consecutive elements are consecutive words.
    SmallVector<Value> copies;
    int64_t offset = kGatherBarrierBytes;
    for (auto [k, x] : llvm::enumerate(op.getXs())) {
      copies.push_back(addBytes(rewriter, loc, bar, i32(rewriter, loc, offset)));
      offset += cast<RankedTensorType>(x.getType()).getNumElements() * (op.isScattered(k) ? 1 : size) * 4;
    }
    auto element = [&](Value copy, ArrayRef<int64_t> shape, ArrayRef<Value> c, Value rank) {
      Value lin = i32(rewriter, loc, 0);
      for (unsigned d = 0; d < shape.size(); ++d)
        lin = arith::AddIOp::create(
            rewriter, loc, arith::MulIOp::create(rewriter, loc, lin, i32(rewriter, loc, shape[d])), c[d]);
      int64_t elements = 1;
      for (int64_t d : shape)
        elements *= d;
      lin = arith::AddIOp::create(rewriter, loc,
                                  arith::MulIOp::create(rewriter, loc, rank, i32(rewriter, loc, elements)), lin);
      return addBytes(rewriter, loc, copy, arith::MulIOp::create(rewriter, loc, lin, i32(rewriter, loc, 4)));
    };
    for (auto [k, x] : llvm::enumerate(a.getXs())) {
      auto type = cast<RankedTensorType>(op.getXs()[k].getType());
      LinearLayout src = layoutOf(type);
      SmallVector<Value> base = laneWarpCoords(rewriter, loc, src, tid);
      // One thread of those holding the same elements writes them: the one
      // whose lane and warp bits of zero (replicating) bases are clear.
      int64_t replicas = 0;
      for (auto [i, basis] : llvm::enumerate(src.lanes))
        if (llvm::all_of(basis, [](int64_t c) { return c == 0; }))
          replicas |= int64_t(1) << i;
      for (auto [i, basis] : llvm::enumerate(src.warps))
        if (llvm::all_of(basis, [](int64_t c) { return c == 0; }))
          replicas |= int64_t(1) << (5 + i);
      auto writer = scf::IfOp::create(
          rewriter, loc,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                arith::AndIOp::create(rewriter, loc, tid, i32(rewriter, loc, replicas)),
                                i32(rewriter, loc, 0)),
          false);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(writer.getThenRegion().front().getTerminator());
      SmallVector<int64_t> kept(type.getShape());      // a program's part: a slice of the last dimension
      if (op.isScattered(k))
        kept.back() /= size;
      for (int64_t r = 0; r < src.numRegs(); ++r) {
        Value v = vecElement(rewriter, loc, x, r);
        SmallVector<Value> c = elementCoords(rewriter, loc, src, base, r);
        if (op.isScattered(k)) {        // to the program of its slice, once
          Value width = i32(rewriter, loc, kept.back());
          Value to = arith::DivUIOp::create(rewriter, loc, c.back(), width);
          c.back() = arith::RemUIOp::create(rewriter, loc, c.back(), width);
          LLVM::StoreOp::create(rewriter, loc, v,
                                NVVM::MapaOp::create(rewriter, loc, cluster, element(copies[k], kept, c, own), to));
          continue;
        }
        Value local = element(copies[k], kept, c, own);
        for (int64_t rank = 0; rank < size; ++rank)
          LLVM::StoreOp::create(rewriter, loc, v,
                                NVVM::MapaOp::create(rewriter, loc, cluster, local, i32(rewriter, loc, rank)));
      }
    }
    // The role's writes ordered before its arrivals (release at cluster
    // scope, cumulative): thread r arrives on rank r's mbarrier.
    syncRole(rewriter, loc, op);
    auto first = scf::IfOp::create(
        rewriter, loc,
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, tid, i32(rewriter, loc, size)), false);
    {
      OpBuilder fb = OpBuilder::atBlockBegin(&first.getThenRegion().front());
      NVVM::MBarrierArriveOp::create(fb, loc, Type(), NVVM::MapaOp::create(fb, loc, cluster, bar, tid), Value(),
                                     NVVM::MemScopeKind::CLUSTER);
    }
    // mbarrier.try_wait at cluster scope (NVVM's op waits with .acquire.cta).
    Value addr = LLVM::PtrToIntOp::create(rewriter, loc, rewriter.getI64Type(), bar);
    LLVM::InlineAsmOp::create(
        rewriter, loc, TypeRange{}, ValueRange{addr},
        rewriter.getStringAttr("{\n\t.reg .pred done;\n\tFAKV_GATHER_WAIT_${:uid}:\n\t"
                               "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [$0], 0;\n\t"
                               "@!done bra FAKV_GATHER_WAIT_${:uid};\n}"),
        rewriter.getStringAttr("l,~{memory}"), rewriter.getUnitAttr(), UnitAttr(), LLVM::TailCallKindAttr(),
        LLVM::AsmDialectAttr::get(rewriter.getContext(), LLVM::AsmDialect::AD_ATT), ArrayAttr());
    SmallVector<Value> results;
    for (auto [k, res] : llvm::enumerate(op.getResults())) {
      auto type = cast<RankedTensorType>(res.getType());
      LinearLayout dst = layoutOf(type);
      SmallVector<Value> base = laneWarpCoords(rewriter, loc, dst, tid);
      SmallVector<Value> out;
      for (int64_t r = 0; r < dst.numRegs(); ++r) {
        SmallVector<Value> c = elementCoords(rewriter, loc, dst, base, r);
        Value rank = c.pop_back_val();
        out.push_back(LLVM::LoadOp::create(rewriter, loc, type.getElementType(),
                                           element(copies[k], type.getShape().drop_back(), c, rank)));
      }
      results.push_back(fromElements(rewriter, loc, getTypeConverter()->convertType(type), out));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void codegen::populateTileOpsToNVVMPatterns(const TypeConverter &converter,
                                            RewritePatternSet &patterns) {
  patterns.add<ProgramIdLowering, NumProgramsLowering, ArangeLowering, SplatLowering,
               TileConstantLowering, IdentityLowering<ExpandDimsOp>, IdentityLowering<ReshapeOp>,
               BroadcastLowering, CastLowering, ElementwiseLowering, MathApproxLowering,
               MathIntrinsicLowering<math::CountLeadingZerosOp, LLVM::CountLeadingZerosOp>,
               MathIntrinsicLowering<math::CountTrailingZerosOp, LLVM::CountTrailingZerosOp>,
               MathIntrinsicLowering<math::CtPopOp, LLVM::CtPopOp>,
               MathIntrinsicLowering<math::TruncOp, LLVM::FTruncOp>,
               MathIntrinsicLowering<math::AbsIOp, LLVM::AbsOp>, ReduceLowering, ItemLowering,
               ConvertLayoutLowering, ClusterGatherLowering>(converter, patterns.getContext());
}
