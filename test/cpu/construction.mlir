// CPU execution of the tile-construction ops: arange, splat, expand_dims,
// broadcast, reshape, cast. Expected values: reference.py (construction).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/construction.expected

func.func @construction(%in: !fakv.ptr<f32>, %in3: !fakv.ptr<f32>, %inb: !fakv.ptr<bf16>,
                        %o0: !fakv.ptr<f32>, %o1: !fakv.ptr<f32>, %o2: !fakv.ptr<f32>,
                        %o3: !fakv.ptr<f32>, %o4: !fakv.ptr<f32>, %o5: !fakv.ptr<f32>,
                        %o6: !fakv.ptr<f32>, %o7: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s3 = arith.constant 3 : i64
  %s4 = arith.constant 4 : i64
  %s6 = arith.constant 6 : i64
  %s12 = arith.constant 12 : i64
  // o0 = arange 3 to 11
  %a = fakv.arange 3 to 11 : tensor<8xi32>
  %af = arith.sitofp %a : tensor<8xi32> to tensor<8xf32>
  fakv.store %af, %o0[%c0] strides [%s1] : tensor<8xf32>, !fakv.ptr<f32>
  // o1 = splat 1.5 (2x3)
  %f = arith.constant 1.5 : f32
  %sp = fakv.splat %f : f32 -> tensor<2x3xf32>
  fakv.store %sp, %o1[%c0, %c0] strides [%s3, %s1] : tensor<2x3xf32>, !fakv.ptr<f32>
  // o2 = broadcast(expand_dims(x, 1)) : 4x3, x = in[0:4]
  %x = fakv.load %in[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<4xf32>
  %xc = fakv.expand_dims %x, 1 : tensor<4xf32> -> tensor<4x1xf32>
  %xb = fakv.broadcast %xc : tensor<4x1xf32> -> tensor<4x3xf32>
  fakv.store %xb, %o2[%c0, %c0] strides [%s3, %s1] : tensor<4x3xf32>, !fakv.ptr<f32>
  // o3 = broadcast(expand_dims(x, 0)) : 2x4
  %xr = fakv.expand_dims %x, 0 : tensor<4xf32> -> tensor<1x4xf32>
  %xrb = fakv.broadcast %xr : tensor<1x4xf32> -> tensor<2x4xf32>
  fakv.store %xrb, %o3[%c0, %c0] strides [%s4, %s1] : tensor<2x4xf32>, !fakv.ptr<f32>
  // o4 = reshape(in3 as 2x3x4) to 6x4, stored column-major
  %t3 = fakv.load %in3[%c0, %c0, %c0] strides [%s12, %s4, %s1] : !fakv.ptr<f32> -> tensor<2x3x4xf32>
  %t2 = fakv.reshape %t3 : tensor<2x3x4xf32> -> tensor<6x4xf32>
  fakv.store %t2, %o4[%c0, %c0] strides [%s1, %s6] : tensor<6x4xf32>, !fakv.ptr<f32>
  // o5 = cast(bf16 input) to f32
  %b = fakv.load %inb[%c0] strides [%s1] : !fakv.ptr<bf16> -> tensor<8xbf16>
  %bf = fakv.cast %b : tensor<8xbf16> -> tensor<8xf32>
  fakv.store %bf, %o5[%c0] strides [%s1] : tensor<8xf32>, !fakv.ptr<f32>
  // o6 = f32 -> bf16 -> f32 (round to nearest even), of x / 3
  %three = arith.constant dense<3.0> : tensor<4xf32>
  %x3 = arith.divf %x, %three : tensor<4xf32>
  %x3b = fakv.cast %x3 : tensor<4xf32> -> tensor<4xbf16>
  %x3bf = fakv.cast %x3b : tensor<4xbf16> -> tensor<4xf32>
  fakv.store %x3bf, %o6[%c0] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  // o7 = f32 -> f16 -> bf16 -> f32
  %x3h = fakv.cast %x3 : tensor<4xf32> -> tensor<4xf16>
  %x3hb = fakv.cast %x3h : tensor<4xf16> -> tensor<4xbf16>
  %x3hbf = fakv.cast %x3hb : tensor<4xbf16> -> tensor<4xf32>
  fakv.store %x3hbf, %o7[%c0] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  return
}

func.func @main() {
  %in = memref.alloc() : memref<4xf32>
  %in3 = memref.alloc() : memref<24xf32>
  %inb = memref.alloc() : memref<8xbf16>
  %o0 = memref.alloc() : memref<8xf32>
  %o1 = memref.alloc() : memref<6xf32>
  %o2 = memref.alloc() : memref<12xf32>
  %o3 = memref.alloc() : memref<8xf32>
  %o4 = memref.alloc() : memref<24xf32>
  %o5 = memref.alloc() : memref<8xf32>
  %o6 = memref.alloc() : memref<4xf32>
  %o7 = memref.alloc() : memref<4xf32>
  %seed1 = arith.constant 1 : i64
  %seed2 = arith.constant 2 : i64
  %seed3 = arith.constant 3 : i64
  %din = memref.cast %in : memref<4xf32> to memref<?xf32>
  %din3 = memref.cast %in3 : memref<24xf32> to memref<?xf32>
  %dinb = memref.cast %inb : memref<8xbf16> to memref<?xbf16>
  func.call @fill_f32(%din, %seed1) : (memref<?xf32>, i64) -> ()
  func.call @fill_f32(%din3, %seed2) : (memref<?xf32>, i64) -> ()
  func.call @fill_bf16(%dinb, %seed3) : (memref<?xbf16>, i64) -> ()
  %pin = fakv.ptr_of %in : memref<4xf32> -> !fakv.ptr<f32>
  %pin3 = fakv.ptr_of %in3 : memref<24xf32> -> !fakv.ptr<f32>
  %pinb = fakv.ptr_of %inb : memref<8xbf16> -> !fakv.ptr<bf16>
  %p0 = fakv.ptr_of %o0 : memref<8xf32> -> !fakv.ptr<f32>
  %p1 = fakv.ptr_of %o1 : memref<6xf32> -> !fakv.ptr<f32>
  %p2 = fakv.ptr_of %o2 : memref<12xf32> -> !fakv.ptr<f32>
  %p3 = fakv.ptr_of %o3 : memref<8xf32> -> !fakv.ptr<f32>
  %p4 = fakv.ptr_of %o4 : memref<24xf32> -> !fakv.ptr<f32>
  %p5 = fakv.ptr_of %o5 : memref<8xf32> -> !fakv.ptr<f32>
  %p6 = fakv.ptr_of %o6 : memref<4xf32> -> !fakv.ptr<f32>
  %p7 = fakv.ptr_of %o7 : memref<4xf32> -> !fakv.ptr<f32>
  %g = arith.constant 1 : i32
  fakv.launch @construction[%g, %g, %g](%pin, %pin3, %pinb, %p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7)
    : (!fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<bf16>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>,
       !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>)
  %d0 = memref.cast %o0 : memref<8xf32> to memref<?xf32>
  %d1 = memref.cast %o1 : memref<6xf32> to memref<?xf32>
  %d2 = memref.cast %o2 : memref<12xf32> to memref<?xf32>
  %d3 = memref.cast %o3 : memref<8xf32> to memref<?xf32>
  %d4 = memref.cast %o4 : memref<24xf32> to memref<?xf32>
  %d5 = memref.cast %o5 : memref<8xf32> to memref<?xf32>
  %d6 = memref.cast %o6 : memref<4xf32> to memref<?xf32>
  %d7 = memref.cast %o7 : memref<4xf32> to memref<?xf32>
  func.call @print_f32(%d0) : (memref<?xf32>) -> ()
  func.call @print_f32(%d1) : (memref<?xf32>) -> ()
  func.call @print_f32(%d2) : (memref<?xf32>) -> ()
  func.call @print_f32(%d3) : (memref<?xf32>) -> ()
  func.call @print_f32(%d4) : (memref<?xf32>) -> ()
  func.call @print_f32(%d5) : (memref<?xf32>) -> ()
  func.call @print_f32(%d6) : (memref<?xf32>) -> ()
  func.call @print_f32(%d7) : (memref<?xf32>) -> ()
  return
}
