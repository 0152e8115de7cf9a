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
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
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
    // 2. Across the lanes that move along the axis: butterfly shuffles.
    Value full = i32(rewriter, loc, -1), clamp = i32(rewriter, loc, 31);
    for (unsigned bit = 0; bit < src.lanes.size(); ++bit) {
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

/// fakv.cluster_gather: the tile written row-major to the op's scratch
/// buffer, a cluster barrier (arrive has release, wait acquire semantics),
/// each element [..., r] read from rank r's buffer through distributed
/// shared memory (mapa), and a second barrier so that no program reuses or
/// frees its buffer while another still reads it. The kernel is marked with
/// its cluster's shape (kClusterSizeAttr: .reqnctapercluster 1, 1, size).
/// A barrier waits for the non-exited threads of the cluster: a warp-
/// specialized producer that has left its role's region has exited.
struct ClusterGatherLowering : OpConversionPattern<ClusterGatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClusterGatherOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = cast<RankedTensorType>(op.getX().getType());
    auto dstType = cast<RankedTensorType>(op.getType());
    LinearLayout src = layoutOf(srcType), dst = layoutOf(dstType);
    ArrayRef<int64_t> shape = srcType.getShape();
    Value tid = roleThreadId(rewriter, loc, op);
    Value smem = smemOf(rewriter, loc, op);
    // Element c of the tile: 4 bytes at c's row-major index.
    auto offset = [&](ArrayRef<Value> c) {
      Value lin = i32(rewriter, loc, 0);
      for (unsigned d = 0; d < shape.size(); ++d)
        lin = arith::AddIOp::create(
            rewriter, loc, arith::MulIOp::create(rewriter, loc, lin, i32(rewriter, loc, shape[d])),
            c[d]);
      return arith::MulIOp::create(rewriter, loc, lin, i32(rewriter, loc, 4)).getResult();
    };
    syncRole(rewriter, loc, op);
    SmallVector<Value> base = laneWarpCoords(rewriter, loc, src, tid);
    for (int64_t r = 0; r < src.numRegs(); ++r)
      LLVM::StoreOp::create(rewriter, loc, vecElement(rewriter, loc, a.getX(), r),
                            addBytes(rewriter, loc, smem, offset(elementCoords(rewriter, loc, src, base, r))));
    NVVM::ClusterArriveOp::create(rewriter, loc, /*aligned=*/nullptr);
    NVVM::ClusterWaitOp::create(rewriter, loc, /*aligned=*/nullptr);
    Type cluster = ptrType(rewriter.getContext(), 7);
    Type et = dstType.getElementType();
    SmallVector<Value> dbase = laneWarpCoords(rewriter, loc, dst, tid);
    SmallVector<Value> out;
    for (int64_t r = 0; r < dst.numRegs(); ++r) {
      SmallVector<Value> c = elementCoords(rewriter, loc, dst, dbase, r);
      Value rank = c.pop_back_val();
      Value local = addBytes(rewriter, loc, smem, offset(c));
      Value remote = NVVM::MapaOp::create(rewriter, loc, cluster, local, rank);
      out.push_back(LLVM::LoadOp::create(rewriter, loc, et, remote));
    }
    NVVM::ClusterArriveOp::create(rewriter, loc, /*aligned=*/nullptr);
    NVVM::ClusterWaitOp::create(rewriter, loc, /*aligned=*/nullptr);
    auto func = op->getParentOfType<func::FuncOp>();
    rewriter.modifyOpInPlace(func, [&] {
      func->setAttr(kClusterSizeAttr, rewriter.getI32IntegerAttr(op.getSize()));
    });
    rewriter.replaceOp(op, fromElements(rewriter, loc, getTypeConverter()->convertType(dstType), out));
    return success();
  }
};

} // namespace

void codegen::populateTileOpsToNVVMPatterns(const TypeConverter &converter,
                                            RewritePatternSet &patterns) {
  patterns.add<ProgramIdLowering, NumProgramsLowering, ArangeLowering, SplatLowering, TileConstantLowering, IdentityLowering<ExpandDimsOp>, IdentityLowering<ReshapeOp>, BroadcastLowering, CastLowering, ElementwiseLowering, MathApproxLowering, ReduceLowering, ItemLowering, ConvertLayoutLowering, ClusterGatherLowering>(converter, patterns.getContext());
}
