// The fakvgpu IR of ../../passes/Inputs/attention.mlir (fakv-opt --fakv-to-fakvgpu): the
// input of the passes that prepare a kernel for convert-fakvgpu-to-nvvm.
#linear = #fakvgpu.linear<regs = [[8]], lanes = [[0], [0], [1], [2], [4]], warps = [[0], [0]]>
#linear1 = #fakvgpu.linear<regs = [[0, 1], [8, 0], [0, 8], [0, 16], [0, 32]], lanes = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warps = [[0, 0], [0, 0]]>
#linear2 = #fakvgpu.linear<regs = [[0, 1], [8, 0], [0, 8], [0, 16]], lanes = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warps = [[0, 0], [0, 0]]>
#linear3 = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#linear4 = #fakvgpu.linear<regs = [[8, 0]], lanes = [[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]], warps = [[0, 0], [0, 0]]>
#shared = #fakvgpu.shared<swizzle = 128>
module {
  func.func @attention(%arg0: !fakv.ptr<bf16>, %arg1: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %arg2: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %arg3: !fakv.ptr<i32>, %arg4: !fakv.ptr<f32>, %arg5: i32, %arg6: i32) attributes {fakv.kernel, fakvgpu.num_warps = 8 : i32} {
    %c1_i64 = arith.constant 1 : i64
    %cst = arith.constant dense<0xFF800000> : tensor<16xf32, #linear>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16xf32, #linear>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16x64xf32, #linear1>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<16x32xf32, #linear2>
    %cst_3 = arith.constant dense<0.180336878> : tensor<16x32xf32, #linear2>
    %cst_4 = arith.constant dense<1.44269502> : tensor<16xf32, #linear>
    %cst_5 = arith.constant dense<1.000000e+00> : tensor<16xf32, #linear>
    %cst_6 = arith.constant dense<0.693147182> : tensor<16xf32, #linear>
    %c2_i32 = arith.constant 2 : i32
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %c64_i64 = arith.constant 64 : i64
    %c4096_i64 = arith.constant 4096 : i64
    %0 = arith.ceildivsi %arg5, %c32_i32 : i32
    %1 = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
    %2 = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
    %3 = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
    %4 = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
    %5 = fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
    fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
      scf.for %arg7 = %c0_i32 to %0 step %c1_i32  : i32 {
        %6 = arith.remsi %arg7, %c2_i32 : i32
        %7 = arith.cmpi sge, %arg7, %c2_i32 : i32
        scf.if %7 {
          %9 = arith.divsi %arg7, %c2_i32 : i32
          %10 = arith.subi %9, %c1_i32 : i32
          %11 = arith.remsi %10, %c2_i32 : i32
          fakvgpu.wait %5[%6], %11 : !fakvgpu.barriers<2>
        }
        %8 = arith.muli %arg7, %c32_i32 : i32
        fakvgpu.async_paged_load %arg1[%c0_i32, %8] table %arg3 valid %arg5 page_size %c64_i32 num_pages %arg6 strides [%c4096_i64, %c64_i64, %c64_i64] into %1[%6] signal %3 {fakvgpu.aligned_rows, fakvgpu.whole_chunks} : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, !fakvgpu.barriers<2>
        fakvgpu.async_paged_load %arg2[%c0_i32, %8] table %arg3 valid %arg5 page_size %c64_i32 num_pages %arg6 strides [%c4096_i64, %c64_i64, %c64_i64] into %2[%6] signal %4 {fakvgpu.aligned_rows, fakvgpu.whole_chunks} : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, !fakvgpu.barriers<2>
      }
    }, {
      %6 = fakv.load %arg0[%c0_i32, %c0_i32] strides [%c64_i64, %c1_i64] : !fakv.ptr<bf16> -> tensor<16x64xbf16, #linear3>
      %7 = fakvgpu.convert_layout %6 : tensor<16x64xbf16, #linear3> -> tensor<16x64xbf16, #shared>
      %8:3 = scf.for %arg7 = %c0_i32 to %0 step %c1_i32 iter_args(%arg8 = %cst, %arg9 = %cst_0, %arg10 = %cst_1) -> (tensor<16xf32, #linear>, tensor<16xf32, #linear>, tensor<16x64xf32, #linear1>)  : i32 {
        %9 = arith.remsi %arg7, %c2_i32 : i32
        %10 = arith.divsi %arg7, %c2_i32 : i32
        %11 = arith.remsi %10, %c2_i32 : i32
        %12 = arith.muli %arg7, %c32_i32 : i32
        fakvgpu.wait %3[%9], %11 : !fakvgpu.barriers<2>
        %13 = arith.subi %arg5, %12 : i32
        fakvgpu.clear_rows %1[%9] from %13 : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
        %14 = fakvgpu.ring_view %1[%9] : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
        fakvgpu.wait %4[%9], %11 : !fakvgpu.barriers<2>
        fakvgpu.clear_rows %2[%9] from %13 : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
        %15 = fakvgpu.ring_view %2[%9] : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
        %16 = fakv.dot %7, %14, %cst_2 {transpose_b} : tensor<16x64xbf16, #shared>, tensor<32x64xbf16, #shared> -> tensor<16x32xf32, #linear2>
        %17 = arith.mulf %16, %cst_3 : tensor<16x32xf32, #linear2>
        %18 = arith.mulf %arg8, %cst_4 : tensor<16xf32, #linear>
        %19 = fakv.reduce max %17, 1 : tensor<16x32xf32, #linear2> -> tensor<16xf32, #linear>
        %20 = arith.maximumf %18, %19 : tensor<16xf32, #linear>
        %21 = arith.cmpf oeq, %20, %cst : tensor<16xf32, #linear>
        %22 = arith.select %21, %cst_0, %20 : tensor<16xi1, #linear>, tensor<16xf32, #linear>
        %23 = fakv.expand_dims %22, 1 : tensor<16xf32, #linear> -> tensor<16x1xf32, #linear4>
        %24 = fakv.broadcast %23 : tensor<16x1xf32, #linear4> -> tensor<16x32xf32, #linear2>
        %25 = arith.subf %17, %24 : tensor<16x32xf32, #linear2>
        %26 = math.exp2 %25 : tensor<16x32xf32, #linear2>
        %27 = arith.subf %18, %22 : tensor<16xf32, #linear>
        %28 = math.exp2 %27 : tensor<16xf32, #linear>
        %29 = arith.select %21, %cst_5, %28 : tensor<16xi1, #linear>, tensor<16xf32, #linear>
        %30 = fakv.reduce sum %26, 1 : tensor<16x32xf32, #linear2> -> tensor<16xf32, #linear>
        %31 = arith.mulf %29, %arg9 : tensor<16xf32, #linear>
        %32 = arith.addf %31, %30 : tensor<16xf32, #linear>
        %33 = arith.mulf %20, %cst_6 : tensor<16xf32, #linear>
        %34 = fakv.expand_dims %29, 1 : tensor<16xf32, #linear> -> tensor<16x1xf32, #linear4>
        %35 = fakv.broadcast %34 : tensor<16x1xf32, #linear4> -> tensor<16x64xf32, #linear1>
        %36 = arith.mulf %arg10, %35 : tensor<16x64xf32, #linear1>
        %37 = fakv.cast %26 : tensor<16x32xf32, #linear2> -> tensor<16x32xbf16, #linear2>
        %38 = fakv.dot %37, %15, %36 : tensor<16x32xbf16, #linear2>, tensor<32x64xbf16, #shared> -> tensor<16x64xf32, #linear1>
        fakvgpu.arrive %5[%9] : !fakvgpu.barriers<2>
        scf.yield %33, %32, %38 : tensor<16xf32, #linear>, tensor<16xf32, #linear>, tensor<16x64xf32, #linear1>
      }
      fakv.store %8#2, %arg4[%c0_i32, %c0_i32] strides [%c64_i64, %c1_i64] : tensor<16x64xf32, #linear1>, !fakv.ptr<f32>
    }
    return
  }
}

