//===- FakvGPUDialect.td - the fakvgpu dialect -------------*- tablegen -*-===//
//
// The Hopper level of fakv: where tiles live (layouts on tensor types), the
// shared-memory rings and mbarriers of a software pipeline, asynchronous
// copies into them, and warp specialization. The passes in passes/ produce
// it from fakv; lowering/FakvGPUToNVVM.cpp turns it into NVVM.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_GPU_DIALECT_TD
#define FAKV_GPU_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def FakvGPU_Dialect : Dialect {
  let name = "fakvgpu";
  let cppNamespace = "::mlir::fakvgpu";
  let summary = "Hopper-level tiles: layouts, shared-memory rings, barriers, warp roles";
  let description = [{
    A tile (a `tensor`) at this level carries an encoding that says where its
    elements are:

    - `#fakvgpu.linear<...>`: in registers. Element coordinates are a linear
      (bitwise) function of the register index, the lane and the warp: each
      set bit of those contributes a fixed coordinate vector (a *basis*). A
      zero basis means replication. This covers the wgmma accumulator
      layout, blocked layouts for loads and stores, and their slices and
      reshapes.
    - `#fakvgpu.shared<...>`: in shared memory, in the layout that TMA writes
      and wgmma reads (128-byte swizzled panels of 64 16-bit columns).

    Shared-memory rings (`!fakvgpu.ring`) and mbarrier arrays
    (`!fakvgpu.barriers`) carry a software pipeline's stages; async copies
    fill ring slots and signal barriers; `fakvgpu.warp_specialize` gives the
    copies and the math to different warps.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::fakv::FakvDialect"];
}

class FakvGPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<FakvGPU_Dialect, mnemonic, traits>;

class FakvGPU_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<FakvGPU_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class FakvGPU_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<FakvGPU_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

#endif // FAKV_GPU_DIALECT_TD
