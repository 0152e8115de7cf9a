//===- FakvGPUTypes.td - shared-memory rings and barriers --*- tablegen -*-===//

#ifndef FAKV_GPU_TYPES_TD
#define FAKV_GPU_TYPES_TD

include "dialect/FakvGPUAttrs.td"

def FakvGPU_RingType : FakvGPU_Type<"Ring", "ring"> {
  let summary = "a ring of shared-memory tile buffers (pipeline stages)";
  let description = [{
    `stages` buffers, each holding one tile of `tile`'s type (a tensor with
    a `#fakvgpu.shared` encoding).

    ```mlir
    !fakvgpu.ring<2, tensor<128x128xbf16, #fakvgpu.shared<swizzle = 128>>>
    ```
  }];
  let parameters = (ins "int64_t":$stages, "::mlir::RankedTensorType":$tile);
  let assemblyFormat = "`<` $stages `,` $tile `>`";
  let genVerifyDecl = 1;
}

def FakvGPU_BarriersType : FakvGPU_Type<"Barriers", "barriers"> {
  let summary = "an array of mbarriers in shared memory";
  let description = [{
    ```mlir
    !fakvgpu.barriers<2>
    ```
  }];
  let parameters = (ins "int64_t":$count);
  let assemblyFormat = "`<` $count `>`";
  let genVerifyDecl = 1;
}

#endif // FAKV_GPU_TYPES_TD
