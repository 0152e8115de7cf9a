//===- DotToNVVM.cpp - fakv.dot as warpgroup wgmma on sm_90a --------------===//
//
// `acc + a * b` on one warpgroup, m64nNk16 at a time: B always from shared
// memory (K-major when `transpose_b`, as Kᵀ in Q·Kᵀ; MN-major otherwise, as
// V in P·V), A from shared memory (SS, nvvm.wgmma.mma_async) or from the
// registers of a previous accumulator (RS, inline PTX: MLIR 22 has no
// register-A op). The shared-memory matrix descriptors follow the PTX ISA's
// wgmma section (128-byte swizzle; docs/pipeline.md). The accumulator registers of a tile of
// fewer than 64 rows are the 64-row ones restricted to it; the A rows in
// shared memory repeat to match.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

namespace {

/// Descriptor of a 128B-swizzled shared tile whose base is `tile`:
/// start address, leading byte offset `lbo` and stride byte offset 1024 B.
Value descriptor(OpBuilder &b, Location loc, Value tile, int64_t lbo) {
  Value addr = LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), tile);
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, addr, i32(b, loc, 0x3FFFF)),
      i32(b, loc, 4));
  int64_t fixed = (int64_t(1) << 62) | (int64_t(64) << 32) | ((lbo >> 4) << 16);
  return arith::OrIOp::create(
      b, loc, arith::ExtUIOp::create(b, loc, b.getI64Type(), start),
      i64(b, loc, fixed));
}

Value advance(OpBuilder &b, Location loc, Value desc, int64_t bytes) {
  if (!bytes)
    return desc;
  return arith::AddIOp::create(b, loc, desc, i64(b, loc, bytes >> 4));
}

/// For each register of the 64-row layout `full`, the register of the
/// restricted layout `part` holding the same element (rows repeat).
SmallVector<int64_t> restrictMap(const LinearLayout &full,
                                 const LinearLayout &part,
                                 ArrayRef<int64_t> shape) {
  SmallVector<int64_t> map;
  for (int64_t r = 0; r < full.numRegs(); ++r) {
    fakvgpu::Coord c = full.regCoord(r);
    for (unsigned d = 0; d < c.size(); ++d)
      c[d] &= shape[d] - 1;
    map.push_back(*part.regOf(c));
  }
  return map;
}

std::string wgmmaAsm(int64_t n, StringRef type, bool transposeB) {
  // Operands: n/2 outputs, n/2 tied inputs, 4 A registers, B, scale-d.
  int64_t a = n;
  std::string s = "{\n.reg .pred p;\nsetp.ne.b32 p, $" +
                  std::to_string(a + 5) +
                  ", 0;\nwgmma.mma_async.sync.aligned.m64n" +
                  std::to_string(n) + "k16.f32." + type.str() + "." +
                  type.str() + " {";
  for (int64_t i = 0; i < n / 2; ++i)
    s += (i ? ", $" : "$") + std::to_string(i);
  s += "}, {$" + std::to_string(a) + ", $" + std::to_string(a + 1) + ", $" +
       std::to_string(a + 2) + ", $" + std::to_string(a + 3) + "}, $" +
       std::to_string(a + 4) + ", p, 1, 1, " + (transposeB ? "0" : "1") +
       ";\n}\n";
  return s;
}

std::string wgmmaConstraints(int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n / 2; ++i)
    s += (i ? ",=f" : "=f");
  for (int64_t i = 0; i < n / 2; ++i)
    s += "," + std::to_string(i);
  s += ",r,r,r,r,l,n";
  return s;
}

/// One wgmma m64nNk16 with both operands from shared memory (descriptors);
/// `layoutA` row: K-major, col: M-major (read transposed); `layoutB` col:
/// K-major, row: N-major.
Value wgmmaShared(OpBuilder &b, Location loc, Type structType, Value acc, Value descA,
                  Value descB, int64_t n, Type elem, NVVM::MMALayout layoutA,
                  NVVM::MMALayout layoutB) {
  MLIRContext *ctx = b.getContext();
  auto wgType = elem.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  return NVVM::WgmmaMmaAsyncOp::create(
      b, loc, structType, acc, descA, descB, NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
      NVVM::WGMMATypesAttr::get(ctx, wgType), NVVM::WGMMATypesAttr::get(ctx, wgType),
      NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
      NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::MMALayoutAttr::get(ctx, layoutA), NVVM::MMALayoutAttr::get(ctx, layoutB),
      NVVM::MMAIntOverflowAttr());
}

/// True when the dot's result has the swapped accumulator layout (the
/// kernel's fakv.swap_ab, fewer than 64 rows: AssignLayouts).
bool isSwapped(DotOp op) {
  RankedTensorType t = op.getType();
  if (t.getDimSize(0) >= 64 || t.getDimSize(1) % 64 != 0)
    return false;
  LinearLayout l = layoutOf(t);
  return l == LinearLayout::wgmmaSwappedAccumulator(t.getShape(), l.numWarps());
}

/// An M x N dot of fewer than 64 rows as N / 64 wgmmas of the transposes:
/// C^T[N, M'] = B^T[N, K] A^T[K, M'], M' = M rounded up (at least 8), both
/// operands from shared memory: the old B is wgmma's A (K-major when it is
/// stored [N][K], the transpose_b form; else M-major, read transposed) and
/// the old A wgmma's B, K-major [M'][K] (its rows past M repeat). 64 / M'
/// times less tensor work than a 64-row wgmma of M useful rows.
LogicalResult lowerSwapped(DotOp op, DotOp::Adaptor a, ConversionPatternRewriter &rewriter,
                           const TypeConverter &converter) {
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  RankedTensorType accType = op.getType();
  int64_t m = accType.getDimSize(0), n = accType.getDimSize(1);
  int64_t mp = LinearLayout::wgmmaSwappedN(m);
  auto bType = op.getB().getType();
  int64_t k = op.getTransposeB() ? bType.getDimSize(1) : bType.getDimSize(0);
  if (!isa_and_present<fakvgpu::SharedAttr>(op.getA().getType().getEncoding()))
    return op.emitOpError() << "A of a swapped dot must be in shared memory";
  if (k % 16 != 0)
    return op.emitOpError() << "wgmma needs K a multiple of 16, got " << k;
  Type elem = bType.getElementType();

  LinearLayout accLayout = layoutOf(accType);
  LinearLayout full = LinearLayout::wgmmaSwappedAccumulator({mp, n}, accLayout.numWarps());
  SmallVector<int64_t> accMap = restrictMap(full, accLayout, accType.getShape());
  int64_t per = mp / 2; // f32 registers of one wgmma's accumulator
  Type f32 = rewriter.getF32Type();
  auto structType = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(per, f32));

  int64_t bRows = sharedRows(op.getB()), aRows = sharedRows(op.getA());
  // wgmma's B must hold M' rows: a panel of fewer would read the next one
  // as rows, out of phase with the swizzle.
  if (aRows != mp)
    return op.emitOpError() << "A of a swapped dot must be stored with " << mp
                            << " rows ('" << fakvgpu::kStoredRowsAttr << "' of its shared tile), got " << aRows;
  Value descOldB = op.getTransposeB() ? descriptor(rewriter, loc, a.getB(), 16)
                                      : descriptor(rewriter, loc, a.getB(), bRows * 128);
  Value descOldA = descriptor(rewriter, loc, a.getA(), 16);
  // Every chain's accumulator is set up before the fence (wgmma.fence orders
  // the registers' writes before the wgmmas read them). (An accumulator of
  // one value in several registers, a zero fill or rows past M < 2 within a
  // thread, still becomes moves after the fence: ptxas injects an arrive
  // there, C7519; not at GQA 4, where every register is distinct.)
  SmallVector<Value> accs;
  for (int64_t h = 0; h < n / 64; ++h) {
    Value acc = LLVM::UndefOp::create(rewriter, loc, structType);
    for (int64_t r = 0; r < per; ++r)
      acc = LLVM::InsertValueOp::create(
          rewriter, loc, acc,
          vector::ExtractOp::create(rewriter, loc, a.getAcc(),
                                    ArrayRef<int64_t>{accMap[h * per + r]}),
          ArrayRef<int64_t>{r});
    accs.push_back(acc);
  }
  NVVM::WgmmaFenceAlignedOp::create(rewriter, loc);
  for (int64_t h = 0; h < n / 64; ++h) {
    Value acc = accs[h];
    for (int64_t s = 0; s < k / 16; ++s) {
      // wgmma's A: rows 64h.. of B^T. Stored [N][K] (panels of 64 columns
      // of K): row 64h is 64h x 128 bytes into each panel. Stored [K][N]
      // (panels of 64 columns of N): panel h, 16 rows of K per step.
      Value descA = op.getTransposeB()
                        ? advance(rewriter, loc, descOldB,
                                  64 * h * 128 + (s / 4) * bRows * 128 + (s % 4) * 32)
                        : advance(rewriter, loc, descOldB, h * bRows * 128 + s * 16 * 128);
      Value descB = advance(rewriter, loc, descOldA, (s / 4) * aRows * 128 + (s % 4) * 32);
      // A: K-major for B stored [N][K], else M-major; B: K-major.
      acc = wgmmaShared(rewriter, loc, structType, acc, descA, descB, mp, elem,
                        op.getTransposeB() ? NVVM::MMALayout::row : NVVM::MMALayout::col,
                        NVVM::MMALayout::col);
    }
    accs[h] = acc;
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(rewriter, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(rewriter, loc, 0);

  SmallVector<Value> out(accLayout.numRegs());
  for (int64_t h = 0; h < n / 64; ++h)
    for (int64_t r = 0; r < per; ++r)
      if (!out[accMap[h * per + r]])
        out[accMap[h * per + r]] =
            LLVM::ExtractValueOp::create(rewriter, loc, accs[h], ArrayRef<int64_t>{r});
  rewriter.replaceOp(op, vector::FromElementsOp::create(
                             rewriter, loc, cast<VectorType>(converter.convertType(accType)), out));
  return success();
}

struct DotLowering : OpConversionPattern<DotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DotOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType accType = op.getType();
    if (isSwapped(op))
      return lowerSwapped(op, a, rewriter, *getTypeConverter());
    int64_t n = accType.getDimSize(1);
    auto bType = op.getB().getType();
    int64_t k = op.getTransposeB() ? bType.getDimSize(1) : bType.getDimSize(0);
    if (!isa_and_present<fakvgpu::SharedAttr>(bType.getEncoding()))
      return op.emitOpError() << "B must be in shared memory";
    if (n % 8 != 0 || n > 256 || k % 16 != 0)
      return op.emitOpError() << "wgmma needs N a multiple of 8 up to 256 and "
                                 "K a multiple of 16, got N = "
                              << n << ", K = " << k;
    bool aInRegisters = isa<fakvgpu::LinearAttr>(op.getA().getType().getEncoding());
    Type elem = bType.getElementType();
    StringRef typeName = elem.isBF16() ? "bf16" : "f16";

    LinearLayout accLayout = layoutOf(accType);
    LinearLayout full =
        LinearLayout::wgmmaAccumulator({64, n}, accLayout.numWarps());
    if (accLayout != full.restricted(accType.getShape()))
      return op.emitOpError() << "the accumulator and result must be in the wgmma layout "
                                 "(fakv-assign-layouts gives it)";
    SmallVector<int64_t> accMap = restrictMap(full, accLayout, accType.getShape());
    Type f32 = rewriter.getF32Type();
    auto structType = LLVM::LLVMStructType::getLiteral(
        ctx, SmallVector<Type>(full.numRegs(), f32));
    Value acc = LLVM::UndefOp::create(rewriter, loc, structType);
    for (int64_t r = 0; r < full.numRegs(); ++r)
      acc = LLVM::InsertValueOp::create(
          rewriter, loc, acc,
          vector::ExtractOp::create(rewriter, loc, a.getAcc(),
                                    ArrayRef<int64_t>{accMap[r]}),
          ArrayRef<int64_t>{r});

    // B: K-major [N][K] or MN-major [K][N], panels of 64 columns.
    int64_t bRows = sharedRows(op.getB());
    Value descB0 = op.getTransposeB()
                       ? descriptor(rewriter, loc, a.getB(), 16)
                       : descriptor(rewriter, loc, a.getB(), bRows * 128);
    auto descBAt = [&](int64_t step) {
      if (op.getTransposeB())
        return advance(rewriter, loc, descB0,
                       (step / 4) * bRows * 128 + (step % 4) * 32);
      return advance(rewriter, loc, descB0, step * 16 * 128);
    };

    NVVM::WgmmaFenceAlignedOp::create(rewriter, loc);
    if (!aInRegisters) {
      int64_t aRows = sharedRows(op.getA());
      Value descA0 = descriptor(rewriter, loc, a.getA(), 16);
      for (int64_t s = 0; s < k / 16; ++s) {
        Value descA = advance(rewriter, loc, descA0,
                              (s / 4) * aRows * 128 + (s % 4) * 32);
        acc = wgmmaShared(rewriter, loc, structType, acc, descA, descBAt(s), n, elem,
                          NVVM::MMALayout::row,
                          op.getTransposeB() ? NVVM::MMALayout::col : NVVM::MMALayout::row);
      }
    } else {
      // A from registers: for k-slice s, registers 8s .. 8s+7 of the 64-row
      // accumulator layout of the [M, K] tile, packed in pairs (even low).
      auto aType = cast<RankedTensorType>(op.getA().getType());
      LinearLayout aLayout = layoutOf(aType);
      LinearLayout aFull = LinearLayout::wgmmaAccumulator({64, k}, aLayout.numWarps());
      if (aLayout != aFull.restricted(aType.getShape()))
        return op.emitOpError() << "A in registers must be in the wgmma layout";
      SmallVector<int64_t> aMap = restrictMap(aFull, aLayout, aType.getShape());
      // imm-trans-b: 0 for a K-major B (transpose_b), 1 for MN-major.
      std::string asmString = wgmmaAsm(n, typeName, op.getTransposeB());
      std::string constraints = wgmmaConstraints(n);
      auto pairType = VectorType::get({2}, elem);
      for (int64_t s = 0; s < k / 16; ++s) {
        SmallVector<Value> operands;
        for (int64_t r = 0; r < full.numRegs(); ++r)
          operands.push_back(LLVM::ExtractValueOp::create(rewriter, loc, acc,
                                                          ArrayRef<int64_t>{r}));
        for (int64_t p = 0; p < 4; ++p) {
          Value lo = vector::ExtractOp::create(rewriter, loc, a.getA(),
                                               ArrayRef<int64_t>{aMap[8 * s + 2 * p]});
          Value hi = vector::ExtractOp::create(rewriter, loc, a.getA(),
                                               ArrayRef<int64_t>{aMap[8 * s + 2 * p + 1]});
          Value pair = vector::FromElementsOp::create(rewriter, loc, pairType,
                                                      ValueRange{lo, hi});
          operands.push_back(
              LLVM::BitcastOp::create(rewriter, loc, rewriter.getI32Type(), pair));
        }
        operands.push_back(descBAt(s));
        operands.push_back(i32(rewriter, loc, 1)); // scale-d: accumulate
        acc = LLVM::InlineAsmOp::create(
                  rewriter, loc, structType, operands,
                  rewriter.getStringAttr(asmString),
                  rewriter.getStringAttr(constraints), rewriter.getUnitAttr(),
                  UnitAttr(), LLVM::TailCallKindAttr(),
                  LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
                  ArrayAttr())
                  .getResult(0);
      }
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(rewriter, loc);
    NVVM::WgmmaWaitGroupSyncOp::create(rewriter, loc, 0);

    // Back to the (restricted) accumulator vector.
    SmallVector<Value> out(accLayout.numRegs());
    for (int64_t r = 0; r < full.numRegs(); ++r)
      if (!out[accMap[r]])
        out[accMap[r]] = LLVM::ExtractValueOp::create(rewriter, loc, acc,
                                                      ArrayRef<int64_t>{r});
    rewriter.replaceOp(
        op, vector::FromElementsOp::create(
                rewriter, loc,
                cast<VectorType>(getTypeConverter()->convertType(accType)), out));
    return success();
  }
};
} // namespace

void codegen::populateDotToNVVMPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns) {
  patterns.add<DotLowering>(converter, patterns.getContext());
}
