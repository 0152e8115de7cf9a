//===- FakvGPUOps.td - Hopper-level fakv operations --------*- tablegen -*-===//

#ifndef FAKV_GPU_OPS_TD
#define FAKV_GPU_OPS_TD

include "dialect/FakvGPUTypes.td"
include "dialect/FakvTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

def FakvGPU_ConvertLayoutOp : FakvGPU_Op<"convert_layout", [Pure]> {
  let summary = "move a tile to another layout";
  let description = [{
    The same tile, held differently: between register layouts, or from
    registers into shared memory (as a wgmma operand). Lowered through
    shared memory when the threads must exchange elements.

    ```mlir
    %qs = fakvgpu.convert_layout %q : tensor<64x128xbf16, #blocked> -> tensor<64x128xbf16, #shared>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$src);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def FakvGPU_AllocRingOp : FakvGPU_Op<"alloc_ring", [MemoryEffects<[MemAlloc]>]> {
  let summary = "allocate a ring of shared-memory tile buffers";
  let description = [{
    ```mlir
    %k_ring = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<128x128xbf16, #shared>>
    ```
  }];
  let results = (outs FakvGPU_RingType:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def FakvGPU_RingViewOp : FakvGPU_Op<"ring_view", [MemoryEffects<[MemRead<Fakv_TileMemory>]>,
    TypesMatchWith<"result is the ring's tile", "ring", "result",
                   "::llvm::cast<::mlir::fakvgpu::RingType>($_self).getTile()">]> {
  let summary = "the tile held in one slot of a ring";
  let description = [{
    A view, not a copy: reading it after the slot is refilled reads the new
    data, so the pipeline's barriers order its uses. It reads
    `Fakv_TileMemory`, which `wait` and `arrive` (barriers: they order
    memory) and `async_paged_load` / `clear_rows` (which fill slots) write.

    ```mlir
    %k = fakvgpu.ring_view %k_ring[%slot] : !fakvgpu.ring<2, tensor<128x128xbf16, #shared>>
    ```
  }];
  let arguments = (ins FakvGPU_RingType:$ring, I32:$slot);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$ring `[` $slot `]` attr-dict `:` qualified(type($ring))";
  let builders = [OpBuilder<(ins "::mlir::Value":$ring, "::mlir::Value":$slot), [{
    build($_builder, $_state,
          ::llvm::cast<RingType>(ring.getType()).getTile(), ring, slot);
  }]>];
  let hasVerifier = 1;
}

def FakvGPU_AllocBarriersOp : FakvGPU_Op<"alloc_barriers", [MemoryEffects<[MemAlloc]>]> {
  let summary = "allocate and initialise mbarriers";
  let description = [{
    Each barrier completes a phase when `arrivals` threads have arrived
    (and the bytes announced to it, for TMA, have landed).

    ```mlir
    %full = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
    ```
  }];
  // (mbarrier.init counts at most 2^20 - 1 arrivals)
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<1>, IntMaxValue<1048575>]>:$arrivals);
  let results = (outs FakvGPU_BarriersType:$result);
  let assemblyFormat = "`arrivals` $arrivals attr-dict `:` qualified(type($result))";
}

def FakvGPU_WaitOp : FakvGPU_Op<"wait",
    [MemoryEffects<[MemRead<Fakv_TileMemory>, MemWrite<Fakv_TileMemory>]>]> {
  let summary = "wait until a barrier completes the given phase";
  let description = [{
    Blocks the calling threads until barrier `index` has completed the phase
    with parity `phase` (0 or 1).

    ```mlir
    fakvgpu.wait %full[%slot], %phase : !fakvgpu.barriers<2>
    ```
  }];
  let arguments = (ins FakvGPU_BarriersType:$barriers, I32:$index, I32:$phase);
  let assemblyFormat = "$barriers `[` $index `]` `,` $phase attr-dict `:` qualified(type($barriers))";
  let hasVerifier = 1;
}

def FakvGPU_ArriveOp : FakvGPU_Op<"arrive",
    [MemoryEffects<[MemRead<Fakv_TileMemory>, MemWrite<Fakv_TileMemory>]>]> {
  let summary = "arrive at a barrier (every calling thread counts once)";
  let description = [{
    ```mlir
    fakvgpu.arrive %empty[%slot] : !fakvgpu.barriers<2>
    ```
  }];
  let arguments = (ins FakvGPU_BarriersType:$barriers, I32:$index);
  let assemblyFormat = "$barriers `[` $index `]` attr-dict `:` qualified(type($barriers))";
  let hasVerifier = 1;
}

def FakvGPU_AsyncPagedLoadOp : FakvGPU_Op<"async_paged_load", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead, MemWrite<Fakv_TileMemory>, MemWrite]>]> {
  let summary = "start copying a paged K/V tile into a ring slot";
  let description = [{
    The tile `fakv.paged_load` with the same operands would return, copied
    asynchronously into slot `slot` of `ring`; barrier `slot` of `signal`
    completes its phase when the data has landed (rows past `valid`, or past
    a contiguous cache's page, are zero; a page outside `[0, num_pages)` reads nothing, its rows are zero and
    it reports `error_code`, as `fakv.paged_load` says). Lowered to TMA when
    every tile lies inside one page (page size a
    compile-time multiple of the tile's rows), else to a `cp.async` gather.
    Issued by all threads of the calling warps; the lowering elects the
    issuing thread for TMA. A load right after another that copies the same
    rows through the same block table (decode's V after its K), both by TMA,
    is issued with it, under its page lookups and report.

    ```mlir
    fakvgpu.async_paged_load %k_cache[%kvh, %n0] table %bt valid %len
      page_size %ps num_pages %np strides [%sp, %sr, %sh]
      into %ring[%slot] signal %full : !fakv.ptr<bf16>, !fakvgpu.ring<...>, !fakvgpu.barriers<2>
    ```
  }];
  let arguments = (ins Fakv_PtrType:$cache, I32:$head, I32:$row,
                       Optional<Fakv_I32Ptr>:$table, Optional<I32>:$page,
                       I32:$valid, Optional<I32>:$leftpad,
                       Optional<I32>:$channels,
                       I32:$page_size, I32:$num_pages,
                       I64:$page_stride, I64:$row_stride, I64:$head_stride,
                       Optional<Fakv_I32Ptr>:$error, Optional<I32>:$error_code,
                       FakvGPU_RingType:$ring, I32:$slot,
                       FakvGPU_BarriersType:$signal);
  let assemblyFormat = [{
    $cache `[` $head `,` $row `]` (`table` $table^)? (`page` $page^)?
    `valid` $valid (`leftpad` $leftpad^)? (`channels` $channels^)?
    `page_size` $page_size `num_pages` $num_pages
    `strides` ` ` `[` $page_stride `,` $row_stride `,` $head_stride `]`
    (`report` $error^ `,` $error_code)?
    `into` $ring `[` $slot `]` `signal` $signal attr-dict
    `:` qualified(type($cache)) `,` qualified(type($ring)) `,` qualified(type($signal))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True when the copy goes through TMA (one box per 64 columns): the
    /// cache is a kernel argument (its tensor map is one too), 16-bit
    /// elements, columns a multiple of 64, at most 256 rows (a TMA box's
    /// limit), and every tile inside one page
    /// (a contiguous cache; or a block table with a constant page size that
    /// is a multiple of the tile's rows, or that divides them and is a
    /// multiple of 8 (a box per page: tmaBoxRows, unless the kernel carries
    /// `fakv.gather_pages`), tiles starting at a
    /// multiple of their rows and no left padding), and rows known to start 16-byte
    /// aligned (`fakvgpu.aligned_rows`, set by fakv-pipeline). Otherwise a
    /// cp.async gather (element-wise where a 16-byte chunk is unaligned or
    /// straddles the channels' end, unless `fakvgpu.whole_chunks`).
    bool usesTMA() {
      return (*this)->hasAttr("fakvgpu.aligned_rows") &&
             usesTMA(getRing().getType().getTile(), getCache(), getPage(),
                     getLeftpad(), getPageSize(), getRow());
    }
    static bool usesTMA(::mlir::RankedTensorType tile, ::mlir::Value cache,
                        ::mlir::Value page, ::mlir::Value leftpad,
                        ::mlir::Value pageSize, ::mlir::Value row);
    /// Rows of one TMA box: the tile's, or a page's when the tile holds
    /// several pages of a block table (a box per page); at most 16 with
    /// `rowBoxes` (the kernel's `fakv.row_boxes`).
    static int64_t tmaBoxRows(::mlir::RankedTensorType tile,
                              ::mlir::Value pageSize, ::mlir::Value table,
                              bool rowBoxes = false);
    /// Whether the kernel holding `op` carries `fakv.row_boxes`.
    static bool rowBoxes(::mlir::Operation *op);
  }];
}

def FakvGPU_ClearRowsOp : FakvGPU_Op<"clear_rows", [MemoryEffects<[MemWrite<Fakv_TileMemory>]>]> {
  let summary = "zero the rows of a ring slot from a given row on";
  let description = [{
    Rows `[first, rows)` of the tile in slot `slot` become zero (nothing
    happens when `first` >= rows). A TMA copy brings whole boxes; this gives
    `fakvgpu.async_paged_load` the semantics of `fakv.paged_load` (rows past
    the valid length are zero) for the last tile of a sequence. Run by the
    threads that consume the slot, after waiting for it.

    ```mlir
    fakvgpu.clear_rows %v_ring[%slot] from %first : !fakvgpu.ring<...>
    ```
  }];
  let arguments = (ins FakvGPU_RingType:$ring, I32:$slot, I32:$first);
  let assemblyFormat = "$ring `[` $slot `]` `from` $first attr-dict `:` qualified(type($ring))";
  let hasVerifier = 1;
}

def FakvGPU_WarpSpecializeOp : FakvGPU_Op<"warp_specialize",
    [SingleBlock, NoTerminator, RecursiveMemoryEffects]> {
  let summary = "run the producer and the consumer region on different warps";
  let description = [{
    Syntax:

    ```
    operation ::= `fakvgpu.warp_specialize` `producer_warps` $producer_warps `consumer_warps` $consumer_warps
                  `registers` $producer_registers `,` $consumer_registers
                  $producer `,` $consumer attr-dict
    ```

    The kernel's threads split in two roles: the first `producer_warps` warps
    run `producer` (issuing copies), the next `consumer_warps` run
    `consumer` (the math, and everything after it). `registers P, C`: each
    producer thread keeps P registers and each consumer thread gets C
    (`setmaxnreg`); the kernel is compiled for the average, so the two
    balance. `registers 0, 0` leaves every thread the launch allocation.
    Values defined before the op are visible
    in both regions; nothing flows out.

    ```mlir
    fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 24, 168 {
      scf.for ... { fakvgpu.async_paged_load ... }
    }, {
      scf.for ... { fakvgpu.wait ... fakv.dot ... fakvgpu.arrive ... }
    }
    ```
  }];
  let arguments = (ins I32Attr:$producer_warps, I32Attr:$consumer_warps,
                       I32Attr:$producer_registers, I32Attr:$consumer_registers);
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumer);
  // Parsed in C++ (the syntax above): the generated parser held the regions outside the op's state, and freed
  // a parsed producer region still linked to a value the consumer's failure then deleted (a heap
  // use-after-free on malformed input).
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

#endif // FAKV_GPU_OPS_TD
