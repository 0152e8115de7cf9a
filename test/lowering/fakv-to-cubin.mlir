// fakv-to-cubin, CPU only: the fakv-IR decode and combine kernels (the
// decode kernel with its page size fixed at 64, so that its K/V copies are
// TMA) become PTX with wgmma and cp.async.bulk.tensor that ptxas accepts for
// sm_90a. (format=bin runs ptxas itself: fakv-compile's default.)
// REQUIRES: ptxas
// RUN: sed -e 's/page_size %%page_size num_pages/page_size %%fixed_ps num_pages/' \
// RUN:     -e 's/^  %%c4 = arith.constant 4 : i32$/  %%c4 = arith.constant 4 : i32\n  %%fixed_ps = arith.constant 64 : i32/' \
// RUN:     %kernels/decode.mlir > %t.decode.mlir
// RUN: fakv-compile %t.decode.mlir -o %t.decode --format=isa
// RUN: FileCheck %s --check-prefix=DECODE < %t.decode.ptx
// RUN: %ptxas -arch=sm_90a %t.decode.ptx -o %t.decode.cubin
// RUN: FileCheck %s --check-prefix=FACTS < %t.decode.json
// RUN: fakv-compile %kernels/combine.mlir -o %t.combine --format=isa
// RUN: FileCheck %s --check-prefix=COMBINE < %t.combine.ptx
// RUN: %ptxas -arch=sm_90a %t.combine.ptx -o %t.combine.cubin
// RUN: fakv-opt %kernels/decode.mlir --fakv-to-cubin="format=isa" | FileCheck %s --check-prefix=PIPELINE

// DECODE: .target sm_90a
// DECODE: .entry decode(
// DECODE: mbarrier.init.shared
// DECODE: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// DECODE: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// DECODE: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16

// FACTS: "name": "decode"
// FACTS: "tensormap"
// FACTS: "smem_bytes": 26624
// FACTS: "tensormaps": [
// FACTS: "arg": 1,
// FACTS: "rows": 32
// FACTS: "arg": 2,
// FACTS: "threads": 256

// COMBINE: .entry combine(
// COMBINE: ex2.approx.ftz.f32
// COMBINE: lg2.approx.ftz.f32

// PIPELINE: gpu.binary @fakv_kernels
