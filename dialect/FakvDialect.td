//===- FakvDialect.td - the fakv dialect -------------------*- tablegen -*-===//
//
// The dialect definition and the base classes every fakv op and type uses.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_DIALECT_TD
#define FAKV_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Fakv_Dialect : Dialect {
  let name = "fakv";
  let cppNamespace = "::mlir::fakv";
  let summary = "Tile ops for KV-cache decode attention";
  let description = [{
    `fakv` describes attention kernels at the level of tiles: statically shaped
    `tensor` values that a program (one instance of the kernel grid) loads from
    global memory, combines and stores back. Elementwise math on tiles uses the
    upstream `arith` and `math` dialects; loops are `scf.for` with tiles as
    loop-carried values. fakv adds what upstream has no op for: program ids,
    strided and paged loads and stores, tile matmul, the online-softmax step,
    the LSE combine of split-KV partial results, reductions, score modifiers
    (masks, softcap, ALiBi) and rotary embedding.

    A kernel is a `func.func` carrying the `fakv.kernel` unit attribute. Its
    pointer arguments have type `!fakv.ptr<T>` (global memory of elements T).
    Integer operands of fakv ops are `i32` (indices, lengths, sizes) or `i64`
    (strides, in elements). Every fakv op's tiles hold at most 2^24
    elements (the `BoundedTiles` trait each op lists); the score modifiers
    (`length_mask`, `causal_mask`, `window_mask`, `softcap`, `alibi`) take
    `M x N` f32 scores, `rows` each row's query position (`M x i32`) and
    `cols` each column's key position (`N x i32`).

    A kernel may carry `fakv.pack_gqa = N : i32`: it is written with
    program_id(N) a query head, and fakv-pack-gqa runs the query heads that
    share a kv head in one program. The packed kernel carries `fakv.grid_packing =
    array<i32: ...>`: a launch over the written grid runs grid[i] /
    grid_packing[i] programs along axis i.

    A kernel may carry the unit attribute `fakv.swap_ab`: on the GPU, a dot
    of fewer than 64 rows and a multiple of 64 columns runs as wgmmas of its
    transposes (its columns as wgmma's M, its rows padded as N), both
    operands from shared memory.

    A kernel may carry the unit attribute `fakv.gather_pages`: on the GPU, a
    paged load whose tile holds several pages (pages smaller than its rows)
    is gathered by the producer's threads (cp.async) instead of copied by a
    TMA box per page.

    A kernel may carry the unit attribute `fakv.row_boxes`: on the GPU, a
    tile copied by TMA goes in boxes of at most 16 rows (a page's when its
    pages are smaller), and each box's 64-channel parts are asked for one
    after the other before the next rows' (a row's channels together,
    rather than every row's first 64 channels and then the rest). A box
    that starts past the rows read (a sequence's last keys end inside the
    tile) asks for page `num_pages`, outside the tensor map: zeros, no DRAM
    read, its bytes still counted on the barrier; in pages that hold whole
    tiles (no left padding) the page is looked up once per tile. The API's
    decode carries it at head dims up to 128 (docs/decisions.md, "Row boxes
    by default").

    A kernel may carry `fakv.warm_pages = N` (an i32 in [1, 8]; an
    experiment, docs/decisions.md): on the GPU, each asynchronous paged copy
    also looks up the pages of the tile N tiles ahead and prefetches the
    first line of each of its boxes (a TMA copy's) or 16-row pieces (a
    gather's) into L2, so that their address translations and DRAM rows are
    asked for early.

    A kernel argument may carry `{fakv.divisibility = N}` (N a power of two):
    an integer argument is a multiple of N, a pointer argument N-byte
    aligned. The Python frontend specialises kernels on N = 16, and the GPU
    lowering then moves vectors without checking addresses at run time.
  }];
  let useDefaultTypePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::func::FuncDialect",
  ];
  let extraClassDeclaration = [{
    /// The unit attribute that marks a `func.func` as a fakv kernel.
    static constexpr ::llvm::StringLiteral getKernelAttrName() {
      return ::llvm::StringLiteral("fakv.kernel");
    }
    /// Asks fakv-pack-gqa to pack the query heads along grid axis N (i32).
    static constexpr ::llvm::StringLiteral getPackGQAAttrName() {
      return ::llvm::StringLiteral("fakv.pack_gqa");
    }
    /// Written by fakv-pack-gqa: per grid axis, how many programs of the
    /// written kernel one program of the packed kernel runs (i32 array of 3).
    static constexpr ::llvm::StringLiteral getGridPackingAttrName() {
      return ::llvm::StringLiteral("fakv.grid_packing");
    }
    /// Asks the GPU lowering to run dots of few rows with swapped operands.
    static constexpr ::llvm::StringLiteral getSwapABAttrName() {
      return ::llvm::StringLiteral("fakv.swap_ab");
    }
    /// Asks the GPU lowering to gather pages smaller than a tile (no TMA).
    static constexpr ::llvm::StringLiteral getGatherPagesAttrName() {
      return ::llvm::StringLiteral("fakv.gather_pages");
    }
    /// Marks an arith.fptosi whose saturation and NaN are made explicit around it (saturateFloatToInt;
    /// the conversions that lower it may carry it on).
    static constexpr ::llvm::StringLiteral getSaturatedAttrName() {
      return ::llvm::StringLiteral("fakv.saturated");
    }
    /// Asks the GPU lowering to copy TMA tiles in boxes of at most 16 rows, row chunk by row chunk.
    static constexpr ::llvm::StringLiteral getRowBoxesAttrName() {
      return ::llvm::StringLiteral("fakv.row_boxes");
    }
    /// Asks the GPU lowering to prefetch into L2 the first lines of the tile N tiles ahead of each paged
    /// copy (i32 N in [1, 8]; an experiment).
    static constexpr ::llvm::StringLiteral getWarmPagesAttrName() {
      return ::llvm::StringLiteral("fakv.warm_pages");
    }
    /// The argument attribute: a multiple of N / N-byte aligned.
    static constexpr ::llvm::StringLiteral getDivisibilityAttrName() {
      return ::llvm::StringLiteral("fakv.divisibility");
    }
  }];
}

// Every fakv op: its tiles hold at most kMaxTileElements (FakvDialect.h).
def BoundedTiles : NativeOpTrait<"BoundedTiles"> {
  let cppNamespace = "::mlir::OpTrait::fakv";
}

class Fakv_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fakv_Dialect, mnemonic, !listconcat(traits, [BoundedTiles])>;

class Fakv_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Fakv_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

#endif // FAKV_DIALECT_TD
