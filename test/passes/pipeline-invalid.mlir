// fakv-pipeline on laid-out kernels whose shared-memory paged loads it cannot copy ahead: a diagnostic that
// names the load or the loop.
// RUN: fakv-opt %s --fakv-pipeline -split-input-file -verify-diagnostics

// -----

// The load's row comes from a value the loop carries: the copy issued stages - 1 iterations ahead cannot know it.
func.func @row_carried(%kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>, %n: i32, %np: i32) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %ps = arith.constant 64 : i32
  %s64 = arith.constant 64 : i64
  %sp = arith.constant 4096 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%row = %c0) -> (i32) : i32 {
    // expected-error @+1 {{'fakv.paged_load' op cannot be pipelined: its operands depend on a value the loop carries; they may use only the loop index and values defined before the loop}}
    %k = fakv.paged_load %kc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] : !fakv.ptr<bf16> -> tensor<32x64xbf16, #fakvgpu.shared<swizzle = 128>>
    %next = arith.addi %row, %c32 : i32
    scf.yield %next : i32
  }
  return
}

// -----

func.func @row_of_an_atomic(%kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>, %n: i32, %np: i32) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %ps = arith.constant 64 : i32
  %s64 = arith.constant 64 : i64
  %sp = arith.constant 4096 : i64
  scf.for %i = %c0 to %n step %c1 : i32 {
    %row = fakv.atomic_add %bt[%c0], %c1 : !fakv.ptr<i32>
    // expected-error @+1 {{'fakv.paged_load' op cannot be pipelined: an operand comes from an op with side effects}}
    %k = fakv.paged_load %kc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] : !fakv.ptr<bf16> -> tensor<32x64xbf16, #fakvgpu.shared<swizzle = 128>>
  }
  return
}

// -----

// A shared tile of 16-bit integers: the #fakvgpu.shared encoding takes it, a ring (f16 or bf16 tiles) does not.
func.func @integer_ring(%kc: !fakv.ptr<i16>, %bt: !fakv.ptr<i32>, %n: i32, %np: i32) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %ps = arith.constant 64 : i32
  %s64 = arith.constant 64 : i64
  %sp = arith.constant 4096 : i64
  scf.for %i = %c0 to %n step %c1 : i32 {
    // expected-error @+1 {{'fakv.paged_load' op cannot be pipelined into shared memory: ring tiles are 2-D f16 or bf16 tiles}}
    %k = fakv.paged_load %kc[%c0, %i] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] : !fakv.ptr<i16> -> tensor<32x64xi16, #fakvgpu.shared<swizzle = 128>>
  }
  return
}

// -----

// (also tested through the DSL: test/python/test_dsl_semantics.py, which needs an assembler)
func.func @i64_loop(%kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>, %n: i64, %np: i32, %v: i32) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %ps = arith.constant 64 : i32
  %s64 = arith.constant 64 : i64
  %sp = arith.constant 4096 : i64
  // expected-error @+1 {{'scf.for' op a pipelined loop (its fakv.paged_load tiles copied ahead into shared memory) counts in i32, got 'i64'}}
  scf.for %i = %z to %n step %one : i64 {
    %row = arith.trunci %i : i64 to i32
    %k = fakv.paged_load %kc[%c0, %row] table %bt valid %v page_size %ps num_pages %np
           strides [%sp, %s64, %s64] : !fakv.ptr<bf16> -> tensor<32x64xbf16, #fakvgpu.shared<swizzle = 128>>
  }
  return
}
