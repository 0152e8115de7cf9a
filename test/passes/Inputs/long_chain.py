"""A kernel whose dot's accumulator is the end of a chain of N adds from a load (assign-layouts-long-chain.mlir)."""
import sys

n = int(sys.argv[1])
print("func.func @chain(%q: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel} {")
print("  %c0 = arith.constant 0 : i32")
print("  %s1 = arith.constant 1 : i64")
print("  %s64 = arith.constant 64 : i64")
print("  %qt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16>")
print("  %kt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<64x64xbf16>")
print("  %a0 = fakv.load %o[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<f32> -> tensor<16x64xf32>")
for i in range(n):
    print(f"  %a{i + 1} = arith.addf %a{i}, %a{i} : tensor<16x64xf32>")
print(f"  %d = fakv.dot %qt, %kt, %a{n} : tensor<16x64xbf16>, tensor<64x64xbf16> -> tensor<16x64xf32>")
print("  fakv.store %d, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x64xf32>, !fakv.ptr<f32>")
print("  return")
print("}")
