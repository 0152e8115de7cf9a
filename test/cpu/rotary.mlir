// CPU execution of fakv.rotary: interleaved (GPT-J) and half-split (GPT-NeoX)
// pairs, rotating the first 4 of 8 channels (the rest pass through), on bf16
// and f32 tiles. Expected: reference.py (rotary).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/rotary.expected

// x: 3x8; cos, sin: 3x2. ob = [interleaved(24), half(24)] (bf16),
// of = [interleaved(24), half(24)] (f32).
func.func @rotary(%x: !fakv.ptr<bf16>, %xf: !fakv.ptr<f32>, %cos: !fakv.ptr<f32>, %sin: !fakv.ptr<f32>,
                  %ob: !fakv.ptr<bf16>, %of: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c3 = arith.constant 3 : i32
  %s1 = arith.constant 1 : i64
  %s2 = arith.constant 2 : i64
  %s8 = arith.constant 8 : i64
  %X = fakv.load %x[%c0, %c0] strides [%s8, %s1] : !fakv.ptr<bf16> -> tensor<3x8xbf16>
  %XF = fakv.load %xf[%c0, %c0] strides [%s8, %s1] : !fakv.ptr<f32> -> tensor<3x8xf32>
  %C = fakv.load %cos[%c0, %c0] strides [%s2, %s1] : !fakv.ptr<f32> -> tensor<3x2xf32>
  %S = fakv.load %sin[%c0, %c0] strides [%s2, %s1] : !fakv.ptr<f32> -> tensor<3x2xf32>
  %a = fakv.rotary %X, %C, %S {interleaved} : tensor<3x8xbf16>, tensor<3x2xf32>
  %b = fakv.rotary %X, %C, %S : tensor<3x8xbf16>, tensor<3x2xf32>
  %af = fakv.rotary %XF, %C, %S {interleaved} : tensor<3x8xf32>, tensor<3x2xf32>
  %bf = fakv.rotary %XF, %C, %S : tensor<3x8xf32>, tensor<3x2xf32>
  fakv.store %a, %ob[%c0, %c0] strides [%s8, %s1] : tensor<3x8xbf16>, !fakv.ptr<bf16>
  fakv.store %b, %ob[%c3, %c0] strides [%s8, %s1] : tensor<3x8xbf16>, !fakv.ptr<bf16>
  fakv.store %af, %of[%c0, %c0] strides [%s8, %s1] : tensor<3x8xf32>, !fakv.ptr<f32>
  fakv.store %bf, %of[%c3, %c0] strides [%s8, %s1] : tensor<3x8xf32>, !fakv.ptr<f32>
  return
}

func.func @main() {
  %x = memref.alloc() : memref<24xbf16>
  %xf = memref.alloc() : memref<24xf32>
  %cos = memref.alloc() : memref<6xf32>
  %sin = memref.alloc() : memref<6xf32>
  %ob = memref.alloc() : memref<48xbf16>
  %of = memref.alloc() : memref<48xf32>
  %seed0 = arith.constant 27 : i64
  %seed1 = arith.constant 28 : i64
  %seed2 = arith.constant 29 : i64
  %dx = memref.cast %x : memref<24xbf16> to memref<?xbf16>
  %dxf = memref.cast %xf : memref<24xf32> to memref<?xf32>
  %dcos = memref.cast %cos : memref<6xf32> to memref<?xf32>
  %dsin = memref.cast %sin : memref<6xf32> to memref<?xf32>
  func.call @fill_bf16(%dx, %seed0) : (memref<?xbf16>, i64) -> ()
  func.call @fill_f32(%dxf, %seed0) : (memref<?xf32>, i64) -> ()
  func.call @fill_f32(%dcos, %seed1) : (memref<?xf32>, i64) -> ()
  func.call @fill_f32(%dsin, %seed2) : (memref<?xf32>, i64) -> ()
  %px = fakv.ptr_of %x : memref<24xbf16> -> !fakv.ptr<bf16>
  %pxf = fakv.ptr_of %xf : memref<24xf32> -> !fakv.ptr<f32>
  %pcos = fakv.ptr_of %cos : memref<6xf32> -> !fakv.ptr<f32>
  %psin = fakv.ptr_of %sin : memref<6xf32> -> !fakv.ptr<f32>
  %pob = fakv.ptr_of %ob : memref<48xbf16> -> !fakv.ptr<bf16>
  %pof = fakv.ptr_of %of : memref<48xf32> -> !fakv.ptr<f32>
  %g = arith.constant 1 : i32
  fakv.launch @rotary[%g, %g, %g](%px, %pxf, %pcos, %psin, %pob, %pof)
    : (!fakv.ptr<bf16>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<bf16>, !fakv.ptr<f32>)
  %dob = memref.cast %ob : memref<48xbf16> to memref<?xbf16>
  %dof = memref.cast %of : memref<48xf32> to memref<?xf32>
  func.call @print_bf16(%dob) : (memref<?xbf16>) -> ()
  func.call @print_f32(%dof) : (memref<?xf32>) -> ()
  return
}
