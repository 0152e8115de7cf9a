// Host-side helpers for the CPU execution tests (test/cpu/*.mlir), appended
// to each test by its RUN line.
//
// fill_*: deterministic test data. Element i of a buffer filled with `seed` is
//   h = (i * 2654435761 + seed * 40503 + 12345) mod 2^32
//   v = (((h >> 16) mod 256) - 128) / 256
// i.e. k/256 for an integer k in [-128, 128): exact in f32, f16 and bf16, so
// the same inputs feed every element type. test/cpu/reference.py computes
// the same values with numpy.
// print_*: print a buffer with printMemrefF32 (converted to f32 first).

func.func private @printMemrefF32(memref<*xf32>)

func.func @hash_value(%i: index, %seed: i64) -> f32 {
  %ii = arith.index_cast %i : index to i64
  %a = arith.constant 2654435761 : i64
  %b = arith.constant 40503 : i64
  %c = arith.constant 12345 : i64
  %mask32 = arith.constant 4294967295 : i64
  %s16 = arith.constant 16 : i64
  %m8 = arith.constant 255 : i64
  %bias = arith.constant 128 : i64
  %x0 = arith.muli %ii, %a : i64
  %x1 = arith.muli %seed, %b : i64
  %x2 = arith.addi %x0, %x1 : i64
  %x3 = arith.addi %x2, %c : i64
  %h = arith.andi %x3, %mask32 : i64
  %t = arith.shrui %h, %s16 : i64
  %k = arith.andi %t, %m8 : i64
  %k2 = arith.subi %k, %bias : i64
  %f = arith.sitofp %k2 : i64 to f32
  %scale = arith.constant 0.00390625 : f32
  %v = arith.mulf %f, %scale : f32
  return %v : f32
}

func.func @fill_f32(%m: memref<?xf32>, %seed: i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = func.call @hash_value(%i, %seed) : (index, i64) -> f32
    memref.store %v, %m[%i] : memref<?xf32>
  }
  return
}

func.func @fill_bf16(%m: memref<?xbf16>, %seed: i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c0 : memref<?xbf16>
  scf.for %i = %c0 to %n step %c1 {
    %v = func.call @hash_value(%i, %seed) : (index, i64) -> f32
    %b = arith.truncf %v : f32 to bf16
    memref.store %b, %m[%i] : memref<?xbf16>
  }
  return
}

func.func @fill_f16(%m: memref<?xf16>, %seed: i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c0 : memref<?xf16>
  scf.for %i = %c0 to %n step %c1 {
    %v = func.call @hash_value(%i, %seed) : (index, i64) -> f32
    %b = arith.truncf %v : f32 to f16
    memref.store %b, %m[%i] : memref<?xf16>
  }
  return
}

func.func @print_f32(%m: memref<?xf32>) {
  %u = memref.cast %m : memref<?xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @print_bf16(%m: memref<?xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c0 : memref<?xbf16>
  %f = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %b = memref.load %m[%i] : memref<?xbf16>
    %v = arith.extf %b : bf16 to f32
    memref.store %v, %f[%i] : memref<?xf32>
  }
  func.call @print_f32(%f) : (memref<?xf32>) -> ()
  return
}

func.func @print_f16(%m: memref<?xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c0 : memref<?xf16>
  %f = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %b = memref.load %m[%i] : memref<?xf16>
    %v = arith.extf %b : f16 to f32
    memref.store %v, %f[%i] : memref<?xf32>
  }
  func.call @print_f32(%f) : (memref<?xf32>) -> ()
  return
}
