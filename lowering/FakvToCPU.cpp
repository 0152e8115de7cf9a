//===- FakvToCPU.cpp - fakv to host-executable upstream IR ----------------===//
//
// The fakv ops on the host, as upstream tensor/linalg/scf ops on the tiles
// and guarded llvm.load/store on the pointers. The composite ops
// (online_softmax, lse_combine, masks, softcap, alibi) are first rewritten
// into tile primitives by fakv-decompose's patterns, exactly as on the GPU,
// so CI's numerics (test/cpu/) check the formulas the GPU runs; this file
// lowers the primitives. Written for clarity, not speed.
//
//===----------------------------------------------------------------------===//

#include "lowering/CPUCodegen.h"
#include "lowering/Passes.h"
#include "lowering/PointerLowering.h"

#include "dialect/FakvDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_CONVERTFAKVTOCPU
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::cpu;

namespace {

//===----------------------------------------------------------------------===//
// Tile construction
//===----------------------------------------------------------------------===//

struct ArangeLowering : OpConversionPattern<ArangeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ArangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    int64_t start = op.getStart();
    Value r = generate(b, op.getType(), [&](ImplicitLocOpBuilder &ib,
                                            ValueRange ivs) -> Value {
      return arith::AddIOp::create(ib, indexToI32(ib, ivs[0]),
                                   cstI32(ib, start));
    });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct SplatLowering : OpConversionPattern<SplatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SplatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<tensor::SplatOp>(op, plain(op.getType()),
                                                 adaptor.getValue());
    return success();
  }
};

struct BroadcastLowering : OpConversionPattern<BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType src = op.getSrc().getType(), dst = op.getType();
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < src.getRank(); ++d)
      exprs.push_back(src.getDimSize(d) == 1 && dst.getDimSize(d) != 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(d));
    auto map = AffineMap::get(dst.getRank(), 0, exprs, b.getContext());
    Value r = mapTiles(b, dst, adaptor.getSrc(), map,
                       [](ImplicitLocOpBuilder &, ValueRange a) { return a[0]; });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Reassociation that groups a size-1 dimension inserted at `axis` with a
/// neighbour, for expanding a rank-`rank` tensor by one dimension.
SmallVector<ReassociationIndices> unitDimReassociation(int64_t rank,
                                                       int64_t axis) {
  SmallVector<ReassociationIndices> groups;
  if (rank == 0)
    return groups;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t out = d < axis ? d : d + 1;
    groups.push_back({out});
  }
  if (axis < rank)
    groups[axis].insert(groups[axis].begin(), axis);
  else
    groups.back().push_back(axis);
  return groups;
}

struct ExpandDimsLowering : OpConversionPattern<ExpandDimsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ExpandDimsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
        op, plain(op.getType()), adaptor.getSrc(),
        unitDimReassociation(op.getSrc().getType().getRank(), op.getAxis()));
    return success();
  }
};

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RankedTensorType src = op.getSrc().getType(), dst = op.getType();
    auto allDims = [](int64_t rank) {
      ReassociationIndices g;
      for (int64_t d = 0; d < rank; ++d)
        g.push_back(d);
      return SmallVector<ReassociationIndices>{g};
    };
    Value flat = adaptor.getSrc();
    if (src.getRank() != 1)
      flat = tensor::CollapseShapeOp::create(b, flat, allDims(src.getRank()));
    Value r = flat;
    if (dst.getRank() != 1)
      r = tensor::ExpandShapeOp::create(b, plain(dst), flat,
                                        allDims(dst.getRank()));
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct CastLowering : OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type from = op.getSrc().getType().getElementType();
    Type to = op.getType().getElementType();
    Value r = mapTiles(b, op.getType(), adaptor.getSrc(),
                       b.getMultiDimIdentityMap(op.getType().getRank()),
                       [&](ImplicitLocOpBuilder &ib, ValueRange x) -> Value {
                         unsigned wf = from.getIntOrFloatBitWidth();
                         unsigned wt = to.getIntOrFloatBitWidth();
                         if (from == to)
                           return x[0];
                         if (wf < wt)
                           return arith::ExtFOp::create(ib, to, x[0]);
                         if (wf > wt)      // (f64 -> bf16 rounded once: fakv-expand-arith-cpu)
                           return arith::TruncFOp::create(ib, to, x[0]);
                         // Same width, other format (f16 <-> bf16): via f32.
                         return fromF32(ib, toF32(ib, x[0]), to);
                       });
    rewriter.replaceOp(op, r);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Matmul and reductions (the composite ops are decomposed first)
//===----------------------------------------------------------------------===//

struct DotLowering : OpConversionPattern<DotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    MLIRContext *ctx = b.getContext();
    AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
               k = getAffineDimExpr(2, ctx);
    auto map = [&](AffineExpr x, AffineExpr y) {
      return AffineMap::get(3, 0, {x, y}, ctx);
    };
    SmallVector<AffineMap> maps = {
        op.getTransposeA() ? map(k, m) : map(m, k),
        op.getTransposeB() ? map(n, k) : map(k, n), map(m, n)};
    SmallVector<utils::IteratorType> iters = {utils::IteratorType::parallel,
                                              utils::IteratorType::parallel,
                                              utils::IteratorType::reduction};
    auto generic = linalg::GenericOp::create(
        b, TypeRange{plain(op.getType())},
        ValueRange{adaptor.getA(), adaptor.getB()}, ValueRange{adaptor.getAcc()},
        maps, iters, [&](OpBuilder &ob, Location loc, ValueRange args) {
          ImplicitLocOpBuilder ib(loc, ob);
          Value prod = arith::MulFOp::create(ib, toF32(ib, args[0]),
                                             toF32(ib, args[1]));
          linalg::YieldOp::create(ib, ValueRange{arith::AddFOp::create(ib, args[2], prod)});
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct ReduceLowering : OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    rewriter.replaceOp(op, reduceTile(b, adaptor.getSrc(), op.getAxis(),
                                      op.getKind()));
    return success();
  }
};

struct ItemLowering : OpConversionPattern<ItemOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ItemOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<RankedTensorType>(adaptor.getSrc().getType());
    SmallVector<Value> zeros(type.getRank(), cstIndex(b, 0));
    rewriter.replaceOp(op, tensor::ExtractOp::create(b, adaptor.getSrc(), zeros));
    return success();
  }
};

struct RotaryLowering : OpConversionPattern<RotaryOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RotaryOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type et = op.getType().getElementType();
    int64_t half = op.getCos().getType().getDimSize(1); // R / 2
    bool interleaved = op.getInterleaved();
    Value r = generate(b, op.getType(), [&](ImplicitLocOpBuilder &ib,
                                            ValueRange ivs) -> Value {
      Value row = ivs[0], c = ivs[1];
      using P = arith::CmpIPredicate;
      Value rotates =
          arith::CmpIOp::create(ib, P::ult, c, cstIndex(ib, 2 * half));
      return select(
          ib, rotates,
          [&](ImplicitLocOpBuilder &tb) -> Value {
            // Channel pair (first, second) that c belongs to, and its angle k.
            Value k, first, second, isFirst;
            if (interleaved) {
              k = arith::DivUIOp::create(tb, c, cstIndex(tb, 2));
              first = arith::MulIOp::create(tb, k, cstIndex(tb, 2));
              second = arith::AddIOp::create(tb, first, cstIndex(tb, 1));
            } else {
              k = arith::RemUIOp::create(tb, c, cstIndex(tb, half));
              first = k;
              second = arith::AddIOp::create(tb, k, cstIndex(tb, half));
            }
            isFirst = arith::CmpIOp::create(tb, P::eq, c, first);
            Value x0 = toF32(tb, tensor::ExtractOp::create(tb, a.getX(),
                                                           ValueRange{row, first}));
            Value x1 = toF32(tb, tensor::ExtractOp::create(tb, a.getX(),
                                                           ValueRange{row, second}));
            Value cs = tensor::ExtractOp::create(tb, a.getCos(), ValueRange{row, k});
            Value sn = tensor::ExtractOp::create(tb, a.getSin(), ValueRange{row, k});
            Value out0 = arith::SubFOp::create(tb, arith::MulFOp::create(tb, x0, cs),
                                               arith::MulFOp::create(tb, x1, sn));
            Value out1 = arith::AddFOp::create(tb, arith::MulFOp::create(tb, x0, sn),
                                               arith::MulFOp::create(tb, x1, cs));
            return fromF32(tb, arith::SelectOp::create(tb, isFirst, out0, out1), et);
          },
          [&](ImplicitLocOpBuilder &eb) -> Value {
            return tensor::ExtractOp::create(eb, a.getX(), ValueRange{row, c});
          });
    });
    rewriter.replaceOp(op, r);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

struct PtrOfLowering : OpConversionPattern<PtrOfOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PtrOfOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value addr = memref::ExtractAlignedPointerAsIndexOp::create(b, a.getMemref());
    rewriter.replaceOpWithNewOp<LLVM::IntToPtrOp>(
        op, LLVM::LLVMPointerType::get(b.getContext()), indexToI64(b, addr));
    return success();
  }
};

struct LaunchLowering : OpConversionPattern<LaunchOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LaunchOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    // A kernel packed by fakv-pack-gqa runs grid[i] / packing[i] programs.
    auto module = op->getParentOfType<ModuleOp>();
    auto callee = module.lookupSymbol<func::FuncOp>(op.getCallee());
    DenseI32ArrayAttr packing =
        callee ? callee->getAttrOfType<DenseI32ArrayAttr>(
                     FakvDialect::getGridPackingAttrName())
               : DenseI32ArrayAttr();
    SmallVector<Value> lbs(3, cstIndex(b, 0)), steps(3, cstIndex(b, 1)), ubs, grid;
    for (auto [i, g] : llvm::enumerate(a.getGrid())) {
      if (packing && packing[i] != 1) {
        Value n = arith::ConstantIntOp::create(b, packing[i], 32);
        Value rem = arith::RemSIOp::create(b, g, n);
        emitRuntimeCheck(b, module,
                         arith::CmpIOp::create(b, arith::CmpIPredicate::eq, rem,
                                               arith::ConstantIntOp::create(b, 0, 32)),
                         "the grid of a kernel packed by fakv-pack-gqa must be a multiple of "
                         "its grid packing along every axis");
        g = arith::DivSIOp::create(b, g, n);
      }
      grid.push_back(g);
      ubs.push_back(arith::IndexCastOp::create(b, b.getIndexType(), g));
    }
    scf::buildLoopNest(
        b, b.getLoc(), lbs, ubs, steps,
        [&](OpBuilder &ob, Location loc, ValueRange ivs) {
          ImplicitLocOpBuilder ib(loc, ob);
          SmallVector<Value> args(a.getArgs());
          for (Value iv : ivs)
            args.push_back(indexToI32(ib, iv));
          llvm::append_range(args, grid);
          func::CallOp::create(ib, op.getCallee(), TypeRange{}, args);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Gives every kernel six trailing i32 arguments (program id x, y, z, grid
/// x, y, z) and replaces fakv.program_id / fakv.num_programs by them.
void appendProgramIdArguments(func::FuncOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  unsigned first = kernel.getNumArguments();
  Type i32 = IntegerType::get(ctx, 32);
  SmallVector<unsigned> positions(6, first);
  SmallVector<Type> types(6, i32);
  SmallVector<DictionaryAttr> attrs(6, DictionaryAttr::get(ctx));
  SmallVector<Location> locs(6, kernel.getLoc());
  (void)kernel.insertArguments(positions, types, attrs, locs);
  kernel.walk([&](Operation *op) {
    if (auto pid = dyn_cast<ProgramIdOp>(op)) {
      pid.replaceAllUsesWith(kernel.getArgument(first + pid.getAxis()));
      pid.erase();
    } else if (auto np = dyn_cast<NumProgramsOp>(op)) {
      np.replaceAllUsesWith(kernel.getArgument(first + 3 + np.getAxis()));
      np.erase();
    }
  });
  kernel->removeAttr(FakvDialect::getKernelAttrName());
  // (a request of fakv-pack-gqa, which did not run: the kernel computes
  // each query head in its own program, as written)
  kernel->removeAttr(FakvDialect::getPackGQAAttrName());
}

struct ConvertFakvToCPUPass
    : public fakv::impl::ConvertFakvToCPUBase<ConvertFakvToCPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (failed(checkNestedKernels(module)))
      return signalPassFailure();
    // Names the CPU path gives its own symbols (the fault word, the launch's extents, their check): a user's
    // symbol of one was a redefinition, or (@fakv_cpu_extents) read as "guarded already": no memory guard.
    for (Operation &op : module.getOps())
      if (auto sym = dyn_cast<SymbolOpInterface>(op); sym && sym.getName().starts_with("fakv_cpu_")) {
        op.emitOpError() << "is named like the CPU path's own symbols (@fakv_cpu_...); rename it";
        return signalPassFailure();
      }
    // The CPU path runs a launch's programs one after another: no cluster.
    WalkResult clusters = module.walk([](ClusterGatherOp op) {
      op.emitOpError() << "runs on the GPU only: the CPU path has no clusters of programs";
      return WalkResult::interrupt();
    });
    if (clusters.wasInterrupted())
      return signalPassFailure();
    // A kernel gains its program-id arguments below: a call to it (rather than a fakv.launch) would not match,
    // nor would any other reference to it (func.constant: "reference to function with mismatched type").
    for (auto kernel : module.getOps<func::FuncOp>()) {
      if (!isKernel(kernel))
        continue;
      for (const SymbolTable::SymbolUse &use : SymbolTable::getSymbolUses(kernel, module).value_or(
               SymbolTable::UseRange({}))) {
        Operation *user = use.getUser();
        if (isa<LaunchOp>(user))
          continue;
        user->emitOpError() << (isa<func::CallOp>(user) ? "calls" : "refers to") << " kernel @"
                            << kernel.getSymName()
                            << ": a kernel is launched over its programs (fakv.launch), not called";
        return signalPassFailure();
      }
    }
    // What the CPU lowering has no rewrite for, refused here rather than left in its output: GPU-level ops
    // (fakvgpu: barriers, rings), tensors of dynamic shapes, and values of other types than integers of up to 64 bits and f16, bf16, f32,
    // f64 (f8E4M3FN passed through untouched; an f4 fl.max started from -0.0, APFloat's inf of a format without).
    WalkResult foreign = module.walk([](Operation *op) {
      // A function's signature with fakv types changes below; a func.constant of it would keep the old type
      // (a session 54 fuzz: "reference to function with mismatched type" after the pass).
      if (auto c = dyn_cast<func::ConstantOp>(op)) {
        auto fakvType = [](Type t) { return isa<FakvDialect>(t.getDialect()); };
        FunctionType ft = cast<FunctionType>(c.getType());
        if (llvm::any_of(ft.getInputs(), fakvType) || llvm::any_of(ft.getResults(), fakvType)) {
          op->emitOpError() << "refers to a function of fakv types (" << ft
                            << "): the CPU path changes such signatures, and has no function values";
          return WalkResult::interrupt();
        }
      }
      if (op->getDialect() && op->getDialect()->getNamespace() == "fakvgpu") {
        op->emitOpError() << "is GPU-level IR: the CPU path takes fakv IR from before fakv-to-fakvgpu";
        return WalkResult::interrupt();
      }
      // (tiles have static shapes: the rewrites build dense constants of their types)
      for (Type t : op->getResultTypes())
        if (auto shaped = dyn_cast<RankedTensorType>(t); shaped && !shaped.hasStaticShape()) {
          op->emitOpError() << "has a result of a dynamic shape (" << t
                            << "): the CPU path takes tiles of static shapes";
          return WalkResult::interrupt();
        }
      auto kernel = op->getParentOfType<func::FuncOp>();
      if (!isKernel(kernel))
        return WalkResult::advance();
      for (Type t : op->getResultTypes())
        if (!isLoweredElementType(getElementTypeOrSelf(t))) {
          op->emitOpError() << "the CPU path holds integers of up to 64 bits and f16, bf16, f32 or f64 values, got "
                            << t;
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (foreign.wasInterrupted())
      return signalPassFailure();
    // GPU layouts (fakv-assign-layouts' encodings) are not the CPU path's: it takes the IR before them.
    WalkResult encoded = module.walk([](Operation *op) {
      for (Type t : op->getResultTypes())
        if (auto tile = dyn_cast<RankedTensorType>(t); tile && tile.getEncoding()) {
          op->emitOpError() << "has a GPU layout (" << t
                            << "): the CPU path takes fakv IR from before fakv-assign-layouts";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (encoded.wasInterrupted())
      return signalPassFailure();
    // The composite ops become tile primitives first, by the rewrites the
    // GPU pipeline runs (fakv-decompose, with exp2): one implementation.
    {
      RewritePatternSet decompose(ctx);
      populateFakvDecomposePatterns(decompose, /*useExp2=*/true);
      walkAndApplyPatterns(module, FrozenRewritePatternSet(std::move(decompose)));
    }
    saturateFloatToInt(module);
    module.walk([](func::FuncOp f) {
      // Divisibility facts serve the GPU lowering; the converted arguments
      // are no longer fakv types.
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        f.removeArgAttr(i, FakvDialect::getDivisibilityAttrName());
      if (isKernel(f))
        appendProgramIdArguments(f);
    });

    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion([ctx](PtrType) -> Type {
      return LLVM::LLVMPointerType::get(ctx);
    });

    ConversionTarget target(*ctx);
    target.addIllegalDialect<FakvDialect>();
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return converter.isLegal(op); });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType()) &&
             converter.isLegal(&f.getBody());
    });

    RewritePatternSet patterns(ctx);
    patterns.add<ArangeLowering, SplatLowering, BroadcastLowering,
                 ExpandDimsLowering, ReshapeLowering, CastLowering,
                 DotLowering, ReduceLowering, ItemLowering,
                 RotaryLowering, PtrOfLowering, LaunchLowering>(
        converter, ctx);
    populateMemoryToCPUPatterns(converter, patterns);
    populatePointerLoweringPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    scf::populateSCFStructuralTypeConversions(converter, patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // The launches have divided their grids.
    module.walk([](func::FuncOp f) {
      f->removeAttr(FakvDialect::getGridPackingAttrName());
    });
  }
};
} // namespace
