// Verifier rules of fakvgpu.warp_specialize's register counts.
// RUN: fakv-opt %s -split-input-file -verify-diagnostics

func.func @registers_not_multiple_of_8() {
  // expected-error @+1 {{register counts are 0, 0 (no setmaxnreg) or multiples of 8 in [24, 256], got 100}}
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 100, 232 {
  }, {
  }
  return
}

// -----

func.func @registers_out_of_range() {
  // expected-error @+1 {{register counts are 0, 0 (no setmaxnreg) or multiples of 8 in [24, 256], got 16}}
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 16, 232 {
  }, {
  }
  return
}

// -----

func.func @producer_above_consumer() {
  // expected-error @+1 {{the producer gives registers to the consumer: producer count 232 above consumer count 40}}
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 232, 40 {
  }, {
  }
  return
}

// -----

func.func @partial_warpgroup() {
  // expected-error @+1 {{roles are whole warpgroups (multiples of 4 warps)}}
  fakvgpu.warp_specialize producer_warps 1 consumer_warps 4 registers 0, 0 {
  }, {
  }
  return
}

// -----

// Valid: no setmaxnreg, and a rebalancing.
func.func @valid() {
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
  }, {
  }
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 8 registers 24, 240 {
  }, {
  }
  return
}
