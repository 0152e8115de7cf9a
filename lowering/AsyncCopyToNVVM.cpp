//===- AsyncCopyToNVVM.cpp - rings, barriers, asynchronous copies -----------===//
//
// Shared-memory rings and mbarriers at the offsets fakvgpu-plan-shared-memory
// placed; ring_view, wait (mbarrier try_wait on a phase), arrive;
// async_paged_load as TMA (cp.async.bulk.tensor through the tensor map
// fakvgpu-tma-arguments appended) or a cp.async gather (16-byte chunks, or
// element by element where rows are not known to be aligned), a page outside
// the cache reported.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/PointerLowering.h"

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
// Rings, barriers, asynchronous copies
//===----------------------------------------------------------------------===//

struct AllocRingLowering : OpConversionPattern<fakvgpu::AllocRingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(fakvgpu::AllocRingOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (failed(requirePlacement(op)))
      return failure();
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
    if (failed(requirePlacement(op)))
      return failure();
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

// The load right after `op` when it copies the same rows through the same
// block table into another ring by TMA (decode's V after its K): its copies
// can follow `op`'s under the same page lookups and report.
static fakvgpu::AsyncPagedLoadOp tmaTwin(fakvgpu::AsyncPagedLoadOp op) {
  auto twin = dyn_cast_or_null<fakvgpu::AsyncPagedLoadOp>(op->getNextNode());
  if (!twin || !op.getTable() || !twin->hasAttr(kTmaParamAttr))
    return {};
  bool same = twin.getTable() == op.getTable() && twin.getHead() == op.getHead() &&
              twin.getRow() == op.getRow() && twin.getValid() == op.getValid() &&
              twin.getLeftpad() == op.getLeftpad() && twin.getPageSize() == op.getPageSize() &&
              twin.getNumPages() == op.getNumPages() && twin.getError() == op.getError() &&
              twin.getErrorCode() == op.getErrorCode() && twin.getSlot() == op.getSlot() &&
              twin.getRing().getType().getTile() == op.getRing().getType().getTile() &&
              fakvgpu::AsyncPagedLoadOp::rowBoxes(twin) == fakvgpu::AsyncPagedLoadOp::rowBoxes(op);
  return same ? twin : fakvgpu::AsyncPagedLoadOp();
}

// fakv.warm_pages = N (an experiment, off unless asked for): the tile N
// tiles ahead of the one copied has its pages looked up and the first line
// of each of its pieces (a TMA copy's boxes, a gather's 16-row pieces)
// prefetched into L2, in the load's cache and its twin's, so that the
// line's address translation and DRAM row are asked for before its copy.
// Rows past those read and pages outside [0, num_pages) are not touched.
static int64_t warmLead(Operation *op) {
  auto func = op->getParentOfType<FunctionOpInterface>();
  auto lead = func ? func->getAttrOfType<IntegerAttr>(FakvDialect::getWarmPagesAttrName()) : IntegerAttr();
  return lead ? lead.getInt() : 0;
}

struct WarmTarget {
  Value cache, pageStride, rowStride, headStride;
};

/// The cache a load copies from, as a WarmTarget.
static WarmTarget warmTarget(fakvgpu::AsyncPagedLoadOp::Adaptor a) {
  return {a.getCache(), a.getPageStride(), a.getRowStride(), a.getHeadStride()};
}

/// The page and the row in it of the piece at unpadded row `row` (see
/// warmLead), under the load's table, page and padding; num_pages for a
/// piece past the rows read (its table entry not loaded). `contiguousPages`:
/// a cache without a table counts its pages from the load's page, as the
/// gather does (else the page is the load's and the row its offset). Every
/// piece's page is asked for before any is used: one table round trip.
static std::pair<Value, Value> warmPage(OpBuilder &b, Location loc, fakvgpu::AsyncPagedLoadOp::Adaptor a,
                                        Value row, Value rowsRead, bool contiguousPages) {
  Value live = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, rowsRead);
  Value p = a.getLeftpad() ? Value(arith::AddIOp::create(b, loc, row, a.getLeftpad())) : row;
  if (!a.getTable() && !contiguousPages)
    return {arith::SelectOp::create(b, loc, live, a.getPage(), a.getNumPages()), p};
  Value pageIdx = arith::DivSIOp::create(b, loc, p, a.getPageSize());
  Value offset = arith::RemSIOp::create(b, loc, p, a.getPageSize());
  if (!a.getTable())
    return {arith::SelectOp::create(b, loc, live, arith::AddIOp::create(b, loc, a.getPage(), pageIdx),
                                    a.getNumPages()),
            offset};
  Value idx = arith::ExtSIOp::create(b, loc, b.getI64Type(), pageIdx);
  Value page = ifValue(
      b, loc, live, b.getI32Type(),
      [&](OpBuilder &lb) -> Value {
        return LLVM::LoadOp::create(lb, loc, lb.getI32Type(),
                                    elementAddress(lb, loc, a.getTable(), idx, lb.getI32Type()));
      },
      [&](OpBuilder &) -> Value { return a.getNumPages(); });
  return {page, offset};
}

/// The prefetch into L2 of the line at (`page`, row `offset`) of the load's
/// head in each cache of `caches`, for a page inside the cache.
static void warmPrefetch(OpBuilder &b, Location loc, fakvgpu::AsyncPagedLoadOp::Adaptor a, Value page,
                         Value offset, ArrayRef<WarmTarget> caches, Type et) {
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, page, a.getNumPages());
  auto ifInside = scf::IfOp::create(b, loc, inside, false);
  OpBuilder pb = OpBuilder::atBlockBegin(&ifInside.getThenRegion().front());
  auto ext = [&](Value v) { return arith::ExtSIOp::create(pb, loc, pb.getI64Type(), v); };
  for (const WarmTarget &t : caches) {
    Value elem = arith::AddIOp::create(
        pb, loc,
        arith::AddIOp::create(pb, loc, arith::MulIOp::create(pb, loc, ext(page), t.pageStride),
                              arith::MulIOp::create(pb, loc, ext(offset), t.rowStride)),
        arith::MulIOp::create(pb, loc, ext(a.getHead()), t.headStride));
    NVVM::PrefetchOp::create(pb, loc, NVVM::PrefetchCacheLevelAttr::get(pb.getContext(), NVVM::PrefetchCacheLevel::L2),
                             NVVM::CacheEvictionPriorityAttr(), elementAddress(pb, loc, t.cache, elem, et),
                             Value(), UnitAttr(), UnitAttr(), UnitAttr());
  }
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

    // addTensorMapArguments decided TMA before the conversion started. A
    // tile of several pages (pages of 16 in 32-key blocks) is a box per page:
    // a page's rows land where one box of the whole tile would put them (a
    // page is whole 128-byte swizzle atoms of 8 rows); a page past the rows
    // read is not looked up: its box reads out of range (zeros, its bytes
    // still counted). So with fakv.row_boxes a key block's boxes past the
    // sequence's last key read no DRAM, paged or contiguous (a ragged
    // batch's last blocks: 1.7 % of b128 s<=4K's bytes read in whole boxes).
    if (auto tma = op->getAttrOfType<IntegerAttr>(kTmaParamAttr)) {
      auto func = op->getParentOfType<FunctionOpInterface>();
      Value map = func.getArgument(tma.getInt());
      fakvgpu::AsyncPagedLoadOp twin = tmaTwin(op);
      bool rowBoxes = fakvgpu::AsyncPagedLoadOp::rowBoxes(op);
      int64_t boxRows = fakvgpu::AsyncPagedLoadOp::tmaBoxRows(tile, op.getPageSize(), op.getTable(), rowBoxes);
      Value leader = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                           tid, i32(rewriter, loc, 0));
      auto ifOp = scf::IfOp::create(rewriter, loc, leader, false);
      OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
      Value rowsRead = boxRows < rows ? fakv::PagedLoadOp::rowsRead(tb, loc, a.getValid(), a.getPage(),
                                                                     a.getLeftpad(), a.getPageSize())
                                      : Value();
      SmallVector<std::pair<Value, Value>> boxes;     // (page, row in it) of each box
      SmallVector<Value> lives;                        // whether it holds rows read (null: yes)
      // Row boxes of a tile inside one page (no left padding; the page a
      // multiple of the tile's rows, which starts at a multiple of them):
      // the page looked up once, for the first box; the others take it or,
      // past the rows read, num_pages (one table load a tile instead of one a
      // box; b1 s8K pages of 256 stayed 1.5 % slower with row boxes than
      // without on the H200, session 25: not the lookups).
      APInt pageRows;
      bool onePage = a.getTable() && !a.getLeftpad() && boxRows < rows &&
                     matchPattern(op.getPageSize(), m_ConstantInt(&pageRows)) &&
                     pageRows.getSExtValue() % rows == 0;
      auto down = [&](Value v, int64_t j) -> Value {    // v + j boxes' rows
        return j ? Value(arith::AddIOp::create(tb, loc, v, i32(tb, loc, j * boxRows))) : v;
      };
      for (int64_t j = 0; j < rows / boxRows; ++j) {
        // Whether the box holds rows read (its first key below them); a box
        // past them asks for page num_pages: zeros, no DRAM read.
        Value page, offset, live;
        if (rowsRead)
          live = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::slt, down(a.getRow(), j), rowsRead);
        if (onePage && j > 0) {
          page = arith::SelectOp::create(tb, loc, live, boxes[0].first, a.getNumPages());
          offset = down(boxes[0].second, j);
        } else if (a.getTable()) {
          Value at = down(pos, j);
          Value pageIdx = arith::DivSIOp::create(tb, loc, at, a.getPageSize());
          offset = arith::RemSIOp::create(tb, loc, at, a.getPageSize());
          Value idx = arith::ExtSIOp::create(tb, loc, tb.getI64Type(), pageIdx);
          auto lookUp = [&](OpBuilder &lb) -> Value {
            return LLVM::LoadOp::create(lb, loc, lb.getI32Type(),
                                        elementAddress(lb, loc, a.getTable(), idx, lb.getI32Type()));
          };
          page = live ? ifValue(tb, loc, live, tb.getI32Type(), lookUp,
                                [&](OpBuilder &eb) -> Value { return a.getNumPages(); })
                      : lookUp(tb);
        } else {              // (a contiguous cache: boxes of fakv.row_boxes' rows down its page)
          offset = down(pos, j);
          page = live ? Value(arith::SelectOp::create(tb, loc, live, a.getPage(), a.getNumPages()))
                      : a.getPage();
        }
        boxes.push_back({page, offset});
        lives.push_back(live);
      }
      // Then one report of the bad pages among those looked up (a page outside
      // [0, num_pages) is bad data, fakv.paged_load; its box reads zeros).
      Value anyBad;
      for (auto [box, live] : llvm::zip(boxes, lives)) {
        Value bad = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::uge, box.first, a.getNumPages());
        if (live)
          bad = arith::AndIOp::create(tb, loc, bad, live);
        anyBad = anyBad ? Value(arith::OrIOp::create(tb, loc, anyBad, bad)) : bad;
      }
      if (a.getError())
        reportIf(tb, loc, a.getError(), anyBad, a.getErrorCode());
      // Each box's 64-channel parts land in the slot's 64-channel panels
      // (rows x 128 bytes each). Asked for panel by panel (every box's first
      // 64 channels, then the next 64), or with fakv.row_boxes box by box (a
      // row's channels together).
      auto ptr7 = ptrType(tb.getContext(), 7);
      auto copyTile = [&](Value tileMap, Value tileSlot, Value tileBar) {
        NVVM::MBarrierArriveExpectTxOp::create(
            tb, loc, TypeRange{}, tileBar, i32(tb, loc, rows * cols * elemBytes),
            NVVM::MemScopeKind::CTA, false, Value());
        auto copy = [&](int64_t p, int64_t j) {
          Value dst = addBytes(tb, loc, tileSlot, i32(tb, loc, (p * rows + j * boxRows) * 128));
          Value dst7 = LLVM::AddrSpaceCastOp::create(tb, loc, ptr7, dst);
          NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
              tb, loc, dst7, tileMap,
              ValueRange{i32(tb, loc, 64 * p), a.getHead(), boxes[j].second, boxes[j].first}, tileBar,
              ValueRange{}, Value(), Value(),
              NVVM::TMALoadModeAttr::get(tb.getContext(), NVVM::TMALoadMode::TILE),
              tb.getBoolAttr(false), NVVM::CTAGroupKindAttr(), Value());
        };
        int64_t panels = cols / 64, count = static_cast<int64_t>(boxes.size());
        for (int64_t outer = 0; outer < (rowBoxes ? count : panels); ++outer)
          for (int64_t inner = 0; inner < (rowBoxes ? panels : count); ++inner)
            rowBoxes ? copy(inner, outer) : copy(outer, inner);
      };
      copyTile(map, slot, bar);
      if (int64_t lead = warmLead(op)) {
        SmallVector<WarmTarget> caches{warmTarget(a)};
        if (twin)
          caches.push_back({rewriter.getRemappedValue(twin.getCache()), twin.getPageStride(),
                            twin.getRowStride(), twin.getHeadStride()});
        Value read = rowsRead ? rowsRead
                              : fakv::PagedLoadOp::rowsRead(tb, loc, a.getValid(), a.getPage(), a.getLeftpad(),
                                                            a.getPageSize());
        SmallVector<std::pair<Value, Value>> ahead;     // (page, row in it) of each box, all looked up first
        for (int64_t j = 0; j < rows / boxRows; ++j)
          ahead.push_back(warmPage(tb, loc, a,
                                   arith::AddIOp::create(tb, loc, a.getRow(), i32(tb, loc, lead * rows + j * boxRows)),
                                   read, /*contiguousPages=*/false));
        for (auto [page, offset] : ahead)
          warmPrefetch(tb, loc, a, page, offset, caches, tile.getElementType());
      }
      // A twin (decode's V after its K, tmaTwin): its tile copied right after
      // this one, under the same lookups and report (not looked up again).
      if (twin) {
        Value twinMap = func.getArgument(twin->getAttrOfType<IntegerAttr>(kTmaParamAttr).getInt());
        Value twinSlot = slotAt(tb, loc, rewriter.getRemappedValue(twin.getRing()), twin.getRing().getType(),
                                a.getSlot());
        copyTile(twinMap, twinSlot, barrierAt(tb, loc, rewriter.getRemappedValue(twin.getSignal()), a.getSlot()));
        rewriter.eraseOp(twin);
      }
      rewriter.eraseOp(op);
      return success();
    }

    // cp.async gather: 16-byte chunks, rows past `valid` (or past a
    // contiguous cache's page) zero-filled. First every chunk's page (the
    // block-table loads back to back: one round trip, not one per copy),
    // then one report of the bad pages among them, then the copies.
    Value rowsRead = fakv::PagedLoadOp::rowsRead(rewriter, loc, a.getValid(), a.getPage(),
                                                 a.getLeftpad(), a.getPageSize());
    int64_t chunksPerRow = cols * elemBytes / 16;
    bool wholeChunks = op->hasAttr(fakvgpu::kWholeChunksAttr);
    int64_t threads = roleOf(op).count;
    Type et = tile.getElementType();
    struct Chunk {
      Value inTile, r, col, rowValid, p, page, inside;
    };
    SmallVector<Chunk> chunks;   // this thread's: its tile row and column, its position and page
    Value anyBad;
    for (int64_t q0 = 0; q0 < rows * chunksPerRow; q0 += threads) {
      Value q = arith::AddIOp::create(rewriter, loc, tid, i32(rewriter, loc, q0));
      Value inTile = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, q,
                                           i32(rewriter, loc, rows * chunksPerRow));
      Value r = arith::DivUIOp::create(rewriter, loc, q, i32(rewriter, loc, chunksPerRow));
      Value col = arith::MulIOp::create(
          rewriter, loc, arith::RemUIOp::create(rewriter, loc, q, i32(rewriter, loc, chunksPerRow)),
          i32(rewriter, loc, 16 / elemBytes));
      Value key = arith::AddIOp::create(rewriter, loc, a.getRow(), r);
      Value rowValid = arith::AndIOp::create(
          rewriter, loc, inTile,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, key, rowsRead));
      Value p = a.getLeftpad() ? Value(arith::AddIOp::create(rewriter, loc, key, a.getLeftpad())) : key;
      Value pageIdx = arith::DivSIOp::create(rewriter, loc, p, a.getPageSize());
      Value page;
      if (a.getTable()) {
        Value idx = arith::ExtSIOp::create(rewriter, loc, rewriter.getI64Type(), pageIdx);
        page = ifValue(
            rewriter, loc, rowValid, rewriter.getI32Type(),
            [&](OpBuilder &vb) -> Value {
              return LLVM::LoadOp::create(
                  vb, loc, vb.getI32Type(),
                  elementAddress(vb, loc, a.getTable(), idx, vb.getI32Type()));
            },
            [&](OpBuilder &eb) -> Value { return i32(eb, loc, 0); });
      } else {
        page = arith::AddIOp::create(rewriter, loc, a.getPage(), pageIdx);
      }
      Value outside = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::uge, page,
                                            a.getNumPages());
      Value bad = arith::AndIOp::create(rewriter, loc, outside, rowValid);
      anyBad = anyBad ? Value(arith::OrIOp::create(rewriter, loc, anyBad, bad)) : bad;
      chunks.push_back({inTile, r, col, rowValid, p, page,
                        arith::XOrIOp::create(rewriter, loc, outside,
                                              arith::ConstantIntOp::create(rewriter, loc, 1, 1))});
    }
    if (a.getError() && anyBad)       // (a page outside [0, num_pages): reported, not read)
      reportIf(rewriter, loc, a.getError(), anyBad, a.getErrorCode());
    for (const Chunk &c : chunks) {
      const auto &[inTile, r, col, rowValid, p, page, inside] = c;
      auto ifOp = scf::IfOp::create(rewriter, loc, inTile, false);
      OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
      Value rowOk = arith::AndIOp::create(tb, loc, rowValid, inside);   // a row read, of a page inside
      Value valid = rowOk;
      if (a.getChannels())
        valid = arith::AndIOp::create(
            tb, loc, valid,
            arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::slt, col,
                                  a.getChannels()));
      Value offset = arith::RemSIOp::create(tb, loc, p, a.getPageSize());
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
    // (fakv.warm_pages: a thread a 16-row piece of the tile that far ahead,
    // after its arrival is registered: the table load it waits on does not
    // hold back the barrier.)
    if (int64_t lead = warmLead(op); lead && rows % 16 == 0 && rows / 16 <= threads) {
      Value mine = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, tid,
                                         i32(rewriter, loc, rows / 16));
      auto ifMine = scf::IfOp::create(rewriter, loc, mine, false);
      OpBuilder wb = OpBuilder::atBlockBegin(&ifMine.getThenRegion().front());
      Value row = arith::AddIOp::create(
          wb, loc, a.getRow(),
          arith::AddIOp::create(wb, loc, arith::MulIOp::create(wb, loc, tid, i32(wb, loc, 16)),
                                i32(wb, loc, lead * rows)));
      auto [page, offset] = warmPage(wb, loc, a, row, rowsRead, /*contiguousPages=*/true);
      warmPrefetch(wb, loc, a, page, offset, warmTarget(a), et);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void codegen::populateAsyncCopyToNVVMPatterns(const TypeConverter &converter,
                                              RewritePatternSet &patterns) {
  patterns.add<AllocRingLowering, AllocBarriersLowering, RingViewLowering, WaitLowering,
               ArriveLowering, ClearRowsLowering, AsyncPagedLoadLowering>(converter,
                                                                          patterns.getContext());
}
