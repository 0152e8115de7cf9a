//===- FakvGPUAttrs.td - tile layouts ----------------------*- tablegen -*-===//

#ifndef FAKV_GPU_ATTRS_TD
#define FAKV_GPU_ATTRS_TD

include "dialect/FakvGPUDialect.td"
include "dialect/FakvInterfaces.td"
include "mlir/IR/TensorEncoding.td"

def FakvGPU_LinearAttr : FakvGPU_Attr<"Linear", "linear",
                                      [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "a register layout: element coordinates as a linear function of register, lane and warp bits";
  let description = [{
    For a tile of rank r, `regs`, `lanes` and `warps` each list bases:
    coordinate vectors of r entries. The element held in register i of lane
    l of warp w has the coordinate `xor` of the bases of the set bits of i,
    l and w (bit k of the lane selects `lanes[k]`). There are 5 lane bases
    (32 lanes) and log2(number of warps) warp bases; a zero basis means the
    lanes or warps that differ in that bit hold the same element
    (replication). Every tile dimension is a power of two. On a tile, the
    layout has the tile's rank, its bases stay inside the tile, and their
    span covers every element (each is held somewhere).

    Example, the f32 accumulator of `wgmma m64n16k16` in one warpgroup:
    ```mlir
    #fakvgpu.linear<regs = [[0, 1], [8, 0], [0, 8]],
                    lanes = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]],
                    warps = [[16, 0], [32, 0]]>
    ```
  }];
  let parameters = (ins "unsigned":$rank,
                        ArrayRefParameter<"int64_t">:$regs,
                        ArrayRefParameter<"int64_t">:$lanes,
                        ArrayRefParameter<"int64_t">:$warps);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def FakvGPU_SharedAttr : FakvGPU_Attr<"Shared", "shared", [Fakv_MemoryTileEncoding,
                                                          DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "a tile in shared memory, as TMA writes it and wgmma reads it";
  let description = [{
    A `R x C` tile of 16-bit elements stored as `C / 64` panels of 64
    columns; panel p starts at byte `p * R * 128`, row r of a panel at
    `r * 128`, and its 16-byte chunk c at chunk `c xor (r mod 8)` (128-byte
    swizzle). The tile's base is 1024-byte aligned.

    ```mlir
    tensor<128x128xbf16, #fakvgpu.shared<swizzle = 128>>
    ```
  }];
  let parameters = (ins "int64_t":$swizzle);
  let assemblyFormat = "`<` `swizzle` `=` $swizzle `>`";
  let genVerifyDecl = 1;
}

#endif // FAKV_GPU_ATTRS_TD
