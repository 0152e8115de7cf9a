// fakvgpu-outline-kernels takes kernels convert-fakvgpu-to-nvvm converted, with their launch facts; one marked
// converted without them is refused (its missing attribute was read: a crash).
// RUN: fakv-opt %s -verify-diagnostics --fakvgpu-outline-kernels -split-input-file

// expected-error @+1 {{is marked converted but has no 'fakvgpu.num_warps': run convert-fakvgpu-to-nvvm first}}
func.func @k() attributes {fakvgpu.converted_kernel} {
  return
}

// -----

// A symbol of the kernels' module's name that is not that module: the module made beside it was a redefinition.
// expected-error @+1 {{'func.func' op is named like the GPU kernels' module (@fakv_kernels); rename it}}
func.func @fakv_kernels() {
  return
}
