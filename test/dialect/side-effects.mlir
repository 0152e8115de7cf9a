// Memory effects order the shared-memory pipeline in the IR (issue 10):
// ring_view and fakv.dot on a shared tile read the tile memory that wait,
// arrive, async_paged_load and clear_rows write, so CSE merges two views of
// a slot only when no barrier (wait, arrive: tested here) lies between them, and LICM hoists a dot out
// of a loop only when it reads registers alone.
// RUN: fakv-opt %s --split-input-file --allow-unregistered-dialect --cse | FileCheck %s --check-prefix=CSE
// RUN: fakv-opt %s --split-input-file --allow-unregistered-dialect --loop-invariant-code-motion | FileCheck %s --check-prefix=LICM

#shared = #fakvgpu.shared<swizzle = 128>
!ring = !fakvgpu.ring<2, tensor<64x64xbf16, #shared>>

// CSE-LABEL: func.func @views
// CSE: %[[A:.*]] = fakvgpu.ring_view
// CSE-NOT: fakvgpu.ring_view
// CSE: fakvgpu.wait
// CSE: %[[C:.*]] = fakvgpu.ring_view
// CSE: return %[[A]], %[[A]], %[[C]]
func.func @views(%r: !ring, %bars: !fakvgpu.barriers<2>, %s: i32, %p: i32)
    -> (tensor<64x64xbf16, #shared>, tensor<64x64xbf16, #shared>, tensor<64x64xbf16, #shared>) {
  %a = fakvgpu.ring_view %r[%s] : !ring
  %b = fakvgpu.ring_view %r[%s] : !ring
  fakvgpu.wait %bars[%s], %p : !fakvgpu.barriers<2>
  %c = fakvgpu.ring_view %r[%s] : !ring
  return %a, %b, %c : tensor<64x64xbf16, #shared>, tensor<64x64xbf16, #shared>, tensor<64x64xbf16, #shared>
}

// -----

// (an arrive between two views likewise)
#shared = #fakvgpu.shared<swizzle = 128>
!ring = !fakvgpu.ring<2, tensor<64x64xbf16, #shared>>

// CSE-LABEL: func.func @views_across_arrive
// CSE: %[[A:.*]] = fakvgpu.ring_view
// CSE: fakvgpu.arrive
// CSE: %[[C:.*]] = fakvgpu.ring_view
// CSE: return %[[A]], %[[C]]
func.func @views_across_arrive(%r: !ring, %bars: !fakvgpu.barriers<2>, %s: i32)
    -> (tensor<64x64xbf16, #shared>, tensor<64x64xbf16, #shared>) {
  %a = fakvgpu.ring_view %r[%s] : !ring
  fakvgpu.arrive %bars[%s] : !fakvgpu.barriers<2>
  %c = fakvgpu.ring_view %r[%s] : !ring
  return %a, %c : tensor<64x64xbf16, #shared>, tensor<64x64xbf16, #shared>
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>

// LICM-LABEL: func.func @hoist
// LICM: fakv.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x64xbf16>, tensor<64x64xbf16>
// LICM: scf.for
// LICM:   fakvgpu.wait
// LICM:   fakv.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x64xbf16, #shared>, tensor<64x64xbf16, #shared>
func.func @hoist(%x: tensor<64x64xbf16>, %y: tensor<64x64xbf16, #shared>, %acc: tensor<64x64xf32>,
                 %bars: !fakvgpu.barriers<2>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %r = fakv.dot %x, %x, %acc : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    fakvgpu.wait %bars[%c0], %c0 : !fakvgpu.barriers<2>
    %s = fakv.dot %y, %y, %acc : tensor<64x64xbf16, #shared>, tensor<64x64xbf16, #shared> -> tensor<64x64xf32>
    "test.use"(%r, %s) : (tensor<64x64xf32>, tensor<64x64xf32>) -> ()
  }
  return
}
