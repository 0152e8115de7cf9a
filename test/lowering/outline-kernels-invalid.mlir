// fakvgpu-outline-kernels takes kernels convert-fakvgpu-to-nvvm converted, with their launch facts; one marked
// converted without them is refused (its missing attribute was read: a crash).
// RUN: fakv-opt %s -verify-diagnostics --fakvgpu-outline-kernels

// expected-error @+1 {{is marked converted but has no 'fakvgpu.num_warps': run convert-fakvgpu-to-nvvm first}}
func.func @k() attributes {fakvgpu.converted_kernel} {
  return
}
