"""Prints a kernel for fakv-pack-gqa (test/passes/pack-gqa.mlir) whose uniform tile comes out of a chain of N
row-wise ops (arith.addi), then meets a per-head tile: the pass recomputes or copies the chain at the packed
shape. Its recursion went one level per op of the chain: 60,000 overflowed the stack.

    python3 deep_chain.py N"""
import sys

n = int(sys.argv[1])
lines = ['func.func @deep(%o: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {',
         '  %c4 = arith.constant 4 : i32', '  %s1 = arith.constant 1 : i64',
         '  %h = fakv.program_id 1', '  %kvh = arith.divsi %h, %c4 : i32',
         '  %hs = fakv.splat %h : i32 -> tensor<64xi32>', '  %u0 = fakv.arange 0 to 64 : tensor<64xi32>']
lines += [f'  %u{i + 1} = arith.addi %u{i}, %u{i} : tensor<64xi32>' for i in range(n)]
lines += [f'  %r = arith.addi %u{n}, %hs : tensor<64xi32>', '  %hq = arith.muli %h, %c4 : i32',
          '  %hq64 = arith.extsi %hq : i32 to i64', '  %oh = fakv.addptr %o, %hq64 : !fakv.ptr<i32>',
          '  fakv.store %r, %oh[%kvh] strides [%s1] : tensor<64xi32>, !fakv.ptr<i32>', '  return', '}']
print("\n".join(lines))
