// One case per verifier rule of the fakv dialect, with the message it gives.
// RUN: fakv-opt %s -split-input-file -verify-diagnostics

func.func @program_id_outside_kernel() {
  // expected-error @+1 {{'fakv.program_id' op is only valid inside a function marked 'fakv.kernel'}}
  %x = fakv.program_id 0
  return
}

// -----

func.func @program_id_axis(%p: !fakv.ptr<f32>) attributes {fakv.kernel} {
  // expected-error @+1 {{attribute 'axis' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0 whose maximum value is 2}}
  %x = fakv.program_id 3
  return
}

// -----

func.func @num_programs_outside_kernel() {
  // expected-error @+1 {{'fakv.num_programs' op is only valid inside a function marked 'fakv.kernel'}}
  %x = fakv.num_programs 1
  return
}

// -----

func.func @arange_empty() {
  // expected-error @+1 {{end (4) must be greater than start (4)}}
  %a = fakv.arange 4 to 4 : tensor<1xi32>
  return
}

// -----

func.func @arange_negative_start() {
  // expected-error @+1 {{start and end must be in [0, 2^31), got -5 and 3 (for negative positions: arange 0 to n, minus k)}}
  %a = fakv.arange -5 to 3 : tensor<8xi32>
  return
}

// -----

func.func @arange_type() {
  // expected-error @+1 {{result must be a 1-D i32 tile, got 'tensor<4xi64>'}}
  %a = fakv.arange 0 to 4 : tensor<4xi64>
  return
}

// -----

func.func @arange_length() {
  // expected-error @+1 {{result length 8 must equal end - start = 4}}
  %a = fakv.arange 0 to 4 : tensor<8xi32>
  return
}

// -----

func.func @splat_type(%f: f16) {
  // expected-error @+1 {{scalar type 'f16' does not match the tile element type 'f32'}}
  %s = fakv.splat %f : f16 -> tensor<4xf32>
  return
}

// -----

func.func @tile_dynamic(%f: f32) {
  // expected-error @+1 {{result #0 must be statically shaped tile, but got 'tensor<?xf32>'}}
  %s = fakv.splat %f : f32 -> tensor<?xf32>
  return
}

// -----

func.func @broadcast_elem(%t: tensor<4x1xf32>) {
  // expected-error @+1 {{source and result element types differ: 'f32' vs 'f16'}}
  %b = fakv.broadcast %t : tensor<4x1xf32> -> tensor<4x8xf16>
  return
}

// -----

func.func @broadcast_rank(%t: tensor<4xf32>) {
  // expected-error @+1 {{source and result ranks differ (1 vs 2); insert unit dimensions with fakv.expand_dims}}
  %b = fakv.broadcast %t : tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_non_unit(%t: tensor<4x2xf32>) {
  // expected-error @+1 {{dimension 1 of the source has size 2; only size-1 dimensions can broadcast (to 8)}}
  %b = fakv.broadcast %t : tensor<4x2xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @expand_dims_axis(%t: tensor<4xf32>) {
  // expected-error @+1 {{axis 2 out of range [0, 1]}}
  %e = fakv.expand_dims %t, 2 : tensor<4xf32> -> tensor<4x1xf32>
  return
}

// -----

// A negative axis is named as written (it was read unsigned: "axis 4294967295").
func.func @expand_dims_negative_axis(%t: tensor<4xf32>) {
  // expected-error @+1 {{axis -1 out of range [0, 1]}}
  %e = fakv.expand_dims %t, -1 : tensor<4xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @expand_dims_shape(%t: tensor<4xf32>) {
  // expected-error @+1 {{result must have shape [1, 4] and element type 'f32', got 'tensor<4x1xf32>'}}
  %e = fakv.expand_dims %t, 0 : tensor<4xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @reshape_elem(%t: tensor<4x4xf32>) {
  // expected-error @+1 {{source and result element types differ: 'f32' vs 'f16'}}
  %r = fakv.reshape %t : tensor<4x4xf32> -> tensor<16xf16>
  return
}

// -----

func.func @reshape_count(%t: tensor<4x4xf32>) {
  // expected-error @+1 {{source has 16 elements but the result has 32}}
  %r = fakv.reshape %t : tensor<4x4xf32> -> tensor<32xf32>
  return
}

// -----

func.func @cast_int(%t: tensor<4xi32>) {
  // expected-error @+1 {{converts between f16, bf16, f32 and f64 tiles, got 'i32' to 'f32'}}
  %c = fakv.cast %t : tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

func.func @cast_f8(%t: tensor<4xf32>) {
  // expected-error @+1 {{converts between f16, bf16, f32 and f64 tiles, got 'f32' to 'f8E4M3FN'}}
  %c = fakv.cast %t : tensor<4xf32> -> tensor<4xf8E4M3FN>
  return
}

// -----

func.func @cast_shape(%t: tensor<4xf32>) {
  // expected-error @+1 {{source and result shapes differ: [4] vs [8]}}
  %c = fakv.cast %t : tensor<4xf32> -> tensor<8xbf16>
  return
}

// -----

// expected-error @+1 {{!fakv.ptr element type must be a signless integer of whole bytes (i8, i16, i32, ...) or an f16, bf16, f32, f64, f80 or f128 float (what memory holds), got 'index'}}
func.func @ptr_elem(%p: !fakv.ptr<index>) {
  return
}

// -----

func.func @load_scalar_type(%p: !fakv.ptr<i32>, %i: i32) {
  // expected-error @+1 {{result type 'i64' does not match the pointer element type 'i32'}}
  %x = fakv.load_scalar %p[%i] : !fakv.ptr<i32> -> i64
  return
}

// -----

func.func @load_elem(%p: !fakv.ptr<f16>, %i: i32, %s: i64) {
  // expected-error @+1 {{pointer element type 'f16' does not match the tile element type 'f32'}}
  %t = fakv.load %p[%i] strides [%s] : !fakv.ptr<f16> -> tensor<4xf32>
  return
}

// -----

func.func @load_rank0(%p: !fakv.ptr<f32>) {
  // expected-error @+1 {{tile must have rank >= 1}}
  %t = fakv.load %p[] strides [] : !fakv.ptr<f32> -> tensor<f32>
  return
}

// -----

func.func @load_offsets(%p: !fakv.ptr<f32>, %i: i32, %s: i64) {
  // expected-error @+1 {{expects one offset per tile dimension (2), got 1}}
  %t = fakv.load %p[%i] strides [%s, %s] : !fakv.ptr<f32> -> tensor<4x4xf32>
  return
}

// -----

func.func @load_strides(%p: !fakv.ptr<f32>, %i: i32, %s: i64) {
  // expected-error @+1 {{expects one stride per tile dimension (2), got 1}}
  %t = fakv.load %p[%i, %i] strides [%s] : !fakv.ptr<f32> -> tensor<4x4xf32>
  return
}

// -----

func.func @load_bounds(%p: !fakv.ptr<f32>, %i: i32, %s: i64) {
  // expected-error @+1 {{expects no bounds or one per tile dimension (2), got 1}}
  %t = fakv.load %p[%i, %i] strides [%s, %s] bounds [%i] : !fakv.ptr<f32> -> tensor<4x4xf32>
  return
}

// -----

func.func @load_mask(%p: !fakv.ptr<f32>, %i: i32, %s: i64, %m: tensor<4xi1>) {
  // expected-error @+1 {{failed to verify that mask is an i1 tile shaped like the result}}
  %t = "fakv.load"(%p, %i, %s, %m) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0>}>
         : (!fakv.ptr<f32>, i32, i64, tensor<4xi1>) -> tensor<8xf32>
  return
}

// -----

func.func @load_other(%p: !fakv.ptr<f32>, %i: i32, %s: i64, %o: f16) {
  // expected-error @+1 {{failed to verify that 'other' has the tile's element type}}
  %t = "fakv.load"(%p, %i, %s, %o) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>}>
         : (!fakv.ptr<f32>, i32, i64, f16) -> tensor<8xf32>
  return
}

// -----

func.func @store_elem(%t: tensor<4xf32>, %p: !fakv.ptr<bf16>, %i: i32, %s: i64) {
  // expected-error @+1 {{pointer element type 'bf16' does not match the tile element type 'f32'}}
  fakv.store %t, %p[%i] strides [%s] : tensor<4xf32>, !fakv.ptr<bf16>
  return
}

// -----

func.func @store_mask(%t: tensor<4xf32>, %p: !fakv.ptr<f32>, %i: i32, %s: i64, %m: tensor<8xi1>) {
  // expected-error @+1 {{failed to verify that mask is an i1 tile shaped like the value}}
  "fakv.store"(%t, %p, %i, %s, %m) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1>}>
         : (tensor<4xf32>, !fakv.ptr<f32>, i32, i64, tensor<8xi1>) -> ()
  return
}

// -----

func.func @paged_rank(%c: !fakv.ptr<bf16>, %t: !fakv.ptr<i32>, %i: i32, %s: i64) {
  // expected-error @+1 {{result must be a 2-D (rows x head_dim) tile, got 'tensor<4x4x4xbf16>'}}
  %k = fakv.paged_load %c[%i, %i] table %t valid %i page_size %i num_pages %i strides [%s, %s, %s]
         : !fakv.ptr<bf16> -> tensor<4x4x4xbf16>
  return
}

// -----

func.func @paged_elem(%c: !fakv.ptr<bf16>, %t: !fakv.ptr<i32>, %i: i32, %s: i64) {
  // expected-error @+1 {{cache element type 'bf16' does not match the tile element type 'f16'}}
  %k = fakv.paged_load %c[%i, %i] table %t valid %i page_size %i num_pages %i strides [%s, %s, %s]
         : !fakv.ptr<bf16> -> tensor<4x4xf16>
  return
}

// -----

func.func @paged_both(%c: !fakv.ptr<bf16>, %t: !fakv.ptr<i32>, %i: i32, %s: i64) {
  // expected-error @+1 {{expects exactly one of 'table' (paged cache) and 'page' (contiguous cache)}}
  %k = fakv.paged_load %c[%i, %i] table %t page %i valid %i page_size %i num_pages %i strides [%s, %s, %s]
         : !fakv.ptr<bf16> -> tensor<4x4xbf16>
  return
}

// -----

// (the GPU's gather divides by the page size: a constant one of 0 or less gave garbage without a report)
func.func @paged_page_size(%c: !fakv.ptr<bf16>, %t: !fakv.ptr<i32>, %i: i32, %s: i64) {
  %zero = arith.constant 0 : i32
  // expected-error @+1 {{page_size must be positive, got 0}}
  %k = fakv.paged_load %c[%i, %i] table %t valid %i page_size %zero num_pages %i strides [%s, %s, %s]
         : !fakv.ptr<bf16> -> tensor<4x4xbf16>
  return
}

// -----

func.func @paged_neither(%c: !fakv.ptr<bf16>, %i: i32, %s: i64) {
  // expected-error @+1 {{expects exactly one of 'table' (paged cache) and 'page' (contiguous cache)}}
  %k = fakv.paged_load %c[%i, %i] valid %i page_size %i num_pages %i strides [%s, %s, %s]
         : !fakv.ptr<bf16> -> tensor<4x4xbf16>
  return
}

// -----

func.func @paged_table_type(%c: !fakv.ptr<bf16>, %t: !fakv.ptr<i64>, %i: i32, %s: i64) {
  // expected-error @+1 {{operand #3 must be pointer to i32, but got '!fakv.ptr<i64>'}}
  %k = "fakv.paged_load"(%c, %i, %i, %t, %i, %i, %i, %s, %s, %s)
         <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0>}>
         : (!fakv.ptr<bf16>, i32, i32, !fakv.ptr<i64>, i32, i32, i32, i64, i64, i64) -> tensor<4x4xbf16>
  return
}

// -----

func.func @paged_report_without_code(%c: !fakv.ptr<bf16>, %t: !fakv.ptr<i32>, %i: i32, %s: i64) {
  // expected-error @+1 {{'report' takes an error pointer and a code}}
  %k = "fakv.paged_load"(%c, %i, %i, %t, %i, %i, %i, %s, %s, %s, %t)
         <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0>}>
         : (!fakv.ptr<bf16>, i32, i32, !fakv.ptr<i32>, i32, i32, i32, i64, i64, i64, !fakv.ptr<i32>)
         -> tensor<4x4xbf16>
  return
}

// -----

func.func @report_pointer_type(%e: !fakv.ptr<f32>, %c: i1, %i: i32) {
  // expected-error @+1 {{operand #0 must be pointer to i32}}
  fakv.report %e, %c, %i : !fakv.ptr<f32>
  return
}

// -----

func.func @dot_rank(%a: tensor<4xbf16>, %b: tensor<4x4xbf16>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{operands must be 2-D tiles, got 'tensor<4xbf16>' and 'tensor<4x4xbf16>'}}
  %d = fakv.dot %a, %b, %c : tensor<4xbf16>, tensor<4x4xbf16> -> tensor<4x4xf32>
  return
}

// -----

func.func @dot_mixed(%a: tensor<4x4xbf16>, %b: tensor<4x4xf16>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{operand element types differ: 'bf16' vs 'f16'}}
  %d = fakv.dot %a, %b, %c : tensor<4x4xbf16>, tensor<4x4xf16> -> tensor<4x4xf32>
  return
}

// -----

func.func @dot_int(%a: tensor<4x4xi8>, %b: tensor<4x4xi8>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{operand element type must be f16, bf16 or f32, got 'i8'}}
  %d = fakv.dot %a, %b, %c : tensor<4x4xi8>, tensor<4x4xi8> -> tensor<4x4xf32>
  return
}

// -----

func.func @dot_k(%a: tensor<4x8xbf16>, %b: tensor<4x4xbf16>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{contraction sizes differ: a gives K = 8, b gives K = 4}}
  %d = fakv.dot %a, %b, %c : tensor<4x8xbf16>, tensor<4x4xbf16> -> tensor<4x4xf32>
  return
}

// -----

func.func @dot_transpose_k(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{contraction sizes differ: a gives K = 8, b gives K = 4}}
  %d = fakv.dot %a, %b, %c : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x4xf32>
  return
}

// -----

func.func @dot_acc(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<4x8xf32>) {
  // expected-error @+1 {{accumulator must have shape [4, 16], got [4, 8]}}
  %d = fakv.dot %a, %b, %c : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x8xf32>
  return
}

// -----

func.func @dot_acc_type(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<4x16xbf16>) {
  // expected-error @+1 {{accumulator must have f32 elements, got 'bf16'}}
  %d = fakv.dot %a, %b, %c : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  return
}

// -----

func.func @softmax_scores(%s: tensor<4x8xf16>, %m: tensor<4xf32>) {
  // expected-error @+1 {{scores must be a 2-D f32 tile, got 'tensor<4x8xf16>'}}
  %m1, %l1, %p, %a = fakv.online_softmax %s, %m, %m : tensor<4x8xf16>, tensor<4xf32>
  return
}

// -----

func.func @softmax_rows(%s: tensor<4x8xf32>, %m: tensor<8xf32>) {
  // expected-error @+1 {{running max/sum must have shape [4], got [8]}}
  %m1, %l1, %p, %a = fakv.online_softmax %s, %m, %m : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @softmax_types(%s: tensor<4x8xf32>, %m: tensor<4xf32>, %l: tensor<8xf32>) {
  // expected-error @+1 {{failed to verify that all of {max, sum, new_max, new_sum, alpha} have same type}}
  %m1, %l1, %p, %a = "fakv.online_softmax"(%s, %m, %l)
    : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @combine_partials(%p: tensor<4x8xf32>, %l: tensor<4xf32>) {
  // expected-error @+1 {{partials must be a 3-D (splits x rows x head_dim) f32 tile, got 'tensor<4x8xf32>'}}
  %o, %lse = fakv.lse_combine %p, %l : tensor<4x8xf32>, tensor<4xf32> -> tensor<8xf32>, tensor<f32>
  return
}

// -----

func.func @combine_lses(%p: tensor<4x2x8xf32>, %l: tensor<4x4xf32>) {
  // expected-error @+1 {{lses must have shape [4, 2], got [4, 4]}}
  %o, %lse = fakv.lse_combine %p, %l : tensor<4x2x8xf32>, tensor<4x4xf32> -> tensor<2x8xf32>, tensor<2xf32>
  return
}

// -----

func.func @combine_out(%p: tensor<4x2x8xf32>, %l: tensor<4x2xf32>) {
  // expected-error @+1 {{out must have shape [2, 8], got [4, 8]}}
  %o, %lse = fakv.lse_combine %p, %l : tensor<4x2x8xf32>, tensor<4x2xf32> -> tensor<4x8xf32>, tensor<2xf32>
  return
}

// -----

func.func @combine_lse(%p: tensor<4x2x8xf32>, %l: tensor<4x2xf32>) {
  // expected-error @+1 {{lse must have f32 elements, got 'f16'}}
  %o, %lse = fakv.lse_combine %p, %l : tensor<4x2x8xf32>, tensor<4x2xf32> -> tensor<2x8xf32>, tensor<2xf16>
  return
}

// -----

func.func @reduce_axis(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 out of range [0, 2)}}
  %r = fakv.reduce max %t, 2 : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_negative_axis(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{axis -1 out of range [0, 2)}}
  %r = fakv.reduce max %t, -1 : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_int(%t: tensor<4x8xi16>) {
  // expected-error @+1 {{source must have float or i32 elements, got 'i16'}}
  %r = fakv.reduce sum %t, 1 : tensor<4x8xi16> -> tensor<4xi16>
  return
}

// -----

func.func @item_elements(%t: tensor<2xi32>) {
  // expected-error @+1 {{source must have one element, got 'tensor<2xi32>'}}
  %r = fakv.item %t : tensor<2xi32> -> i32
  return
}

// -----

func.func @item_type(%t: tensor<1x1xf32>) {
  // expected-error @+1 {{result must be the source's element type 'f32', got 'i32'}}
  %r = fakv.item %t : tensor<1x1xf32> -> i32
  return
}

// -----

func.func @reduce_shape(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{result must have shape [8] and element type 'f32', got 'tensor<4xf32>'}}
  %r = fakv.reduce max %t, 0 : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_kind(%t: tensor<4x8xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, max, min]}}
  %r = fakv.reduce 7 %t, 0 : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @length_mask_scores(%s: tensor<4x8x2xf32>, %c: tensor<8xi32>, %n: i32) {
  // expected-error @+1 {{scores must be a 2-D f32 tile, got 'tensor<4x8x2xf32>'}}
  %r = fakv.length_mask %s, %c, %n : tensor<4x8x2xf32>, tensor<8xi32>
  return
}

// -----

func.func @length_mask_cols(%s: tensor<4x8xf32>, %c: tensor<4xi32>, %n: i32) {
  // expected-error @+1 {{cols must be a 1-D i32 tile of length 8, got 'tensor<4xi32>'}}
  %r = fakv.length_mask %s, %c, %n : tensor<4x8xf32>, tensor<4xi32>
  return
}

// -----

func.func @causal_rows(%s: tensor<4x8xf32>, %r: tensor<8xi32>, %c: tensor<8xi32>, %n: i32) {
  // expected-error @+1 {{rows must be a 1-D i32 tile of length 4, got 'tensor<8xi32>'}}
  %x = fakv.causal_mask %s, %r, %c, %n : tensor<4x8xf32>, tensor<8xi32>, tensor<8xi32>
  return
}

// -----

func.func @window_cols(%s: tensor<4x8xf32>, %r: tensor<4xi32>, %c: tensor<8xi64>, %n: i32) {
  // expected-error @+1 {{cols must be a 1-D i32 tile of length 8, got 'tensor<8xi64>'}}
  %x = fakv.window_mask %s, %r, %c, %n, %n, %n : tensor<4x8xf32>, tensor<4xi32>, tensor<8xi64>
  return
}

// -----

func.func @softcap_type(%s: tensor<4x8xbf16>, %c: f32) {
  // expected-error @+1 {{scores must be a 2-D f32 tile, got 'tensor<4x8xbf16>'}}
  %x = fakv.softcap %s, %c : tensor<4x8xbf16>
  return
}

// -----

func.func @softcap_cap(%s: tensor<4x8xf32>) {
  %cap = arith.constant -2.0 : f32
  // expected-error @+1 {{cap must be positive, got -2.0}}
  %x = fakv.softcap %s, %cap : tensor<4x8xf32>
  return
}

// -----

// Zero is not positive (tanh(s / 0) * 0 is NaN or 0, no cap).
func.func @softcap_cap_zero(%s: tensor<4x8xf32>) {
  %cap = arith.constant 0.0 : f32
  // expected-error @+1 {{cap must be positive, got 0.000000e+00 : f32}}
  %x = fakv.softcap %s, %cap : tensor<4x8xf32>
  return
}

// -----

func.func @softcap_cap_negative_zero(%s: tensor<4x8xf32>) {
  %cap = arith.constant -0.0 : f32
  // expected-error @+1 {{cap must be positive, got -0.000000e+00 : f32}}
  %x = fakv.softcap %s, %cap : tensor<4x8xf32>
  return
}

// -----

// NaN is not positive either (every compare with it is false).
func.func @softcap_cap_nan(%s: tensor<4x8xf32>) {
  %cap = arith.constant 0x7FC00000 : f32
  // expected-error @+1 {{cap must be positive, got 0x7FC00000 : f32}}
  %x = fakv.softcap %s, %cap : tensor<4x8xf32>
  return
}

// -----

// Positive but below 1 / FLT_MAX: 1 / cap is inf in f32 and a 0 score gave NaN (accepted before session 56).
func.func @softcap_cap_tiny(%s: tensor<4x8xf32>) {
  %cap = arith.constant 1.0e-39 : f32
  // expected-error @+1 {{cap must be finite and at least 2.94e-39}}
  %x = fakv.softcap %s, %cap : tensor<4x8xf32>
  return
}

// -----

// An infinite cap: cap * tanh(s / cap) is inf * 0.
func.func @softcap_cap_inf(%s: tensor<4x8xf32>) {
  %cap = arith.constant 0x7F800000 : f32
  // expected-error @+1 {{cap must be finite and at least 2.94e-39}}
  %x = fakv.softcap %s, %cap : tensor<4x8xf32>
  return
}

// -----

func.func @alibi_slopes(%s: tensor<4x8xf32>, %r: tensor<4xi32>, %c: tensor<8xi32>, %n: i32, %sl: tensor<8xf32>) {
  // expected-error @+1 {{slopes must have shape [4], got [8]}}
  %x = fakv.alibi %s, %r, %c, %n, %sl : tensor<4x8xf32>, tensor<4xi32>, tensor<8xi32>, tensor<8xf32>
  return
}

// -----

func.func @rotary_rank(%x: tensor<4xbf16>, %c: tensor<4x2xf32>) {
  // expected-error @+1 {{x must be a 2-D f16, bf16 or f32 tile, got 'tensor<4xbf16>'}}
  %r = fakv.rotary %x, %c, %c : tensor<4xbf16>, tensor<4x2xf32>
  return
}

// -----

func.func @rotary_rows(%x: tensor<4x8xbf16>, %c: tensor<2x2xf32>) {
  // expected-error @+1 {{cos and sin must be f32 tiles with 4 rows, got 'tensor<2x2xf32>'}}
  %r = fakv.rotary %x, %c, %c : tensor<4x8xbf16>, tensor<2x2xf32>
  return
}

// -----

func.func @rotary_dim(%x: tensor<4x8xbf16>, %c: tensor<4x5xf32>) {
  // expected-error @+1 {{rotary dimension 2 x 5 exceeds the head dimension 8}}
  %r = fakv.rotary %x, %c, %c : tensor<4x8xbf16>, tensor<4x5xf32>
  return
}

// -----

func.func @ptr_of_elem(%m: memref<4xf32>) {
  // expected-error @+1 {{memref element type 'f32' does not match the pointer element type 'f16'}}
  %p = fakv.ptr_of %m : memref<4xf32> -> !fakv.ptr<f16>
  return
}

// -----

func.func @ptr_of_layout(%m: memref<4xf32, strided<[2]>>) {
  // expected-error @+1 {{memref must have an identity layout}}
  %p = fakv.ptr_of %m : memref<4xf32, strided<[2]>> -> !fakv.ptr<f32>
  return
}

// -----

func.func @k(%p: !fakv.ptr<f32>) attributes {fakv.kernel} {
  return
}
func.func @launch_grid(%p: !fakv.ptr<f32>, %g: i32) {
  // expected-error @+1 {{expects a 3-D grid, got 2 extents}}
  fakv.launch @k[%g, %g](%p) : (!fakv.ptr<f32>)
  return
}

// -----

func.func @launch_missing(%g: i32) {
  // expected-error @+1 {{'nope' does not name a func.func}}
  fakv.launch @nope[%g, %g, %g]()
  return
}

// -----

func.func @not_kernel(%p: !fakv.ptr<f32>) {
  return
}
func.func @launch_not_kernel(%p: !fakv.ptr<f32>, %g: i32) {
  // expected-error @+1 {{'not_kernel' is not marked 'fakv.kernel'}}
  fakv.launch @not_kernel[%g, %g, %g](%p) : (!fakv.ptr<f32>)
  return
}

// -----

func.func @k(%p: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel} {
  return
}
func.func @launch_count(%p: !fakv.ptr<f32>, %g: i32) {
  // expected-error @+1 {{kernel 'k' takes 2 arguments, got 1}}
  fakv.launch @k[%g, %g, %g](%p) : (!fakv.ptr<f32>)
  return
}

// -----

func.func @k(%p: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel} {
  return
}
func.func @launch_types(%p: !fakv.ptr<f16>, %g: i32) {
  // expected-error @+1 {{argument 0 has type '!fakv.ptr<f16>' but kernel 'k' expects '!fakv.ptr<f32>'}}
  fakv.launch @k[%g, %g, %g](%p, %g) : (!fakv.ptr<f16>, i32)
  return
}

// -----

// expected-error @+1 {{a fakv kernel returns nothing; it writes its results through pointer arguments}}
func.func @kernel_result() -> i32 attributes {fakv.kernel} {
  %c = arith.constant 0 : i32
  return %c : i32
}

// -----

// expected-error @+1 {{a fakv kernel argument must be a !fakv.ptr, an integer or a float, got 'tensor<4xf32>'}}
func.func @kernel_arg(%t: tensor<4xf32>) attributes {fakv.kernel} {
  return
}

// -----

// expected-error @+1 {{'fakv.kernel' must be a unit attribute}}
func.func @kernel_value() attributes {fakv.kernel = 1 : i32} {
  return
}

// -----

// expected-error @+1 {{'fakv.kernel' applies to func.func only}}
module attributes {fakv.kernel} {
}

// -----

// expected-error @+1 {{unknown fakv attribute 'fakv.fast'}}
func.func @unknown_attr() attributes {fakv.fast} {
  return
}

// -----

// expected-error @+1 {{'fakv.swap_ab' must be a unit attribute}}
func.func @swap_ab_not_unit() attributes {fakv.kernel, fakv.swap_ab = 1 : i32} {
  return
}

// -----

// expected-error @+1 {{'fakv.gather_pages' must be a unit attribute}}
func.func @gather_pages_not_unit() attributes {fakv.kernel, fakv.gather_pages = true} {
  return
}

// -----

// expected-error @+1 {{'fakv.row_boxes' must be a unit attribute}}
func.func @row_boxes_not_unit() attributes {fakv.kernel, fakv.row_boxes = 16 : i32} {
  return
}

// -----

// expected-error @+1 {{'fakv.warm_pages' must be a number of tiles ahead: an i32 in [1, 8]}}
func.func @warm_pages_zero() attributes {fakv.kernel, fakv.warm_pages = 0 : i32} {
  return
}

// -----

// (an unsigned or signed integer attribute: its value was read as a signless one's, an assertion in LLVM's
// debug builds)
// expected-error @+1 {{'fakv.warm_pages' must be a number of tiles ahead: an i32 in [1, 8]}}
func.func @warm_pages_unsigned() attributes {fakv.kernel, fakv.warm_pages = 2 : ui32} {
  return
}

// -----

// expected-error @+1 {{'fakv.pack_gqa' must be a grid axis: an i32 in [0, 2]}}
func.func @pack_gqa_unsigned() attributes {fakv.kernel, fakv.pack_gqa = 1 : ui32} {
  return
}

// -----

// expected-error @+1 {{'fakv.divisibility' of argument 0 must be a positive power of two of a signless integer type (16 : i64), got 16 : ui64}}
func.func @divisibility_unsigned(%n: i32 {fakv.divisibility = 16 : ui64}) attributes {fakv.kernel} {
  return
}

// -----

// expected-error @+1 {{'fakv.warm_pages' must be a number of tiles ahead: an i32 in [1, 8]}}
func.func @warm_pages_unit() attributes {fakv.kernel, fakv.warm_pages} {
  return
}

// -----

func.func @addptr_types(%p: !fakv.ptr<i32>, %o: i64) {
  // expected-error @+1 {{failed to verify that all of {ptr, result} have same type}}
  %q = "fakv.addptr"(%p, %o) : (!fakv.ptr<i32>, i64) -> !fakv.ptr<f32>
  return
}

// -----

// expected-error @+1 {{'fakv.divisibility' of argument 0 must be a positive power of two of a signless integer type (16 : i64), got 12 : i64}}
func.func @divisibility_not_pow2(%n: i32 {fakv.divisibility = 12 : i64}) attributes {fakv.kernel} {
  return
}

// -----

// expected-error @+1 {{'fakv.divisibility' of argument 1 applies to integers and !fakv.ptr, not 'f32'}}
func.func @divisibility_of_float(%n: i32, %x: f32 {fakv.divisibility = 16 : i64}) attributes {fakv.kernel} {
  return
}

// -----

// expected-error @+1 {{unknown fakv argument attribute 'fakv.aligned'}}
func.func @unknown_arg_attr(%p: !fakv.ptr<f32> {fakv.aligned}) attributes {fakv.kernel} {
  return
}

// -----

// A tile past fakv's bound (2^24 elements) is a diagnostic, not an allocation
// that never ends (issue 10).
func.func @huge_tile(%p: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  // expected-error @+1 {{'fakv.load' op tile 'tensor<1048576x1048576xf32>' holds more than 16777216 elements (2^24), fakv's limit for one tile}}
  %x = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<f32> -> tensor<1048576x1048576xf32>
  return
}

// -----

func.func @huge_splat(%v: f32) attributes {fakv.kernel} {
  // expected-error @+1 {{holds more than 16777216 elements}}
  %x = fakv.splat %v : f32 -> tensor<4096x8192xf32>
  return
}

// -----

func.func @cluster_gather_outside_kernel(%t: tensor<4xf32>) {
  // expected-error @+1 {{'fakv.cluster_gather' op is only valid inside a function marked 'fakv.kernel'}}
  %a = fakv.cluster_gather(%t) size 4 : tensor<4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @cluster_gather_size(%v: f32) attributes {fakv.kernel} {
  %t = fakv.splat %v : f32 -> tensor<4xf32>
  // expected-error @+1 {{a cluster has 2 to 8 programs, got 16}}
  %a = fakv.cluster_gather(%t) size 16 : tensor<4xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @cluster_gather_bits(%v: bf16) attributes {fakv.kernel} {
  %t = fakv.splat %v : bf16 -> tensor<4xbf16>
  // expected-error @+1 {{gathers tiles of 32-bit elements, got 'bf16'}}
  %a = fakv.cluster_gather(%t) size 4 : tensor<4xbf16> -> tensor<4x4xbf16>
  return
}

// -----

func.func @cluster_gather_shape(%v: f32) attributes {fakv.kernel} {
  %t = fakv.splat %v : f32 -> tensor<4x8xf32>
  // expected-error @+1 {{result must be 'f32' of shape [4, 8, 2] (the tile's, then the cluster's size), got 'tensor<2x4x8xf32>'}}
  %a = fakv.cluster_gather(%t) size 2 : tensor<4x8xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @cluster_gather_sizes(%v: f32) attributes {fakv.kernel} {
  %t = fakv.splat %v : f32 -> tensor<4xf32>
  %a = fakv.cluster_gather(%t) size 2 : tensor<4xf32> -> tensor<4x2xf32>
  // expected-error @+1 {{a kernel's cluster_gathers must agree on the cluster's size (2 before)}}
  %b = fakv.cluster_gather(%t) size 4 : tensor<4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @cluster_gather_in_a_loop(%v: f32, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %t = fakv.splat %v : f32 -> tensor<4xf32>
  scf.for %i = %c0 to %n step %c1 : i32 {
    // expected-error @+1 {{runs once a program: not inside a loop}}
    %a = fakv.cluster_gather(%t) size 4 : tensor<4xf32> -> tensor<4x4xf32>
  }
  return
}

// -----

func.func @cluster_gather_results(%v: f32) attributes {fakv.kernel} {
  %t = fakv.splat %v : f32 -> tensor<4xf32>
  // expected-error @+1 {{gathers one or more tiles, a result for each}}
  %a = fakv.cluster_gather(%t, %t) size 4 : tensor<4xf32>, tensor<4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @cluster_gather_scatter_entries(%v: f32) attributes {fakv.kernel} {
  %t = fakv.splat %v : f32 -> tensor<4x8xf32>
  // expected-error @+1 {{scatter marks each tile: 1 entries, got 2}}
  %a = fakv.cluster_gather(%t) size 4 {scatter = array<i1: true, false>} : tensor<4x8xf32> -> tensor<4x2x4xf32>
  return
}

// -----

func.func @cluster_gather_scatter_slices(%v: f32) attributes {fakv.kernel} {
  %t = fakv.splat %v : f32 -> tensor<4x6xf32>
  // expected-error @+1 {{shares out the last dimension of tile #0 in 4 slices: it must be a multiple of 4, got 'tensor<4x6xf32>'}}
  %a = fakv.cluster_gather(%t) size 4 {scatter = array<i1: true>} : tensor<4x6xf32> -> tensor<4x1x4xf32>
  return
}

// -----

func.func @cluster_gather_scatter_shape(%v: f32) attributes {fakv.kernel} {
  %t = fakv.splat %v : f32 -> tensor<4x8xf32>
  // expected-error @+1 {{result must be 'f32' of shape [4, 2, 4] (the tile's, then the cluster's size), got 'tensor<4x8x4xf32>'}}
  %a = fakv.cluster_gather(%t) size 4 {scatter = array<i1: true>} : tensor<4x8xf32> -> tensor<4x8x4xf32>
  return
}

// -----

// (the verifier asked an index element for its bit width: a crash)
func.func @cluster_gather_index(%n: i32) attributes {fakv.kernel} {
  %i = arith.index_cast %n : i32 to index
  %t = fakv.splat %i : index -> tensor<4xindex>
  // expected-error @+1 {{gathers tiles of 32-bit elements, got 'index'}}
  %a = fakv.cluster_gather(%t) size 4 : tensor<4xindex> -> tensor<4x4xindex>
  return
}

// -----

// (the CPU lowering crashed on a collapse of no dimensions)
func.func @reshape_rank0(%t: tensor<f32>) {
  // expected-error @+1 {{reshapes tiles of one dimension or more (expand_dims and a reduction make and take 0-d tiles), got 'tensor<f32>' -> 'tensor<1xf32>'}}
  %r = fakv.reshape %t : tensor<f32> -> tensor<1xf32>
  return
}

// -----

// (an f64 tile made invalid IR in the CPU lowering)
func.func @rotary_f64(%x: tensor<4x8xf64>, %c: tensor<4x2xf32>) {
  // expected-error @+1 {{x must be a 2-D f16, bf16 or f32 tile, got 'tensor<4x8xf64>'}}
  %r = fakv.rotary %x, %c, %c : tensor<4x8xf64>, tensor<4x2xf32>
  return
}

// -----

// (loads of signed or 8-bit float elements made invalid LLVM IR)
// expected-error @+1 {{!fakv.ptr element type must be a signless integer of whole bytes (i8, i16, i32, ...) or an f16, bf16, f32, f64, f80 or f128 float (what memory holds), got 'si32'}}
func.func @ptr_signed(%p: !fakv.ptr<si32>) {
  return
}

// -----

// (vectorised GPU loads read i1 bit-packed, the CPU path and scalar loads a byte each)
// expected-error @+1 {{!fakv.ptr element type must be a signless integer of whole bytes (i8, i16, i32, ...) or an f16, bf16, f32, f64, f80 or f128 float (what memory holds), got 'i1'}}
func.func @ptr_i1(%p: !fakv.ptr<i1>) {
  return
}

// -----

// expected-error @+1 {{!fakv.ptr element type must be a signless integer of whole bytes}}
func.func @ptr_i0(%p: !fakv.ptr<i0>) {
  return
}

// -----

// expected-error @+1 {{got 'f8E5M2'}}
func.func @ptr_f8(%p: !fakv.ptr<f8E5M2>) {
  return
}

// -----

func.func @kernel_in_kernel(%n: i32) attributes {fakv.kernel} {
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{'fakv.launch' op is host code: a kernel does not launch kernels}}
  fakv.launch @kernel_in_kernel[%c1, %c1, %c1](%n) : (i32)
  return
}

// -----

// (session 52) Inside a module nested in a kernel, an op is not the kernel's: its values are not (the CPU
// lowering replaced the program id by the kernel's arguments across the module's isolation: invalid IR out).
func.func @program_id_in_a_nested_module(%out: !fakv.ptr<i32>) attributes {fakv.kernel} {
  builtin.module {
    // expected-error @+1 {{'fakv.program_id' op is only valid inside a function marked 'fakv.kernel'}}
    %x = fakv.program_id 0
  }
  return
}

// -----

// The kernel's cluster_gathers agree on a size: the first looked at is the kernel's own (the one in a nested
// module, not verified yet, without its size: a segfault in this verifier).
func.func @cluster_gather_beside_a_nested_one() attributes {fakv.kernel} {
  builtin.module {
    %t = tensor.empty() : tensor<4xf32>
    // expected-error @+1 {{'fakv.cluster_gather' op requires attribute 'size'}}
    %r = "fakv.cluster_gather"(%t) : (tensor<4xf32>) -> tensor<4x2xf32>
  }
  %t = tensor.empty() : tensor<4xf32>
  %r2 = fakv.cluster_gather(%t) size 2 : tensor<4xf32> -> tensor<4x2xf32>
  return
}

// -----

// (an empty gpu.func out of fakvgpu-outline-kernels: "expected body with at least one block")
// expected-error @+1 {{a fakv kernel needs a body: a declaration is neither compiled nor launched}}
func.func private @kernel_declaration(%a: !fakv.ptr<f32>) attributes {fakv.kernel}

// -----

// expected-error @+1 {{'fakv.pack_gqa' applies to fakv kernels}}
func.func @pack_gqa_not_a_kernel(%p: !fakv.ptr<f32>) attributes {fakv.pack_gqa = 1 : i32} {
  return
}

// -----

// expected-error @+1 {{'fakv.grid_packing' must be an array<i32> of 3 positive counts}}
func.func @grid_packing_zero() attributes {fakv.kernel, fakv.grid_packing = array<i32: 1, 0, 1>} {
  return
}

// -----

// expected-error @+1 {{'fakv.grid_packing' must be an array<i32> of 3 positive counts}}
func.func @grid_packing_two_axes() attributes {fakv.kernel, fakv.grid_packing = array<i32: 1, 4>} {
  return
}

// -----

func.func @softmax_max_type(%s: tensor<4x8xf32>, %m: tensor<4xf16>) {
  // expected-error @+1 {{running max/sum must have f32 elements, got 'f16'}}
  %m1, %l1, %p, %a = fakv.online_softmax %s, %m, %m : tensor<4x8xf32>, tensor<4xf16>
  return
}

// -----

func.func @combine_lses_type(%p: tensor<4x2x8xf32>, %l: tensor<4x2xf16>) {
  // expected-error @+1 {{lses must have f32 elements, got 'f16'}}
  %o, %lse = fakv.lse_combine %p, %l : tensor<4x2x8xf32>, tensor<4x2xf16> -> tensor<2x8xf32>, tensor<2xf32>
  return
}

// -----

func.func @combine_out_type(%p: tensor<4x2x8xf32>, %l: tensor<4x2xf32>) {
  // expected-error @+1 {{out must have f32 elements, got 'bf16'}}
  %o, %lse = fakv.lse_combine %p, %l : tensor<4x2x8xf32>, tensor<4x2xf32> -> tensor<2x8xbf16>, tensor<2xf32>
  return
}

// -----

func.func @combine_lse_shape(%p: tensor<4x2x8xf32>, %l: tensor<4x2xf32>) {
  // expected-error @+1 {{lse must have shape [2], got [4]}}
  %o, %lse = fakv.lse_combine %p, %l : tensor<4x2x8xf32>, tensor<4x2xf32> -> tensor<2x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @alibi_slopes_type(%s: tensor<4x8xf32>, %r: tensor<4xi32>, %c: tensor<8xi32>, %n: i32, %sl: tensor<4xf16>) {
  // expected-error @+1 {{slopes must have f32 elements, got 'f16'}}
  %x = fakv.alibi %s, %r, %c, %n, %sl : tensor<4x8xf32>, tensor<4xi32>, tensor<8xi32>, tensor<4xf16>
  return
}
