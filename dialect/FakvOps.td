//===- FakvOps.td - fakv operations ------------------------*- tablegen -*-===//
//
// One `def` per op, grouped as: program structure, tile construction, memory,
// matmul and softmax, reductions, score modifiers, rotary, host-side ops for
// the CPU path. The semantics written in each description is what the CPU
// reference lowering (lowering/FakvToCPU.cpp) implements and what the GPU
// lowering must match.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_OPS_TD
#define FAKV_OPS_TD

include "dialect/FakvTypes.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialect/FakvInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"

//===----------------------------------------------------------------------===//
// Program structure
//===----------------------------------------------------------------------===//

def Fakv_ProgramIdOp : Fakv_Op<"program_id", [Pure]> {
  let summary = "index of this program along one grid axis";
  let description = [{
    The kernel runs once per point of a 3-D grid; `program_id` returns this
    program's coordinate along `axis` (0, 1 or 2) as `i32`. Only valid inside a
    `fakv.kernel` function.

    ```mlir
    %batch = fakv.program_id 2
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict";
  let hasVerifier = 1;
}

def Fakv_NumProgramsOp : Fakv_Op<"num_programs", [Pure]> {
  let summary = "number of programs along one grid axis";
  let description = [{
    The grid's extent along `axis` (0, 1 or 2) as `i32`. Only valid inside a
    `fakv.kernel` function.

    ```mlir
    %splits = fakv.num_programs 0
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tile construction
//===----------------------------------------------------------------------===//

def Fakv_ArangeOp : Fakv_Op<"arange", [Pure]> {
  let summary = "1-D tile of consecutive i32 values";
  let description = [{
    `fakv.arange start to end` is the 1-D `i32` tile `[start, start + 1, ...,
    end - 1]`; its length is `end - start`. `start` and `end` are in
    `[0, 2^31)`, `end > start`.

    ```mlir
    %cols = fakv.arange 0 to 128 : tensor<128xi32>
    ```
  }];
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$start `to` $end attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Fakv_SplatOp : Fakv_Op<"splat", [Pure]> {
  let summary = "tile with every element equal to one scalar";
  let description = [{
    ```mlir
    %neg_inf = fakv.splat %c : f32 -> tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[AnySignlessInteger, AnyFloat, Index]>:$value);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fakv_BroadcastOp : Fakv_Op<"broadcast", [Pure]> {
  let summary = "repeat a tile along its unit dimensions";
  let description = [{
    Same rank in and out; every dimension of the source is either equal to the
    result's or 1, and a dimension of size 1 is repeated to the result's size.

    ```mlir
    %row = fakv.broadcast %m : tensor<64x1xf32> -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$src);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Fakv_ExpandDimsOp : Fakv_Op<"expand_dims", [Pure]> {
  let summary = "insert a unit dimension";
  let description = [{
    The result has the source's shape with a dimension of size 1 inserted at
    position `axis` (0 ≤ axis ≤ source rank).

    ```mlir
    %col = fakv.expand_dims %m, 1 : tensor<64xf32> -> tensor<64x1xf32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$src, I32Attr:$axis);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$src `,` $axis attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fakv_ReshapeOp : Fakv_Op<"reshape", [Pure]> {
  let summary = "reinterpret a tile's shape in row-major order";
  let description = [{
    The elements, read in row-major order, are the same before and after; only
    the shape changes. Used to pack the query heads that share a KV head into
    the rows of one tile (GQA).

    ```mlir
    %q2 = fakv.reshape %q3 : tensor<16x4x128xbf16> -> tensor<64x128xbf16>
    ```
  }];
  let arguments = (ins Fakv_Tile:$src);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}


def Fakv_CastOp : Fakv_Op<"cast", [Pure]> {
  let summary = "convert a float tile to another float element type";
  let description = [{
    Elementwise conversion between f16, bf16, f32 and f64 tiles, rounding
    once to nearest even when narrowing;
    the same type in and out is allowed (and folds away), so that a kernel
    written for one element type also reads well for f32.

    ```mlir
    %pb = fakv.cast %p : tensor<64x128xf32> -> tensor<64x128xbf16>
    ```
  }];
  let arguments = (ins Fakv_Tile:$src);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def Fakv_AddPtrOp : Fakv_Op<"addptr", [Pure, AllTypesMatch<["ptr", "result"]>]> {
  let summary = "advance a pointer by a number of elements";
  let description = [{
    `result = ptr + offset` elements (`offset` is `i64`, may be negative).

    ```mlir
    %row = fakv.addptr %block_table, %off : !fakv.ptr<i32>
    ```
  }];
  let arguments = (ins Fakv_PtrType:$ptr, I64:$offset);
  let results = (outs Fakv_PtrType:$result);
  let assemblyFormat = "$ptr `,` $offset attr-dict `:` qualified(type($ptr))";
  let hasFolder = 1;
}

def Fakv_LoadScalarOp : Fakv_Op<"load_scalar", [MemoryEffects<[MemRead]>]> {
  let summary = "load one element";
  let description = [{
    `result = ptr[index]` for an `i32` element index: per-sequence values such
    as the cache length.

    ```mlir
    %len = fakv.load_scalar %seqlens[%b] : !fakv.ptr<i32> -> i32
    ```
  }];
  let arguments = (ins Fakv_PtrType:$ptr, I32:$index);
  let results = (outs AnyTypeOf<[AnySignlessInteger, AnyFloat]>:$result);
  let assemblyFormat = "$ptr `[` $index `]` attr-dict `:` qualified(type($ptr)) `->` type($result)";
  let hasVerifier = 1;
}

def Fakv_AtomicAddOp : Fakv_Op<"atomic_add", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "add to an i32 in memory once per program; the value before";
  let description = [{
    `result = ptr[index]; ptr[index] += value`, atomically, once for the
    program (not once per thread), every thread of it getting `result`.
    Ordered at device scope, acquire and release: the memory writes the
    program made before it are visible to a program that reads its
    addition, and the program sees the writes of every program whose
    additions it read. So the last of N programs to add 1 to a counter can
    read what all of them wrote (and subtract N to leave it 0 for the next
    launch).

    ```mlir
    %done = fakv.atomic_add %counters[%i], %c1 : !fakv.ptr<i32>
    ```
  }];
  let arguments = (ins Fakv_I32Ptr:$ptr, I32:$index, I32:$value);
  let results = (outs I32:$result);
  let assemblyFormat = "$ptr `[` $index `]` `,` $value attr-dict `:` qualified(type($ptr))";
}

def Fakv_ReportOp : Fakv_Op<"report", [MemoryEffects<[MemWrite]>]> {
  let summary = "record bad data: store a code when a condition holds";
  let description = [{
    When `cond` holds, stores `code` to `error[0]`. Kernels meet bad data (a
    length past the cache, an index outside a table) by masking it and
    reporting it this way instead of trapping: the host reads the word (in
    page-locked memory the device writes) after the launch, without
    stopping the device. Several reports may race: one of their codes is
    left.

    ```mlir
    fakv.report %errors, %bad, %code : !fakv.ptr<i32>
    ```
  }];
  let arguments = (ins Fakv_I32Ptr:$error, I1:$cond, I32:$code);
  let assemblyFormat = "$error `,` $cond `,` $code attr-dict `:` qualified(type($error))";
}

def Fakv_DependencyWaitOp : Fakv_Op<"dependency_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait for the kernels this one depends on; their writes visible after it";
  let description = [{
    A kernel launched before the kernel it depends on has finished
    (programmatic dependent launch) waits here until that kernel's writes
    are visible. Before this op a kernel may read only what the kernels it
    depends on do not write (a call's inputs) and write only what they do
    not read. A kernel without it waits before it touches memory (the GPU
    lowering's fakvgpu-dependent-launch); on the CPU it does nothing. At
    most one a kernel, outside loops and branches (not checked).

    ```mlir
    fakv.dependency_wait
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Fakv_LaunchDependentsOp : Fakv_Op<"launch_dependents", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "let the kernel launched behind this one start";
  let description = [{
    Once every program of the kernel has passed this op (or finished), the
    kernel launched behind it programmatically may be scheduled (it waits
    for this one's writes before it reads them). A kernel without it lets
    its dependents launch at its top (after its wait when that is there:
    fakvgpu-dependent-launch); on the CPU it does nothing. At most one a
    kernel, outside loops and branches (not checked).

    ```mlir
    fakv.launch_dependents
    ```
  }];
  let assemblyFormat = "attr-dict";
}

// The mask of a load or store is an i1 tile shaped like the data tile.
class Fakv_MaskMatches<string tile> : OptionalTypesMatchWith<
    "mask is an i1 tile shaped like the " # tile, tile, "mask",
    "::llvm::cast<::mlir::RankedTensorType>($_self).clone("
    "::mlir::IntegerType::get($_self.getContext(), 1))">;

def Fakv_LoadOp : Fakv_Op<"load", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead]>, Fakv_MaskMatches<"result">,
    OptionalTypesMatchWith<"'other' has the tile's element type", "result", "other",
        "::llvm::cast<::mlir::RankedTensorType>($_self).getElementType()">]> {
  let summary = "load a tile from a strided global tensor";
  let description = [{
    Reads the tile whose element at index `(i0, ..., in)` is
    `ptr[(offsets[0] + i0) * strides[0] + ... + (offsets[n] + in) * strides[n]]`.
    An element is *valid* when, for every dimension d with a bound,
    `0 <= offsets[d] + id < bounds[d]`, and the optional `mask` tile is true
    there; invalid elements are not read and take the value `other` (default
    zero). `offsets` and `bounds` are `i32`, `strides` `i64`, all in elements;
    `bounds` is either absent or one per dimension. `offsets[d] + id` is
    computed in `i32` (it wraps past 2^31 - 1), then multiplied by the
    stride in 64 bits: a tile's indices must fit `i32` (with `bounds` the
    wrapped ones are invalid and read nothing).

    ```mlir
    %o = fakv.load %out[%r0, %c0] strides [%s0, %s1] bounds [%n, %d]
           : !fakv.ptr<f32> -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Fakv_PtrType:$ptr,
                       Variadic<I32>:$offsets,
                       Variadic<I64>:$strides,
                       Variadic<I32>:$bounds,
                       Optional<Fakv_Tile>:$mask,
                       Optional<AnyTypeOf<[AnySignlessInteger, AnyFloat]>>:$other);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = [{
    $ptr `[` $offsets `]` `strides` ` ` `[` $strides `]`
    (`bounds` ` ` `[` $bounds^ `]`)? (`mask` $mask^)? (`other` $other^)?
    attr-dict `:` qualified(type($ptr)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fakv_StoreOp : Fakv_Op<"store", [AttrSizedOperandSegments,
    MemoryEffects<[MemWrite]>, Fakv_MaskMatches<"value">]> {
  let summary = "store a tile to a strided global tensor";
  let description = [{
    Writes `value` element `(i0, ..., in)` to
    `ptr[(offsets[0] + i0) * strides[0] + ...]` for every valid element (the
    same validity rule as `fakv.load`: inside `bounds` and where `mask` is
    true); invalid elements are not written.

    ```mlir
    fakv.store %o, %out[%r0, %c0] strides [%s0, %s1] bounds [%n, %d]
      : tensor<64x128xbf16>, !fakv.ptr<bf16>
    ```
  }];
  let arguments = (ins Fakv_Tile:$value,
                       Fakv_PtrType:$ptr,
                       Variadic<I32>:$offsets,
                       Variadic<I64>:$strides,
                       Variadic<I32>:$bounds,
                       Optional<Fakv_Tile>:$mask);
  let assemblyFormat = [{
    $value `,` $ptr `[` $offsets `]` `strides` ` ` `[` $strides `]`
    (`bounds` ` ` `[` $bounds^ `]`)? (`mask` $mask^)?
    attr-dict `:` type($value) `,` qualified(type($ptr))
  }];
  let hasVerifier = 1;
}

def Fakv_PagedLoadOp : Fakv_Op<"paged_load", [AttrSizedOperandSegments,
                                              MemoryEffects<[MemRead]>]> {
  let summary = "load K or V rows of one sequence and head through a block table";
  let description = [{
    Reads rows `[row, row + BN)` of one (sequence, kv head) of a KV cache as a
    `BN x D` tile (`BN`, `D`: the result's rows and columns). The cache is a set of `num_pages` pages of `page_size` rows;
    element `(p, o, h, c)` (page, row in page, head, channel) is at
    `cache[p * strides[0] + o * strides[1] + h * strides[2] + c]`.

    Tile row `i` is the key at unpadded position `r = row + i`. When
    `r < valid`, it is read from
    ```
      page_idx = (r + leftpad) / page_size,  offset = (r + leftpad) % page_size
      page     = table[page_idx]        (paged cache: `table` given)
      page     = page, offset = r + leftpad   (contiguous cache: `page` given)
    ```
    and rows with `r >= valid` are zero and read nothing. A contiguous
    cache's sequence is its page: rows at `r + leftpad >= page_size` are zero
    and read nothing too (never the next sequence's rows; a TMA copy reads
    them as out of bounds). `leftpad` defaults
    to 0. With `channels`, the channels `c >= channels` are zero and read
    nothing (a head dimension below the tile's, e.g. 96 in a 128 tile). Exactly one of `table` (the block-table row of this sequence, i32
    page indices) and `page` (the cache row of this sequence; the cache is then
    `(batch, seqlen, heads, D)` seen as `batch` pages of `seqlen` rows) is
    given, so that one kernel description serves both layouts. A page index
    outside `[0, num_pages)` (bad data: a block-table entry, or a cache row
    past the cache) reads nothing: its rows are zero. With `report %err,
    %code`, such a page also stores `code` to `err[0]`, as `fakv.report` does.
    `r + leftpad` must not be negative (the CPU path reads such rows as
    zero; the GPU's reads are undefined there). On the GPU the tile is a dot's B
    operand (K, or V) that fakv-pipeline copies into shared memory, one tile
    an iteration of an `scf.for` (typically at rows `iv * tile_rows`): its
    operands computed, without side effects but `fakv.load_scalar`, from
    the loop's index and values defined before the loop; other uses are
    refused.

    ```mlir
    %k = fakv.paged_load %k_cache[%kvh, %n0] table %bt valid %len
           page_size %ps num_pages %np strides [%sp, %sr, %sh]
           : !fakv.ptr<bf16> -> tensor<128x128xbf16>
    ```
  }];
  let arguments = (ins Fakv_PtrType:$cache,
                       I32:$head,
                       I32:$row,
                       Optional<Fakv_I32Ptr>:$table,
                       Optional<I32>:$page,
                       I32:$valid,
                       Optional<I32>:$leftpad,
                       Optional<I32>:$channels,
                       I32:$page_size,
                       I32:$num_pages,
                       I64:$page_stride,
                       I64:$row_stride,
                       I64:$head_stride,
                       Optional<Fakv_I32Ptr>:$error,
                       Optional<I32>:$error_code);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = [{
    $cache `[` $head `,` $row `]` (`table` $table^)? (`page` $page^)?
    `valid` $valid (`leftpad` $leftpad^)? (`channels` $channels^)?
    `page_size` $page_size `num_pages` $num_pages
    `strides` ` ` `[` $page_stride `,` $row_stride `,` $head_stride `]`
    (`report` $error^ `,` $error_code)?
    attr-dict `:` qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The rows of a tile that are read, counted from position 0: `valid`,
    /// bounded by `page_size - leftpad` in the contiguous (`page`) form. For
    /// the lowerings of paged_load and fakvgpu.async_paged_load.
    static ::mlir::Value rowsRead(::mlir::OpBuilder &b, ::mlir::Location loc,
                                  ::mlir::Value valid, ::mlir::Value page,
                                  ::mlir::Value leftpad, ::mlir::Value pageSize);
  }];
}

//===----------------------------------------------------------------------===//
// Matmul, online softmax, LSE combine
//===----------------------------------------------------------------------===//

def Fakv_DotOp : Fakv_Op<"dot", [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
                                 DeclareOpInterfaceMethods<ConditionallySpeculatable>,
                                 AllTypesMatch<["acc", "result"]>]> {
  let summary = "tile matmul with f32 accumulation";
  let description = [{
    `result = acc + op(a) * op(b)` where `op` transposes its operand when
    `transpose_a` / `transpose_b` is set. `a` and `b` share one element type
    (f16, bf16 or f32); products are summed in f32 and `acc` and the result are
    f32. With the transposes applied, `a` is `M x K`, `b` is `K x N` and `acc`
    `M x N`.

    ```mlir
    %s = fakv.dot %q, %k, %zero {transpose_b}
           : tensor<64x128xbf16>, tensor<128x128xbf16> -> tensor<64x128xf32>
    ```

    No side effects, except that an operand in a memory encoding
    (`Fakv_MemoryTileEncoding`, e.g. `#fakvgpu.shared`) is read from
    `Fakv_TileMemory`: the dot stays between the wait that makes a ring slot
    valid and the arrive that gives it back.
  }];
  let arguments = (ins Fakv_Tile:$a, Fakv_Tile:$b, Fakv_Tile:$acc,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fakv_OnlineSoftmaxOp : Fakv_Op<"online_softmax", [Pure,
    AllTypesMatch<["max", "sum", "new_max", "new_sum", "alpha"]>,
    AllTypesMatch<["scores", "probs"]>]> {
  let summary = "one step of the online (streaming) softmax";
  let description = [{
    Given the scores of one KV tile (`M x N`, f32) and the running row maximum
    and row sum over the tiles seen so far (`M`, f32), computes, with
    `t = scale * scores` (`scale` defaults to 1):
    ```
      new_max[i] = max(max[i], max_j t[i, j])
      probs[i,j] = exp(t[i, j] - new_max[i])          (0 if new_max[i] = -inf)
      alpha[i]   = exp(max[i] - new_max[i])           (1 if new_max[i] = -inf)
      new_sum[i] = alpha[i] * sum[i] + sum_j probs[i, j]
    ```
    The caller rescales its accumulator by `alpha` before adding
    `probs * V`. All values are in natural-log units: after the last tile,
    `log(new_sum) + new_max` is the natural-log LSE of `t`'s rows. A lowering
    may compute `exp` as `exp2` with `log2(e)` folded into `scale` (as
    FlashAttention does; fakv-decompose's default): then `t * log2(e)` and
    `max * log2(e)` are each rounded to f32 before they are subtracted, so
    `probs` and `alpha` carry a relative error of about
    `|t| * 2^-24 * ln 2` beside the exact formula (below 4e-5 for
    scores under 1e3; 0.4 % at 1e5, 36 % at 1e7). Rows of magnitude past
    FLT_MAX / log2(e) (2.36e38) overflow there: positive ones give NaN, negative
    ones read as masked (probs 0, new max -inf), as does a `scale` past it.
    A NaN score makes its row's `new_max` NaN (max propagates NaN, as
    `reduce` does). In that exp2 form `new_max` is the exp2 form's maximum times
    ln(2), each product rounded to f32, and may differ from `max_j t` by an
    ulp or two (the scores scaled by `scale * log2(e)` rounded once; it does
    not drift: a second round trip gives it back); it is
    the value `probs` and `alpha` are taken against. A stream starts from
    `max = -inf` and `sum = 0`.

    ```mlir
    %m1, %l1, %p, %alpha = fakv.online_softmax %s, %m0, %l0 scale %sm
      : tensor<64x128xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$scores, Fakv_Tile:$max, Fakv_Tile:$sum,
                       Optional<F32>:$scale);
  let results = (outs Fakv_Tile:$new_max, Fakv_Tile:$new_sum,
                      Fakv_Tile:$probs, Fakv_Tile:$alpha);
  let assemblyFormat = [{
    $scores `,` $max `,` $sum (`scale` $scale^)? attr-dict `:` type($scores) `,` type($max)
  }];
  let hasVerifier = 1;
}

def Fakv_LseCombineOp : Fakv_Op<"lse_combine", [Pure]> {
  let summary = "merge split-KV partial outputs by their log-sum-exp";
  let description = [{
    `partials` is `S x R x D` (f32): the normalised outputs of S splits for R
    rows; `lses` is `S x R` (f32): each split's natural-log LSE. For each row r:
    ```
      m          = max_s lses[s, r]
      w[s]       = exp(lses[s, r] - m) / sum_t exp(lses[t, r] - m)
      out[r, :]  = sum_s w[s] * partials[s, r, :]
      lse[r]     = m + log(sum_t exp(lses[t, r] - m))
    ```
    A split whose weight is 0 in f32 (its LSE -inf, or so far below `m` that
    the weight underflows) is not read into the sum (its partial may hold
    anything, inf or NaN included); a row whose splits are all -inf gives
    `out = 0` and `lse = -inf`. A NaN LSE makes its row NaN.

    ```mlir
    %o, %lse = fakv.lse_combine %parts, %lses
      : tensor<8x4x128xf32>, tensor<8x4xf32> -> tensor<4x128xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$partials, Fakv_Tile:$lses);
  let results = (outs Fakv_Tile:$out, Fakv_Tile:$lse);
  let assemblyFormat = [{
    $partials `,` $lses attr-dict `:` type($partials) `,` type($lses)
    `->` type($out) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def Fakv_ClusterGatherOp : Fakv_Op<"cluster_gather", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "each program of a cluster gets every program's tiles";
  let description = [{
    The kernel's programs run in clusters of `size` consecutive programs on
    grid axis 2: cluster `program_id(2) / size`, rank `program_id(2) % size`
    (the launch's `num_programs(2)` a multiple of `size`). Each program of a
    cluster gives its tiles `xs` (32-bit elements) and gets, for each,
    `result[..., r]`: the tile of the cluster's rank-r program, the result
    the tile's shape with a last dimension of `size`. Every program of the
    cluster must reach it once (not in a loop): each waits there for the
    others. On the GPU the cluster is a thread-block cluster
    (`.reqnctapercluster 1, 1, size`: 2 to 8 programs): each thread writes
    its elements into every program's shared memory and arrives on every
    program's mbarrier; the CPU path runs no clusters.

    A tile marked in `scatter` is shared out instead: its last dimension, of
    `size` slices, goes a slice to each program: the program of rank `rank`
    gets `result[..., j, r] = x_r[..., rank * w + j]` for every source rank
    `r` (`x_r`: the rank-r program's tile; `w` = the last dimension / `size`;
    the result `x`'s shape with the last dimension `w`, then `size`): each
    element crosses the cluster once.

    ```mlir
    %outs, %lses = fakv.cluster_gather(%out, %lse) size 8
      : tensor<4x128xf32>, tensor<4xf32> -> tensor<4x128x8xf32>, tensor<4x8xf32>
    %cols, %all = fakv.cluster_gather(%out, %lse) size 8 {scatter = array<i1: true, false>}
      : tensor<4x128xf32>, tensor<4xf32> -> tensor<4x16x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Fakv_Tile>:$xs, I32Attr:$size, OptionalAttr<DenseBoolArrayAttr>:$scatter);
  let results = (outs Variadic<Fakv_Tile>:$results);
  let assemblyFormat = "`(` $xs `)` `size` $size attr-dict `:` type($xs) `->` type($results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether tile `i` is shared out (a slice of its last dimension each).
    bool isScattered(unsigned i) { return getScatter() && (*getScatter())[i]; }
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Fakv_ReduceKind : I32EnumAttr<"ReduceKind", "reduction combiner", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>, I32EnumAttrCase<"min", 2>]> {
  let cppNamespace = "::mlir::fakv";
}

def Fakv_ReduceOp : Fakv_Op<"reduce", [Pure]> {
  let summary = "reduce a tile along one dimension";
  let description = [{
    Combines the elements along dimension `axis` with `sum`, `max` or `min`;
    the result has the source's shape without that dimension. Elements are
    floats or 32-bit integers (signed for `max` / `min`; `sum` wraps). The
    reduction of max over an all `-inf` row is `-inf`; a float `max` or
    `min` over a row holding NaN is NaN. On the GPU a reduction takes f32 or
    i32 tiles: each thread combines its own elements in order, then the
    threads' results as a tree. The CPU path takes any float too and adds a
    float `sum` in f64, rounded once to the element type (an f32 sum that
    passes FLT_MAX midway may end finite there and inf on the GPU).

    ```mlir
    %rowmax = fakv.reduce max %s, 1 : tensor<64x128xf32> -> tensor<64xf32>
    %count = fakv.reduce sum %hits, 1 : tensor<1x128xi32> -> tensor<1xi32>
    ```
  }];
  let arguments = (ins Fakv_ReduceKind:$kind, Fakv_Tile:$src, I32Attr:$axis);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$kind $src `,` $axis attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Fakv_ItemOp : Fakv_Op<"item", [Pure]> {
  let summary = "the element of a one-element tile, as a scalar";
  let description = [{
    A tile of one element (a reduction's `tensor<1xT>`, say) as a scalar of
    its element type, which every thread of the program then holds: how a
    kernel turns a sum or a maximum over a tile into a value for address
    arithmetic or control flow.

    ```mlir
    %longest = fakv.item %max : tensor<1xi32> -> i32
    ```
  }];
  let arguments = (ins Fakv_Tile:$src);
  let results = (outs AnyTypeOf<[AnySignlessInteger, AnyFloat]>:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Score modifiers. Scores are M x N f32 tiles; `rows` holds each row's query
// position (M x i32) and `cols` each column's key position (N x i32), both
// counted from the first valid key, so that `offset` = seqlen_k - seqlen_q
// aligns the query and key sequences bottom-right.
//===----------------------------------------------------------------------===//

def Fakv_LengthMaskOp : Fakv_Op<"length_mask", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "mask keys at or past the valid length";
  let description = [{
    `result[i, j] = cols[j] < valid ? scores[i, j] : -inf`.

    ```mlir
    %s1 = fakv.length_mask %s, %cols, %len : tensor<64x128xf32>, tensor<128xi32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$scores, Fakv_Tile:$cols, I32:$valid);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$scores `,` $cols `,` $valid attr-dict `:` type($scores) `,` type($cols)";
  let hasVerifier = 1;
}

def Fakv_CausalMaskOp : Fakv_Op<"causal_mask", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "causal mask aligned bottom-right";
  let description = [{
    `result[i, j] = cols[j] <= rows[i] + offset ? scores[i, j] : -inf`. With
    `offset = seqlen_k - seqlen_q` the last query sees every key. Positions
    are i32: `rows[i] + offset` must fit it (it wraps otherwise).

    ```mlir
    %s1 = fakv.causal_mask %s, %rows, %cols, %off
      : tensor<64x128xf32>, tensor<64xi32>, tensor<128xi32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$scores, Fakv_Tile:$rows, Fakv_Tile:$cols, I32:$offset);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = [{
    $scores `,` $rows `,` $cols `,` $offset attr-dict `:` type($scores) `,` type($rows) `,` type($cols)
  }];
  let hasVerifier = 1;
}

def Fakv_WindowMaskOp : Fakv_Op<"window_mask", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "sliding-window (local) attention mask";
  let description = [{
    With `q = rows[i] + offset`, key `cols[j]` is visible when
    `(left < 0 or cols[j] >= q - left) and (right < 0 or cols[j] <= q + right)`;
    invisible scores become -inf. A negative bound means unbounded on that
    side; `left = -1, right = 0` is the causal mask. `q - left` and
    `q + right` saturate: a bound past the i32 range is unbounded too
    (`q` itself must fit i32, as for `causal_mask`).

    ```mlir
    %s1 = fakv.window_mask %s, %rows, %cols, %off, %left, %right
      : tensor<64x128xf32>, tensor<64xi32>, tensor<128xi32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$scores, Fakv_Tile:$rows, Fakv_Tile:$cols,
                       I32:$offset, I32:$left, I32:$right);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = [{
    $scores `,` $rows `,` $cols `,` $offset `,` $left `,` $right attr-dict
    `:` type($scores) `,` type($rows) `,` type($cols)
  }];
  let hasVerifier = 1;
}

def Fakv_SoftcapOp : Fakv_Op<"softcap", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "soft capping of scores";
  let description = [{
    `result = cap * tanh(scores / cap)`, elementwise; -inf stays -inf. `cap`
    is finite and at least 2.94e-39 (1 / FLT_MAX: the lowering multiplies
    by `1 / cap`, which f32 must hold; below it a 0 score gives NaN); a
    constant `cap` outside that range is refused by the verifier.

    ```mlir
    %s1 = fakv.softcap %s, %cap : tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$scores, F32:$cap);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$scores `,` $cap attr-dict `:` type($scores)";
  let hasVerifier = 1;
}

def Fakv_AlibiOp : Fakv_Op<"alibi", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "ALiBi linear position bias";
  let description = [{
    `result[i, j] = scores[i, j] - slopes[i] * |rows[i] + offset - cols[j]|`,
    with `slopes` an `M x f32` tile (each row's head slope). Positions are
    i32: `rows[i] + offset` and the distances must fit it.

    ```mlir
    %s1 = fakv.alibi %s, %rows, %cols, %off, %slopes
      : tensor<64x128xf32>, tensor<64xi32>, tensor<128xi32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$scores, Fakv_Tile:$rows, Fakv_Tile:$cols,
                       I32:$offset, Fakv_Tile:$slopes);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = [{
    $scores `,` $rows `,` $cols `,` $offset `,` $slopes attr-dict
    `:` type($scores) `,` type($rows) `,` type($cols) `,` type($slopes)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Rotary embedding
//===----------------------------------------------------------------------===//

def Fakv_RotaryOp : Fakv_Op<"rotary", [Pure, AllTypesMatch<["x", "result"]>,
                                       AllTypesMatch<["cos", "sin"]>]> {
  let summary = "rotary position embedding of the leading channels";
  let description = [{
    `x` is `M x D`; `cos` and `sin` are `M x R/2` (f32), row i holding the
    cosines and sines of the angles of row i's position; `R <= D` channels rotate, the rest pass
    through. Interleaved (GPT-J) pairs channels `(2k, 2k+1)`; otherwise
    (GPT-NeoX) pairs `(k, k + R/2)`. For a pair `(a, b)` and angle index k:
    ```
      out[a] = x[a] * cos[k] - x[b] * sin[k]
      out[b] = x[a] * sin[k] + x[b] * cos[k]
    ```
    computed in f32 and rounded to `x`'s element type.

    ```mlir
    %qr = fakv.rotary %q, %cos, %sin {interleaved}
      : tensor<64x128xbf16>, tensor<64x32xf32>
    ```
  }];
  let arguments = (ins Fakv_Tile:$x, Fakv_Tile:$cos, Fakv_Tile:$sin,
                       UnitAttr:$interleaved);
  let results = (outs Fakv_Tile:$result);
  let assemblyFormat = "$x `,` $cos `,` $sin attr-dict `:` type($x) `,` type($cos)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Host side (CPU path and tests): launching a kernel over its grid
//===----------------------------------------------------------------------===//

def Fakv_PtrOfOp : Fakv_Op<"ptr_of", [Pure]> {
  let summary = "the element pointer of a host buffer";
  let description = [{
    Host code only (the CPU path): the address of a memref's first element, as
    the `!fakv.ptr` that a kernel takes. The memref must have an identity
    layout.

    ```mlir
    %p = fakv.ptr_of %buf : memref<4096xf32> -> !fakv.ptr<f32>
    ```
  }];
  let arguments = (ins AnyMemRef:$memref);
  let results = (outs Fakv_PtrType:$result);
  let assemblyFormat = "$memref attr-dict `:` type($memref) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def Fakv_LaunchOp : Fakv_Op<"launch", [AttrSizedOperandSegments,
                                       DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run a kernel once per point of a 3-D grid";
  let description = [{
    Host code only (the CPU path): calls kernel `callee` for every program id
    in `[0, grid[0]) x [0, grid[1]) x [0, grid[2])`, one after the other with
    `args`, axis 2 varying fastest: (0, 0, 0), (0, 0, 1), ..., (0, 1, 0), ...
    (no order on the GPU).
    On the GPU the runtime launches kernels instead.

    ```mlir
    fakv.launch @combine[%rows, %c1, %c1](%parts, %lses, %out, %n)
      : (!fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, i32)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee,
                       Variadic<I32>:$grid,
                       Variadic<AnyType>:$args);
  let assemblyFormat = [{
    $callee `[` $grid `]` `(` $args `)` (`:` `(` type($args)^ `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

#endif // FAKV_OPS_TD
