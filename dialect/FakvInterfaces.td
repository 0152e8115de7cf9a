//===- FakvInterfaces.td - fakv attribute interfaces and resources -*- tablegen -*-===//
//
// What lower dialects tell fakv about their tiles: an encoding whose tiles
// live in memory (fakvgpu.shared), so that an op reading such a tile reads
// memory, and the resource that memory is.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_DIALECT_FAKVINTERFACES_TD
#define FAKV_DIALECT_FAKVINTERFACES_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Fakv_MemoryTileEncoding : AttrInterface<"MemoryTileEncodingAttrInterface"> {
  let cppNamespace = "::mlir::fakv";
  let description = [{
    A tile encoding whose tiles are held in memory shared by the threads
    (fakvgpu.shared): a tile value of it is a view of that memory, so an op
    taking one (fakv.dot) reads `Fakv_TileMemory`, and the ops that fill or
    hand it over (fakvgpu.async_paged_load, wait, arrive) write it.
  }];
}

// The memory tiles in a memory encoding live in (shared memory on the GPU).
def Fakv_TileMemory : Resource<"::mlir::fakv::TileMemoryResource">;

#endif // FAKV_DIALECT_FAKVINTERFACES_TD
